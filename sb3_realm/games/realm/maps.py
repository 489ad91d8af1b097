"""Maps: the official JSON format, the shipped default map, world <-> grid geometry and BFS distance fields.

A map file is the competition's JSON ``{CellWidth: 500, Width: 128, Height: 128, Flags: [W*H ints]}`` (row-major,
``Flags[gz * Width + gx]``, 1 = walkable, 0 = obstacle) plus the 16 configured positions under
``positions_world_xz: {"0": [x, z], ..., "15": [x, z]}`` (id 0 speed buff, 1 end, 2 start, 3..15 treasure slots).
The competition ships the positions in a separate ``position_pool.json``; pass them with ``positions=`` if your map
file lacks them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from ...atomic import not_a_file

__all__ = [
    "BUFF_ID",
    "CELL_WIDTH",
    "GRID_ORIGIN_X",
    "GRID_ORIGIN_Z",
    "N_POSITIONS",
    "UNREACHABLE",
    "WORLD_SIZE",
    "MapError",
    "RealmMap",
    "bfs_distances",
    "default_map",
    "load_map",
    "map_from_dict",
    "same_map",
    "small_map",
]

CELL_WIDTH = 500  # world units per grid cell
GRID_ORIGIN_X = -2250  # world x of the grid's left edge: gx = (x + 2250) // 500
GRID_ORIGIN_Z = -5250  # world z of the grid's bottom edge: gz = (z + 5250) // 500
WORLD_SIZE = 64000  # norm_pos = world / 64000
N_POSITIONS = 16  # ids 0..15: 0 buff, 1 end (evaluation), 2 start (evaluation), 3..15 treasure slots
BUFF_ID = 0
MAX_GRID = 128
UNREACHABLE = 1 << 20  # BFS distance of a cell that cannot be reached


class MapError(ValueError):
    """A map file or map dictionary that cannot be used; the message names the value and the fix."""


def bfs_distances(walkable: np.ndarray, sources: Sequence[tuple[int, int]]) -> np.ndarray:
    """Exact 4-neighbour BFS distances (in cells) from each source cell ``(gx, gz)``.

    :param walkable: (H, W) bool, indexed ``[gz, gx]``.
    :param sources: cells ``(gx, gz)``; each must be walkable.
    :return: (len(sources), H, W) int32, ``UNREACHABLE`` where a cell cannot be reached (walls included).
    """
    h, w = walkable.shape
    n = len(sources)
    dist = np.full((n, h, w), UNREACHABLE, dtype=np.int32)
    if n == 0:
        return dist
    # Frontier expansion on all sources at once: every iteration grows each frontier by one ring.
    free = np.zeros((h + 2, w + 2), dtype=bool)
    free[1:-1, 1:-1] = walkable
    seen = np.zeros((n, h + 2, w + 2), dtype=bool)  # (n, H+2, W+2), padded so shifts never wrap
    frontier = np.zeros_like(seen)
    for i, (gx, gz) in enumerate(sources):
        frontier[i, gz + 1, gx + 1] = True
    frontier &= free
    seen |= frontier
    d = 0
    while frontier.any():
        dist[frontier[:, 1:-1, 1:-1]] = d
        grown = np.zeros_like(frontier)
        grown[:, 1:, :] |= frontier[:, :-1, :]
        grown[:, :-1, :] |= frontier[:, 1:, :]
        grown[:, :, 1:] |= frontier[:, :, :-1]
        grown[:, :, :-1] |= frontier[:, :, 1:]
        frontier = grown & free & ~seen
        seen |= frontier
        d += 1
    return dist


@dataclass(eq=False)
class RealmMap:
    """A loaded, validated map with its 16 positions and precomputed distance fields.

    :param walkable: (H, W) bool, ``walkable[gz, gx]``.
    :param positions_world: (16, 2) int64 world ``(x, z)`` of each position id.
    :param name: where the map came from (a path or ``"default"``).
    """

    walkable: np.ndarray  # (H, W) bool
    positions_world: np.ndarray  # (16, 2) int64, world (x, z)
    name: str = "custom"
    positions_grid: np.ndarray = field(init=False)  # (16, 2) int64, grid (gx, gz)
    distance_fields: np.ndarray = field(init=False)  # (16, H, W) int32, BFS cells from each position

    def __post_init__(self) -> None:
        self.walkable = np.ascontiguousarray(self.walkable, dtype=bool)
        self.positions_world = np.asarray(self.positions_world, dtype=np.int64).reshape(N_POSITIONS, 2)
        self.positions_grid = np.stack(
            [(self.positions_world[:, 0] - GRID_ORIGIN_X) // CELL_WIDTH, (self.positions_world[:, 1] - GRID_ORIGIN_Z)
             // CELL_WIDTH], axis=1
        )
        self._validate()
        self.distance_fields = bfs_distances(self.walkable, [tuple(p) for p in self.positions_grid])
        unreachable = [
            (i, j) for i in range(N_POSITIONS) for j in range(N_POSITIONS)
            if self.distance_fields[i, self.positions_grid[j, 1], self.positions_grid[j, 0]] >= UNREACHABLE
        ]
        if unreachable:
            raise MapError(
                f"map {self.name!r}: position pairs {unreachable[:5]} are not connected by walkable cells "
                "(4-neighbour); every position must be reachable from every other: open a corridor between them"
            )

    @property
    def height(self) -> int:
        return int(self.walkable.shape[0])

    @property
    def width(self) -> int:
        return int(self.walkable.shape[1])

    def _validate(self) -> None:
        h, w = self.walkable.shape
        for i, (gx, gz) in enumerate(self.positions_grid):
            x, z = self.positions_world[i]
            if not (0 <= gx < w and 0 <= gz < h):
                raise MapError(
                    f"map {self.name!r}: position {i} at world ({x}, {z}) is grid ({gx}, {gz}), outside the "
                    f"{w} x {h} grid; world x must be in [{GRID_ORIGIN_X}, {GRID_ORIGIN_X + w * CELL_WIDTH}) "
                    f"and z in [{GRID_ORIGIN_Z}, {GRID_ORIGIN_Z + h * CELL_WIDTH})"
                )
            if not self.walkable[gz, gx]:
                raise MapError(
                    f"map {self.name!r}: position {i} at world ({x}, {z}) = grid ({gx}, {gz}) is an obstacle; "
                    "move it onto a walkable cell (Flags value 1)"
                )
        cells = {tuple(p) for p in self.positions_grid.tolist()}
        if len(cells) != N_POSITIONS:
            raise MapError(f"map {self.name!r}: the 16 positions must lie on 16 different cells, got {len(cells)}")

    # geometry -----------------------------------------------------------------------------------------------
    @staticmethod
    def world_to_grid(x: float, z: float) -> tuple[int, int]:
        """World ``(x, z)`` -> grid ``(gx, gz)`` with the competition's formula."""
        return int((x - GRID_ORIGIN_X) // CELL_WIDTH), int((z - GRID_ORIGIN_Z) // CELL_WIDTH)

    @staticmethod
    def grid_to_world(gx: int, gz: int) -> tuple[int, int]:
        """Grid ``(gx, gz)`` -> world ``(x, z)`` of the cell centre."""
        return gx * CELL_WIDTH + GRID_ORIGIN_X + CELL_WIDTH // 2, gz * CELL_WIDTH + GRID_ORIGIN_Z + CELL_WIDTH // 2

    def is_walkable_world(self, x: float, z: float) -> bool:
        gx, gz = self.world_to_grid(x, z)
        return 0 <= gx < self.width and 0 <= gz < self.height and bool(self.walkable[gz, gx])

    def bfs_between(self, i: int, j: int) -> int:
        """4-neighbour BFS distance in cells between position ids ``i`` and ``j``."""
        gx, gz = self.positions_grid[j]
        return int(self.distance_fields[i, gz, gx])

    def to_dict(self) -> dict:
        """The map in the official JSON format plus ``positions_world_xz``."""
        return {
            "CellWidth": CELL_WIDTH,
            "Width": self.width,
            "Height": self.height,
            "Flags": self.walkable.astype(np.int64).ravel().tolist(),
            "positions_world_xz": {str(i): [int(v) for v in p] for i, p in enumerate(self.positions_world)},
        }


def _as_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise MapError(f"{what} must be an integer, got {value!r}")
    if not -2**31 <= int(value) < 2**31:
        raise MapError(f"{what} = {str(value)[:40]} is out of range; map values are world units or cell counts "
                       "(positions lie inside the map, e.g. [28500, 13000])")
    return int(value)


def _parse_positions(raw, name: str) -> np.ndarray:
    if isinstance(raw, Mapping):
        by_id = {str(k): v for k, v in raw.items()}
        if set(by_id) != {str(i) for i in range(N_POSITIONS)}:
            raise MapError(
                f"map {name!r}: positions must have exactly the ids 0..15, got ids {sorted(by_id)}; "
                "0 = speed buff, 1 = end, 2 = start, 3..15 = treasure slots"
            )
        items = [by_id[str(i)] for i in range(N_POSITIONS)]
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        items = list(raw)
        if len(items) != N_POSITIONS:
            raise MapError(f"map {name!r}: expected 16 positions (ids 0..15), got {len(items)}")
    else:
        raise MapError(f"map {name!r}: positions must be a dict {{'0': [x, z], ...}} or a list of 16 [x, z], got "
                       f"{type(raw).__name__}")
    out = np.zeros((N_POSITIONS, 2), dtype=np.int64)
    for i, p in enumerate(items):
        if not (isinstance(p, Sequence) and len(p) == 2):
            raise MapError(f"map {name!r}: position {i} must be [x, z] in world units, got {p!r}")
        out[i] = [_as_int(p[0], f"map {name!r}: position {i} x"), _as_int(p[1], f"map {name!r}: position {i} z")]
    return out


def map_from_dict(data: Mapping, positions=None, name: str = "custom") -> RealmMap:
    """Build a :class:`RealmMap` from the official JSON structure (already parsed).

    :param data: ``{CellWidth, Width, Height, Flags}`` and optionally ``positions_world_xz``.
    :param positions: the 16 positions (dict id -> [x, z] or a list of 16 [x, z]); overrides the file's.
    """
    if not isinstance(data, Mapping):
        raise MapError(f"map {name!r}: expected a JSON object with CellWidth, Width, Height, Flags; got "
                       f"{type(data).__name__}")
    for key in ("CellWidth", "Width", "Height", "Flags"):
        if key not in data:
            raise MapError(f"map {name!r}: missing key {key!r}; the official format is "
                           "{CellWidth: 500, Width: 128, Height: 128, Flags: [Width*Height ints]}")
    cw = _as_int(data["CellWidth"], f"map {name!r}: CellWidth")
    if cw != CELL_WIDTH:
        raise MapError(f"map {name!r}: CellWidth is {cw}, only {CELL_WIDTH} is supported (the game's cell size)")
    w = _as_int(data["Width"], f"map {name!r}: Width")
    h = _as_int(data["Height"], f"map {name!r}: Height")
    if not (8 <= w <= MAX_GRID and 8 <= h <= MAX_GRID):
        raise MapError(f"map {name!r}: Width x Height is {w} x {h}; each must be in 8..{MAX_GRID}")
    flags = data["Flags"]
    if not isinstance(flags, Sequence) or isinstance(flags, str):
        raise MapError(f"map {name!r}: Flags must be a list of {w * h} ints (0 obstacle, 1 walkable)")
    if len(flags) != w * h:
        raise MapError(f"map {name!r}: Flags has {len(flags)} values, expected Width*Height = {w * h}")
    arr = np.asarray(flags)
    if arr.dtype.kind not in "iub" or not np.isin(arr, (0, 1)).all():
        bad = [v for v in flags if v not in (0, 1)][:5]
        raise MapError(f"map {name!r}: Flags must contain only 0 (obstacle) and 1 (walkable), found {bad}")
    walkable = arr.astype(bool).reshape(h, w)  # row = gz, column = gx
    if positions is None:
        if "positions_world_xz" not in data:
            raise MapError(
                f"map {name!r} has no 'positions_world_xz'; add it to the file as "
                '{"0": [x, z], ..., "15": [x, z]} (world units; from the competition\'s position_pool.json) '
                "or pass positions=... to load_map"
            )
        positions = data["positions_world_xz"]
    return RealmMap(walkable=walkable, positions_world=_parse_positions(positions, name), name=name)


def load_map(path: str | os.PathLike, positions=None) -> RealmMap:
    """Load a map in the official JSON format (plus ``positions_world_xz``) from ``path``.

    Results are cached per (path, modification time), so many envs in one process share one map.
    """
    problem = not_a_file(path)
    if problem:
        raise MapError(f"map file {str(path)!r} {problem}; pass the path of a map JSON in the official format "
                       "(or map_path=None for the shipped default map)")
    p = Path(path).expanduser()
    if positions is not None:
        return _load_uncached(p, positions)
    return _load_cached(str(p.resolve()), p.stat().st_mtime_ns)


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int) -> RealmMap:
    return _load_uncached(Path(path), None)


def _load_uncached(p: Path, positions) -> RealmMap:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MapError(f"map file {str(p)!r} is not valid JSON ({exc}); expected the official map format") from exc
    return map_from_dict(data, positions=positions, name=str(p))


def same_map(a: RealmMap, b: RealmMap) -> bool:
    """Whether two maps have the same walls and the same 16 positions (their names aside)."""
    return (a.walkable.shape == b.walkable.shape and bool(np.array_equal(a.walkable, b.walkable))
            and bool(np.array_equal(a.positions_world, b.positions_world)))


@lru_cache(maxsize=1)
def default_map() -> RealmMap:
    """The package's own original 128 x 128 map (generated by ``tools/mapgen.py``)."""
    text = resources.files("sb3_realm.games.realm").joinpath("data/default_map.json").read_text(encoding="utf-8")
    return map_from_dict(json.loads(text), name="default")


@lru_cache(maxsize=1)
def small_map() -> RealmMap:
    """A 32 x 32 map for fast tests and early curriculum phases: one room with two wall blocks, 16 positions.

    Built in code, deterministic. Walls come in 2 x 2 blocks like the real map's.
    """
    n = 32
    walk = np.zeros((n, n), dtype=bool)
    walk[2:-2, 2:-2] = True  # a 28 x 28 room inside a 2-cell wall border
    walk[10:12, 6:20] = False  # a horizontal wall block (z 10..11, x 6..19)
    walk[20:22, 12:26] = False  # a second one (z 20..21, x 12..25)
    grid = [
        (16, 16),  # 0 buff
        (26, 26),  # 1 end
        (4, 4),  # 2 start
        (10, 4), (16, 4), (22, 4), (27, 5),
        (4, 15), (10, 15), (22, 15), (27, 14),
        (4, 26), (10, 25), (16, 27), (22, 26),
        (5, 21),
    ]
    positions = [RealmMap.grid_to_world(gx, gz) for gx, gz in grid]
    return RealmMap(walkable=walk, positions_world=np.array(positions), name="small")
