"""The toy game: a 5 x 5 grid with four walls, two treasures and an exit; its map, rules, Gymnasium env and BFS expert.

The hero moves one cell a step (4 actions: east, north, west, south; a move off the grid or into a wall is masked).
Stepping on a treasure collects it; stepping on the exit ends the game (a success). The game also ends after
``max_step`` steps. Score (the competition-style score the evaluation reads): ``treasure_value`` per treasure, and on
reaching the exit ``exit_bonus`` plus ``step_bonus`` per step left.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_realm.games.spec import TermWeights

from . import features
from .features import DIRECTIONS, MAP_SHAPE, N_ACTIONS, SIZE, VECTOR_SIZE

DEFAULT_ROWS = (
    "...T.",
    ".#.#.",
    "T....",
    ".#.#.",
    "....E",
)


# ------------------------------------------------------------------------------------------------------ maps
@dataclass(frozen=True, eq=False)
class ToyMap:
    """A map: walls ``[z, x]``, treasure cells in order, the exit cell, and its name."""

    name: str
    walls: np.ndarray
    treasures: tuple[tuple[int, int], ...]
    exit: tuple[int, int]

    def free_cells(self) -> list[int]:
        """Cell indices ``z * 5 + x`` a hero may start on: not a wall, a treasure or the exit."""
        taken = {*self.treasures, self.exit}
        return [z * SIZE + x for z in range(SIZE) for x in range(SIZE)
                if not self.walls[z, x] and (x, z) not in taken]


def map_from_rows(rows, name: str) -> ToyMap:
    """A map from 5 strings of 5 characters: ``#`` wall, ``T`` treasure, ``E`` exit, ``.`` free."""
    if not isinstance(rows, (list, tuple)) or len(rows) != SIZE or not all(
            isinstance(r, str) and len(r) == SIZE and set(r) <= set(".#TE") for r in rows):
        raise ValueError(f"a toy map is 5 rows of 5 characters of '.#TE', got {rows!r}")
    walls = np.array([[c == "#" for c in r] for r in rows], dtype=bool)
    treasures = tuple((x, z) for z, r in enumerate(rows) for x, c in enumerate(r) if c == "T")
    exits = [(x, z) for z, r in enumerate(rows) for x, c in enumerate(r) if c == "E"]
    if len(exits) != 1 or len(treasures) > 2:
        raise ValueError(f"a toy map has one exit and at most two treasures, got {rows!r}")
    walls.setflags(write=False)
    return ToyMap(name, walls, treasures, exits[0])


def default_map() -> ToyMap:
    return map_from_rows(DEFAULT_ROWS, "default")


def load_map(path: str | os.PathLike) -> ToyMap:
    """A map file: JSON ``{"rows": [...]}``; ``ValueError`` for a file that is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"map file {str(path)!r} is not a toy map ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"map file {str(path)!r} is not a toy map")
    return map_from_rows(data.get("rows"), str(path))


def same_map(a: ToyMap, b: ToyMap) -> bool:
    return bool(np.array_equal(a.walls, b.walls)) and a.treasures == b.treasures and a.exit == b.exit


# ------------------------------------------------------------------------------------------------------ rules
USR_CONF_KEYS = ("start", "treasure_count", "max_step")


@dataclass(frozen=True)
class ToyConfig:
    """An episode: ``start`` (cell index ``z * 5 + x``, -1: drawn from the env seed), ``treasure_count`` (the first
    0..2 treasures of the map are placed) and ``max_step`` (1..200)."""

    start: int = -1
    treasure_count: int = 2
    max_step: int = 30

    def __post_init__(self) -> None:
        for name, lo, hi in (("start", -1, SIZE * SIZE - 1), ("treasure_count", 0, 2), ("max_step", 1, 200)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"usr_conf[{name!r}] = {v!r}; it must be an integer in {lo}..{hi}")
            object.__setattr__(self, name, int(v))

    @classmethod
    def from_usr_conf(cls, usr_conf: Mapping | None = None, base: ToyConfig | None = None) -> ToyConfig:
        if usr_conf is None:
            return cls() if base is None else base
        if not isinstance(usr_conf, Mapping):
            raise ValueError(f"usr_conf must be a dict with keys {list(USR_CONF_KEYS)}, got {usr_conf!r}")
        unknown = sorted(set(usr_conf) - set(USR_CONF_KEYS))
        if unknown:
            raise ValueError(f"unknown usr_conf keys {unknown}; valid keys are {list(USR_CONF_KEYS)}")
        return cls(**{**(base.to_usr_conf() if base is not None else {}), **dict(usr_conf)})

    def to_usr_conf(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Rules:
    """The scoring: per treasure, for reaching the exit, and per step left at the exit."""

    treasure_value: float = 100.0
    exit_bonus: float = 50.0
    step_bonus: float = 1.0

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Rules:
        data = dict(data or {})
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown rules keys {unknown}; valid keys are {[f.name for f in fields(cls)]}")
        return cls(**data)

    def score(self, treasures: int, reached_exit: bool, steps: int, max_step: int) -> float:
        """The toy's competition score of a game."""
        return float(self.treasure_value * treasures
                     + (self.exit_bonus + self.step_bonus * (max_step - steps) if reached_exit else 0.0))


@dataclass(frozen=True)
class RewardWeights(TermWeights):
    """Reward terms: a treasure collected, the exit reached, a step taken, a cell nearer the target."""

    treasure: float = 1.0
    exit: float = 1.0
    step: float = -0.01
    progress: float = 0.1


TERMS = RewardWeights.terms()
REWARD_RANGES = {"treasure": (0.1, 2.0, False), "exit": (0.1, 2.0, False), "step": (-0.05, 0.0, False),
                 "progress": (0.0, 0.5, False)}


class Game:
    """One episode's state (what the shared layers read of ``env.game``: ``step_no``, ``config``, ``terminated``,
    ``truncated``, the hero's ``x`` and ``z``)."""

    def __init__(self, game_map: ToyMap, config: ToyConfig, rules: Rules, rng: np.random.Generator) -> None:
        self.game_map, self.config, self.rules = game_map, config, rules
        free = game_map.free_cells()
        start = config.start if config.start >= 0 else free[int(rng.integers(len(free)))]
        if start not in free:
            raise ValueError(f"usr_conf['start'] = {start} is not a free cell of map {game_map.name!r}; free cells "
                             f"are {free}")
        self.x, self.z = start % SIZE, start // SIZE
        self.placed = list(game_map.treasures[:config.treasure_count])
        self.left = list(self.placed)
        self.step_no = 0
        self.win = False
        self.terminated = self.truncated = False
        self.events: list[str] = []

    @property
    def hero(self) -> tuple[int, int]:
        return self.x, self.z

    @property
    def collected(self) -> int:
        return len(self.placed) - len(self.left)

    def next_action(self) -> int:
        return features.next_action(self.game_map.walls, self.hero, self.left, self.game_map.exit)

    def legal(self) -> np.ndarray:
        return features.legal_moves(self.game_map.walls, self.hero)

    def step(self, action: int) -> list[str]:
        if self.terminated or self.truncated:
            raise ValueError("the game is over; call env.reset()")
        action = int(action)
        if not 0 <= action < N_ACTIONS:
            raise ValueError(f"action = {action} is out of range 0..{N_ACTIONS - 1}")
        self.events = []
        if self.legal()[action]:
            dx, dz = DIRECTIONS[action]
            self.x, self.z = self.x + dx, self.z + dz
        else:
            self.events.append("bump")
        self.step_no += 1
        if self.hero in self.left:
            self.left.remove(self.hero)
            self.events.append("treasure")
        if self.hero == self.game_map.exit:
            self.win = self.terminated = True
            self.events.append("exit")
        elif self.step_no >= self.config.max_step:
            self.truncated = True
        return self.events

    @property
    def score(self) -> float:
        return self.rules.score(self.collected, self.win, self.step_no, self.config.max_step)


# ------------------------------------------------------------------------------------------------------ env
def env_spaces() -> tuple[spaces.Dict, spaces.Discrete]:
    observation = spaces.Dict({"maps": spaces.Box(0, 255, MAP_SHAPE, dtype=np.uint8),
                               "vector": spaces.Box(-1.0, 1.0, (VECTOR_SIZE,), dtype=np.float32)})
    return observation, spaces.Discrete(N_ACTIONS)


class ToyEnv(gym.Env):
    """The toy game as a Gymnasium env (observation :mod:`.features`, ``Discrete(4)``, :meth:`action_masks`)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}  # noqa: RUF012 - gymnasium.Env declares it so

    def __init__(self, *, map_path: str | os.PathLike | None = None, map_name: str = "default",
                 reward_weights: RewardWeights | Mapping | None = None, rules: Rules | Mapping | None = None,
                 render_mode: str | None = None, **usr_conf: Any) -> None:
        if map_path is not None:
            self.game_map = load_map(map_path)
        elif map_name == "default":
            self.game_map = default_map()
        else:
            raise ValueError(f"map {map_name!r} is not a toy map; the toy game ships 'default'")
        self.rules = rules if isinstance(rules, Rules) else Rules.from_dict(rules)
        self.reward_weights = (reward_weights if isinstance(reward_weights, RewardWeights)
                               else RewardWeights.from_dict(reward_weights))
        self.base_config = ToyConfig.from_usr_conf(usr_conf)
        self.render_mode = render_mode
        self.observation_space, self.action_space = env_spaces()
        self.game: Game | None = None
        self._terms = [0.0] * len(TERMS)

    def set_config(self, **usr_conf: Any) -> None:
        self.base_config = ToyConfig.from_usr_conf(usr_conf, base=self.base_config)

    def set_reward_weights(self, weights: RewardWeights | Mapping) -> None:
        self.reward_weights = weights if isinstance(weights, RewardWeights) else RewardWeights.from_dict(weights)

    def reset(self, *, seed: int | None = None, options: Mapping | None = None):
        super().reset(seed=seed)
        options = {k: v for k, v in dict(options or {}).items() if k != "map_name"}
        config = ToyConfig.from_usr_conf(options, base=self.base_config)
        self.game = Game(self.game_map, config, self.rules, self.np_random)
        self._terms = [0.0] * len(TERMS)
        return self._observe(), {"usr_conf": config.to_usr_conf(), "map": self.game_map.name}

    def step(self, action):
        game = self._game()
        goal = features.target(self.game_map.walls, game.hero, game.left, self.game_map.exit)
        dist = features.distances(features.blocked(self.game_map.walls, game.left, self.game_map.exit), goal)
        before = int(dist[game.z, game.x])
        events = game.step(int(action))
        nearer = float(np.clip(before - dist[game.z, game.x], -1, 1))  # stepping on the exit early: -1
        terms = [float("treasure" in events), float("exit" in events), 1.0, nearer]
        self._terms = list(map(operator.add, self._terms, terms))
        reward = float(sum(map(operator.mul, self.reward_weights.as_list(), terms)))
        info: dict[str, Any] = {"reward_terms": dict(zip(TERMS, terms, strict=True))}
        if game.terminated or game.truncated:
            info.update(self.episode_summary())
        return self._observe(), reward, game.terminated, game.truncated, info

    def action_masks(self, mask_walls: bool | None = None) -> np.ndarray:
        del mask_walls  # walls are always masked here
        return self._game().legal()

    def competition_obs(self):
        return self._observe(), {}

    def platform_obs(self) -> dict:
        """The toy platform's ``env_obs`` of the current state, plain JSON data as its stand-in hands it to a
        package's Agent: the walls (rows of 0 and 1), the hero, the treasures left and the exit (``[x, z]``), the step,
        the step limit, and whether the game is over."""
        game = self._game()
        return {"walls": self.game_map.walls.astype(int).tolist(), "hero": [game.x, game.z],
                "treasures": [[x, z] for x, z in game.left], "exit": list(self.game_map.exit),
                "step_no": game.step_no, "max_step": game.config.max_step,
                "done": bool(game.terminated or game.truncated)}

    def episode_summary(self) -> dict:
        game = self._game()
        return {"score": game.score, "steps": game.step_no, "treasures": game.collected, "win": game.win,
                "treasures_missed": [game.game_map.treasures.index(t) for t in game.left],
                "flash_used": 0, "buff_used": 0, "map": self.game_map.name,
                "episode_reward_terms": dict(zip(TERMS, self._terms, strict=True))}

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        game = self._game()
        image = np.full((SIZE, SIZE, 3), 230, dtype=np.uint8)
        image[self.game_map.walls] = (60, 60, 60)
        for x, z in game.left:
            image[z, x] = (240, 200, 0)
        ex, ez = self.game_map.exit
        image[ez, ex] = (0, 160, 0)
        image[game.z, game.x] = (200, 0, 0)
        return np.kron(image, np.ones((16, 16, 1), dtype=np.uint8))

    def _game(self) -> Game:
        if self.game is None:
            raise ValueError("the env has no episode yet; call env.reset() first")
        return self.game

    def _observe(self) -> dict[str, np.ndarray]:
        game = self._game()
        maps, vector = features.encode(self.game_map.walls, game.hero, game.left, self.game_map.exit, game.step_no,
                                       game.config.max_step)
        return {"maps": maps, "vector": vector}


# ------------------------------------------------------------------------------------------------------ expert
class BfsPolicy:
    """The toy's expert and yardstick: the breadth-first move toward the nearest treasure left, then the exit (ties
    to the lowest action)."""

    name = "bfs"

    def __init__(self, env: ToyEnv) -> None:
        del env  # the expert reads the game at each step

    def reset(self, env: ToyEnv) -> None:
        del env

    def act(self, env: ToyEnv, obs) -> int:
        return env.unwrapped.game.next_action()
