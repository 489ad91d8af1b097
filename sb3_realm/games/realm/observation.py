"""The competition-shaped observation (``obs.feature``, ``obs.legal_act``) and ``env_info``, plus a facade with the
competition's env interface: ``reset(usr_conf) -> obs`` and ``step(a) -> (frame_no, obs, score, terminated,
truncated, env_info)``. Field names follow the competition's protocol (the game's rules, docs/game.md).

The four local maps are flat :class:`~.protocol.RepeatedScalars` of 2601 values, row by row, like the
platform's ``repeated`` fields; ``buff_pos`` is null while the buff is taken; ``step`` returns a
:class:`~sb3_realm.games.realm.protocol.ScoreInfo`.

Assumptions [A]: ``cooldown`` and ``buff_remain_time`` are in steps; ``score`` (of ``ScoreInfo`` and of
``game_info``) is the treasure score so far (+100 at the step of each pickup; reaching the end adds nothing to it);
``total_score`` equals it until the end is reached and is the leaderboard score of the game from then on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .core import Game
from .maps import RealmMap
from .protocol import RepeatedScalars, ScoreInfo
from .rules import LEADERBOARD_CONF, USR_CONF_KEYS, EpisodeConfig, Rules

__all__ = [
    "CompetitionEnv",
    "EnvInfo",
    "FrameState",
    "GameInfo",
    "Hero",
    "Observation",
    "Organ",
    "Position",
    "RealmFeature",
    "RelativePosition",
    "RepeatedScalars",
    "ScoreInfo",
    "Talent",
    "competition_observation",
    "score_info",
]


@dataclass
class Position:
    x: float
    z: float


@dataclass
class RelativePosition:
    direction: int  # 1..8 = E, NE, N, NW, W, SW, S, SE; 0 = none
    l2_distance: int  # bucket 1..5
    path_distance: int  # bucket 1..5
    grid_distance: float  # 4-neighbour BFS cells / 256; null 1.0


@dataclass
class RealmFeature:
    norm_pos: Position
    grid_pos: Position
    start_pos: RelativePosition
    end_pos: RelativePosition
    buff_pos: RelativePosition
    treasure_pos: list[RelativePosition]  # 15, index = position id - 1
    # the maps: 2601 values each, the 51 x 51 window row by row; element r * 51 + c = cell (gz - 25 + r, gx - 25 + c)
    obstacle_map: RepeatedScalars  # int: 1 free, 0 blocked / off-map
    memory_map: RepeatedScalars  # float: visits * 0.2 capped at 1, before the current cell's visit
    treasure_map: RepeatedScalars  # int: 1 on available treasure cells
    end_map: RepeatedScalars  # int: 1 on the end cell


@dataclass
class Observation:
    feature: RealmFeature
    legal_act: list[int]  # [1, talent_ready]


@dataclass
class Talent:
    talent_type: int
    status: int  # 1 ready, 0 cooling down
    cooldown: int  # steps until ready


@dataclass
class Hero:
    hero_id: int
    pos: Position  # world units (ints)
    speed_up: int  # 1 while the buff is active
    talent: Talent


@dataclass
class Organ:
    sub_type: int  # 1 treasure, 2 buff
    config_id: int  # position id
    status: int  # 1 available, 0 taken
    pos: Position
    cooldown: int  # steps until the buff respawns (0 for treasures)


@dataclass
class FrameState:
    frame_no: int
    heroes: list[Hero]
    organs: list[Organ]


@dataclass
class GameInfo:
    score: float  # the treasure score so far [A]
    total_score: float  # score until the end; the leaderboard score from then on [A]
    step_no: int
    pos: Position
    treasure_count: int
    treasure_score: float
    buff_count: int
    talent_count: int
    buff_remain_time: int
    buff_duration: int


@dataclass
class EnvInfo:
    frame_state: FrameState
    game_info: GameInfo


def _rel(row) -> RelativePosition:
    return RelativePosition(int(row[0]), int(row[1]), int(row[2]), float(row[3]))


def competition_observation(game: Game) -> tuple[Observation, EnvInfo]:
    """Build the competition's ``(obs, env_info)`` for the game's current state."""
    rel = game.relative().tolist()  # (18, 4): start, end, buff (null while taken), treasure slots 1..15
    gx, gz = game.cell
    nx, nz = game.norm_pos()
    win = game.window.reshape(4, -1)  # (4, 2601) uint8 0/255 (memory: visits * 51), row by row
    flags = (win[(0, 2, 3),] // 255).astype(np.int32)  # (3, 2601): obstacle, treasure, end as 0/1
    feature = RealmFeature(
        norm_pos=Position(nx, nz),
        grid_pos=Position(gx, gz),
        start_pos=_rel(rel[0]),
        end_pos=_rel(rel[1]),
        buff_pos=_rel(rel[2]),
        treasure_pos=[_rel(r) for r in rel[3:]],
        obstacle_map=RepeatedScalars(flags[0]),
        memory_map=RepeatedScalars(win[1] / np.float32(255.0)),  # float32, as protobuf's repeated float
        treasure_map=RepeatedScalars(flags[1]),
        end_map=RepeatedScalars(flags[2]),
    )
    ready = int(game.talent_ready())
    obs = Observation(feature=feature, legal_act=[1, ready])
    hero_pos = Position(math.floor(game.x), math.floor(game.z))
    hero = Hero(hero_id=1, pos=hero_pos, speed_up=int(game.buff_remain() > 0),
                talent=Talent(talent_type=1, status=ready, cooldown=game.talent_cooldown()))
    organs = []
    available = set(game.available_treasures)
    for i in game.treasure_ids:
        x, z = (int(v) for v in game.map.positions_world[i])
        organs.append(Organ(sub_type=1, config_id=i, status=int(i in available), pos=Position(x, z), cooldown=0))
    bx, bz = (int(v) for v in game.map.positions_world[0])
    organs.append(Organ(sub_type=2, config_id=0, status=int(game.buff_available()), pos=Position(bx, bz),
                        cooldown=game.buff_cooldown()))
    score = score_info(game)
    info = GameInfo(score=score.score, total_score=score.total_score, step_no=game.step_no, pos=hero_pos,
                    treasure_count=game.treasure_count, treasure_score=score.score,
                    buff_count=game.buff_count, talent_count=game.talent_count,
                    buff_remain_time=game.buff_remain(), buff_duration=game.rules.buff_duration)
    env_info = EnvInfo(frame_state=FrameState(frame_no=game.frame_no, heroes=[hero], organs=organs), game_info=info)
    return obs, env_info


def score_info(game: Game) -> ScoreInfo:
    """The ``score`` object of the game's current state (assumptions in :class:`ScoreInfo`)."""
    treasure_score = game.rules.score_per_treasure * game.treasure_count
    return ScoreInfo(score=treasure_score, total_score=game.score() if game.win else treasure_score,
                     treasure_count=game.treasure_count, buff_count=game.buff_count, talent_count=game.talent_count)


def platform_usr_conf(usr_conf: Mapping | None) -> Mapping | None:
    """The episode configuration inside the platform's wrapped ``{"diy": {...}}`` form (None stays None).

    Raises ``ValueError`` for anything else, showing the wrapped form to use.
    """
    if usr_conf is None:
        return None
    if isinstance(usr_conf, Mapping) and set(usr_conf) == {"diy"} and isinstance(usr_conf["diy"], Mapping):
        return usr_conf["diy"]
    shown = dict(usr_conf) if isinstance(usr_conf, Mapping) else usr_conf
    example = shown if isinstance(shown, dict) and set(shown) <= set(USR_CONF_KEYS) else LEADERBOARD_CONF
    raise ValueError(f"usr_conf = {shown!r} is not in the platform's form: CompetitionEnv.reset takes the episode "
                     f"configuration wrapped under the key 'diy', as the 2024 platform passes it, e.g. "
                     f"{{'diy': {example!r}}} (keys {list(USR_CONF_KEYS)}); reset() alone plays the leaderboard "
                     "configuration")


class CompetitionEnv:
    """The game behind the competition's env interface, for playing the platform's loops locally.

    ``reset(usr_conf) -> obs`` takes the platform's wrapped ``{"diy": {...}}`` (None: the leaderboard configuration);
    ``step(a) -> (frame_no, obs, score, terminated, truncated, env_info)`` with ``score`` a :class:`ScoreInfo` and
    ``terminated`` / ``truncated`` ints 0/1. ``env_info`` of the last call is also kept as ``self.env_info``.

    Platform-faithful failures, off by default (so that a workflow's retry paths can be tested):

    :param game_map: the map.
    :param rules: the rules (default: the spec's).
    :param seed: seeds the draw of random treasures.
    :param invalid_conf: ``"raise"`` (default): an invalid ``usr_conf`` raises ``ValueError`` naming the key and
        the fix; ``"none"``: ``reset`` returns None instead, as the platform does (its reset times out), and no
        episode starts.
    :param fault_rate: probability in [0, 1) of an injected fault per call, as the platform under load: ``reset``
        returns None (no episode started: the previous state is kept); ``step`` applies the action and returns
        everything as usual except ``score`` None [A].
    :param fault_seed: seeds the fault draws (independent of ``seed``).
    """

    def __init__(self, game_map: RealmMap, rules: Rules | None = None, seed: int | None = None, *,
                 invalid_conf: str = "raise", fault_rate: float = 0.0, fault_seed: int | None = None) -> None:
        if not isinstance(game_map, RealmMap):
            raise ValueError(f"game_map = {game_map!r} is not a loaded map; load it first: "
                             f"CompetitionEnv(load_map({str(game_map)!r})), or small_map() / default_map()")
        if invalid_conf not in ("raise", "none"):
            raise ValueError(f"invalid_conf = {invalid_conf!r}; use 'raise' (a clear ValueError, the default) or "
                             "'none' (reset returns None, as the platform does)")
        if isinstance(fault_rate, bool) or not isinstance(fault_rate, (int, float)) or not 0 <= fault_rate < 1:
            raise ValueError(f"fault_rate = {fault_rate!r}; use a probability in [0, 1) (0 = no injected faults)")
        self.game = Game(game_map, rules)
        self.rng = np.random.default_rng(seed)
        self.invalid_conf = invalid_conf
        self.fault_rate = float(fault_rate)
        self.fault_rng = np.random.default_rng(fault_seed)
        self.env_info: EnvInfo | None = None

    def _fault(self) -> bool:
        return self.fault_rate > 0 and self.fault_rng.random() < self.fault_rate

    def reset(self, usr_conf: Mapping | None = None) -> Observation | None:
        try:
            config = EpisodeConfig.from_usr_conf(platform_usr_conf(usr_conf))
        except ValueError:
            if self.invalid_conf == "none":
                return None
            raise
        if self._fault():
            return None
        self.game.reset(config, config.draw_treasures(self.rng))
        obs, self.env_info = competition_observation(self.game)
        return obs

    def step(self, action: int):
        self.game.step(action)
        g = self.game
        obs, self.env_info = competition_observation(g)
        score = None if self._fault() else score_info(g)
        return g.frame_no, obs, score, int(g.terminated), int(g.truncated), self.env_info
