"""The Gymnasium env of Gorge Chase: a thin adapter around :class:`~sb3_realm.games.gorge.core.Game` whose observation
is :func:`.features.encode` of the platform's observation (:func:`~sb3_realm.games.gorge.observation.env_obs`): what
the submission's Agent computes from the same dict; with ``observation="raw"``, :func:`.raw.encode` of that dict
instead: the platform's own view as arrays, without the planner."""

from __future__ import annotations

import gzip
import json
import math
import operator
import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import raw
from .core import FAILED, Game
from .features import MAP_SHAPE, N_ACTIONS, VECTOR_SIZE, FeatureState, action_mask, encode
from .maps import GorgeMap, load_map, map_from_dict
from .observation import env_obs
from .protocol import (
    DISTANCE_BUCKET_MAX,
    DISTANCE_BUCKET_SIZE,
    ORGAN_PRESENT,
    ORGAN_WAITING,
    VIEW_RANGE,
    relative_direction,
)
from .protocols import SHIPPED_MAPS
from .render import render_frame
from .rewards import TERMS, RewardWeights, potential, reward_terms
from .rules import SETTINGS, GorgeConfig, Rules, choose_map_id

__all__ = ["OBSERVATIONS", "SHIPPED_MAPS", "GorgeEnv", "env_spaces", "free_neighbours", "raw_observation",
           "shipped_map"]

_OPEN_MAP = re.compile(r"gorge_chase_map_(\d+)\.json$")
OBSERVATIONS = ("features", "raw")  # GorgeEnv's observation argument


def env_spaces(observation: str = "features", rules: Rules | None = None) -> tuple[spaces.Dict, spaces.Discrete]:
    """The env's observation and action spaces (those of every map) with ``observation`` ``"features"`` (the
    default: the model input of :mod:`.features`) or ``"raw"`` (:func:`.raw.observation_space`, its scores bounded
    by the ``rules``' score values, default the engine's)."""
    if observation == "raw":
        rules = rules if rules is not None else Rules()
        return (raw.observation_space(raw.score_max(rules.step_score_multiplier, rules.treasure_value)),
                spaces.Discrete(N_ACTIONS))
    observation_space = spaces.Dict({
        "maps": spaces.Box(0, 255, MAP_SHAPE, dtype=np.uint8),
        "vector": spaces.Box(-1.0, 1.0, (VECTOR_SIZE,), dtype=np.float32),
    })
    return observation_space, spaces.Discrete(N_ACTIONS)


def shipped_map(name: str) -> GorgeMap:
    """A shipped map by name: ``"own_1"`` .. ``"own_10"`` or ``"default"`` (= ``"own_1"``, the same object)."""
    key = SHIPPED_MAPS[0] if name == "default" else name
    if key not in SHIPPED_MAPS:
        raise ValueError(f"map name {name!r} is not a shipped map; choose one of {['default', *SHIPPED_MAPS]} or pass "
                         "the path of a gorge_chase_map_<k>.json")
    return _shipped(key)


@lru_cache(maxsize=len(SHIPPED_MAPS))
def _shipped(key: str) -> GorgeMap:
    data = (resources.files("sb3_realm.games.gorge") / "data" / f"gorge_{key}.json.gz").read_bytes()
    return map_from_dict(json.loads(gzip.decompress(data).decode("utf-8")), name=key)


def _map_id(name: str) -> int:
    """The platform's map id of a map name: ``k`` for an open map ``open_<k>`` or a file
    ``gorge_chase_map_<k>.json``, else 0."""
    if name.startswith("open_") and name[5:].isdigit():
        return int(name[5:])
    found = _OPEN_MAP.search(name)
    return int(found.group(1)) if found else 0


class GorgeEnv(gym.Env):
    """Gorge Chase as a Gymnasium env.

    Observation (``observation="features"``, the default): ``Dict(maps=Box(0, 255, MAP_SHAPE, uint8),
    vector=Box(-1, 1, (VECTOR_SIZE,), float32))`` from :mod:`.features`, which runs the observation-only planner
    each step. With ``observation="raw"``: the platform's own view as the arrays of :func:`.raw.encode` (the 21 x 21
    ``map_info``, the hero, the monsters, the treasures and buffs in view, the timers; :func:`.raw.observation_space`),
    without the planner. Action: ``Discrete(16)`` (0..7 move, 8..15 flash in direction ``a - 8``); the legal ones
    come from :meth:`action_masks` (MaskablePPO). Reward: ``sum(weight * term)`` over :data:`~.rewards.TERMS`.

    ``info["reward_terms"]`` holds every term of the step; at the end of an episode ``info`` also has the competition
    ``score``, ``steps``, ``treasures``, ``flash_used``, ``buff_used``, ``caught``, ``caught_after_speedup``,
    ``free_neighbours`` (the road 4-neighbours of the hero's last cell) and ``map``.

    Each episode plays one map, drawn with ``self.np_random`` from the configured list: ``map_path`` (one file),
    else ``map_names``, else ``map_name``; ``reset(options={"map_name": name})`` plays ``name`` for that episode.
    A name is a shipped map (``"default"``, ``"own_1"`` .. ``"own_10"``), an open map id ``"open_<k>"`` read from
    ``maps_dir`` as ``gorge_chase_map_<k>.json``, or a path to a map file. With ``maps_dir`` and neither
    ``map_path`` nor ``map_names``, the open maps of ``usr_conf["map"]`` are played as the platform chooses them
    (``map_random``).

    :param map_path: one map file in the open maps' format.
    :param map_name: the map played when neither ``map_path``, ``map_names`` nor ``maps_dir`` is given.
    :param map_names: names or paths of the maps to draw from per episode.
    :param maps_dir: the folder of the open maps ``gorge_chase_map_<k>.json``.
    :param reward_weights: :class:`RewardWeights` or a dict of weights (missing keys keep their defaults).
    :param render_mode: None or ``"rgb_array"``.
    :param rules: the engine values (default: those in force on the platform).
    :param settings: a name of :data:`~sb3_realm.games.gorge.rules.SETTINGS` (``default``, ``final``) or a list of
        them: each episode plays one (drawn with ``self.np_random`` when there are several), its keys over the
        episode configuration except those ``usr_conf`` gives here (which win); ``reset``'s info names it.
    :param observation: ``"features"`` (the model input of :mod:`.features`, several milliseconds a step for its
        planner) or ``"raw"`` (the platform's own view, :func:`.raw.encode`, some microseconds a step, no planner;
        then :meth:`action_masks` is the platform's legal actions).
    :param model_input: compute the observation; False for players that read only the platform observation (the
        scripted and planner experts): the observations are zeros and :meth:`action_masks` is the platform's legal
        actions.
    :param usr_conf: the keys of :class:`~sb3_realm.games.gorge.rules.GorgeConfig` (``treasure_count``,
        ``buff_count``, ``buff_cooldown``, ``talent_cooldown``, ``monster_interval``, ``monster_speedup``,
        ``max_step``, ``map``, ``map_random``); ``reset(options=usr_conf)`` overrides them for one episode.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012 - gymnasium.Env declares it so

    def __init__(
        self,
        *,
        map_path: str | os.PathLike | None = None,
        map_name: str = "default",
        map_names: Sequence[str] | None = None,
        maps_dir: str | os.PathLike | None = None,
        reward_weights: RewardWeights | Mapping | None = None,
        render_mode: str | None = None,
        rules: Rules | Mapping | None = None,
        settings: str | Sequence[str] | None = None,
        observation: str = "features",
        model_input: bool = True,
        **usr_conf: Any,
    ) -> None:
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation = {observation!r} is not an observation of the env; pass 'features' (the "
                             "model input, with the planner) or 'raw' (the platform's own view, without it)")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode = {render_mode!r} is not supported; use None or 'rgb_array'")
        if isinstance(rules, Mapping):
            rules = Rules.from_dict(rules)  # a config's env.rules
        if rules is not None and not isinstance(rules, Rules):
            raise ValueError(f"rules = {rules!r} is not a Rules; pass Rules(...), a dict of its fields, or leave it "
                             "out")
        if observation == "raw" and rules is not None and rules.buff_duration > raw.TIMER_MAX:
            raise ValueError(f"Rules.buff_duration = {rules.buff_duration} is above {raw.TIMER_MAX}, the bound of the "
                             "raw observation's buff time; pass a buff_duration of at most that with "
                             "observation='raw'")
        if isinstance(map_names, str) or (map_names is not None and (
                not isinstance(map_names, Sequence) or not map_names)):
            raise ValueError(f"map_names = {map_names!r}; pass a non-empty list of map names or paths, e.g. "
                             "['own_1', 'own_2']")
        self.render_mode = render_mode
        self.rules = rules if rules is not None else Rules()
        self.maps_dir = Path(maps_dir).expanduser() if maps_dir is not None else None
        if self.maps_dir is not None and not self.maps_dir.is_dir():
            raise ValueError(f"maps_dir = {str(maps_dir)!r} is not a folder; pass the folder of "
                             "gorge_chase_map_<k>.json")
        self.base_config = GorgeConfig.from_usr_conf(usr_conf)
        self.settings = _settings_names(settings)
        self._settings_keys = {name: {k: v for k, v in SETTINGS[name].items() if k not in usr_conf}
                               for name in self.settings}
        if map_path is not None:
            self.map_names: tuple[str, ...] | None = (os.fspath(map_path),)
        elif map_names is not None:
            self.map_names = tuple(str(n) for n in map_names)
        elif self.maps_dir is None:
            self.map_names = (map_name,)
        else:
            self.map_names = None  # open maps of usr_conf["map"]
        for name in self.map_names or ():
            self._load(name)  # fail on a bad name now, not at the first reset
        self.reward_weights = reward_weights
        self.observation = observation
        self.observation_space, self.action_space = env_spaces(observation, self.rules)
        self.game: Game | None = None
        self.map = ""
        self.map_id = 0
        self.episodes = 0
        self.features = FeatureState()
        self.model_input = bool(model_input)
        self._raw = observation == "raw"
        self._blank: dict[str, np.ndarray] = raw.zeros() if self._raw else {
            "maps": np.zeros(MAP_SHAPE, dtype=np.uint8), "vector": np.zeros(VECTOR_SIZE, dtype=np.float32)}
        self._phi = 0.0
        self._episode_terms = [0.0] * len(TERMS)

    # ------------------------------------------------------------------------------------------ maps
    def _load(self, name: str) -> GorgeMap:
        if name == "default" or name in SHIPPED_MAPS:
            return shipped_map(name)
        if name.startswith("open_") and name[5:].isdigit():
            if self.maps_dir is None:
                raise ValueError(f"map {name!r} is an open map, read from the folder of the open maps: pass "
                                 f"maps_dir=FOLDER holding gorge_chase_map_{name[5:]}.json (sb3-realm eval: "
                                 "--maps-dir FOLDER; a training config: --set env.maps_dir=FOLDER; or set "
                                 "SB3_REALM_GORGE_MAPS=FOLDER)")
            return load_map(self.maps_dir / f"gorge_chase_map_{int(name[5:])}.json")
        if name.endswith((".json", ".json.gz")):
            return load_map(name)
        raise ValueError(f"map {name!r} is neither a shipped map ({['default', *SHIPPED_MAPS]}), an open map id "
                         "'open_<k>' (with maps_dir) nor a path to a .json map file")

    def _choose_map(self, config: GorgeConfig) -> tuple[str, int, GorgeMap]:
        if self.map_names is None:  # maps_dir without map names: the platform's choice among usr_conf["map"]
            map_id = choose_map_id(config, self.episodes, self.np_random)
            name = f"open_{map_id}"
            return name, map_id, self._load(name)
        names = self.map_names
        name = names[0] if len(names) == 1 else names[int(self.np_random.integers(len(names)))]
        return name, _map_id(name), self._load(name)

    # ------------------------------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None,
              options: Mapping | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        config, played = self.base_config, "default"
        if self.settings:
            played = self.settings[0] if len(self.settings) == 1 else self.settings[
                int(self.np_random.integers(len(self.settings)))]
            config = GorgeConfig.from_usr_conf(self._settings_keys[played], base=config)
        options = dict(options or {})
        map_name = options.pop("map_name", None)
        if options:
            config = GorgeConfig.from_usr_conf({**config.to_usr_conf(), **options})
        if map_name is not None:  # one episode on a named map (an evaluation protocol's game)
            self.map = str(map_name)
            self.map_id, game_map = _map_id(self.map), self._load(self.map)
        else:
            self.map, self.map_id, game_map = self._choose_map(config)
        self.episodes += 1
        self.game = Game(game_map, self.rules)
        self.game.reset(config, self.np_random)
        self.features.reset()
        self._phi = potential(self.game)
        self._episode_terms = [0.0] * len(TERMS)
        return self._observe(), {"map": self.map, "usr_conf": config.to_usr_conf(), "settings": played}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        game = self._game()
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        events = game.step(action)
        phi = potential(game)
        terms = reward_terms(events, self._phi, phi)
        self._phi = phi
        self._episode_terms = list(map(operator.add, self._episode_terms, terms))
        reward = float(sum(map(operator.mul, self._weight_list, terms)))
        info: dict[str, Any] = {"reward_terms": dict(zip(TERMS, terms, strict=True))}
        if game.terminated or game.truncated:
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
        self._weight_list = self._reward_weights.as_list()

    def set_reward_weights(self, weights: RewardWeights | Mapping) -> None:
        """Replace the reward weights (callable through ``VecEnv.env_method``)."""
        self.reward_weights = weights

    def set_config(self, **usr_conf: Any) -> None:
        """Change the default episode configuration from the next reset on (for curricula via ``env_method``)."""
        self.base_config = GorgeConfig.from_usr_conf({**self.base_config.to_usr_conf(), **usr_conf})

    def action_masks(self, mask_walls: bool | None = None) -> np.ndarray:
        """(16,) bool legal actions for MaskablePPO: :func:`.features.action_mask` of the current observation (the
        platform's legal actions less the moves into obstacles seen and the flashes that land in place; the planner
        of the features chooses among the same). ``mask_walls`` is the Realm's option, taken for the shared players'
        sake and ignored. With ``observation="raw"`` or without the model input: the platform's legal actions."""
        del mask_walls
        game = self._game()
        if self._raw or not self.model_input:
            return game.legal_actions()
        return action_mask(self._observation, self.features)

    def platform_obs(self) -> dict:
        """The current state as the platform's ``env_obs`` dict (docs/gorge/rules.md), built on demand."""
        return env_obs(self._game(), "0", self.map_id)

    def episode_summary(self) -> dict:
        """Competition metrics of the current episode (complete once it is over)."""
        game = self._game()
        caught = game.status == FAILED
        return {
            "score": float(game.total_score),
            "steps": int(game.step_no),
            "treasures": int(game.treasures_collected),
            "flash_used": int(game.flash_count),
            "buff_used": int(game.buff_pickups),
            "caught": caught,
            "caught_after_speedup": caught and game.boosted,
            "free_neighbours": free_neighbours(game.game_map, game.hero),
            "map": self.map,
            "episode_reward_terms": dict(zip(TERMS, self._episode_terms, strict=True)),
        }

    @property
    def game_map(self) -> GorgeMap:
        """The map of the current episode (before the first reset: the first configured map)."""
        if self.game is not None:
            return self.game.game_map
        return self._load(self.map_names[0] if self.map_names else "open_1")

    def _game(self) -> Game:
        if self.game is None:
            raise ValueError("the env has no episode yet; call env.reset() first")
        return self.game

    def _observe(self) -> dict[str, np.ndarray]:
        if not self.model_input:
            return {key: value.copy() for key, value in self._blank.items()}
        if self._raw:
            return raw_observation(self._game())
        self._observation = env_obs(self._game(), "0", self.map_id)["observation"]
        maps, vector = encode(self._observation, self.features)
        return {"maps": maps, "vector": vector}


#: [sign(dz) + 1][sign(dx) + 1] -> hero_relative_direction (protocol.relative_direction, as a table)
_DIRECTIONS = tuple(tuple(relative_direction(sx, sz) for sx in (-1, 0, 1)) for sz in (-1, 0, 1))


def _where(dx: int, dz: int) -> list[int]:
    """``[hero_l2_distance, hero_relative_direction]`` of an offset: protocol.distance_bucket and relative_direction
    without their argument checks (the offsets here are the game's own integers)."""
    return [min(DISTANCE_BUCKET_MAX, math.isqrt(dx * dx + dz * dz) // DISTANCE_BUCKET_SIZE),
            _DIRECTIONS[(dz > 0) - (dz < 0) + 1][(dx > 0) - (dx < 0) + 1]]


def raw_observation(game: Game) -> dict[str, np.ndarray]:
    """:func:`.raw.encode` of the platform's ``env_obs(game, ...)["observation"]``, read straight from the game's
    state without building the dict (the ``observation="raw"`` env's observation, a few times faster)."""
    hx, hz = game.hero
    cfg = game.config
    ints = [hx, hz, game.flash_cooldown, game.buff_remaining, game.treasures_collected]  # hero
    for monster in game.monsters[:raw.MAX_MONSTERS]:
        x, z = monster.cell
        dx, dz = x - hx, z - hz
        where = _where(dx, dz)
        seen = max(abs(dx), abs(dz)) <= VIEW_RANGE  # out of view: position and speed hidden
        ints += [1, 1, x, z, monster.speed, *where] if seen else [1, 0, -1, -1, -1, *where]
    ints += [0] * (len(raw.MONSTER_FIELDS) * (raw.MAX_MONSTERS - min(len(game.monsters), raw.MAX_MONSTERS)))
    n_treasure, n_buff = len(raw.TREASURE_FIELDS), len(raw.BUFF_FIELDS)
    items = [0] * (n_treasure * raw.MAX_TREASURES + n_buff * raw.MAX_BUFFS)
    remaining = [0] * raw.MAX_TREASURES
    for treasure in game.treasures:
        slot = treasure.entity_id - 1  # config_id k + 1 in row k
        if 0 <= slot < raw.MAX_TREASURES:
            remaining[slot] = 1
            x, z = treasure.cell
            dx, dz = x - hx, z - hz
            if max(abs(dx), abs(dz)) <= VIEW_RANGE:
                items[slot * n_treasure:(slot + 1) * n_treasure] = [1, x, z, *_where(dx, dz)]
    first = n_treasure * raw.MAX_TREASURES
    for buff in game.buffs:
        slot = buff.entity_id - cfg.treasure_count - 1  # config_ids follow the treasures'
        x, z = buff.cell
        dx, dz = x - hx, z - hz
        if 0 <= slot < raw.MAX_BUFFS and max(abs(dx), abs(dz)) <= VIEW_RANGE:
            status = ORGAN_PRESENT if buff.visible else ORGAN_WAITING
            items[first + slot * n_buff:first + (slot + 1) * n_buff] = [1, status, x, z, *_where(dx, dz)]
    ints += items
    ints += [game.step_no, cfg.max_step, cfg.talent_cooldown, game.flash_count, cfg.buff_cooldown,  # env_info
             game.rules.monster_speed, game.monster_interval, game.monster_speedup, cfg.treasure_count,
             cfg.buff_count, game.treasures_collected, game.buff_pickups]
    flat = np.array(ints, dtype=np.int32)
    flags = np.empty(N_ACTIONS + raw.MAX_TREASURES, dtype=np.uint8)
    flags[:N_ACTIONS] = game.flash_cooldown == 0
    flags[:8] = 1  # the moves are always legal
    flags[N_ACTIONS:] = remaining
    a, b = 5 + len(raw.MONSTER_FIELDS) * raw.MAX_MONSTERS, first + n_buff * raw.MAX_BUFFS
    return {
        "map_info": _view(game),
        "legal_action": flags[:N_ACTIONS],
        "hero": flat[:5],
        "monsters": flat[5:a].reshape(raw.MAX_MONSTERS, -1),
        "treasures": flat[a:a + first].reshape(raw.MAX_TREASURES, -1),
        "buffs": flat[a + first:a + b].reshape(raw.MAX_BUFFS, -1),
        "treasure_remaining": flags[N_ACTIONS:],
        "env_info": flat[a + b:],
        "scores": np.array([game.step_score, game.treasure_score, game.total_score], dtype=np.float32),
    }


def _view(game: Game) -> np.ndarray:
    """(21, 21) uint8: ``map_info`` of the platform's observation (1 for road, 0 for an obstacle or off the map) as an
    array, read from the map's walkable grid."""
    walkable = game.game_map.walkable
    h, w = walkable.shape
    size = raw.VIEW_SIZE
    half = size // 2
    out = np.zeros((size, size), dtype=np.uint8)
    z0, x0 = game.hero[1] - half, game.hero[0] - half
    zs, ze, xs, xe = max(z0, 0), min(z0 + size, h), max(x0, 0), min(x0 + size, w)
    if zs < ze and xs < xe:
        out[zs - z0:ze - z0, xs - x0:xe - x0] = walkable[zs:ze, xs:xe]
    return out


def _settings_names(settings: str | Sequence[str] | None) -> tuple[str, ...]:
    """The names of the env's ``settings`` argument (empty: none), each a key of :data:`SETTINGS`; a ``ValueError``
    naming a value that is not."""
    if settings is None:
        return ()
    names = (settings,) if isinstance(settings, str) else tuple(settings) if isinstance(settings, Sequence) else None
    if not names or not all(isinstance(n, str) and n in SETTINGS for n in names):
        raise ValueError(f"settings = {settings!r}; give a name of {list(SETTINGS)} or a non-empty list of them")
    return names


def free_neighbours(game_map: GorgeMap, cell: tuple[int, int]) -> int:
    """The road 4-neighbours of ``cell``: the ways out of it (a hero caught in a dead end has one)."""
    x, z = cell
    return sum(game_map.is_road(x + dx, z + dz) for dx, dz in ((1, 0), (-1, 0), (0, 1), (0, -1)))
