"""Evaluation by the competition's own scoring: protocols (:mod:`.protocols`), reports (:mod:`.reports`) and
replays and the demo (:mod:`.replay`)."""

from .protocols import PROTOCOLS, evaluate, game_seed, protocol_configs
from .replay import Episode, plot_route, record_episode, replay, run_demo
from .reports import EvalReport, GameResult, format_report, plot_scores, write_json_atomic

__all__ = ["PROTOCOLS", "protocol_configs", "game_seed", "evaluate", "GameResult", "EvalReport", "format_report",
           "write_json_atomic", "plot_scores", "Episode", "record_episode", "plot_route", "replay", "run_demo"]
