"""Pictures of robot_vacuum: an RGB frame of a game (the env's ``rgb_array`` render and a replay's GIF) and the
coverage picture of a replayed episode (the cells the robot cleaned, those the official robots cleaned, the dirt
left, the chargers and the robot's route)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from sb3_realm.atomic import atomic_write

__all__ = ["plot_route", "record_step", "render_frame"]

_SCALE = 4
_WALL, _CLEAN, _DIRTY = (40, 40, 50), (215, 215, 205), (150, 110, 60)
_CHARGER, _NPC, _ROBOT = (60, 190, 90), (220, 40, 40), (40, 110, 240)


def _mark(frame: np.ndarray, cell, colour, radius: int = 0) -> None:
    x, z = cell
    h, w = frame.shape[:2]
    frame[max(0, z - radius):min(h, z + radius + 1), max(0, x - radius):min(w, x + radius + 1)] = colour


def _base(game: Any) -> np.ndarray:
    frame = np.empty((*game.walkable.shape, 3), dtype=np.uint8)
    frame[:] = _WALL
    frame[game.walkable] = _CLEAN
    frame[game.dirty] = _DIRTY
    frame[game.charger_mask & game.walkable] = _CHARGER
    return frame


def render_frame(game: Any) -> np.ndarray:
    """An RGB frame of the whole map of ``game`` (a :class:`~sb3_realm_vacuum.core.VacuumGame`), ``(4 * 128, 4 *
    128, 3)`` uint8: obstacles, clean road, dirt, chargers, the official robots and the robot (3 x 3 cells)."""
    frame = _base(game)
    for npc in game.npcs:
        _mark(frame, npc, _NPC, radius=1)
    _mark(frame, (game.x, game.z), _ROBOT, radius=1)
    return np.repeat(np.repeat(frame, _SCALE, axis=0), _SCALE, axis=1)


def record_step(ep: Any, env: Any) -> None:
    """Record the robot's cell (``ep.route``), the cells it cleaned and the official robots' cells (``ep.extra``)
    after a reset or a step of a replay."""
    game = env.unwrapped.game
    if game.step_no == 0:
        ep.extra["cleaned"] = []
        ep.extra["npcs"] = []
    elif game.cleaned_cell is not None:
        ep.extra.setdefault("cleaned", []).append(list(game.cleaned_cell))
    ep.extra.setdefault("npcs", []).append([list(p) for p in game.npcs])
    ep.route.append((float(game.x), float(game.z)))


def plot_route(episode: Any, env: Any, path: str | os.PathLike, title: str = "") -> Path:
    """The coverage picture (PNG) of a replayed episode: the map at the end (dirt left brown, cells cleaned by the
    robot blue, by the official robots pale, chargers green), the route as a thin line, the official robots'
    paths red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    game = env.unwrapped.game
    frame = _base(game)
    for x, z in episode.extra.get("cleaned", []):
        frame[z, x] = (120, 170, 250)
    fig, ax = plt.subplots(figsize=(6, 6), dpi=100)
    ax.imshow(frame, interpolation="nearest")
    if episode.route:
        xs, zs = zip(*episode.route, strict=True)
        ax.plot(xs, zs, "-", color=(0.1, 0.25, 0.7), linewidth=0.5)
    tracks = episode.extra.get("npcs", [])
    for j in range(len(tracks[0]) if tracks else 0):
        ax.plot([t[j][0] for t in tracks], [t[j][1] for t in tracks], "-", color=(0.85, 0.15, 0.15), linewidth=0.4)
    ax.set_title(title or f"cleaned {game.clean_score} of {game.total_dirt} in {game.step_no} steps", fontsize=8)
    ax.set_axis_off()
    path = Path(path)
    try:
        atomic_write(path, lambda handle: fig.savefig(handle, format="png"))
    finally:
        plt.close(fig)
    return path
