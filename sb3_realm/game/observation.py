"""The competition-shaped observation (``obs.feature``, ``obs.legal_act``) and ``env_info``, plus a facade with the
competition's env interface: ``reset(usr_conf) -> obs`` and ``step(a) -> (frame_no, obs, score, terminated,
truncated, env_info)``. Field names follow the competition's protocol (realm-rules.md, section 5).

Units [A]: ``cooldown`` and ``buff_remain_time`` are in steps; ``score`` and ``total_score`` are the competition score
of the episode so far (0 until the end is reached).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .core import Game
from .maps import RealmMap
from .rules import EpisodeConfig, Rules

__all__ = [
    "Position",
    "RelativePosition",
    "RealmFeature",
    "Observation",
    "Talent",
    "Hero",
    "Organ",
    "FrameState",
    "GameInfo",
    "EnvInfo",
    "competition_observation",
    "CompetitionEnv",
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
    obstacle_map: np.ndarray  # (51, 51) int: 1 free, 0 blocked / off-map; [r][c] = cell (gz - 25 + r, gx - 25 + c)
    memory_map: np.ndarray  # (51, 51) float: visits * 0.2 capped at 1, before the current cell's visit
    treasure_map: np.ndarray  # (51, 51) int: 1 on available treasure cells
    end_map: np.ndarray  # (51, 51) int: 1 on the end cell


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
    score: float
    total_score: float
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
    rel = game.relative()  # (18, 4): start, end, buff, treasure slots 1..15
    gx, gz = game.cell
    nx, nz = game.norm_pos()
    win = game.window  # (4, 51, 51) uint8 0/255 (memory: visits * 51)
    feature = RealmFeature(
        norm_pos=Position(nx, nz),
        grid_pos=Position(gx, gz),
        start_pos=_rel(rel[0]),
        end_pos=_rel(rel[1]),
        buff_pos=_rel(rel[2]),
        treasure_pos=[_rel(r) for r in rel[3:]],
        obstacle_map=(win[0] // 255).astype(np.int64),
        memory_map=win[1].astype(np.float64) / 255.0,
        treasure_map=(win[2] // 255).astype(np.int64),
        end_map=(win[3] // 255).astype(np.int64),
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
    score = game.score()
    info = GameInfo(score=score, total_score=score, step_no=game.step_no, pos=hero_pos,
                    treasure_count=game.treasure_count,
                    treasure_score=game.rules.score_per_treasure * game.treasure_count,
                    buff_count=game.buff_count, talent_count=game.talent_count,
                    buff_remain_time=game.buff_remain(), buff_duration=game.rules.buff_duration)
    env_info = EnvInfo(frame_state=FrameState(frame_no=game.frame_no, heroes=[hero], organs=organs), game_info=info)
    return obs, env_info


class CompetitionEnv:
    """The game behind the competition's env interface, for playing the platform's evaluation loop locally.

    :param game_map: the map.
    :param rules: the rules (default: the spec's).
    :param seed: seeds the draw of random treasures.
    """

    def __init__(self, game_map: RealmMap, rules: Rules | None = None, seed: int | None = None) -> None:
        self.game = Game(game_map, rules)
        self.rng = np.random.default_rng(seed)
        self.env_info: EnvInfo | None = None

    def reset(self, usr_conf: Mapping | None = None) -> Observation:
        config = EpisodeConfig.from_usr_conf(usr_conf)
        self.game.reset(config, config.draw_treasures(self.rng))
        obs, self.env_info = competition_observation(self.game)
        return obs

    def step(self, action: int):
        self.game.step(action)
        obs, self.env_info = competition_observation(self.game)
        g = self.game
        return g.frame_no, obs, g.score(), g.terminated, g.truncated, self.env_info
