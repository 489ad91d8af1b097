"""What an imitation run records, in one place: one :class:`RoundRecord` a round, the :class:`RunState` carried from
round to round (and kept in the checkpoints), and the :class:`RunWriter` that writes TensorBoard scalars,
``eval.json``, the round's checkpoint and ``best_model.zip``."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
from stable_baselines3.common.logger import configure

from ..atomic import atomic_write
from ..training.checkpoints import list_checkpoints, save_checkpoint
from .config import ImitateConfig

__all__ = ["RoundRecord", "RunState", "RunWriter"]


@dataclass
class RoundRecord:
    """One completed round, as ``eval.json`` and the checkpoints record it. ``eval_wins`` counts the held-out games
    won with every treasure, ``eval_reached_end`` those that reached the end (Gorge Chase: both count the games
    survived to max_step); ``learner_wins`` the round's games the learner won alone (not taken over). The optional
    fields are there when the round did what they count (screening, a sweep, slow games) and
    ``eval_missed_treasure_games`` for a game with an end to reach."""

    round: int
    source: str
    games_played: int
    states: int
    new_states: int
    learner_wins: int
    games_cut: int
    games_taken_over: int
    learner_mean_score: float
    bc_loss: float
    bc_accuracy: float
    bc_entropy: float
    updates: int
    eval_mean_score: float
    eval_reached_end: int
    eval_wins: int
    eval_games: int
    eval_mean_steps: float
    eval_missed_treasure_games: int | None
    oracle_mean_score: float | None
    best_round: int
    collect_s: float
    fit_s: float
    eval_s: float
    wall_s: float
    screen_games: int | None = None
    screen_reached_end: int | None = None
    sweep_lost_labelled: int | None = None
    sweep_steps_over_expert: float | None = None
    sweep_slow: int | None = None
    sweep_slow_labelled: int | None = None
    sweep_games: int | None = None
    sweep_lost: int | None = None
    sweep_mean_score: float | None = None

    #: keys of records written before the won / reached-the-end names: old -> new
    RENAMED = {"eval_full_wins": "eval_wins", "screen_wins": "screen_reached_end"}

    def to_dict(self) -> dict:
        optional = {f.name for f in fields(self) if f.default is None} | {"eval_missed_treasure_games"}
        return {k: v for k, v in asdict(self).items() if not (k in optional and v is None)}

    @classmethod
    def from_dict(cls, data: dict) -> RoundRecord:
        """A record from ``eval.json`` or a checkpoint, also one written with the old names (where ``eval_wins``
        counted the games that reached the end)."""
        data = dict(data)
        if "eval_full_wins" in data:
            data["eval_reached_end"] = data.pop("eval_wins")
        for old, new in cls.RENAMED.items():
            if old in data:
                data[new] = data.pop(old)
        data.setdefault("eval_missed_treasure_games", None)  # a game without an end to reach does not record it
        return cls(**data)


@dataclass
class RunState:
    """What a run carries from round to round (and its checkpoints keep): the rounds so far and the kept one."""

    round: int = -1  # last completed round
    history: list[RoundRecord] = field(default_factory=list)
    best_key: tuple = (-np.inf,)  # what the kept round is chosen by (selection.keep_key)
    best_score: float = -np.inf  # held-out mean score of the kept round
    best_round: int = -1
    oracle_score: float | None = None
    elapsed: float = 0.0
    updates: int = 0
    #: the expert's steps on the sweep's sets of the leaderboard's count and the key of the games and expert they
    #: were played with (``{"key": ..., "steps": [...]}``), for the slow games
    reference: dict | None = None

    def choose(self, key: tuple, held_out_mean: float, round_no: int) -> bool:
        """Whether round ``round_no`` (chosen by ``key``) is now the kept one: at least as good as the kept one
        (ties: the later round, which has seen more data). A resume that turned the sweep on or off compares unlike
        keys: the choice starts afresh there."""
        if len(key) != len(self.best_key) or key >= self.best_key:
            self.best_key, self.best_score, self.best_round = key, held_out_mean, round_no
            return True
        return False

    def to_dict(self, shards: int) -> dict:
        return {"round": self.round, "shards": shards, "history": [r.to_dict() for r in self.history],
                "best_score": self.best_score, "best_key": list(self.best_key), "best_round": self.best_round,
                "oracle_score": self.oracle_score, "reference": self.reference, "elapsed": self.elapsed,
                "updates": self.updates}

    @classmethod
    def from_dict(cls, im: dict) -> RunState:
        return cls(round=im["round"], history=[RoundRecord.from_dict(r) for r in im["history"]],
                   best_key=tuple(im.get("best_key", (im["best_score"],))), best_score=im["best_score"],
                   best_round=im["best_round"], oracle_score=im["oracle_score"], elapsed=im["elapsed"],
                   updates=im["updates"], reference=im.get("reference"))


class RunWriter:
    """Everything a round leaves in the run folder, in one place: TensorBoard scalars, the round's checkpoint (the
    oldest beyond ``keep_checkpoints`` removed), ``best_model.zip`` and ``eval.json``."""

    def __init__(self, run_dir: Path, config: ImitateConfig) -> None:
        self.run_dir, self.config = run_dir, config
        self.logger = configure(str(run_dir / "tb"), ["tensorboard"])

    def fit_logger(self, start: int, n_states: int):
        """The ``on_update`` of a fit: its loss and accuracy about 20 times a fit, at update ``start + update``."""
        log_every = max(1, n_states // self.config.imitation.batch_size // 20)

        def on_update(update: int, loss: float, accuracy: float) -> None:
            if update % log_every == 0:
                self.logger.record("imitation/loss", loss)
                self.logger.record("imitation/accuracy", accuracy)
                self.logger.dump(start + update)
        return on_update

    def best_model(self, model) -> None:
        atomic_write(self.run_dir / "best_model.zip", model.save)

    def round_done(self, model, state: RunState, record: RoundRecord, shards: int) -> None:
        """Log round ``record``, checkpoint the run after it and rewrite ``eval.json``."""
        for key, value in (("eval/mean_score", record.eval_mean_score),
                           ("eval/win_rate", record.eval_wins / record.eval_games),
                           ("eval/mean_steps", record.eval_mean_steps), ("eval/best_mean_score", state.best_score),
                           ("imitation/epoch_accuracy", record.bc_accuracy),
                           ("imitation/dataset_states", record.states), ("imitation/wall_s", state.elapsed)):
            self.logger.record(key, value)
        if record.sweep_lost is not None:
            self.logger.record("eval/sweep_lost", record.sweep_lost)
            self.logger.record("eval/sweep_mean_score", record.sweep_mean_score)
        if state.oracle_score is not None:
            self.logger.record("eval/gap_to_oracle", state.oracle_score - record.eval_mean_score)
        self.logger.dump(state.updates)
        folder = self.run_dir / "checkpoints"
        save_checkpoint(model, folder, algo=self.config.algo.name, extra={"imitation": state.to_dict(shards)})
        for old in list_checkpoints(folder)[:-self.config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
        text = json.dumps({"history": [r.to_dict() for r in state.history], "best_round": state.best_round,
                           "best_mean_score": state.best_score, "oracle_mean_score": state.oracle_score},
                          indent=2) + "\n"
        atomic_write(self.run_dir / "eval.json", lambda f: f.write(text.encode("utf-8")))

    def close(self) -> None:
        self.logger.close()
