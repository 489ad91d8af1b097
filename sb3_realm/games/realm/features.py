"""Competition observation -> model input, and the action mask. numpy only, self-contained.

This module is copied verbatim into competition submissions (the platform has torch and numpy only), so it imports
nothing from sb3_realm. Training and the submission run the same :func:`encode`:

- in the submission, :func:`arrays_from_competition` parses the platform's ``(obs, env_info)``;
- in training, the env builds the same three arrays straight from the game state (fast path); a test proves both
  give identical arrays on thousands of states.

Raw arrays (the competition's numbers, unnormalised):

- ``scalars`` (11,) float32, order :data:`SCALARS`;
- ``relative`` (18, 4) float32: RelativePosition rows (direction, l2_distance, path_distance, grid_distance) of the
  start, the end, the buff, then the 15 treasure slots (position ids 1..15);
- ``maps`` (4, 51, 51) uint8: obstacle (255 free), memory (visits * 51, capped at 255), treasure (255), end (255).

Model input: ``{"maps": uint8 (4, 51, 51), "vector": float32 (216,)}``. Vector layout (all values in [-1, 1]):

=========  ==============================================================================================
index      meaning
=========  ==============================================================================================
0, 1       norm_pos x, z (world / 64000)
2, 3       grid_pos x, z / 128
4, 5       talent ready (0/1), talent cooldown / 600 (clipped to 1)
6, 7, 8    speed_up (0/1), buff_remain_time / 50 (clipped), buff available (0/1)
9, 10, 11  step_no / 2000, treasures collected / 13, treasures still available / 13 (clipped)
12..215    17 targets x 12: end, buff, treasure slots ids 1..15; per target: present (0/1),
           direction one-hot (8: E, NE, N, NW, W, SW, S, SE; all 0 when absent), l2 bucket / 5,
           path bucket / 5, grid_distance (clipped to 1)
=========  ==============================================================================================

The four maps may come as the platform's flat ``repeated`` fields of 2601 values (row by row) or as 51 x 51 arrays.
:func:`arrays_from_competition` rejects out-of-range directions (0..8) and buckets (1..5) with a ``ValueError``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BINARY_LAYERS",
    "FEATURE_VERSION",
    "MAP_SHAPE",
    "N_ACTIONS",
    "N_RELATIVE",
    "SCALARS",
    "VECTOR_SIZE",
    "action_mask",
    "arrays_from_competition",
    "encode",
    "episode_start",
    "observation_to_model_input",
]

# "1": the buff's row kept its position after a pickup; "2": null while the buff is taken, as on the platform
FEATURE_VERSION = "2"
SCALARS = (
    "norm_x", "norm_z", "grid_x", "grid_z", "talent_ready", "talent_cooldown", "speed_up", "buff_remain",
    "buff_available", "step_no", "treasure_count",
)
N_RELATIVE = 18  # start, end, buff, 15 treasure slots
N_TARGETS = 17  # end, buff, 15 treasure slots
PER_TARGET = 12
N_HEAD = 12
VECTOR_SIZE = N_HEAD + N_TARGETS * PER_TARGET  # 216
MAP_SHAPE = (4, 51, 51)
BINARY_LAYERS = (0, 2, 3)  # map channels that hold only 0 or 255: obstacle, treasure, end
N_ACTIONS = 16

GRID_NORM = 128.0
COOLDOWN_NORM = 600.0
BUFF_NORM = 50.0
STEP_NORM = 2000.0
TREASURE_NORM = 13.0
NULL_RELATIVE = (0.0, 5.0, 5.0, 1.0)

_DIR_ONEHOT = np.eye(9, dtype=np.float32)[:, 1:]  # (9, 8): row 0 (no direction) is all zeros
# window offsets (row, col) of the cell next to the centre in each move direction; row + 1 = +z, col + 1 = +x
_CARDINAL = {0: (0, 1), 2: (1, 0), 4: (0, -1), 6: (-1, 0)}
_DIAGONAL = {1: (0, 2), 3: (2, 4), 5: (4, 6), 7: (6, 0)}  # diagonal -> its two cardinal components


def _target_table() -> np.ndarray:
    """(9 * 6 * 6, 11) float32 row per (direction, l2 bucket, path bucket) code: present, direction one-hot (8),
    l2 bucket / 5, path bucket / 5. The competition's null (0, 5, 5) is the one absent code."""
    table = np.zeros((9 * 6 * 6, 11), dtype=np.float32)
    for d in range(9):
        for l2 in range(6):
            for path in range(6):
                row = table[d * 36 + l2 * 6 + path]
                row[0] = 0.0 if (d, l2, path) == (0, 5, 5) else 1.0
                row[1:9] = _DIR_ONEHOT[d]
                row[9], row[10] = l2 * 0.2, path * 0.2
    return table


_TARGET_TABLE = _target_table()
# scale of each scalar in the vector head (order of SCALARS); values are then clipped to [-1, 1]
_HEAD_SCALE = np.array([1.0, 1.0, 1 / GRID_NORM, 1 / GRID_NORM, 1.0, 1 / COOLDOWN_NORM, 1.0, 1 / BUFF_NORM, 1.0,
                        1 / STEP_NORM, 1 / TREASURE_NORM], dtype=np.float32)
_CODE_WEIGHTS = np.array([36.0, 6.0, 1.0, 0.0], dtype=np.float32)  # (direction, l2, path, grid) -> table row


def encode(scalars: np.ndarray, relative: np.ndarray, maps: np.ndarray) -> dict[str, np.ndarray]:
    """Raw arrays -> ``{"maps": uint8 (4, 51, 51), "vector": float32 (216,)}`` (layout in the module docstring).

    A target is absent when its RelativePosition is the competition's null (direction 0, both buckets 5; a real
    target never has it since direction 0 means the same cell, bucket 1). The buff's row is null while the buff is
    taken (the platform builds ``buff_pos`` only while its organ's status is 1).
    """
    rel = relative[1:]  # (17, 4): end, buff, treasure slots
    code = rel.dot(_CODE_WEIGHTS).astype(np.intp)  # (17,) code of (direction, l2, path)
    vec = np.empty(VECTOR_SIZE, dtype=np.float32)
    np.multiply(scalars, _HEAD_SCALE, out=vec[:11])  # the head follows the order of SCALARS
    np.minimum(vec[:11], 1.0, out=vec[:11])
    np.maximum(vec[:2], -1.0, out=vec[:2])  # only norm_pos can be negative
    block = vec[N_HEAD:].reshape(N_TARGETS, PER_TARGET)  # (17, 12) view into vec
    block[:, :11] = _TARGET_TABLE.take(code, axis=0)
    np.minimum(rel[:, 3], 1.0, out=block[:, 11])
    vec[11] = min(float(block[2:, 0].sum()) / TREASURE_NORM, 1.0)
    return {"maps": maps, "vector": vec}


def _get(obj, name):
    """Attribute access that also accepts dicts (the platform's objects may be either)."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _rel_row(rp) -> tuple[float, float, float, float]:
    return (float(_get(rp, "direction")), float(_get(rp, "l2_distance")), float(_get(rp, "path_distance")),
            float(_get(rp, "grid_distance")))


def _window(values, scale: float) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(MAP_SHAPE[1:])
    return np.rint(np.clip(arr * scale, 0, 255)).astype(np.uint8)


def _is_null(rp) -> bool:
    return int(_get(rp, "direction")) == 0 and int(_get(rp, "l2_distance")) == 5 and \
        int(_get(rp, "path_distance")) == 5


def episode_start(env_info) -> bool:
    """True for the first observation of an episode: ``env.reset`` gives no ``env_info`` (None), or step_no is 0."""
    return env_info is None or int(_get(_get(env_info, "game_info"), "step_no")) == 0


def arrays_from_competition(obs, env_info=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse the competition's ``(obs, env_info)`` into the raw ``(scalars, relative, maps)`` arrays.

    ``env_info`` is None for the observation of ``env.reset`` (the platform's loop has none yet): the scalars it
    would hold are then those of an episode's start (step 0, nothing collected, no speed-up, talent cooldown 0), and
    the buff is available when ``buff_pos`` is not null.
    """
    f = _get(obs, "feature")
    legal = _get(obs, "legal_act")
    norm, grid = _get(f, "norm_pos"), _get(f, "grid_pos")
    if env_info is None:
        cooldown, speed_up, buff_remain, step_no, treasures = 0.0, 0.0, 0.0, 0.0, 0.0
        buff_status = int(not _is_null(_get(f, "buff_pos")))
    else:
        hero = _get(_get(env_info, "frame_state"), "heroes")[0]
        info = _get(env_info, "game_info")
        cooldown, speed_up = _get(_get(hero, "talent"), "cooldown"), float(_get(hero, "speed_up") != 0)
        buff_remain, step_no, treasures = (_get(info, "buff_remain_time"), _get(info, "step_no"),
                                           _get(info, "treasure_count"))
        buff_status = 0
        for organ in _get(_get(env_info, "frame_state"), "organs"):
            if int(_get(organ, "sub_type")) == 2:
                buff_status = int(_get(organ, "status") == 1)
    scalars = np.array(
        [_get(norm, "x"), _get(norm, "z"), _get(grid, "x"), _get(grid, "z"), float(legal[1] != 0), cooldown,
         speed_up, buff_remain, buff_status, step_no, treasures],
        dtype=np.float32,
    )
    rows = [_get(f, "start_pos"), _get(f, "end_pos"), _get(f, "buff_pos"), *_get(f, "treasure_pos")]
    if len(rows) != N_RELATIVE:
        raise ValueError(f"obs.feature.treasure_pos must have 15 entries (position ids 1..15), got {len(rows) - 3}")
    relative = np.array([_rel_row(r) for r in rows], dtype=np.float32)
    bad = (relative[:, 0] < 0) | (relative[:, 0] > 8) | (relative[:, 1:3] < 1).any(1) | (relative[:, 1:3] > 5).any(1)
    bad |= (relative[:, :3] != np.floor(relative[:, :3])).any(1) | ~np.isfinite(relative[:, 3])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        name = ("start_pos", "end_pos", "buff_pos")[i] if i < 3 else f"treasure_pos[{i - 3}]"
        raise ValueError(f"obs.feature.{name} = {relative[i].tolist()} is out of range: direction must be an int in "
                         "0..8, l2_distance and path_distance ints in 1..5, grid_distance finite")
    maps = np.stack([
        _window(_get(f, "obstacle_map"), 255.0), _window(_get(f, "memory_map"), 255.0),
        _window(_get(f, "treasure_map"), 255.0), _window(_get(f, "end_map"), 255.0),
    ])
    return scalars, relative, maps


def action_mask(talent_ready: bool, obstacle_window: np.ndarray | None = None, mask_walls: bool = False) -> np.ndarray:
    """(16,) bool legal actions: moves 0..7 always (optionally not straight into an adjacent wall), flashes 8..15
    only when the talent is ready.

    :param talent_ready: ``legal_act[1]`` of the observation.
    :param obstacle_window: (51, 51) obstacle map (non-zero = free), needed when ``mask_walls``.
    :param mask_walls: forbid a cardinal move into an adjacent wall cell and a diagonal move whose two cardinal
        neighbours are both walls (the hero could only bump). If that would forbid every move, all moves stay legal.
    """
    mask = np.zeros(N_ACTIONS, dtype=bool)
    mask[:8] = True
    mask[8:] = bool(talent_ready)
    if mask_walls:
        if obstacle_window is None:
            raise ValueError("action_mask(mask_walls=True) needs the obstacle window (obs.feature.obstacle_map)")
        c = obstacle_window.shape[0] // 2
        free = {k: obstacle_window[c + dr, c + dc] != 0 for k, (dr, dc) in _CARDINAL.items()}
        moves = np.array([free[k] if k in free else free[_DIAGONAL[k][0]] or free[_DIAGONAL[k][1]] for k in range(8)])
        if moves.any():
            mask[:8] = moves
    return mask


def observation_to_model_input(obs, env_info=None,
                               mask_walls: bool = False) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The submission's whole transform: competition ``(obs, env_info)`` -> (model input, action mask)."""
    scalars, relative, maps = arrays_from_competition(obs, env_info)
    return encode(scalars, relative, maps), action_mask(scalars[4] > 0, maps[0], mask_walls)
