"""RGB frames of a game (numpy) and an episode GIF writer (Pillow, imported lazily).

Frames are drawn with +z up (row 0 of the image is the top of the map), ``scale`` pixels per cell.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .core import Game

__all__ = ["render_frame", "save_gif", "COLORS"]

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


def save_gif(frames: Sequence[np.ndarray], path: str | os.PathLike, fps: int = 10) -> Path:
    """Write RGB frames as an animated GIF, atomically (temporary file, then rename)."""
    from PIL import Image  # lazy: only needed to write files

    if not frames:
        raise ValueError("save_gif needs at least one frame")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(np.asarray(f, dtype=np.uint8)) for f in frames]
    fd, tmp = tempfile.mkstemp(suffix=".gif", dir=path.parent)
    os.close(fd)
    try:
        images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=max(1, 1000 // fps),
                       loop=0)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
