"""RGB frames of a game (numpy) and the PNG of a replayed route (matplotlib, imported lazily).

Frames are drawn with +z up (row 0 of the image is the top of the map), ``scale`` pixels per cell.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ...atomic import atomic_write
from .core import Game
from .maps import CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z

__all__ = ["COLORS", "plot_route", "record_step", "render_frame"]

COLORS = {
    "wall": (40, 40, 48),
    "floor": (225, 225, 215),
    "trail": (150, 190, 235),
    "treasure": (240, 180, 20),
    "taken": (150, 120, 60),
    "buff": (60, 110, 240),
    "end": (30, 170, 70),
    "start": (170, 170, 170),
    "hero": (220, 30, 30),
}


def _square(img: np.ndarray, cell: tuple[int, int] | np.ndarray, scale: int, color: tuple[int, ...],
            grow: int = 0) -> None:
    """Paint grid cell ``cell = (gx, gz)`` (and ``grow`` cells around it) in ``color``."""
    gx, gz = cell
    h = img.shape[0] // scale
    row = h - 1 - gz  # +z up
    r0, r1 = max(0, (row - grow) * scale), min(img.shape[0], (row + 1 + grow) * scale)
    c0, c1 = max(0, (gx - grow) * scale), min(img.shape[1], (gx + 1 + grow) * scale)
    img[r0:r1, c0:c1] = color


def render_frame(game: Game, scale: int = 4) -> np.ndarray:
    """(H * scale, W * scale, 3) uint8 picture: walls, floor, trail of visited cells, treasures (available and taken),
    buff (dimmed while respawning), start, end and the hero."""
    walk = game.map.walkable
    h, w = walk.shape
    r = game.rules.view_radius
    visited = game.layers[1, r:r + h, r:r + w] > 0  # (H, W)
    base = np.empty((h, w, 3), dtype=np.uint8)
    base[:] = COLORS["wall"]
    base[walk] = COLORS["floor"]
    base[visited & walk] = COLORS["trail"]
    img = np.repeat(np.repeat(base[::-1], scale, axis=0), scale, axis=1)
    pg = game.map.positions_grid
    if game.config is not None:
        _square(img, pg[game.config.start], scale, COLORS["start"], grow=1)
        _square(img, pg[game.config.end], scale, COLORS["end"], grow=1)
        for i in game.treasure_ids:
            _square(img, pg[i], scale, COLORS["taken"] if i in game.collected else COLORS["treasure"], grow=1)
        buff = COLORS["buff"] if game.buff_available() else tuple(c // 2 + 60 for c in COLORS["buff"])
        _square(img, pg[0], scale, buff, grow=1)
        _square(img, game.cell, scale, COLORS["hero"], grow=1)
    return img


def _to_cells(x: float, z: float) -> tuple[float, float]:
    return (x - GRID_ORIGIN_X) / CELL_WIDTH, (z - GRID_ORIGIN_Z) / CELL_WIDTH


def record_step(ep, env) -> None:
    """Record ``env``'s game into a replay's episode after a reset or a step: flashes (step, landed), buff pickups
    and the hero's world ``(x, z)``."""
    g = env.game
    if g.step_no > 0:
        if g.events.flash:
            ep.flashes.append((g.step_no, not g.events.flash_failed))
        if g.events.buff:
            ep.buff_steps.append(g.step_no)
    ep.route.append((g.x, g.z))


def plot_route(ep, env, path: str | os.PathLike, title: str = "") -> Path:
    """PNG of the route of a replayed episode (an :class:`~sb3_realm.evaluation.replay.Episode`) on ``env``'s map:
    walls, the route coloured by time, treasures taken and missed, buff, flash jumps, end. +z points up."""
    import matplotlib  # lazy: only replays draw, and it takes a second to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    game_map = env.game_map
    fig, ax = plt.subplots(figsize=(7, 7), dpi=100)
    ax.imshow(game_map.walkable, origin="lower", cmap="gray", vmin=-0.6, vmax=1.0,
              extent=(0, game_map.width, 0, game_map.height))
    pts = np.array([_to_cells(x, z) for x, z in ep.route])  # (steps + 1, 2) in cells
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
    centre = game_map.positions_grid + 0.5  # (16, 2) cell centres
    missed = set(ep.info.get("treasures_missed", []))
    for i in ep.treasure_ids:
        taken = i not in missed
        x, y = centre[i]
        ax.scatter(x, y, marker="*" if taken else "X", s=160, c="gold" if taken else "red",
                   edgecolors="black", zorder=3, label="treasure taken" if taken else "treasure missed")
    ax.scatter(centre[0][0], centre[0][1], marker="^", s=120, c="royalblue", edgecolors="black", zorder=3,
               label=f"buff (taken {len(ep.buff_steps)}x)")
    (sx, sy), (ex, ey) = centre[ep.usr_conf["start"]], centre[ep.usr_conf["end"]]
    ax.scatter(sx, sy, marker="o", s=100, c="white", edgecolors="black", zorder=3,
               label="start")
    ax.scatter(ex, ey, marker="s", s=120, c="limegreen", edgecolors="black", zorder=3,
               label="end")
    if flash_steps:
        ax.plot([], [], "--", color="magenta", label="flash")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper left", fontsize=7)
    info = ep.info
    ax.set_title(title or f"score {info['score']:.1f} | {'win' if info['win'] else 'no win'} | treasures "
                          f"{info['treasures']}/{len(ep.treasure_ids)} | steps {info['steps']}")
    ax.set_xlim(0, game_map.width)
    ax.set_ylim(0, game_map.height)
    ax.set_xlabel("grid x")
    ax.set_ylabel("grid z")
    fig.tight_layout()
    try:
        return atomic_write(path, lambda f: fig.savefig(f, format="png"))
    finally:
        plt.close(fig)
