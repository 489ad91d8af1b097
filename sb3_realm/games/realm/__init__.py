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
    "CELL_WIDTH", "GRID_ORIGIN_X", "GRID_ORIGIN_Z", "UNREACHABLE", "DIRECTIONS", "N_ACTIONS", "LEADERBOARD_CONF",
    "USR_CONF_KEYS", "Game", "StepEvents", "MapError", "RealmMap", "bfs_distances", "default_map", "load_map",
    "map_from_dict", "small_map", "CompetitionEnv", "EnvInfo", "Observation", "competition_observation",
    "RepeatedScalars", "ScoreInfo",
    "EpisodeConfig", "Rules",
]
