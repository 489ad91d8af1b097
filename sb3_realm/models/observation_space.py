"""A game's observation space as the extractors see it: its two Boxes checked (a ValueError shows a wrong space),
and ``VecFrameStack``'s stacked frames split back into per-frame tensors."""

from __future__ import annotations

import gymnasium as gym
import torch as th
from gymnasium import spaces

from .. import games

__all__ = ["check_stacked", "game_spaces", "realm_spaces", "split_frames"]

_EXPECTED = ("Dict(maps=Box(0, 255, (C, H, W), uint8), vector=Box(-1, 1, (N,), float32)) as the games' envs (RealmEnv, "
             "GorgeEnv) give")


def game_spaces(observation_space: gym.Space, who: str) -> tuple[spaces.Box, spaces.Box]:
    """The ``maps`` and ``vector`` Boxes of a game's observation space, or a ValueError that shows the space."""
    if isinstance(observation_space, spaces.Dict) and set(observation_space.spaces) == {"maps", "vector"}:
        maps, vector = observation_space["maps"], observation_space["vector"]
        if (isinstance(maps, spaces.Box) and len(maps.shape) == 3
                and isinstance(vector, spaces.Box) and len(vector.shape) == 1):
            return maps, vector
    raise ValueError(f"{who} needs the observation space {_EXPECTED}; got {observation_space}. Use it with "
                     "a game's env (RealmEnv, GorgeEnv; optionally under VecFrameStack) and the 'MultiInputPolicy'.")


#: the old name of :func:`game_spaces`, from when the package played only Back to the Realm; it checks any game's space
realm_spaces = game_spaces


def _frame_owners() -> dict[tuple[int, int], list[str]]:
    """``(map channels, vector size)`` of one frame -> the titles of the registered games whose observation it is."""
    owners: dict[tuple[int, int], list[str]] = {}
    for spec in games.GAMES.values():
        features = spec.submission.features
        owners.setdefault((int(features.MAP_SHAPE[0]), int(features.VECTOR_SIZE)), []).append(spec.title)
    return owners


def check_stacked(observation_space: gym.Space, n_frames: int, who: str) -> tuple[spaces.Box, spaces.Box]:
    """Like :func:`game_spaces`, and the sizes must be ``n_frames`` frames of a game stacked by ``VecFrameStack``."""
    maps, vector = game_spaces(observation_space, who)
    if not isinstance(n_frames, int) or n_frames < 1:
        raise ValueError(f"{who}: n_frames = {n_frames!r} must be an int >= 1 (the VecFrameStack n_stack)")
    if (maps.shape[0] // n_frames, vector.shape[0] // n_frames) in _frame_owners():
        return maps, vector  # n_frames frames of one of the games
    shapes = " or ".join(f"maps ({n_frames * c}, H, W) and vector ({n_frames * v},) ({', '.join(owners)})"
                         for (c, v), owners in _frame_owners().items())
    raise ValueError(
        f"{who}(n_frames={n_frames}) expects {n_frames} stacked frames of a game's observation: {shapes}; got "
        f"maps {maps.shape}, vector {vector.shape} in {observation_space}. Wrap the VecEnv with "
        f"VecFrameStack(venv, n_stack={n_frames}) (config: env.frame_stack) or set n_frames to its n_stack.")


def split_frames(maps: th.Tensor, vector: th.Tensor, n_frames: int) -> tuple[th.Tensor, th.Tensor]:
    """``VecFrameStack`` tensors -> per-frame tensors, oldest frame first.

    :param maps: (B, T * C, H, W) stacked maps.
    :param vector: (B, T * N) stacked vectors.
    :param n_frames: T.
    :return: maps (B, T, C, H, W) and vector (B, T, N); index ``T - 1`` is the newest frame.
    """
    b, tc, h, w = maps.shape
    return maps.reshape(b, n_frames, tc // n_frames, h, w), vector.reshape(b, n_frames, -1)
