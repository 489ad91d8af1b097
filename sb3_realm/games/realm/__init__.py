"""The game itself: maps, rules, state and step, score, the competition-shaped observation. numpy only."""

from .core import DIRECTIONS, N_ACTIONS, Game, StepEvents
from .maps import (
    CELL_WIDTH,
    GRID_ORIGIN_X,
    GRID_ORIGIN_Z,
    UNREACHABLE,
    MapError,
    RealmMap,
    bfs_distances,
    default_map,
    load_map,
    map_from_dict,
    small_map,
)
from .observation import CompetitionEnv, EnvInfo, Observation, competition_observation
from .protocol import RepeatedScalars, ScoreInfo
from .rules import LEADERBOARD_CONF, USR_CONF_KEYS, EpisodeConfig, Rules

__all__ = [
    "CELL_WIDTH",
    "DIRECTIONS",
    "GRID_ORIGIN_X",
    "GRID_ORIGIN_Z",
    "LEADERBOARD_CONF",
    "N_ACTIONS",
    "UNREACHABLE",
    "USR_CONF_KEYS",
    "CompetitionEnv",
    "EnvInfo",
    "EpisodeConfig",
    "Game",
    "MapError",
    "Observation",
    "RealmMap",
    "RepeatedScalars",
    "Rules",
    "ScoreInfo",
    "StepEvents",
    "bfs_distances",
    "competition_observation",
    "default_map",
    "load_map",
    "map_from_dict",
    "small_map",
]
