"""Agreement of the simulator with the public logs of the official game core, where the map is not needed.

The logs (spec: docs/vacuum/rules.md, "Public sources"; the data lives outside the repository, in
``../shared/data/vacuum/``):

* ``core_logs/<run>/`` — a competitor's local runs of the official game core: ``manifest.json`` (each round's
  ``charger_count``, ``robot_count``, ``max_step``, ``battery_max``), ``episodes/round_<r>_map<k>.jsonl.gz`` (one JSON
  object a step: ``step``, ``action``, ``battery``, ``battery_max``, ``dirt_cleaned``, ``total_dirt``,
  ``nearest_npc_dist``, ``invalid_move_count``, ...) and, in some runs, ``result.json`` (each episode's end: result,
  steps, clean_score, charge_count, remaining_charge). Several processes wrote the same file names at once, so a
  file holds interleaved fragments of episodes: only pairs of consecutive rows whose ``step`` grows by exactly 1 are
  transitions. Row ``step k`` is the state after ``k - 1`` steps (row 1 is the reset), so the state after an
  episode's last step is never logged.
* ``eval_task_logs/<task>/`` — one official evaluation task on the platform (``run_server.log``: the map and
  ``process_run_count``; ``aisrv.log``: how the episode ended).

Each check counts the transitions (or episodes) that agree with a rule, the total, and up to
:data:`MAX_EXAMPLES` examples of disagreement. The ``*_sim`` checks drive :class:`~sb3_realm_vacuum.core.VacuumGame`
on a probe map into the same situation the log shows (the battery before the step, whether the step ends on a charger,
whether the cell entered is dirty, the episode's configuration) and count the transitions whose logged outcome the
simulator reproduces, so they test the simulator, not only the logs. :func:`fidelity_report` gathers every check into
one JSON-able dict.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .core import FAIL_BATTERY, VacuumGame
from .rules import DIRECTIONS, NPC_RADIUS, SIZE, VIEW_RADIUS, VacuumConfig, can_move

__all__ = [
    "MAX_EXAMPLES",
    "Check",
    "LogFile",
    "LogRow",
    "SimulatorProbe",
    "Transition",
    "check_battery",
    "check_battery_sim",
    "check_blocked_moves",
    "check_blocked_moves_sim",
    "check_cleaning",
    "check_cleaning_sim",
    "check_ends",
    "check_ends_sim",
    "check_eval_task_sim",
    "check_npc_step",
    "check_row_limits",
    "compare_histograms",
    "fidelity_report",
    "find_runs",
    "joined_fragments",
    "npc_delta_histogram",
    "open_map",
    "read_eval_task",
    "read_log_files",
    "read_log_rows",
    "read_manifest",
    "read_results",
    "simulate_npc_deltas",
    "transitions",
]

MAX_EXAMPLES = 5  # examples of disagreement kept per check
EPISODE_FILE = re.compile(r"^round_(\d+)_map(\d+)\.jsonl(?:\.gz)?$")
RESULTS = ("completed", "battery", "collision")  # result.json's end kinds
_ROW_INTS = ("step", "action", "battery", "battery_max", "dirt_cleaned", "total_dirt", "invalid_move_count")


class LogRow(NamedTuple):
    """The fields of one logged row the checks read (the state after ``step - 1`` steps)."""

    step: int
    action: int
    battery: int
    battery_max: int
    dirt_cleaned: int
    total_dirt: int
    nearest_npc_dist: float  # Chebyshev distance to the nearest official robot the observation places (cells)
    invalid_move_count: int


@dataclass(frozen=True)
class LogFile:
    """One episode file: its rows in file order (interleaved fragments included) and its round's configuration.

    :param source: ``<run>/episodes/<file name>``.
    :param skipped: lines that were not a complete JSON row (torn by concurrent writers).
    """

    source: str
    round: str
    map_id: int
    config: VacuumConfig
    rows: tuple[LogRow, ...]
    skipped: int


class Transition(NamedTuple):
    """Two consecutive rows of one file whose ``step`` grows by exactly 1: one step of the game."""

    source: str
    round: str
    map_id: int
    config: VacuumConfig
    before: LogRow
    after: LogRow


@dataclass
class Check:
    """Agreement of one rule: ``agree`` of ``total`` cases, examples of disagreement, counts by kind in ``detail``."""

    name: str
    agree: int = 0
    total: int = 0
    examples: list = field(default_factory=list)
    detail: Counter = field(default_factory=Counter)

    def add(self, ok: bool, example: dict | None = None) -> None:
        """Count one case; keep ``example`` (a JSON-able dict) if it disagrees and fewer than MAX_EXAMPLES are kept."""
        self.total += 1
        if ok:
            self.agree += 1
        elif len(self.examples) < MAX_EXAMPLES:
            self.examples.append(example if example is not None else {})

    @property
    def share(self) -> float | None:
        """``agree / total`` (None without cases)."""
        return self.agree / self.total if self.total else None

    def to_dict(self) -> dict:
        share = self.share
        return {"agree": self.agree, "total": self.total, "share": None if share is None else round(share, 6),
                "detail": {str(k): v for k, v in sorted(self.detail.items(), key=lambda kv: str(kv[0]))},
                "examples": list(self.examples)}


# ------------------------------------------------------------------------------------------------------- reading
def find_runs(folder: str | Path) -> list[Path]:
    """The run folders under ``folder``: itself when it holds ``manifest.json``, else its subfolders that do."""
    folder = Path(folder)
    if (folder / "manifest.json").is_file():
        return [folder]
    runs = sorted(p for p in folder.iterdir() if (p / "manifest.json").is_file()) if folder.is_dir() else []
    if not runs:
        raise ValueError(f"logs folder {str(folder)!r} holds no run (a folder with manifest.json and episodes/); pass "
                         "the core_logs folder (../shared/data/vacuum/core_logs) or one of its run folders")
    return runs


def read_manifest(run: str | Path) -> dict[str, VacuumConfig]:
    """The rounds of a run's ``manifest.json``: round name (``round_1``) -> its configuration."""
    path = Path(run) / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    rounds = data.get("rounds") if isinstance(data, dict) else None
    if not isinstance(rounds, list):
        raise ValueError(f"{path}: no 'rounds' list; a manifest lists each round's name, charger_count, robot_count, "
                         "max_step and battery_max")
    out = {}
    for entry in rounds:
        try:
            out[str(entry["name"])] = VacuumConfig(
                robot_count=entry["robot_count"], charger_count=entry["charger_count"],
                max_step=entry["max_step"], battery_max=entry["battery_max"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: round {entry!r} lacks {exc}; each round needs name, charger_count, "
                             "robot_count, max_step and battery_max") from exc
    return out


def _row(line: str) -> LogRow | None:
    try:
        data = json.loads(line)
        values = [data[key] for key in _ROW_INTS]
        dist = data["nearest_npc_dist"]
    except (ValueError, KeyError, TypeError):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values) \
            or not isinstance(dist, int | float) or isinstance(dist, bool) or not math.isfinite(dist):
        return None
    step, action, battery, battery_max, dirt_cleaned, total_dirt, invalid = values
    return LogRow(step, action, battery, battery_max, dirt_cleaned, total_dirt, float(dist), invalid)


def read_log_rows(path: str | Path) -> tuple[list[LogRow], int]:
    """The rows of one ``.jsonl`` or ``.jsonl.gz`` file in file order, and the count of lines that were not a complete
    row (blank lines aside)."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    rows, skipped = [], 0
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = _row(line)
            if row is None:
                skipped += 1
            else:
                rows.append(row)
    return rows, skipped


def read_log_files(folder: str | Path) -> Iterator[LogFile]:
    """Every episode file of every run under ``folder`` (see :func:`find_runs`), with its round's configuration."""
    for run in find_runs(folder):
        rounds = read_manifest(run)
        episodes = run / "episodes"
        files = sorted(p for p in episodes.iterdir() if EPISODE_FILE.match(p.name)) if episodes.is_dir() else []
        for path in files:
            match = EPISODE_FILE.match(path.name)
            assert match is not None
            name = f"round_{int(match.group(1))}"
            if name not in rounds:
                raise ValueError(f"{path}: {name} is not in {run / 'manifest.json'} (rounds {sorted(rounds)}); the "
                                 "episode file and the manifest must come from the same run")
            rows, skipped = read_log_rows(path)
            yield LogFile(f"{run.name}/episodes/{path.name}", name, int(match.group(2)), rounds[name], tuple(rows),
                          skipped)


def transitions(files: Iterable[LogFile]) -> Iterator[Transition]:
    """The clean transitions of the files: consecutive rows whose ``step`` grows by exactly 1."""
    for log in files:
        for before, after in zip(log.rows, log.rows[1:], strict=False):
            if after.step - before.step == 1:
                yield Transition(log.source, log.round, log.map_id, log.config, before, after)


def read_results(folder: str | Path) -> list[dict]:
    """The episodes of every run's ``result.json`` under ``folder`` (runs without one give none): each the file's
    dict plus ``run`` and ``config`` (its round's :class:`VacuumConfig` from the manifest)."""
    out = []
    for run in find_runs(folder):
        path = run / "result.json"
        if not path.is_file():
            continue
        rounds = read_manifest(run)
        data = json.loads(path.read_text(encoding="utf-8"))
        for episode in data.get("episodes", []) if isinstance(data, dict) else []:
            if isinstance(episode, dict) and episode.get("round") in rounds:
                out.append({**episode, "run": run.name, "config": rounds[episode["round"]]})
    return out


_RUN_COUNT = re.compile(r"process_run_count is (\d+)")
_EVAL_MAP = re.compile(r"Evaluation mode map: map_id=(\d+)")
_DONE = re.compile(r"terminated: (True|False), truncated: (True|False)")


def read_eval_task(folder: str | Path) -> list[dict]:
    """Facts about the episodes of official evaluation tasks under ``folder`` (a task folder holding
    ``run_server.log``, or a folder of them): per task its maps, ``process_run_count`` per episode (the env's calls:
    the reset and the steps), how each episode ended (``terminated``, ``truncated``: each logged line counted once,
    the logger prints it twice) and the count of the game's "达到最大步数" (max step reached) lines."""
    folder = Path(folder)
    if (folder / "run_server.log").is_file():
        tasks = [folder]
    else:
        tasks = sorted(p for p in folder.iterdir() if (p / "run_server.log").is_file()) if folder.is_dir() else []
    if not tasks:
        raise ValueError(f"evaluation logs folder {str(folder)!r} holds no task (a folder with run_server.log); pass "
                         "../shared/data/vacuum/eval_task_logs or one of its task folders")
    out = []
    for task in tasks:
        server = (task / "run_server.log").read_text(encoding="utf-8", errors="replace")
        aisrv = task / "aisrv.log"
        done_lines = []
        if aisrv.is_file():
            seen = set()
            for line in aisrv.read_text(encoding="utf-8", errors="replace").splitlines():
                if _DONE.search(line) and line not in seen:
                    seen.add(line)
                    done_lines.append(line)
        ends = [{"terminated": m.group(1) == "True", "truncated": m.group(2) == "True"}
                for m in (_DONE.search(line) for line in done_lines) if m]
        out.append({"task": task.name, "map_ids": [int(v) for v in _EVAL_MAP.findall(server)],
                    "process_run_count": [int(v) for v in _RUN_COUNT.findall(server)], "ends": ends,
                    "max_step_messages": server.count("达到最大步数")})
    return out


# ------------------------------------------------------------------------------------------------ the logs' checks
def _example(t: Transition, **values) -> dict:
    return {"source": t.source, "step": t.before.step, **values}


def check_battery(items: Iterable[Transition]) -> Check:
    """Each step either pays 1 or ends at ``battery_max`` (a refill comes after the step's cost, spec §5.4 note c;
    a robot standing in a charger stays at ``battery_max``); no other change."""
    check = Check("battery")
    for t in items:
        before, after, full = t.before.battery, t.after.battery, t.config.battery_max
        kind = "pay" if after == before - 1 else ("stay_at_max" if before == after == full else
                                                  "refill" if after == full else "other")
        check.detail[kind] += 1
        check.add(kind != "other", _example(t, battery=[before, after], battery_max=full))
    return check


def check_cleaning(items: Iterable[Transition]) -> Check:
    """The robot cleans 0 or 1 cell per step (``dirt_cleaned`` grows by 0 or 1, spec §5.3)."""
    check = Check("cleaning")
    for t in items:
        delta = t.after.dirt_cleaned - t.before.dirt_cleaned
        check.detail[delta if delta in (0, 1) else "other"] += 1
        check.add(delta in (0, 1), _example(t, dirt_cleaned=[t.before.dirt_cleaned, t.after.dirt_cleaned]))
    return check


def check_blocked_moves(items: Iterable[Transition]) -> Check:
    """No blocked move: the logger's legal mask, built with the move rule of spec §5.2 from the view, never let the
    robot try a move that left it in place (``invalid_move_count`` stays 0)."""
    check = Check("blocked_moves")
    for t in items:
        ok = t.before.invalid_move_count == t.after.invalid_move_count == 0
        check.add(ok, _example(t, invalid_move_count=[t.before.invalid_move_count, t.after.invalid_move_count]))
    return check


def _in_view(t: Transition) -> bool:
    return t.before.nearest_npc_dist <= VIEW_RADIUS and t.after.nearest_npc_dist <= VIEW_RADIUS


def check_npc_step(items: Iterable[Transition]) -> Check:
    """While the nearest official robot is in view before and after the step (Chebyshev <= 10), its distance changes
    by at most 2 in one step (each robot moves at most 1 cell, spec §5.5)."""
    check = Check("npc_step")
    for t in items:
        if _in_view(t):
            delta = t.after.nearest_npc_dist - t.before.nearest_npc_dist
            check.add(abs(delta) <= 2, _example(t, nearest_npc_dist=[t.before.nearest_npc_dist,
                                                                     t.after.nearest_npc_dist]))
    return check


def npc_delta_histogram(items: Iterable[Transition]) -> Counter:
    """Counts of the one-step change of the nearest official robot's distance while it is in view before and after
    (keys: the change in cells, an int where it is whole)."""
    hist: Counter = Counter()
    for t in items:
        if _in_view(t):
            delta = t.after.nearest_npc_dist - t.before.nearest_npc_dist
            hist[int(delta) if float(delta).is_integer() else delta] += 1
    return hist


def joined_fragments(items: Iterable[Transition]) -> dict:
    """The transitions that break the battery rule or the cleaning rule, and how many of them break both or change
    ``total_dirt`` (a constant of an episode): the signature of two interleaved episodes' rows joined by chance with
    consecutive step numbers, not of a step of one episode."""
    broken = both = dirt = 0
    for t in items:
        battery_ok = t.after.battery in (t.before.battery - 1, t.config.battery_max)
        cleaning_ok = t.after.dirt_cleaned - t.before.dirt_cleaned in (0, 1)
        if battery_ok and cleaning_ok:
            continue
        broken += 1
        both += not battery_ok and not cleaning_ok
        dirt += t.before.total_dirt != t.after.total_dirt
    return {"broken": broken, "battery_and_cleaning_broken": both, "total_dirt_changes": dirt}


def check_row_limits(files: Iterable[LogFile]) -> Check:
    """Every logged row is a state before a step, so the episode was still running: ``1 <= battery <= battery_max``
    and ``1 <= step <= max_step`` (row ``step k`` follows ``k - 1`` steps; an episode ends at ``max_step`` steps)."""
    check = Check("row_limits")
    for log in files:
        cfg = log.config
        for row in log.rows:
            ok = 1 <= row.battery <= cfg.battery_max and 1 <= row.step <= cfg.max_step
            check.add(ok, {"source": log.source, "step": row.step, "battery": row.battery,
                           "battery_max": cfg.battery_max, "max_step": cfg.max_step})
    return check


def _end_kind(episode: dict) -> str:
    result = episode.get("result")
    if result == "battery":
        return "battery_no_charge" if int(episode.get("charge_count", 0)) == 0 else "battery_after_charging"
    return str(result)


def _end_ok(episode: dict) -> bool:
    cfg: VacuumConfig = episode["config"]
    steps, left = int(episode["steps"]), int(episode["remaining_charge"])
    last_cell = int(episode["clean_score"]) - int(episode["dirt_cleaned"])  # the final step's cell counts
    kind = _end_kind(episode)
    if kind == "completed":
        ok = steps == cfg.max_step and 0 < left <= cfg.battery_max
    elif kind == "battery_no_charge":
        ok = steps == cfg.battery_max and left == 0
    elif kind == "battery_after_charging":
        ok = cfg.battery_max < steps <= cfg.max_step and left == 0
    elif kind == "collision":
        ok = steps <= cfg.max_step and 0 < left <= cfg.battery_max
    else:
        ok = False
    return ok and last_cell in (0, 1)


def check_ends(episodes: Iterable[dict]) -> Check:
    """The ends in ``result.json`` (spec §5.1 notes a-b, §6): completed at exactly ``max_step`` with charge left;
    a battery death without charging at exactly ``battery_max`` steps, after charging later than that, with 0 left;
    a collision with charge left; the final step's cell counts (``clean_score`` minus the last logged
    ``dirt_cleaned`` is 0 or 1)."""
    check = Check("ends")
    for episode in episodes:
        cfg: VacuumConfig = episode["config"]
        check.detail[_end_kind(episode)] += 1
        check.add(_end_ok(episode), {
            "run": episode["run"], "round": episode.get("round"), "map_id": episode.get("map_id"),
            "result": episode.get("result"), "steps": episode.get("steps"),
            "charge_count": episode.get("charge_count"), "remaining_charge": episode.get("remaining_charge"),
            "clean_score": episode.get("clean_score"), "dirt_cleaned": episode.get("dirt_cleaned"),
            "max_step": cfg.max_step, "battery_max": cfg.battery_max})
    return check


# ------------------------------------------------------------------------------------------------ the simulator
class _ProbeMap(NamedTuple):
    """The fields :class:`VacuumGame` reads of a map."""

    name: str
    walkable: np.ndarray
    chargers: tuple[tuple[int, int], ...]


_PROBE_CHARGERS = ((20, 20), (107, 20), (20, 70), (107, 70))  # charger spots of the probe maps (centres x, z)
_PROBE_ROW = 40  # the robot's probes walk on rows 20..60, away from the official robots' squares


def _npc_spawns(count: int) -> list[tuple[int, int]]:
    """Spawn points whose squares (+- NPC_RADIUS) lie at z >= 110, far from the probes' rows."""
    return [(10 + 30 * i, SIZE - 8) for i in range(count)]


def open_map() -> _ProbeMap:
    """A 128 x 128 map where every cell is road, with the charger spots of the probes: a map with no walls, on which
    the official robots' moves are limited by their squares only."""
    walkable = np.ones((SIZE, SIZE), dtype=bool)
    walkable.setflags(write=False)
    return _ProbeMap("open", walkable, _PROBE_CHARGERS)


class SimulatorProbe:
    """Plays :class:`VacuumGame` on the open map (:func:`open_map`) from chosen states and remembers the outcomes.

    The official robots spawn far from the probes (``z >= 110``), so they neither collide with the robot nor clean
    the cells it enters; all the configuration's chargers are active, the first at ``(20, 20)``.
    """

    def __init__(self) -> None:
        self.game_map = open_map()
        self._cache: dict = {}

    def game(self, config: VacuumConfig, hero: tuple[int, int], battery: int | None = None) -> VacuumGame:
        """A fresh game of ``config`` with the robot at ``hero`` and, if given, its battery set to ``battery``."""
        game = VacuumGame(self.game_map, config, np.random.default_rng(0), hero=hero,
                          npc_spawns=_npc_spawns(config.robot_count),
                          chargers=list(range(min(config.charger_count, len(_PROBE_CHARGERS)))))
        if battery is not None:
            game.battery = int(battery)
        return game

    def battery_after(self, config: VacuumConfig, battery: int, kind: str) -> int:
        """The battery after one step from ``battery``: ``kind`` "pay" (the step ends off the chargers), "charge"
        (it enters a charger's footprint from outside) or "stay" (it moves inside a footprint)."""
        key = ("battery", config, battery, kind)
        if key not in self._cache:
            start, action = {"pay": ((40, _PROBE_ROW), 0), "charge": ((22, 20), 4), "stay": ((20, 20), 0)}[kind]
            game = self.game(config, start, battery)
            game.step(action)
            self._cache[key] = game.battery
        return self._cache[key]

    def clean_outcomes(self, config: VacuumConfig) -> dict[str, int]:
        """The cells one step cleans, by what the robot enters: a dirty cell, a cell it cleaned before, a charger
        cell, and a blocked move (the map's edge). Each value is also checked against ``clean_score``'s growth."""
        key = ("clean", config)
        if key not in self._cache:
            out = {}
            game = self.game(config, (40, _PROBE_ROW))
            for name, action in (("dirty", 0), ("dirty_again", 0), ("cleaned_before", 4)):
                score = game.clean_score
                cleaned = game.step(action)
                out[name] = cleaned if game.clean_score - score == cleaned else -1
            for name, hero, action in (("charger", (22, 20), 4), ("blocked", (0, _PROBE_ROW), 4)):
                game = self.game(config, hero)
                cleaned = game.step(action)
                out[name] = cleaned if game.clean_score == cleaned else -1
            self._cache[key] = out
        return self._cache[key]

    def end_without_charging(self, config: VacuumConfig) -> dict:
        """Play an episode whose robot never reaches a charger and enters a dirty cell each step (a snake over rows
        from ``(30, 30)``): its length, how it ended and the cells its last step cleaned."""
        key = ("end_dry", config)
        if key not in self._cache:
            game = self.game(config, (30, 30))
            east, last = True, 0
            while not game.done:
                if (east and game.x >= 90) or (not east and game.x <= 30):
                    action, east = 6, not east  # down one row, then back the other way
                else:
                    action = 0 if east else 4
                last = game.step(action)
            self._cache[key] = self._end(game, last)
        return self._cache[key]

    def end_on_charger(self, config: VacuumConfig) -> dict:
        """Play an episode whose robot paces inside the first charger's footprint: its length and how it ended."""
        key = ("end_charger", config)
        if key not in self._cache:
            game = self.game(config, (20, 20))
            last = 0
            while not game.done:
                last = game.step(0 if game.x == 20 else 4)
            self._cache[key] = self._end(game, last)
        return self._cache[key]

    @staticmethod
    def _end(game: VacuumGame, last: int) -> dict:
        return {"steps": game.step_no, "terminated": game.terminated, "truncated": game.truncated,
                "fail_reason": game.fail_reason, "battery": game.battery, "last_step_cleaned": last,
                "charge_count": game.charge_count}


def check_battery_sim(items: Iterable[Transition], probe: SimulatorProbe) -> Check:
    """For each transition, the simulator started from the logged battery and configuration, stepping as the log
    says (off the chargers for a 1-unit drop, onto a charger for a rise to ``battery_max``, inside one for a robot
    that stays at ``battery_max``), ends at the logged battery. A logged change that is neither is a disagreement."""
    check = Check("battery_sim")
    for t in items:
        before, after, cfg = t.before.battery, t.after.battery, t.config
        if after == before - 1:
            kind = "pay"
        elif after == cfg.battery_max:
            kind = "stay" if before == cfg.battery_max else "charge"
        else:
            kind = "other"
        check.detail[kind] += 1
        simulated = probe.battery_after(cfg, before, kind) if kind != "other" else None
        check.add(simulated == after, _example(t, battery=[before, after], simulated=simulated, kind=kind))
    return check


def check_cleaning_sim(items: Iterable[Transition], probe: SimulatorProbe) -> Check:
    """The logged growth of ``dirt_cleaned`` is one the simulator's step gives for some cell entered (a dirty cell:
    1; a clean or charger cell or a blocked move: 0; see :meth:`SimulatorProbe.clean_outcomes`)."""
    check = Check("cleaning_sim")
    for t in items:
        outcomes = probe.clean_outcomes(t.config)
        delta = t.after.dirt_cleaned - t.before.dirt_cleaned
        check.detail[delta if delta in (0, 1) else "other"] += 1
        check.add(delta in outcomes.values(), _example(t, dirt_cleaned=[t.before.dirt_cleaned, t.after.dirt_cleaned],
                                                       simulated=outcomes))
    return check


def check_blocked_moves_sim(probes: int = 2000, seed: int = 0, obstacle_share: float = 0.35) -> Check:
    """The simulator moves the robot exactly when the move rule of spec §5.2 (:func:`can_move`, the rule the logger's
    legal mask used) allows it, and a blocked move still costs 1 battery and leaves the robot in place: ``probes``
    random (cell, action) pairs on a map with ``obstacle_share`` of random obstacles."""
    check = Check("blocked_moves_sim")
    rng = np.random.default_rng(seed)
    walkable = rng.random((SIZE, SIZE)) >= obstacle_share
    spawns = [(x, z) for x, z in _npc_spawns(1)]
    walkable[[z for _, z in spawns], [x for x, _ in spawns]] = True
    game_map = _ProbeMap("random_obstacles", walkable, _PROBE_CHARGERS)
    config = VacuumConfig(robot_count=1, charger_count=1, max_step=2000, battery_max=999)
    cells = np.argwhere(walkable[:SIZE - 2 * NPC_RADIUS - 10])  # (z, x) of road rows far from the robot's square
    game = VacuumGame(game_map, config, rng, hero=(int(cells[0][1]), int(cells[0][0])), npc_spawns=spawns,
                      chargers=[0])
    for _ in range(probes):
        z, x = (int(v) for v in cells[int(rng.integers(len(cells)))])
        action = int(rng.integers(len(DIRECTIONS)))
        dx, dz = DIRECTIONS[action]
        game.x, game.z, game.battery = x, z, 500
        game.step(action)
        allowed = can_move(walkable, x, z, dx, dz)
        moved = (game.x, game.z) == (x + dx, z + dz)
        stayed = (game.x, game.z) == (x, z)
        ok = (moved if allowed else stayed) and game.battery in (499, config.battery_max)
        check.detail["allowed" if allowed else "blocked"] += 1
        check.add(ok, {"cell": [x, z], "action": action, "allowed": allowed, "now": [game.x, game.z]})
        if game.done:  # a probe cannot end the episode (battery 500, robot far from the official one); restart if so
            game = VacuumGame(game_map, config, rng, hero=(x, z), npc_spawns=spawns, chargers=[0])
    return check


def check_ends_sim(episodes: Iterable[dict], probe: SimulatorProbe) -> Check:
    """The simulator, given the episode's configuration, ends a never-charging episode at the logged step (a battery
    death at ``battery_max`` steps, counting that step's cell) and a completed one at the logged step (``max_step``,
    truncated). Ends the simulator cannot be steered to without the map (collisions, deaths after charging) are left
    out."""
    check = Check("ends_sim")
    for episode in episodes:
        cfg: VacuumConfig = episode["config"]
        kind = _end_kind(episode)
        if kind == "completed":
            sim = probe.end_on_charger(cfg)
            ok = sim["truncated"] and not sim["terminated"] and sim["steps"] == int(episode["steps"])
        elif kind == "battery_no_charge":
            sim = probe.end_without_charging(cfg)
            logged_last = int(episode["clean_score"]) - int(episode["dirt_cleaned"])
            ok = (sim["terminated"] and sim["fail_reason"] == FAIL_BATTERY and sim["steps"] == int(episode["steps"])
                  and sim["battery"] == 0 and sim["last_step_cleaned"] in (0, 1) and logged_last in (0, 1))
        else:
            continue
        check.detail[kind] += 1
        check.add(ok, {"run": episode["run"], "round": episode.get("round"), "map_id": episode.get("map_id"),
                       "steps": episode.get("steps"), "simulated": sim})
    return check


def check_eval_task_sim(tasks: Iterable[dict], probe: SimulatorProbe, config: VacuumConfig | None = None) -> Check:
    """Each episode of an official evaluation task that ran to its end agrees with the simulator under the default
    evaluation configuration (``config``, None: :class:`VacuumConfig` defaults, max_step 1000): the env's call count
    is the reset plus the simulator's episode length, and the end is ``terminated False, truncated True``."""
    check = Check("eval_task_sim")
    cfg = config if config is not None else VacuumConfig()
    sim = probe.end_on_charger(cfg)
    for task in tasks:
        for runs, end in zip(task["process_run_count"], task["ends"], strict=False):
            ok = runs == 1 + sim["steps"] and end == {"terminated": sim["terminated"], "truncated": sim["truncated"]}
            check.detail["truncated" if end["truncated"] else "terminated"] += 1
            check.add(ok, {"task": task["task"], "process_run_count": runs, "end": end, "simulated": sim})
    return check


def _hero_near_npc(game: VacuumGame, rng: np.random.Generator) -> tuple[int, int] | None:
    """A road cell outside the chargers within view of an official robot's spawn point, more than 5 cells
    (Manhattan) from every spawn point and not adjacent to one: a start that soon sees an official robot."""
    sx, sz = game.npc_spawns[int(rng.integers(len(game.npc_spawns)))]
    for _ in range(200):
        x, z = sx + int(rng.integers(-VIEW_RADIUS, VIEW_RADIUS + 1)), sz + int(rng.integers(-VIEW_RADIUS,
                                                                                           VIEW_RADIUS + 1))
        if not (0 <= x < SIZE and 0 <= z < SIZE) or not game.walkable[z, x] or game.charger_mask[z, x]:
            continue
        if all(abs(x - a) + abs(z - b) > 5 and max(abs(x - a), abs(z - b)) > 2 for a, b in game.npc_spawns):
            return x, z
    return None


def simulate_npc_deltas(game_map, config: VacuumConfig, target: int, seed: int = 0,
                        max_steps: int | None = None) -> Counter:
    """The simulator's counterpart of :func:`npc_delta_histogram`: ``target`` in-view transitions of the nearest
    official robot's distance on ``game_map`` under ``config``. The robot takes a uniformly random move among those
    the move rule allows, every step (the logged robot never tried a blocked move); each episode starts it within
    view of an official robot's spawn point and ends when it wanders more than twice the view away, and the step
    that ends an episode is left out (the logs never show the state after it). ``max_steps`` (default 200 *
    target) bounds the work."""
    rng = np.random.default_rng(seed)
    hist: Counter = Counter()
    budget = max_steps if max_steps is not None else 200 * max(target, 1)
    steps = 0
    walkable = np.asarray(game_map.walkable, dtype=bool)
    while sum(hist.values()) < target and steps < budget:
        drawn = VacuumGame(game_map, config, rng)
        hero = _hero_near_npc(drawn, rng)
        if hero is None:
            continue
        game = VacuumGame(game_map, config, rng, hero=hero, npc_spawns=drawn.npc_spawns, chargers=drawn.charger_ids)
        while not game.done and steps < budget:
            d0 = game.nearest_npc()
            legal = [a for a, (dx, dz) in enumerate(DIRECTIONS) if can_move(walkable, game.x, game.z, dx, dz)]
            game.step(int(legal[int(rng.integers(len(legal)))]))
            steps += 1
            if game.done:
                break
            d1 = game.nearest_npc()
            if d0 <= VIEW_RADIUS and d1 <= VIEW_RADIUS:
                hist[d1 - d0] += 1
            if d1 > 2 * VIEW_RADIUS:
                break
    return hist


def compare_histograms(logged: Counter, simulated: Counter) -> dict:
    """Per-bin shares of two histograms of the distance change, their total variation distance (half the sum of
    the absolute share differences: 0 same, 1 disjoint) and each one's share of ``|delta| = 2``."""
    n_log, n_sim = sum(logged.values()), sum(simulated.values())
    bins = sorted(set(logged) | set(simulated))
    log_share = {b: logged.get(b, 0) / n_log if n_log else 0.0 for b in bins}
    sim_share = {b: simulated.get(b, 0) / n_sim if n_sim else 0.0 for b in bins}
    tvd = 0.5 * sum(abs(log_share[b] - sim_share[b]) for b in bins)
    return {
        "logs": {str(b): logged.get(b, 0) for b in bins},
        "simulator": {str(b): simulated.get(b, 0) for b in bins},
        "shares": {str(b): {"logs": round(log_share[b], 4), "simulator": round(sim_share[b], 4)} for b in bins},
        "abs2_share": {"logs": round(sum(v for b, v in log_share.items() if abs(b) == 2), 4),
                       "simulator": round(sum(v for b, v in sim_share.items() if abs(b) == 2), 4)},
        "tvd": round(tvd, 4),
    }


def _npc_comparison(items: Sequence[Transition], game_maps: Sequence, seed: int, scale: float) -> dict:
    """The logged histogram beside the simulator's on each map, each round's share of in-view transitions simulated
    with that round's configuration (its robot count) in proportion to the logs."""
    logged = npc_delta_histogram(items)
    per_config = Counter(t.config for t in items if _in_view(t))
    out = {"logs": {str(k): v for k, v in sorted(logged.items())}, "maps": {}}
    configs = sorted(per_config, key=lambda c: (c.robot_count, c.charger_count, c.max_step, c.battery_max))
    for game_map in game_maps:
        simulated: Counter = Counter()
        for i, cfg in enumerate(configs):
            simulated.update(simulate_npc_deltas(game_map, cfg, max(1, round(per_config[cfg] * scale)), seed=seed + i))
        npc_check = Check("npc_step_sim", agree=sum(v for d, v in simulated.items() if abs(d) <= 2),
                          total=sum(simulated.values()), detail=Counter(simulated))
        npc_check.examples = [{"delta": d, "count": v} for d, v in sorted(simulated.items()) if abs(d) > 2]
        out["maps"][str(game_map.name)] = {"comparison": compare_histograms(logged, simulated),
                                           "npc_step_sim": npc_check.to_dict()}
    return out


def fidelity_report(folder: str | Path, eval_logs: str | Path | None = None, game_maps: Sequence | None = None,
                    seed: int = 0, sim_scale: float = 2.0) -> dict:
    """Every check on the core logs under ``folder`` (and the evaluation task logs under ``eval_logs`` if given),
    as a JSON-able dict: per check ``agree``, ``total``, ``share``, counts by kind and examples of disagreement; the
    nearest official robot's distance change in the logs beside the simulator's on each of ``game_maps`` (None: the
    open map), ``sim_scale`` times as many in-view transitions as the logs hold, seeded by ``seed``."""
    if not (isinstance(sim_scale, int | float) and sim_scale > 0):
        raise ValueError(f"sim_scale = {sim_scale!r}: it must be a number > 0 (simulated in-view transitions per "
                         "logged one), e.g. 2")
    files = list(read_log_files(folder))
    items = list(transitions(files))
    results = read_results(folder)
    probe = SimulatorProbe()
    checks = [check_battery(items), check_battery_sim(items, probe), check_cleaning(items),
              check_cleaning_sim(items, probe), check_blocked_moves(items), check_blocked_moves_sim(seed=seed),
              check_npc_step(items), check_row_limits(files), check_ends(results), check_ends_sim(results, probe)]
    tasks = read_eval_task(eval_logs) if eval_logs is not None else []
    if eval_logs is not None:
        checks.append(check_eval_task_sim(tasks, probe))
    pairs = sum(max(len(f.rows) - 1, 0) for f in files)
    return {
        "logs": str(folder),
        "runs": len({f.source.split("/")[0] for f in files}),
        "episode_files": len(files),
        "rows": sum(len(f.rows) for f in files),
        "lines_skipped": sum(f.skipped for f in files),
        "transitions": len(items),
        "pairs_dropped": pairs - len(items),
        "result_episodes": len(results),
        "joined_fragments": joined_fragments(items),
        "logged_actions": {str(k): v for k, v in sorted(Counter(t.before.action for t in items).items())},
        "checks": {c.name: c.to_dict() for c in checks},
        "npc_delta": _npc_comparison(items, list(game_maps) if game_maps is not None else [open_map()], seed,
                                     sim_scale),
        "eval_task": tasks,
    }
