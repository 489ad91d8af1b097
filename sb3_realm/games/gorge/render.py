"""Pictures of Gorge Chase: an RGB frame of a game (the env's ``rgb_array`` render and a replay's GIF) and the PNG of a
replayed episode: the hero's route coloured by time, both monsters' paths, flashes, pickups and the catch point."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ...atomic import atomic_write

__all__ = ["plot_route", "record_step", "render_frame"]

_SCALE = 4
_ROAD, _WALL = (200, 200, 190), (40, 40, 50)
_HERO, _MONSTER, _TREASURE, _BUFF, _BUFF_WAITING = (40, 110, 240), (220, 40, 40), (240, 200, 30), (40, 190, 80), (
    120, 160, 120)


def _mark(frame: np.ndarray, cell: tuple[int, int], colour: tuple[int, int, int], radius: int = 0) -> None:
    x, z = cell
    h, w = frame.shape[:2]
    frame[max(0, z - radius):min(h, z + radius + 1), max(0, x - radius):min(w, x + radius + 1)] = colour


def render_frame(game: Any) -> np.ndarray:
    """An RGB frame of the whole map of ``game`` (a :class:`~sb3_realm.games.gorge.core.Game`), ``(4 * H, 4 * W, 3)``
    uint8: walls, road, treasures, buffs (pale while waiting to respawn), monsters and the hero (3 x 3 cells, so that
    they show in a GIF)."""
    walkable = game.game_map.walkable
    frame = np.where(walkable[..., None], np.array(_ROAD, np.uint8), np.array(_WALL, np.uint8))  # (H, W, 3)
    for t in game.treasures:
        _mark(frame, t.cell, _TREASURE)
    for b in game.buffs:
        _mark(frame, b.cell, _BUFF if b.visible else _BUFF_WAITING)
    for m in game.monsters:
        _mark(frame, m.cell, _MONSTER, radius=1)
    _mark(frame, game.hero, _HERO, radius=1)
    return np.repeat(np.repeat(frame, _SCALE, axis=0), _SCALE, axis=1).astype(np.uint8)  # (4H, 4W, 3)


def record_step(ep: Any, env: Any) -> None:
    """Record the state of ``env``'s game into a replay's episode (an :class:`~sb3_realm.evaluation.replay.Episode`)
    after a reset or a step: the hero's cell, flashes, buff pickups, treasure pickups and each monster's cell (under
    ``ep.extra["monsters"]``, by entity id: ``[(step, x, z), ...]``)."""
    g = env.game
    ev = g.events
    if g.step_no > 0:
        if ev.flash:
            ep.flashes.append((g.step_no, not ev.flash_in_place))
        if ev.buff is not None:
            ep.buff_steps.append(g.step_no)
        if ev.treasures:
            ep.extra.setdefault("treasures_taken", []).append((g.step_no, *g.hero))
    else:
        ep.extra["treasures_at_start"] = [t.cell for t in g.treasures]
        ep.extra["buffs"] = [b.cell for b in g.buffs]
    ep.route.append(tuple(g.hero))
    for m in g.monsters:
        ep.extra.setdefault("monsters", {}).setdefault(m.entity_id, []).append((g.step_no, *m.cell))


def plot_route(ep: Any, env: Any, path: str | os.PathLike, title: str = "") -> Path:
    """PNG of a replayed episode on its map: the hero's route coloured by step, flash jumps, each monster's path,
    treasures (taken or left), buffs and the catch point. ``z`` grows downward, as on the platform."""
    import matplotlib  # lazy: only replays draw, and it takes a second to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    game_map = env.game_map
    h, w = game_map.walkable.shape
    fig, ax = plt.subplots(figsize=(7, 7), dpi=100)
    ax.imshow(game_map.walkable, origin="upper", cmap="gray", vmin=-0.6, vmax=1.0, extent=(0, w, h, 0))
    pts = np.array(ep.route, dtype=float) + 0.5  # (steps + 1, 2) cell centres
    flash_steps = {s for s, landed in ep.flashes if landed}
    segments = [[pts[i - 1], pts[i]] for i in range(1, len(pts)) if i not in flash_steps]
    times = [i for i in range(1, len(pts)) if i not in flash_steps]
    if segments:
        lc = LineCollection(segments, cmap="viridis", linewidths=2)
        lc.set_array(np.asarray(times, dtype=float))
        ax.add_collection(lc)
        fig.colorbar(lc, ax=ax, fraction=0.046, pad=0.04, label="step")
    for s in sorted(flash_steps):
        ax.annotate("", xy=pts[s], xytext=pts[s - 1], arrowprops={"arrowstyle": "->", "color": "magenta", "lw": 2,
                                                                  "linestyle": "--"})
    if flash_steps:
        ax.plot([], [], "--", color="magenta", label="flash")
    for k, (_, track) in enumerate(sorted(ep.extra.get("monsters", {}).items())):
        cells = np.array([(x, z) for _, x, z in track], dtype=float) + 0.5
        colour = ("red", "darkorange")[k % 2]
        ax.plot(cells[:, 0], cells[:, 1], "-", color=colour, lw=1, alpha=0.6,
                label=f"monster {k + 1} (from step {track[0][0]})")
        ax.scatter(cells[0, 0], cells[0, 1], marker="o", s=50, facecolors="none", edgecolors=colour, zorder=3)
    taken = {(x, z) for _, x, z in ep.extra.get("treasures_taken", [])}
    for cell in ep.extra.get("treasures_at_start", []):
        got = tuple(cell) in taken
        ax.scatter(cell[0] + 0.5, cell[1] + 0.5, marker="*" if got else "X", s=140, c="gold" if got else "grey",
                   edgecolors="black", zorder=3, label="treasure taken" if got else "treasure left")
    for cell in ep.extra.get("buffs", []):
        ax.scatter(cell[0] + 0.5, cell[1] + 0.5, marker="^", s=110, c="limegreen", edgecolors="black", zorder=3,
                   label=f"buff (taken {len(ep.buff_steps)}x)")
    ax.scatter(pts[0, 0], pts[0, 1], marker="o", s=100, c="white", edgecolors="black", zorder=4, label="start")
    info = ep.info
    if info.get("caught"):
        ax.scatter(pts[-1, 0], pts[-1, 1], marker="X", s=220, c="red", edgecolors="black", zorder=5,
                   label=f"caught at step {info['steps']}")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper left", fontsize=7)
    end = "caught" + (" after the speed-up" if info.get("caught_after_speedup") else "") if info.get(
        "caught") else "survived"
    ax.set_title(title or f"score {info['score']:.1f} | {end} | steps {info['steps']} | treasures "
                          f"{info['treasures']}")
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)
    ax.set_xlabel("grid x")
    ax.set_ylabel("grid z")
    fig.tight_layout()
    try:
        return atomic_write(path, lambda f: fig.savefig(f, format="png"))
    finally:
        plt.close(fig)
