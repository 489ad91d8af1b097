"""Gorge Chase (2026): the hero runs from two monsters on a 128 x 128 grid, collecting treasures, with a speed buff and
a flash. This package holds the numpy core: maps, rules and the game (state, step, score)."""

from .core import COMPLETED, FAILED, RUNNING, Buff, Game, Monster, StepEvents, Treasure
from .maps import MAP_SIZE, UNREACHABLE, GorgeMap, MapError, load_map, map_from_dict
from .rules import DIRECTIONS, N_ACTIONS, USR_CONF_KEYS, GorgeConfig, Rules

__all__ = [
    "COMPLETED",
    "DIRECTIONS",
    "FAILED",
    "MAP_SIZE",
    "N_ACTIONS",
    "RUNNING",
    "UNREACHABLE",
    "USR_CONF_KEYS",
    "Buff",
    "Game",
    "GorgeConfig",
    "GorgeMap",
    "MapError",
    "Monster",
    "Rules",
    "StepEvents",
    "Treasure",
    "load_map",
    "map_from_dict",
]
