"""Evaluation reports: per-game results, the summary, a readable table, the JSON file and the score histogram."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from .. import games as _games
from ..atomic import atomic_write
from ..games import GameSpec
from ..models.saved import run_config_files

__all__ = [
    "LEGACY_DETAILS",
    "EvalReport",
    "GameResult",
    "check_outputs_apart",
    "format_report",
    "input_paths",
    "plot_scores",
    "renamed_keys",
    "with_yardstick_keys",
    "write_json_atomic",
]

#: the yardstick's keys as reports written before the rename name them (a game's result, a report's summary):
#: old -> new
OLD_YARDSTICK_KEYS = {"oracle_score": "yardstick_score", "oracle_steps": "yardstick_steps",
                      "oracle_mean_score": "yardstick_mean_score", "mean_gap_to_oracle": "mean_gap_to_yardstick",
                      "max_gap_to_oracle": "max_gap_to_yardstick"}


def renamed_keys(data: Mapping, renamed: Mapping[str, str]) -> dict:
    """A copy of ``data`` (read back from a file) with the keys of an older file under their new names (``renamed``:
    old -> new); a new key already there wins."""
    out = dict(data)
    for old, new in renamed.items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
    return out


def with_yardstick_keys(data: Mapping) -> dict:
    """``data`` (a game's result or a report's summary read back from JSON) with the yardstick's keys of a file
    written before the rename (``oracle_score``, ``oracle_mean_score``, ``mean_gap_to_oracle``, ...) under their new
    names; a new key already there wins."""
    return renamed_keys(data, OLD_YARDSTICK_KEYS)


#: the fields of a result from before results were game-neutral: a game's figures (Back to the Realm's treasure set
#: and the ids it left, the treasures taken, flashes, buffs, the end reached) that a game keeps in its
#: :attr:`GameResult.details` where it has them; they stay readable as attributes of these names (a game without
#: them reads empty) and a result's dict writes them at its top level, as reports written before did
LEGACY_DETAILS = ("treasure_ids", "reached_end", "treasures", "missed", "flash_used", "buff_used")
#: the keys of a result's dict, in the order of the reports written before (``success`` is new)
_ORDER = ("index", "treasure_ids", "score", "reached_end", "treasures", "missed", "steps", "flash_used", "buff_used",
          "seed", "cut", "expert_steps", "taken_over", "yardstick_score", "yardstick_steps", "planned_steps", "map",
          "details", "won", "success", "gap")


@dataclass(frozen=True)
class GameResult:
    """One game's outcome: what evaluation, the batched player (:func:`~sb3_realm.evaluation.play_games`) and
    imitation's collection all return. The shared figures are the score, the steps and ``success``, the game's own
    notion of a successful game (its spec's :attr:`~sb3_realm.games.Success.of_game`: Back to the Realm's clean win,
    Gorge Chase's survival to ``max_step``); everything else the game reports lies in ``details``.

    :param index: the game's place in its protocol or list of games.
    :param score: the competition score.
    :param steps: the steps played.
    :param success: the game counts as a success by its game's own rule.
    :param details: the game's own figures (its spec's :attr:`~sb3_realm.games.Results.details` of the final
        ``info``), e.g. the Realm's treasure set and what it missed, Gorge Chase's catch. The fields of
        :data:`LEGACY_DETAILS` stay readable as attributes (``result.treasures``, ``result.missed``, ...).
    :param seed: the env seed it was played from (None where the protocol's index names it).
    :param cut: stopped at a step limit before the game was over (imitation's ``dagger_max_steps``).
    :param expert_steps: collection: the steps the expert played.
    :param taken_over: collection: the step at which the expert took the game over from the learner (0: never).
    :param yardstick_score, yardstick_steps: the game's yardstick (the Realm's oracle, Gorge Chase's scripted
        policy) on the same game, where it was played beside (a result written before the rename names them
        ``oracle_score``, ``oracle_steps``: :func:`with_yardstick_keys` reads it).
    :param planned_steps: the Realm's oracle's own plan, when the policy is the oracle.
    :param map: the map of the game, where a protocol names one per game.
    """

    index: int
    score: float
    steps: int
    success: bool = False
    details: dict = field(default_factory=dict)
    seed: int | None = None
    cut: bool = False
    expert_steps: int | None = None
    taken_over: int = 0
    yardstick_score: float | None = None
    yardstick_steps: int | None = None
    planned_steps: int | None = None
    map: str | None = None

    @classmethod
    def from_summary(cls, info: dict, *, index: int, game: GameSpec, **extra) -> GameResult:
        """The result of a game of ``game`` whose ``env.episode_summary()`` (or final ``info``) is ``info``: its
        score and steps, the game's details of it and, from those, whether it was a success."""
        result = cls(index=index, score=float(info["score"]), steps=int(info["steps"]),
                     details=dict(game.results.details(info)), **extra)
        return replace(result, success=bool(game.evaluation.success.of_game(result)))

    @classmethod
    def from_dict(cls, data: Mapping, game: str | GameSpec | None = None) -> GameResult:
        """A result read back from its dict (:meth:`to_dict`, a report's JSON), also one written before results
        were game-neutral (the fields of :data:`LEGACY_DETAILS` at the top level, no ``success``) or before the
        yardstick's rename (``oracle_score``). Without ``success``, ``game`` (a registered game's name or spec;
        None: the file's game is read as a report written before reports named it) says whether the game was
        one."""
        data = with_yardstick_keys(data)
        details = {**{k: data[k] for k in LEGACY_DETAILS if k in data}, **dict(data.get("details") or {})}
        for key in ("treasure_ids", "missed"):
            if key in details:
                details[key] = tuple(int(i) for i in details[key])
        own = {f.name: data[f.name] for f in fields(cls) if f.name in data and f.name not in ("details", "success")}
        result = cls(**own, details=details)
        if "success" in data:
            return replace(result, success=bool(data["success"]))
        spec = game if isinstance(game, GameSpec) else _games.recorded(game, "the game result")
        return replace(result, success=bool(spec.evaluation.success.of_game(result)))

    @property
    def treasure_ids(self) -> tuple[int, ...]:
        """The game's treasure set (a detail of Back to the Realm; empty for a game without)."""
        return tuple(self.details.get("treasure_ids", ()))

    @property
    def reached_end(self) -> bool:
        """The game's end reached, maybe with a treasure left (the Realm's ``info["win"]``; a detail)."""
        return bool(self.details.get("reached_end", False))

    @property
    def treasures(self) -> int:
        """The treasures taken (a detail; 0 for a game without)."""
        return int(self.details.get("treasures", 0))

    @property
    def missed(self) -> tuple[int, ...]:
        """The ids of the treasure set left behind (a detail of the Realm)."""
        return tuple(self.details.get("missed", ()))

    @property
    def flash_used(self) -> int:
        """The flashes used (a detail; 0 for a game without)."""
        return int(self.details.get("flash_used", 0))

    @property
    def buff_used(self) -> int:
        """The buffs taken (a detail; 0 for a game without)."""
        return int(self.details.get("buff_used", 0))

    @property
    def won(self) -> bool:
        """The end reached with every treasure of the set (the Realm's clean win, its :attr:`success`)."""
        return self.reached_end and not self.missed

    @property
    def oracle_score(self) -> float | None:
        """The old name of :attr:`yardstick_score`, read-only, for code that still reads it."""
        return self.yardstick_score

    @property
    def oracle_steps(self) -> int | None:
        """The old name of :attr:`yardstick_steps` (read-only)."""
        return self.yardstick_steps

    def to_dict(self) -> dict:
        """The result as plain data: the shared fields, ``success`` and ``gap``; the details of
        :data:`LEGACY_DETAILS` at the top level with ``won`` (as reports written before have them) and the game's
        other details under ``details``; ``map`` only where the game has one."""
        values: dict = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"}
        values.update({k: v for k, v in self.details.items() if k in LEGACY_DETAILS})
        for key in ("treasure_ids", "missed"):
            if key in values:
                values[key] = tuple(values[key])
        own = {k: v for k, v in self.details.items() if k not in LEGACY_DETAILS}
        if own:
            values["details"] = own
        if "reached_end" in self.details:
            values["won"] = self.won
        if self.map is None:
            del values["map"]
        values["gap"] = self.gap
        return {k: copy.deepcopy(values[k]) for k in _ORDER if k in values}

    @property
    def gap(self) -> float | None:
        """The yardstick's score less the policy's (None where the yardstick did not play beside)."""
        return None if self.yardstick_score is None else self.yardstick_score - self.score


@dataclass
class EvalReport:
    """The games of one evaluation. ``game``: the game played (None, in a report written before reports named it:
    the Realm's, with a one-line note); its spec adds its own figures to :meth:`summary` and its own lines to
    :func:`format_report`. ``settings``: the game's named settings
    played (:attr:`~sb3_realm.games.GameSpec.settings`), ``settings_values`` the ``usr_conf`` keys they set in
    those games."""

    policy: str
    protocol: str
    map: str
    seed: int
    games: list[GameResult] = field(default_factory=list)
    game: str | None = None
    settings: str = "default"
    settings_values: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """The protocol's figures: the shared ones (score and steps), the game's own (its spec's ``summarize``: the
        treasures taken, the Realm's wins and missed treasures, Gorge Chase's survival and catches per map) and
        the game's yardstick's mean score and the gap to it (``yardstick_mean_score``, ``mean_gap_to_yardstick``,
        ``max_gap_to_yardstick``) where it played beside."""
        g = self.games
        scores = np.array([r.score for r in g], dtype=np.float64)
        out = {
            "policy": self.policy, "protocol": self.protocol, "map": self.map, "seed": self.seed,
            "settings": self.settings, "settings_values": dict(self.settings_values), "games": len(g),
            "mean_score": float(scores.mean()), "min_score": float(scores.min()), "max_score": float(scores.max()),
            "mean_steps": float(np.mean([r.steps for r in g])),
        }
        out.update(_games.recorded(self.game, "the evaluation report").results.summarize(g))
        gaps = [r.gap for r in g if r.gap is not None]
        if gaps:
            out.update(yardstick_mean_score=float(np.mean([r.yardstick_score for r in g])),
                       mean_gap_to_yardstick=float(np.mean(gaps)), max_gap_to_yardstick=float(np.max(gaps)))
        return out

    def to_dict(self) -> dict:
        return {"summary": self.summary(), "games": [r.to_dict() for r in self.games]}


def format_report(report: EvalReport, worst: int = 10) -> str:
    """A readable summary and the worst games (lowest score first)."""
    spec = _games.recorded(report.game, "the evaluation report")
    s = report.summary()
    yardstick = spec.evaluation.yardstick
    played = "" if s["settings"] == "default" and not s["settings_values"] else (
        f" | settings {s['settings']} " + " ".join(f"{k}={v}" for k, v in s["settings_values"].items())).rstrip()
    lines = [f"policy {s['policy']} | protocol {s['protocol']} ({s['games']} games) | map {s['map']} | seed "
             f"{s['seed']}{played}", *spec.results.report_lines(s, yardstick)]
    if "yardstick_mean_score" in s:
        lines.append(f"{yardstick} mean {s['yardstick_mean_score']:.2f}  gap mean {s['mean_gap_to_yardstick']:.2f}  "
                     f"max {s['max_gap_to_yardstick']:.2f}")
    lines.append("")
    table = spec.results.worst_table(report.games, worst, yardstick)
    if table:
        shown = min(worst, len(report.games))
        lines.append(f"all {shown} games, lowest score first:" if shown == len(report.games) else
                     f"the {shown} lowest-scoring of {len(report.games)} games (--worst N shows more):")
    lines.extend(table)
    return "\n".join(lines)


def _same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (after links; a hard link to it too, where both exist)."""
    if os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b)):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _is_inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies inside ``folder`` (after links)."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def check_outputs_apart(outputs: Mapping[str, str | os.PathLike | None],
                        inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """A ``ValueError`` (before anything is played or written) when an output would overwrite what the command reads
    or another output: an output path that is an input file (the checkpoint, its run config, the map) or lies inside
    an input folder (a submission folder), or two outputs that are one file. ``outputs`` and ``inputs`` map what each
    path is (``--json``, ``the policy``) to the path (None: not given)."""
    given = {what: Path(path) for what, path in outputs.items() if path is not None and str(path).strip()}
    sources = {what: Path(path) for what, path in inputs.items() if path is not None and str(path).strip()}
    for what, out in given.items():
        for source_what, source in sources.items():
            if source.is_dir() and _is_inside(out, source):
                raise ValueError(f"{what} {str(out)!r} is inside {source_what} {str(source)!r}, which this command "
                                 "reads and would change; write it elsewhere, e.g. runs/NAME/" + out.name)
            if not source.is_dir() and _same_path(out, source):
                raise ValueError(f"{what} {str(out)!r} is {source_what} {str(source)!r}, which this command reads: "
                                 "writing there would destroy it; give another path")
    names = list(given)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            if _same_path(given[first], given[second]):
                raise ValueError(f"{first} and {second} are both {str(given[first])!r}; give each its own file")


def input_paths(policy, map_path: str | os.PathLike | None = None) -> dict[str, Path]:
    """The files and folders a command that plays ``policy`` on ``map_path`` reads (for :func:`check_outputs_apart`):
    the policy's checkpoint file or submission folder, the run config beside a checkpoint, the map file."""
    inputs: dict[str, Path] = {}
    if isinstance(policy, (str, Path)) and str(policy).strip() and Path(policy).exists():
        inputs["the policy"] = Path(policy)
        if Path(policy).is_file():
            for number, cfg in enumerate(run_config_files(policy)):
                inputs["the run config of the policy" + " (the run's)" * number] = cfg
    if map_path is not None and str(map_path).strip():
        inputs["the map"] = Path(map_path)
    return inputs


def write_json_atomic(data: dict, path: str | os.PathLike) -> Path:
    """Write JSON through a temporary file and a rename, so a crash never leaves half a file."""
    return atomic_write(path, lambda f: f.write((json.dumps(data, indent=2) + "\n").encode("utf-8")))


def plot_scores(report: EvalReport, path: str | os.PathLike) -> Path:
    """PNG histogram of the score across the protocol's games (with the game's yardstick's when available)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    scores = [r.score for r in report.games]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    top = max(scores + [r.yardstick_score or 0.0 for r in report.games]) + 1
    bins = np.linspace(min([*scores, 0.0]), top, 40).tolist()
    ax.hist(scores, bins=bins, alpha=0.7, label=f"{report.policy} (mean {np.mean(scores):.1f})")
    beside = [r.yardstick_score for r in report.games if r.yardstick_score is not None]
    yardstick = _games.recorded(report.game, "the evaluation report").evaluation.yardstick
    if beside and report.policy != yardstick:
        ax.hist(beside, bins=bins, alpha=0.5, label=f"{yardstick} (mean {np.mean(beside):.1f})")
    ax.set_xlabel("competition score")
    ax.set_ylabel("games")
    ax.set_title(f"{report.protocol}: {len(scores)} games on {'maps' if ', ' in report.map else 'map'} "
                 f"{report.map if ', ' in report.map else Path(report.map).name}")
    ax.legend()
    fig.tight_layout()
    try:
        atomic_write(path, lambda f: fig.savefig(f, format="png"))
    finally:
        plt.close(fig)
    return path
