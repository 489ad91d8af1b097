"""The Gymnasium env: a thin adapter around :class:`~sb3_realm.games.realm.core.Game`."""

from __future__ import annotations

import operator
from collections.abc import Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .core import Game
from .features import MAP_SHAPE, N_ACTIONS, VECTOR_SIZE, action_mask, encode
from .maps import RealmMap, default_map, load_map, small_map
from .observation import EnvInfo, Observation, competition_observation
from .render import render_frame
from .rewards import TERMS, RewardWeights, potential, progress_spacing, reward_terms
from .rules import EpisodeConfig, Rules

__all__ = ["BUILTIN_MAPS", "ENV_IDS", "RealmEnv", "env_spaces"]

BUILTIN_MAPS = {"default": default_map, "small": small_map}
# id -> kwargs. Realm-v0 is the competition game on the shipped default map (leaderboard usr_conf by default);
# RealmSmall-v0 is a 32 x 32 map with 3 treasures and 300 steps, for tests and early curriculum phases.
ENV_IDS = {
    "sb3_realm/Realm-v0": {},
    "sb3_realm/RealmSmall-v0": {"map_name": "small", "treasure_num": 3, "max_step": 300},
}


def env_spaces() -> tuple[spaces.Dict, spaces.Discrete]:
    """The env's observation and action spaces (those of every map)."""
    observation = spaces.Dict({
        "maps": spaces.Box(0, 255, MAP_SHAPE, dtype=np.uint8),
        "vector": spaces.Box(-1.0, 1.0, (VECTOR_SIZE,), dtype=np.float32),
    })
    return observation, spaces.Discrete(N_ACTIONS)


def _resolve_map(map_path, map_name: str) -> RealmMap:
    if isinstance(map_path, RealmMap):
        return map_path
    if map_path is not None:
        return load_map(map_path)
    if map_name not in BUILTIN_MAPS:
        raise ValueError(f"map_name={map_name!r} is not a built-in map; choose one of {sorted(BUILTIN_MAPS)} "
                         "or pass map_path=PATH to a map JSON")
    return BUILTIN_MAPS[map_name]()


class RealmEnv(gym.Env):
    """Back to the Realm as a Gymnasium env.

    Observation: ``Dict(maps=Box(0, 255, (4, 51, 51), uint8), vector=Box(-1, 1, (216,), float32))`` from
    :mod:`.features`. Action: ``Discrete(16)`` (``a % 8`` direction, ``a // 8`` flash); the legal ones come
    from :meth:`action_masks` (MaskablePPO). Reward: ``sum(weight * term)`` over :data:`~.rewards.TERMS`.

    ``info["reward_terms"]`` holds every term of the step; at the end of an episode ``info`` also has the competition
    ``score``, ``win``, ``treasures``, ``treasures_missed``, ``steps``, ``flash_used``, ``flash_failed``,
    ``buff_used`` and ``bumps``.

    :param map_path: a map JSON in the official format (with ``positions_world_xz``), or None for a built-in map.
    :param reward_weights: :class:`RewardWeights` or a dict of weights (missing keys keep their defaults).
    :param render_mode: None or ``"rgb_array"``.
    :param rules: :class:`Rules` or a dict of rule overrides.
    :param map_name: built-in map used when ``map_path`` is None: ``"default"`` or ``"small"``.
    :param mask_wall_moves: :meth:`action_masks` also forbids moves straight into an adjacent wall.
    :param config: the competition's ``usr_conf`` keys (``start``, ``end``, ``treasure_random``, ``treasure_num``,
        ``treasure_id``, ``talent_type``, ``max_step``); ``reset(options=usr_conf)`` overrides them for one episode.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012 - gymnasium.Env declares it so

    def __init__(
        self,
        map_path=None,
        reward_weights: RewardWeights | Mapping | None = None,
        render_mode: str | None = None,
        *,
        rules: Rules | Mapping | None = None,
        map_name: str = "default",
        mask_wall_moves: bool = False,
        **config,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None or 'rgb_array'")
        self.render_mode = render_mode
        self.rules = rules if isinstance(rules, Rules) else Rules.from_dict(rules or {})
        self.game_map = _resolve_map(map_path, map_name)
        self.base_config = EpisodeConfig.from_usr_conf(config)
        self.reward_weights = self._weights(reward_weights)
        self.mask_wall_moves = bool(mask_wall_moves)
        self.game = Game(self.game_map, self.rules)
        self._spacing = progress_spacing(self.game_map)
        self.observation_space, self.action_space = env_spaces()
        self._phi = 0.0
        self._episode_terms = [0.0] * len(TERMS)
        self._episode_weighted = [0.0] * len(TERMS)

    @staticmethod
    def _weights(w) -> RewardWeights:
        return w if isinstance(w, RewardWeights) else RewardWeights.from_dict(w)

    # ------------------------------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: Mapping | None = None):
        config = EpisodeConfig.from_usr_conf(options, base=self.base_config)  # validate before touching state
        super().reset(seed=seed)
        self.game.reset(config, config.draw_treasures(self.np_random))
        self._phi = potential(self.game, self._spacing)
        self._episode_terms = [0.0] * len(TERMS)
        self._episode_weighted = [0.0] * len(TERMS)
        return self._obs(), {"treasure_ids": list(self.game.treasure_ids), "usr_conf": config.to_usr_conf()}

    def step(self, action):
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        ev = self.game.step(action)
        g = self.game
        phi = potential(g, self._spacing)
        terms = reward_terms(g, ev, self._phi, phi)
        self._phi = phi
        self._episode_terms = list(map(operator.add, self._episode_terms, terms))
        weighted = list(map(operator.mul, self._weight_list, terms))
        self._episode_weighted = list(map(operator.add, self._episode_weighted, weighted))
        reward = float(sum(weighted))
        info = {"reward_terms": dict(zip(TERMS, terms))}  # noqa: B905 (same length by construction; hot path)
        if g.terminated or g.truncated:
            info.update(self.episode_summary())
        return self._obs(), reward, g.terminated, g.truncated, info

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        return render_frame(self.game)

    # ------------------------------------------------------------------------------------------ extras
    @property
    def reward_weights(self) -> RewardWeights:
        return self._reward_weights

    @reward_weights.setter
    def reward_weights(self, value) -> None:
        self._reward_weights = self._weights(value)
        self._weight_list = self._reward_weights.as_list()

    def set_reward_weights(self, weights: RewardWeights | Mapping) -> None:
        """Replace the reward weights (callable through ``VecEnv.env_method``)."""
        self.reward_weights = weights

    def set_config(self, **usr_conf) -> None:
        """Change the default episode configuration from the next reset on (for curricula via ``env_method``)."""
        self.base_config = EpisodeConfig.from_usr_conf(usr_conf, base=self.base_config)

    def action_masks(self, mask_walls: bool | None = None) -> np.ndarray:
        """(16,) bool legal actions for MaskablePPO; ``mask_walls`` overrides the env's ``mask_wall_moves`` (a model
        plays with the mask it was trained with)."""
        walls = self.mask_wall_moves if mask_walls is None else bool(mask_walls)
        return action_mask(self.game.talent_ready(), self.game.window[0], walls)

    def raw_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The features module's raw ``(scalars, relative, maps)`` straight from the game state."""
        g = self.game
        scalars = np.array(g.status(), dtype=np.float32)
        return scalars, g.relative(), g.window

    def competition_obs(self) -> tuple[Observation, EnvInfo]:
        """The current state as the competition's ``(obs, env_info)``."""
        return competition_observation(self.game)

    def episode_summary(self) -> dict:
        """Competition metrics of the current episode (complete once it is over)."""
        g = self.game
        return {
            "score": g.score(),
            "win": g.win,
            "treasure_ids": list(g.treasure_ids),
            "treasures": g.treasure_count,
            "treasures_missed": g.available_treasures,
            "steps": g.step_no,
            "flash_used": g.talent_count,
            "flash_failed": g.flash_fail_count,
            "buff_used": g.buff_count,
            "bumps": g.bump_count,
            "episode_reward_terms": dict(zip(TERMS, self._episode_terms, strict=True)),
            # each term's contribution to the episode's return: weight x term, summed over the steps
            "episode_reward_by_term": dict(zip(TERMS, self._episode_weighted, strict=True)),
        }

    def _obs(self) -> dict[str, np.ndarray]:
        return encode(*self.raw_arrays())
