"""Evaluation by the competition's own scoring: protocols (:mod:`.protocols`), reports (:mod:`.reports`), many games
of an SB3 model at once (:mod:`.batched`), and replays and the demo (:mod:`.replay`)."""

from .batched import evaluate_batched, game_result, play_games, played_report
from .protocols import PROTOCOLS, evaluate, game_seed, protocol_configs
from .replay import Episode, plot_route, record_episode, replay, run_demo
from .reports import EvalReport, GameResult, format_report, plot_scores, write_json_atomic

__all__ = ["PROTOCOLS", "protocol_configs", "game_seed", "evaluate", "play_games", "evaluate_batched", "played_report",
           "game_result", "GameResult", "EvalReport", "format_report", "write_json_atomic", "plot_scores", "Episode",
           "record_episode", "plot_route", "replay", "run_demo"]
