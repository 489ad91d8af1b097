"""The Gymnasium env of robot_vacuum: a thin adapter around :class:`~sb3_realm_vacuum.core.VacuumGame` whose
observation is :func:`.features.encode` of the platform's observation (:func:`.observation.env_obs`), what a
package's Agent computes from the same dict; with ``observation="raw"``, the platform's own view as arrays
(:func:`raw_observation`), without the planner."""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import features
from .core import VacuumGame
from .maps import VacuumMap, load_map, maps_folder_map, shipped_map
from .observation import agent_observation, env_obs, view_codes
from .protocols import SHIPPED_MAPS
from .render import render_frame
from .rewards import TERMS, RewardWeights, reward_terms
from .rules import DIRECTIONS, N_ACTIONS, SIZE, VIEW_RADIUS, Rules, VacuumConfig, can_move

__all__ = ["OBSERVATIONS", "VacuumEnv", "env_spaces", "raw_observation"]

OBSERVATIONS = ("features", "raw")
MAX_NPCS = 4
MAX_CHARGERS = 4
_OPEN_MAP = re.compile(r"(?:robot_vacuum_map_|room_grid_map_|map)(\d+)\.json$")
_VIEW = 2 * VIEW_RADIUS + 1


def env_spaces(observation: str = "features") -> tuple[spaces.Dict, spaces.Discrete]:
    """The env's observation and action spaces (the same on every map): the features' ``maps`` and ``vector``, or
    with ``observation="raw"`` the platform's view (:func:`raw_observation`)."""
    if observation == "raw":
        big = 1 << 16
        return spaces.Dict({
            "map_info": spaces.Box(0, 2, (_VIEW, _VIEW), dtype=np.uint8),
            "hero": spaces.Box(0, big, (5,), dtype=np.int32),
            "npcs": spaces.Box(-1, SIZE, (MAX_NPCS, 3), dtype=np.int32),
            "chargers": spaces.Box(0, SIZE, (MAX_CHARGERS, 3), dtype=np.int32),
            "env_info": spaces.Box(0, big, (4,), dtype=np.int32),
        }), spaces.Discrete(N_ACTIONS)
    return spaces.Dict({
        "maps": spaces.Box(0, 255, features.MAP_SHAPE, dtype=np.uint8),
        "vector": spaces.Box(-1.0, 1.0, (features.VECTOR_SIZE,), dtype=np.float32),
    }), spaces.Discrete(N_ACTIONS)


def raw_observation(game: VacuumGame, rules: Rules | None = None) -> dict[str, np.ndarray]:
    """The platform's observation as arrays: ``map_info`` (21 x 21 codes 0 obstacle, 1 clean, 2 dirty),
    ``hero`` (x, z, battery, battery_max, cells cleaned), ``npcs`` (per official robot: in view, x, z; out of view
    -1, -1 unless the rules give every position), ``chargers`` (per charger: present, x, z of its centre) and
    ``env_info`` (step, max_step, total dirt, charges)."""
    rules = rules if rules is not None else game.rules
    npcs = np.zeros((MAX_NPCS, 3), dtype=np.int32)
    for j, (x, z) in enumerate(game.npcs[:MAX_NPCS]):
        seen = max(abs(x - game.x), abs(z - game.z)) <= VIEW_RADIUS
        npcs[j] = (1, x, z) if seen or not rules.npcs_in_view_only else (0, -1, -1)
    chargers = np.zeros((MAX_CHARGERS, 3), dtype=np.int32)
    for j, (x, z) in enumerate(game.chargers[:MAX_CHARGERS]):
        chargers[j] = (1, x, z)
    return {"map_info": view_codes(game).astype(np.uint8),
            "hero": np.array([game.x, game.z, game.battery, game.config.battery_max, game.clean_score], np.int32),
            "npcs": npcs, "chargers": chargers,
            "env_info": np.array([game.step_no, game.config.max_step, game.total_dirt, game.charge_count], np.int32)}


def _map_id(name: str) -> int:
    if name.startswith("open_") and name[5:].isdigit():
        return int(name[5:])
    found = _OPEN_MAP.search(name)
    return int(found.group(1)) if found else 0


class VacuumEnv(gym.Env):
    """robot_vacuum as a Gymnasium env.

    Observation (``observation="features"``, the default): ``Dict(maps=Box(0, 255, MAP_SHAPE, uint8),
    vector=Box(-1, 1, (VECTOR_SIZE,), float32))`` of :mod:`.features`, which runs the observation-only planner each
    step; with ``observation="raw"`` the platform's own view (:func:`raw_observation`) at the simulator's speed.
    Action: ``Discrete(8)`` moves; :meth:`action_masks` masks the moves into obstacles (the view shows every
    neighbour). Reward: ``sum(weight * term)`` over :data:`~.rewards.TERMS` (default: the official baseline's).

    Each episode plays one map, drawn with ``self.np_random`` from ``map_path``, else ``map_names``, else
    ``map_name``; ``reset(options={"map_name": name})`` plays ``name`` for that episode. A name is a shipped map
    (``own_1`` .. ``own_10``, ``standin_1`` .. ``standin_5``, ``default`` = ``own_1``), an open map ``open_<k>`` read
    from ``maps_dir``, or a path to a map file.

    :param usr_conf: the keys of :class:`~sb3_realm_vacuum.rules.VacuumConfig` (``robot_count``, ``charger_count``,
        ``max_step``, ``battery_max``, ``map``, ``map_random``); ``reset(options=usr_conf)`` overrides them for one
        episode.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012 - gymnasium.Env declares it so

    def __init__(self, *, map_path: str | os.PathLike | None = None, map_name: str = "default",
                 map_names: Sequence[str] | None = None, maps_dir: str | os.PathLike | None = None,
                 reward_weights: RewardWeights | Mapping | None = None, render_mode: str | None = None,
                 rules: Rules | Mapping | None = None, observation: str = "features", model_input: bool = True,
                 **usr_conf: Any) -> None:
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation = {observation!r} is not an observation of the env; pass 'features' (the "
                             "model input, with the planner) or 'raw' (the platform's own view, without it)")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode = {render_mode!r} is not supported; use None or 'rgb_array'")
        if isinstance(rules, Mapping):
            rules = Rules.from_dict(rules)
        if rules is not None and not isinstance(rules, Rules):
            raise ValueError(f"rules = {rules!r} is not a Rules; pass Rules(...), a dict of its fields, or leave it "
                             "out")
        if isinstance(map_names, str) or (map_names is not None and (
                not isinstance(map_names, Sequence) or not map_names)):
            raise ValueError(f"map_names = {map_names!r}; pass a non-empty list of map names or paths, e.g. "
                             "['own_1', 'own_2']")
        self.render_mode = render_mode
        self.rules = rules if rules is not None else Rules()
        self.maps_dir = Path(maps_dir).expanduser() if maps_dir is not None else None
        if self.maps_dir is not None and not self.maps_dir.is_dir():
            raise ValueError(f"maps_dir = {str(maps_dir)!r} is not a folder; pass the folder of "
                             "robot_vacuum_map_<k>.json")
        self.base_config = VacuumConfig.from_usr_conf(usr_conf)
        if map_path is not None:
            self.map_names: tuple[str, ...] = (os.fspath(map_path),)
        elif map_names is not None:
            self.map_names = tuple(str(n) for n in map_names)
        else:
            self.map_names = (map_name,)
        self._maps: dict[str, VacuumMap] = {}
        for name in self.map_names:
            self._load(name)  # fail on a bad name now, not at the first reset
        self.reward_weights = reward_weights
        self.observation = observation
        self.observation_space, self.action_space = env_spaces(observation)
        self.model_input = bool(model_input)
        self.game: VacuumGame | None = None
        self.map = ""
        self.map_id = 0
        self.features = features.FeatureState()
        self._observation: dict | None = None
        self._episode_terms = [0.0] * len(TERMS)

    # ------------------------------------------------------------------------------------------ maps
    def _load(self, name: str) -> VacuumMap:
        if name in self._maps:
            return self._maps[name]
        if name == "default" or name in SHIPPED_MAPS:
            game_map = shipped_map(SHIPPED_MAPS[0] if name == "default" else name)
        elif name.startswith("open_") and name[5:].isdigit():
            if self.maps_dir is None:
                raise ValueError(f"map {name!r} is an open map, read from the folder of the platform's maps: pass "
                                 f"maps_dir=FOLDER holding robot_vacuum_map_{name[5:]}.json (sb3-realm eval: "
                                 "--maps-dir FOLDER; a training config: --set env.maps_dir=FOLDER; or set "
                                 "SB3_REALM_VACUUM_MAPS=FOLDER)")
            game_map = maps_folder_map(self.maps_dir, int(name[5:]))
        elif name.endswith((".json", ".json.gz")):
            game_map = load_map(name)
        else:
            raise ValueError(f"map {name!r} is neither a shipped map ({['default', *SHIPPED_MAPS]}), an open map "
                             "'open_<k>' (with maps_dir) nor a path to a .json map file")
        self._maps[name] = game_map
        return game_map

    @property
    def game_map(self) -> VacuumMap:
        """The map of the current episode (before the first reset: the first configured map)."""
        return self.game.game_map if self.game is not None else self._load(self.map_names[0])

    # ------------------------------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: Mapping | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        map_name = options.pop("map_name", None)
        config = VacuumConfig.from_usr_conf(options, base=self.base_config) if options else self.base_config
        if map_name is None:
            names = self.map_names
            map_name = names[0] if len(names) == 1 else names[int(self.np_random.integers(len(names)))]
        self.map = str(map_name)
        self.map_id = _map_id(self.map)
        self.game = VacuumGame(self._load(self.map), config, self.np_random, self.rules)
        self.features.reset()
        self._episode_terms = [0.0] * len(TERMS)
        return self._observe(), {"map": self.map, "usr_conf": config.to_usr_conf()}

    def step(self, action: Any):
        game = self._game()
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        battery = game.battery
        cleaned = game.step(action)
        terms = reward_terms(game, cleaned, battery)
        self._episode_terms = list(map(operator.add, self._episode_terms, terms))
        reward = float(sum(map(operator.mul, self._weights, terms)))
        info: dict[str, Any] = {"reward_terms": dict(zip(TERMS, terms, strict=True))}
        if game.done:
            info.update(self.episode_summary())
        return self._observe(), reward, game.terminated, game.truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return render_frame(self._game())

    # ------------------------------------------------------------------------------------------ extras
    @property
    def reward_weights(self) -> RewardWeights:
        return self._reward_weights

    @reward_weights.setter
    def reward_weights(self, value: RewardWeights | Mapping | None) -> None:
        self._reward_weights = value if isinstance(value, RewardWeights) else RewardWeights.from_dict(value)
        self._weights = self._reward_weights.as_list()

    def set_reward_weights(self, weights: RewardWeights | Mapping) -> None:
        """Replace the reward weights (callable through ``VecEnv.env_method``)."""
        self.reward_weights = weights

    def set_config(self, **usr_conf: Any) -> None:
        """Change the default episode configuration from the next reset on (through ``VecEnv.env_method``)."""
        self.base_config = VacuumConfig.from_usr_conf(usr_conf, base=self.base_config)

    def action_masks(self, mask_walls: bool | None = None) -> np.ndarray:
        """(8,) bool: the moves that move the robot (into a road cell, not cutting a corner); the view shows every
        neighbour, so an agent knows them. ``mask_walls`` is the Realm's option, ignored."""
        del mask_walls
        game = self._game()
        return np.array([can_move(game.walkable, game.x, game.z, dx, dz) for dx, dz in DIRECTIONS], dtype=bool)

    def platform_obs(self) -> dict:
        """The current state as the platform's ``env_obs`` dict (docs/vacuum/rules.md), built on demand."""
        return env_obs(self._game(), self.map_id)

    def competition_obs(self):
        return self._observe(), {}

    def episode_summary(self) -> dict:
        """The competition's figures of the current episode (complete once it is over)."""
        game = self._game()
        end = game.fail_reason or ("completed" if game.truncated else "running")
        return {"score": float(game.clean_score), "steps": int(game.step_no), "end": end,
                "charges": int(game.charge_count), "coverage": game.clean_score / max(1, game.total_dirt),
                "npc_cleaned": int(game.npc_cleaned), "blocked": int(game.blocked), "map": self.map,
                "episode_reward_terms": dict(zip(TERMS, self._episode_terms, strict=True))}

    def _game(self) -> VacuumGame:
        if self.game is None:
            raise ValueError("the env has no episode yet; call env.reset() first")
        return self.game

    def _observe(self) -> dict[str, np.ndarray]:
        game = self._game()
        if self.observation == "raw":
            return raw_observation(game, self.rules)
        if not self.model_input:
            return {"maps": np.zeros(features.MAP_SHAPE, np.uint8),
                    "vector": np.zeros(features.VECTOR_SIZE, np.float32)}
        self._observation = agent_observation(game)  # the agent's part of env_obs; extra_info is not built
        maps, vector = features.encode(self._observation, self.features)
        return {"maps": maps, "vector": vector}
