"""Evaluation by the competition's own scoring: protocols (:mod:`.protocols`), reports (:mod:`.reports`), many games
of an SB3 model at once (:mod:`.batched`), and replays and the demo (:mod:`.replay`)."""

from .batched import evaluate_batched, game_result, play_games, played_report
from .protocols import PROTOCOLS, evaluate, game_seed, protocol_configs
from .replay import Episode, plot_route, record_episode, replay, run_demo
from .reports import EvalReport, GameResult, format_report, plot_scores, write_json_atomic

__all__ = [
    "PROTOCOLS",
    "Episode",
    "EvalReport",
    "GameResult",
    "evaluate",
    "evaluate_batched",
    "format_report",
    "game_result",
    "game_seed",
    "play_games",
    "played_report",
    "plot_route",
    "plot_scores",
    "protocol_configs",
    "record_episode",
    "replay",
    "run_demo",
    "write_json_atomic",
]
