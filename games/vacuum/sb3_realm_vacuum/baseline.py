"""The official robot_vacuum baseline (code package 13.0.1, ``agent_ppo``), reproduced as a reference: its 69-number
observation with its quirks, its reward (the env's default reward weights) and its network and PPO settings, so that
its recipe can be trained with Stable-Baselines3 and scored on the same games as this package's agent
(``benchmarks/vacuum_baseline.py``).

The observation (docs/vacuum/rules.md, the official baseline): the 7 x 7 centre of ``map_info`` / 2 (49 numbers);
step / 2000, battery / battery_max, cells cleaned / total dirt and 1 minus it, x / 128, z / 128, four rays (N, E,
S, W: the distance to the first dirty cell of the view, capped at 30, / 30), the Euclidean distance to the nearest
dirty cell of the view / 180 (200 / 180 with none), 1 when that distance fell since the last step (12 numbers); the
legal actions (8 ones). The baseline reads the view transposed (``view[x][z]``) for its rays, which this keeps.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .rules import N_ACTIONS, VIEW_RADIUS

__all__ = ["OBSERVATION_SIZE", "PPO_SETTINGS", "BaselineEnv", "BaselineFeatures"]

OBSERVATION_SIZE = 49 + 12 + N_ACTIONS
#: the baseline's PPO (agent_ppo/conf/conf.py) as SB3's PPO arguments: its MLP 69 -> 128 -> 64 (ReLU) for the actor
#: and the critic (the baseline shares the two layers; SB3's default keeps them apart), lr 3e-4, GAE(0.99, 0.95),
#: clip 0.2, value coefficient 0.5, entropy 0.001, gradient clip 0.5
PPO_SETTINGS = {"learning_rate": 3e-4, "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2, "vf_coef": 0.5,
                "ent_coef": 0.001, "max_grad_norm": 0.5}
NET_ARCH = {"pi": [128, 64], "vf": [128, 64]}
_RAYS = ((0, -1), (1, 0), (0, 1), (-1, 0))  # N, E, S, W as (dx, dz)
_RAY_CAP = 30


class BaselineFeatures:
    """The baseline's preprocessor: one per episode (``reset`` at its start), ``encode`` once per observation."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.last_distance: float | None = None

    def encode(self, observation: dict) -> np.ndarray:
        """(69,) float32 of ``observation`` (``env_obs["observation"]``)."""
        view = np.asarray(observation["map_info"], dtype=np.float32)
        c = VIEW_RADIUS
        local = view[c - 3:c + 4, c - 3:c + 4].ravel() / 2.0
        info = observation["env_info"]
        hero = observation["frame_state"]["heroes"]
        battery_max = float(hero.get("battery_max") or info.get("battery_max") or 600)
        cleaned = float(info["clean_score"]) / max(1.0, float(info["total_dirt"]))
        rays = []
        for dx, dz in _RAYS:
            found = _RAY_CAP
            for k in range(1, c + 1):
                # the baseline's transposed reading: view[x][z]
                if view[c + dx * k, c + dz * k] == 2:
                    found = k
                    break
            rays.append(min(found, _RAY_CAP) / _RAY_CAP)
        rows, cols = np.nonzero(view == 2)
        distance = float(np.sqrt(((rows - c) ** 2 + (cols - c) ** 2).min())) if len(rows) else 200.0
        closer = 1.0 if self.last_distance is not None and distance < self.last_distance else 0.0
        self.last_distance = distance
        state = [float(info["step_no"]) / 2000.0, float(hero["battery"]) / battery_max, cleaned, 1.0 - cleaned,
                 float(hero["pos"]["x"]) / 128.0, float(hero["pos"]["z"]) / 128.0, *rays, distance / 180.0, closer]
        legal = [float(v) for v in observation.get("legal_action", [1] * N_ACTIONS)]
        return np.concatenate([local, np.asarray(state, np.float32), np.asarray(legal, np.float32)]).astype(
            np.float32)


class BaselineEnv(gym.Wrapper):
    """A :class:`~.env.VacuumEnv` whose observation is the baseline's 69 numbers (``Box(-1, 2, (69,))``); the
    reward stays the env's (by default the baseline's own)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = spaces.Box(-1.0, 2.0, (OBSERVATION_SIZE,), dtype=np.float32)
        self.features = BaselineFeatures()

    def _encode(self) -> np.ndarray:
        return self.features.encode(self.env.unwrapped.platform_obs()["observation"])

    def reset(self, **kwargs):
        _, info = self.env.reset(**kwargs)
        self.features.reset()
        return self._encode(), info

    def step(self, action):
        _, reward, terminated, truncated, info = self.env.step(action)
        return self._encode(), reward, terminated, truncated, info
