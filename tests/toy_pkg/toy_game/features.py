"""The toy game's features (numpy only, as a game's features module must be): the model's observation of a state.

Maps ``(4, 5, 5)`` uint8: walls, treasures left and the exit (0 or 255, :data:`BINARY_LAYERS`), and the hero (0 or
255, stored by value). Vector ``(8,)`` float32 in [-1, 1]: the hero's x and z, the treasures left, the share of the
steps used, and a one-hot of the move the breadth-first search takes toward the next target (the nearest treasure
left, else the exit; ties to the lowest action): the move the BFS expert plays, so a small network clones it.
"""

from __future__ import annotations

from collections import deque

import numpy as np

FEATURE_VERSION = "1"
SIZE = 5
N_ACTIONS = 4
#: action a moves the hero by DIRECTIONS[a] = (dx, dz): east, north, west, south (z grows downward)
DIRECTIONS = ((1, 0), (0, -1), (-1, 0), (0, 1))
MAP_SHAPE = (4, SIZE, SIZE)
BINARY_LAYERS = (0, 1, 2)
VECTOR_SIZE = 8
UNREACHABLE = 10_000


def distances(walls: np.ndarray, goal: tuple[int, int]) -> np.ndarray:
    """(H, W) int: the fewest moves from each cell to ``goal`` (:data:`UNREACHABLE` where there is no way)."""
    out = np.full(walls.shape, UNREACHABLE, dtype=np.int64)
    gx, gz = goal
    out[gz, gx] = 0
    todo = deque([goal])
    while todo:
        x, z = todo.popleft()
        for dx, dz in DIRECTIONS:
            nx, nz = x + dx, z + dz
            if 0 <= nx < walls.shape[1] and 0 <= nz < walls.shape[0] and not walls[nz, nx] \
                    and out[nz, nx] == UNREACHABLE:
                out[nz, nx] = out[z, x] + 1
                todo.append((nx, nz))
    return out


def blocked(walls: np.ndarray, treasures, exit_cell: tuple[int, int]) -> np.ndarray:
    """The cells the search avoids: the walls, and the exit while a treasure is left (it would end the game)."""
    if not treasures:
        return walls
    out = walls.copy()
    out[exit_cell[1], exit_cell[0]] = True
    return out


def target(walls: np.ndarray, hero: tuple[int, int], treasures, exit_cell: tuple[int, int]) -> tuple[int, int]:
    """The next target: the nearest treasure left (the first listed among equals), else the exit."""
    if not treasures:
        return exit_cell
    hx, hz = hero
    avoid = blocked(walls, treasures, exit_cell)
    return min(treasures, key=lambda t: distances(avoid, t)[hz, hx])


def legal_moves(walls: np.ndarray, hero: tuple[int, int]) -> np.ndarray:
    """(4,) bool: the moves that stay on the grid and off the walls."""
    x, z = hero
    return np.array([0 <= x + dx < walls.shape[1] and 0 <= z + dz < walls.shape[0] and not walls[z + dz, x + dx]
                     for dx, dz in DIRECTIONS], dtype=bool)


def next_action(walls: np.ndarray, hero: tuple[int, int], treasures, exit_cell: tuple[int, int]) -> int:
    """The BFS move toward :func:`target`: the lowest action whose cell is one move nearer to it."""
    dist = distances(blocked(walls, treasures, exit_cell), target(walls, hero, treasures, exit_cell))
    x, z = hero
    legal = legal_moves(walls, hero)
    for a, (dx, dz) in enumerate(DIRECTIONS):
        if legal[a] and dist[z + dz, x + dx] < dist[z, x]:
            return a
    return int(np.flatnonzero(legal)[0])  # on the target already, or no way to it


def encode(walls: np.ndarray, hero: tuple[int, int], treasures, exit_cell: tuple[int, int], steps: int,
           max_step: int, max_treasures: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The observation ``(maps (4, 5, 5) uint8, vector (8,) float32)`` of a state."""
    maps = np.zeros(MAP_SHAPE, dtype=np.uint8)
    maps[0][walls] = 255
    for tx, tz in treasures:
        maps[1, tz, tx] = 255
    maps[2, exit_cell[1], exit_cell[0]] = 255
    maps[3, hero[1], hero[0]] = 255
    vector = np.zeros(VECTOR_SIZE, dtype=np.float32)
    vector[0] = hero[0] / (SIZE - 1)
    vector[1] = hero[1] / (SIZE - 1)
    vector[2] = len(treasures) / max(1, max_treasures)
    vector[3] = min(1.0, steps / max(1, max_step))
    vector[4 + next_action(walls, hero, treasures, exit_cell)] = 1.0
    return maps, vector
