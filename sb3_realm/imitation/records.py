"""What an imitation run records, in one place: one :class:`RoundRecord` a round, the :class:`RunState` carried from
round to round (and kept in the checkpoints), and the :class:`RunWriter` that writes TensorBoard scalars,
``eval.json``, the round's checkpoint and ``best_model.zip``.

A resumed run reads its state from a checkpoint's ``state.json``, a file that may come from elsewhere: every key and
type is checked (:class:`RecordError`, naming the file and the key) before the run does anything with it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import ClassVar

import numpy as np
from stable_baselines3.common.logger import configure

from ..atomic import atomic_write, remove_made
from ..evaluation.reports import renamed_keys
from ..training.checkpoints import list_checkpoints, save_checkpoint
from .config import ImitateConfig
from .dataset import shown

__all__ = ["RecordError", "ResumePoint", "RoundRecord", "RunState", "RunWriter"]

_FIX = ("the file is damaged or was not written by sb3-realm imitate: restore it, delete its checkpoint folder to "
        "resume from the one before, or start the run again with --out")


class RecordError(ValueError):
    """A run's record (a checkpoint's ``state.json``) that cannot be used; the message names the file, the key and
    what to do."""


def _is(value, kind: str) -> bool:
    """Whether ``value`` (read from JSON) is of the annotated ``kind`` (``int``, ``float``, ``str``, with ``| None``);
    a float is any number (JSON writes 2.0 as 2), a bool is never a number."""
    for name in kind.replace(" ", "").split("|"):
        if name == "None" and value is None:
            return True
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if (name == "int" and number and isinstance(value, int)) or (name == "float" and number) or (
                name == "str" and isinstance(value, str)):
            return True
    return False


_KINDS = {"int": "an integer", "float": "a number", "str": "text", "int|None": "an integer or null",
          "float|None": "a number or null"}


def _mapping(data, where: str) -> dict:
    if not isinstance(data, dict):
        raise RecordError(f"{where} holds {_a(data)}, not a mapping; {_FIX}")
    return data


def _a(value) -> str:
    name = "null" if value is None else type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _checked(data: dict, where: str, kinds: dict[str, str], optional: tuple[str, ...] = ()) -> dict:
    """``data`` once each key of ``kinds`` is there (or in ``optional``) with a value of its kind."""
    for key, kind in kinds.items():
        if key not in data:
            if key in optional:
                continue
            raise RecordError(f"{where} lacks {key!r}; {_FIX}")
        if not _is(data[key], kind):
            raise RecordError(f"{where}.{key} = {shown(data[key])} must be {_KINDS[kind.replace(' ', '')]}; {_FIX}")
    return data


@dataclass
class RoundRecord:
    """One completed round, as ``eval.json`` and the checkpoints record it. ``eval_wins`` counts the held-out games
    won with every treasure, ``eval_reached_end`` those that reached the end (Gorge Chase: both count the games
    survived to max_step); ``learner_wins`` the round's games the learner won alone (not taken over). The optional
    fields are there when the round did what they count (screening, a sweep, slow games) and
    ``eval_missed_treasure_games`` for a game with an end to reach. ``labelled_per_s`` is the round's new states over
    its collection's seconds (the expert labels every one); ``disagree_states`` counts the dataset's states whose
    label differs from the action the game's features suggest and ``disagree_accuracy`` is the fitted policy's
    accuracy on them (games whose features suggest one)."""

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
    yardstick_mean_score: float | None
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
    labelled_per_s: float | None = None
    disagree_states: int | None = None
    disagree_accuracy: float | None = None

    #: keys of records written before the won / reached-the-end names and the yardstick's: old -> new
    RENAMED: ClassVar[dict[str, str]] = {"eval_full_wins": "eval_wins", "screen_wins": "screen_reached_end",
                                         "oracle_mean_score": "yardstick_mean_score"}

    def to_dict(self) -> dict:
        optional = {f.name for f in fields(self) if f.default is None} | {"eval_missed_treasure_games"}
        return {k: v for k, v in asdict(self).items() if not (k in optional and v is None)}

    @classmethod
    def from_dict(cls, data: dict, source: str = "a round's record") -> RoundRecord:
        """A record from ``eval.json`` or a checkpoint, also one written with the old names (where ``eval_wins``
        counted the games that reached the end); a :class:`RecordError` naming ``source`` and the key for a record
        of another shape."""
        data = dict(_mapping(data, source))
        if "eval_full_wins" in data and "eval_wins" in data:
            data["eval_reached_end"] = data.pop("eval_wins")
        data = renamed_keys(data, cls.RENAMED)
        data.setdefault("eval_missed_treasure_games", None)  # a game without an end to reach does not record it
        kinds = {f.name: str(f.type) for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in kinds)
        if unknown:
            raise RecordError(f"{source} holds unknown keys {shown(unknown)}; {_FIX}")
        optional = tuple(f.name for f in fields(cls) if f.default is None)
        return cls(**_checked(data, source, kinds, optional))


@dataclass
class RunState:
    """What a run carries from round to round (and its checkpoints keep): the rounds so far and the kept one."""

    round: int = -1  # last completed round
    history: list[RoundRecord] = field(default_factory=list)
    best_key: tuple = (-np.inf,)  # what the kept round is chosen by (selection.keep_key)
    best_score: float = -np.inf  # held-out mean score of the kept round
    best_round: int = -1
    #: the mean score of the game's yardstick (the Realm's oracle, Gorge Chase's scripted policy) on the held-out
    #: games, where the expert is the yardstick
    yardstick_score: float | None = None
    elapsed: float = 0.0
    updates: int = 0
    #: the expert's steps on the sweep's sets of the leaderboard's count and the key of the games and expert they
    #: were played with (``{"key": ..., "steps": [...]}``), for the slow games
    reference: dict | None = None

    #: keys of states written before the yardstick's rename: old -> new
    RENAMED: ClassVar[dict[str, str]] = {"oracle_score": "yardstick_score"}

    def choose(self, key: tuple, held_out_mean: float, round_no: int) -> bool:
        """Whether round ``round_no`` (chosen by ``key``) is now the kept one: at least as good as the kept one
        (ties: the later round, which has seen more data). A resume that turned the sweep on or off compares unlike
        keys: the choice starts afresh there."""
        if len(key) != len(self.best_key) or key >= self.best_key:
            self.best_key, self.best_score, self.best_round = key, held_out_mean, round_no
            return True
        return False

    def to_dict(self, shards: int, shard_sha256: list[str] | None = None) -> dict:
        """The state as a checkpoint keeps it, with the dataset's length ``shards`` (and, given, the sha256 of each
        of its shards: a resume checks that its dataset is the one this state was trained on)."""
        out = {"round": self.round, "shards": shards, "history": [r.to_dict() for r in self.history],
               "best_score": self.best_score, "best_key": list(self.best_key), "best_round": self.best_round,
               "yardstick_score": self.yardstick_score, "reference": self.reference, "elapsed": self.elapsed,
               "updates": self.updates}
        if shard_sha256 is not None:
            out["shard_sha256"] = list(shard_sha256)
        return out

    @classmethod
    def from_dict(cls, im: dict, source: str = "the run's state") -> RunState:
        """The state :meth:`to_dict` wrote; a :class:`RecordError` naming ``source`` and the key for one of another
        shape (a missing key, a value of the wrong type, rounds that do not follow each other); a state written
        before the yardstick's rename (``oracle_score``) reads too."""
        im = renamed_keys(_mapping(im, source), cls.RENAMED)
        im = _checked(im, source, {"round": "int", "best_score": "float", "best_round": "int",
                                   "yardstick_score": "float | None", "elapsed": "float", "updates": "int"})
        if "history" not in im:
            raise RecordError(f"{source} lacks 'history'; {_FIX}")
        if not isinstance(im["history"], list):
            raise RecordError(f"{source}.history = {shown(im['history'])} must be a list of the rounds' records; "
                              f"{_FIX}")
        history = [RoundRecord.from_dict(r, f"{source}.history[{i}]") for i, r in enumerate(im["history"])]
        rounds = [r.round for r in history]
        rising = all(0 <= a < b for a, b in itertools.pairwise(rounds))
        if not rounds or rounds[0] < 0 or not rising or rounds[-1] != im["round"]:
            raise RecordError(f"{source}.history holds rounds {rounds}, which must rise to its round {im['round']}; "
                              f"{_FIX}")
        if not 0 <= im["best_round"] <= im["round"]:
            raise RecordError(f"{source}.best_round = {shown(im['best_round'])} must be a round of the run "
                              f"(0..{im['round']}); {_FIX}")
        key = im.get("best_key", [im["best_score"]])
        if not (isinstance(key, list) and key and all(_is(v, "float") for v in key)):
            raise RecordError(f"{source}.best_key = {shown(key)} must be a list of numbers; {_FIX}")
        reference = im.get("reference")
        if reference is not None and not (isinstance(reference, dict) and isinstance(reference.get("key"), str)
                                          and isinstance(reference.get("steps"), list)
                                          and all(_is(v, "int") for v in reference["steps"])):
            raise RecordError(f"{source}.reference = {shown(reference)} must be null or a mapping of key (text) and "
                              f"steps (a list of integers); {_FIX}")
        return cls(round=im["round"], history=history, best_key=tuple(key), best_score=im["best_score"],
                   best_round=im["best_round"], yardstick_score=im["yardstick_score"], elapsed=im["elapsed"],
                   updates=im["updates"], reference=reference)


@dataclass(frozen=True)
class ResumePoint:
    """What a resumed run starts from: a checkpoint and the state its ``state.json`` records.

    :param checkpoint: the checkpoint folder.
    :param state: the run's state after its last round.
    :param shards: the dataset's length the model was trained on.
    :param shard_sha256: those shards' sha256 (None for a checkpoint written before they were kept).
    :param states: the states in those shards.
    """

    checkpoint: Path
    state: RunState
    shards: int
    shard_sha256: list[str] | None
    states: int

    @classmethod
    def read(cls, checkpoint: Path, saved) -> ResumePoint:
        """The resume point of ``checkpoint``, whose ``state.json`` holds ``saved``; a :class:`RecordError` naming
        the file and the key for a state of another shape."""
        source = f"{str(checkpoint / 'state.json')!r}"
        saved = _mapping(saved, source)
        if "imitation" not in saved:
            raise RecordError(f"{source} holds no imitation state: it is a training run's checkpoint (resume it with "
                              "sb3-realm train --resume)")
        im = saved["imitation"]
        if not isinstance(im, dict):
            raise RecordError(f"{source}: imitation = {shown(saved['imitation'])} must be a mapping (the imitation "
                              f"run's state); {_FIX}")
        state = RunState.from_dict(im, f"{source}: imitation")
        _checked(im, f"{source}: imitation", {"shards": "int"})
        shards, digests = im["shards"], im.get("shard_sha256")
        if shards < 1:
            raise RecordError(f"{source}: imitation.shards = {shown(shards)} must be >= 1 (round 0 wrote one); {_FIX}")
        if digests is not None and not (isinstance(digests, list) and len(digests) == shards and all(
                isinstance(d, str) and re.fullmatch("[0-9a-f]{64}", d) for d in digests)):
            raise RecordError(f"{source}: imitation.shard_sha256 = {shown(digests)} must list {shards} sha256 hex "
                              f"digests (one per shard); {_FIX}")
        return cls(checkpoint, state, shards, digests, state.history[-1].states)


class RunWriter:
    """Everything a round leaves in the run folder, in one place: TensorBoard scalars, the round's checkpoint (the
    oldest beyond ``keep_checkpoints`` removed), ``best_model.zip`` and ``eval.json``."""

    def __init__(self, run_dir: Path, config: ImitateConfig) -> None:
        self.run_dir, self.config = run_dir, config
        self._logger = None  # made on first use: a run refused before its first round writes nothing in tb/

    @property
    def logger(self):
        if self._logger is None:
            self._logger = configure(str(self.run_dir / "tb"), ["tensorboard"])
        return self._logger

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

    def round_done(self, model, state: RunState, record: RoundRecord, shards: list[dict]) -> None:
        """Log round ``record``, checkpoint the run after it (with the dataset's ``shards``, their entries, that it was
        trained on) and rewrite ``eval.json``. The checkpoints beyond ``keep_checkpoints`` removed are the oldest
        of the folders this package names (``step_<12 digits>``, never a link): a folder of another name beside
        them is never counted or removed."""
        for key, value in (("eval/mean_score", record.eval_mean_score),
                           ("eval/win_rate", record.eval_wins / record.eval_games),
                           ("eval/mean_steps", record.eval_mean_steps), ("eval/best_mean_score", state.best_score),
                           ("imitation/epoch_accuracy", record.bc_accuracy),
                           ("imitation/dataset_states", record.states), ("imitation/wall_s", state.elapsed)):
            self.logger.record(key, value)
        if record.sweep_lost is not None:
            self.logger.record("eval/sweep_lost", record.sweep_lost)
            self.logger.record("eval/sweep_mean_score", record.sweep_mean_score)
        if state.yardstick_score is not None:
            self.logger.record("eval/gap_to_yardstick", state.yardstick_score - record.eval_mean_score)
        self.logger.dump(state.updates)
        folder = self.run_dir / "checkpoints"
        extra = {"imitation": state.to_dict(len(shards), [entry["sha256"] for entry in shards])}
        saved = save_checkpoint(model, folder, algo=self.config.algo.name, extra=extra)
        made = list_checkpoints(folder)  # the package's own checkpoint folders only: never a link, never another name
        for old in made[:-self.config.keep_checkpoints]:
            if old != saved:
                with contextlib.suppress(OSError):  # a checkpoint left behind costs space, never the run
                    remove_made(old, self.run_dir)
        self.eval_json(state)

    def eval_json(self, state: RunState) -> None:
        """Write ``eval.json``: the rounds of ``state`` and the kept one."""
        text = json.dumps({"history": [r.to_dict() for r in state.history], "best_round": state.best_round,
                           "best_mean_score": state.best_score, "yardstick_mean_score": state.yardstick_score},
                          indent=2) + "\n"
        atomic_write(self.run_dir / "eval.json", lambda f: f.write(text.encode("utf-8")))

    def close(self) -> None:
        if self._logger is not None:
            self._logger.close()
