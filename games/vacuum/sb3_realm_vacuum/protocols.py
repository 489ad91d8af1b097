"""robot_vacuum's evaluation protocols and the figures of its games.

A protocol is a named list of maps; each map is played ``games`` times from fixed env seeds, so every policy plays the
same games. The platform ranks on five hidden maps, so a policy is judged on maps it did not train on:

- ``hidden``: the package's maps ``standin_1`` .. ``standin_5``, stand-ins for the hidden maps (the default);
- ``validation``: ``own_9`` and ``own_10`` (for choosing models and trials);
- ``train``: ``own_1`` .. ``own_8``;
- ``open``: the platform's ten open maps ``open_1`` .. ``open_10``, read from a maps folder (``maps_dir``) holding
  ``robot_vacuum_map_<k>.json``;
- ``maps``: the maps you name (``--maps own_2,open_5,path/to/map.json``).

A game's ``usr_conf`` is the default episode configuration (4 official robots, 4 chargers, max_step 1000, battery
200) with its map's name under ``map_name``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .rules import VacuumConfig

__all__ = [
    "DEFAULT_GAMES",
    "MAP_LISTS",
    "PROTOCOLS",
    "SHIPPED_MAPS",
    "STAND_INS",
    "SUCCESS_METRICS",
    "TRAINING_MAPS",
    "VALIDATION_MAPS",
    "check_eval_configs",
    "check_map_name",
    "completed",
    "describe_protocol",
    "episode_metrics",
    "evaluate_args",
    "held_out_configs",
    "protocol_configs",
    "random_starts",
    "report_lines",
    "result_details",
    "summarize",
    "worst_table",
]

PROTOCOLS = ("hidden", "validation", "train", "open", "maps")
OPEN_MAPS = tuple(f"open_{k}" for k in range(1, 11))
TRAINING_MAPS = tuple(f"own_{k}" for k in range(1, 9))
VALIDATION_MAPS = ("own_9", "own_10")
STAND_INS = tuple(f"standin_{k}" for k in range(1, 6))
SHIPPED_MAPS = TRAINING_MAPS + VALIDATION_MAPS + STAND_INS
MAP_LISTS: dict[str, tuple[str, ...]] = {"hidden": STAND_INS, "validation": VALIDATION_MAPS, "train": TRAINING_MAPS,
                                         "open": OPEN_MAPS}
DEFAULT_GAMES = 10  # games per map
_OPEN = re.compile(r"open_(\d+)$")


def check_map_name(name: object) -> str:
    """``name`` when it names a map the env can play: ``default``, a shipped map, an open map ``open_1`` ..
    ``open_10`` or a path ending in ``.json`` or ``.json.gz``; else a ``ValueError`` naming it and the choices."""
    text = str(name).strip() if isinstance(name, str) else ""
    found = _OPEN.match(text)
    if text == "default" or text in SHIPPED_MAPS or (found and 1 <= int(found.group(1)) <= 10) or text.endswith(
            (".json", ".json.gz")):
        return text
    raise ValueError(f"map {name!r} is not a robot_vacuum map: name a shipped map ({', '.join(SHIPPED_MAPS)}), an "
                     "open map open_1 .. open_10 (read from the maps folder, --maps-dir) or the path of a .json map "
                     "file")


def protocol_maps(protocol: str, maps: Sequence[str] | None = None) -> tuple[str, ...]:
    """The maps ``protocol`` plays (``maps`` for the ``maps`` protocol); ``ValueError`` for an unknown protocol, for
    ``maps`` given to another protocol or missing from ``maps``, and for a name that is not a map."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} for robot_vacuum; choose one of {list(PROTOCOLS)}")
    if protocol != "maps":
        if maps:
            raise ValueError(f"--maps is played only by --protocol maps, not by {protocol!r} (which plays "
                             f"{', '.join(MAP_LISTS[protocol])}): add --protocol maps, or drop --maps")
        return MAP_LISTS[protocol]
    if not maps:
        raise ValueError("the maps protocol needs the maps to play, e.g. --maps own_2,standin_1")
    return tuple(check_map_name(m) for m in maps)


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int | None = None,
                     custom=None, max_step: int | None = None, maps: Sequence[str] | None = None) -> list[dict]:
    """The ``usr_conf`` dicts of a protocol: ``games`` per map (default :data:`DEFAULT_GAMES`), map by map, each the
    default configuration (with ``max_step`` where given) and the map under ``map_name``. ``seed`` picks nothing
    here: the evaluation seeds each game's env from it."""
    del seed
    if custom:
        raise ValueError("--sets (treasure sets) belongs to Back to the Realm; a robot_vacuum protocol plays maps: "
                         "drop --sets, and name maps with --protocol maps --maps own_2,standin_1")
    if treasures is not None:
        raise ValueError(f"--treasures {treasures}: robot_vacuum has no treasures; drop --treasures")
    names = protocol_maps(protocol, maps)
    n = DEFAULT_GAMES if games is None else games
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"--games {n!r} must be an integer >= 1 (games per map)")
    conf = VacuumConfig.from_usr_conf({} if max_step is None else {"max_step": max_step}).to_usr_conf()
    return [{**conf, "map_name": name} for name in names for _ in range(n)]


def describe_protocol(protocol: str, treasures: int | None) -> str:
    """What ``protocol`` plays, in words (the CLI prints it)."""
    del treasures
    if protocol == "maps":
        return "the maps of --maps"
    return f"the maps {', '.join(MAP_LISTS.get(protocol, ()))}"


def check_eval_configs(configs: list) -> list[VacuumConfig]:
    """The evaluation games of a training run, parsed (each a ``usr_conf`` with its ``map_name``); ``ValueError``
    naming the first that is not one."""
    parsed = []
    for i, c in enumerate(configs):
        if not isinstance(c, dict) or "map_name" not in c:
            raise ValueError(f"configs[{i}] = {c!r}: a robot_vacuum evaluation game is a usr_conf with its map under "
                             "map_name, as protocol_configs() makes them")
        check_map_name(c["map_name"])
        parsed.append(VacuumConfig.from_usr_conf({k: v for k, v in c.items() if k != "map_name"}))
    return parsed


def held_out_configs(usr_conf: dict, games: int, seed: int, maps: Sequence[str]) -> list[dict]:
    """A training run's held-out games: ``games`` per map of ``maps`` (empty: the validation maps), each the default
    configuration with the run's ``max_step``."""
    config = VacuumConfig.from_usr_conf(usr_conf)
    return protocol_configs("maps", seed=seed, games=games, max_step=config.max_step,
                            maps=list(maps) or list(VALIDATION_MAPS))


def evaluate_args(usr_confs: Sequence[dict]) -> dict:
    """The arguments of :func:`~sb3_realm.evaluation.evaluate` that play exactly ``usr_confs`` (as
    :func:`held_out_configs` makes them), in order: the ``maps`` protocol on their maps."""
    maps = list(dict.fromkeys(conf["map_name"] for conf in usr_confs))
    return {"protocol": "maps", "maps": maps, "games": len(usr_confs) // len(maps),
            "max_step": usr_confs[0]["max_step"]}


def random_starts(config: VacuumConfig) -> list[dict]:
    """robot_vacuum draws the robot's spawn itself (at reset): a curriculum has no start to choose."""
    del config
    return []


# ------------------------------------------------------------------------------------------------ figures
def result_details(info: dict) -> dict:
    """A game's own figures from its final ``info``: how it ended (``completed``, ``battery``, ``collision``), the
    charges, the share of the map's dirt the robot cleaned, the cells the official robots cleaned and the blocked
    moves."""
    return {"end": str(info["end"]), "completed": info["end"] == "completed", "charges": int(info["charges"]),
            "coverage": float(info["coverage"]), "npc_cleaned": int(info["npc_cleaned"]),
            "blocked": int(info["blocked"])}


def completed(game) -> bool:
    """A game (a :class:`~sb3_realm.evaluation.GameResult`) reached max_step without a battery death or a collision,
    and was not cut short before its end."""
    return bool(game.details.get("completed")) and not game.cut


def _figures(games: Sequence) -> dict:
    ends = [g.details.get("end") for g in games]
    return {
        "games": len(games),
        "mean_score": float(np.mean([g.score for g in games])),
        "mean_steps": float(np.mean([g.steps for g in games])),
        "cells_a_step": float(np.sum([g.score for g in games]) / max(1, np.sum([g.steps for g in games]))),
        "completed": ends.count("completed"),
        "completed_share": float(ends.count("completed") / len(games)),
        "battery_deaths": ends.count("battery"),
        "collisions": ends.count("collision"),
        "mean_charges": float(np.mean([g.details.get("charges", 0) for g in games])),
        "mean_coverage": float(np.mean([g.details.get("coverage", 0.0) for g in games])),
    }


def summarize(games: Sequence) -> dict:
    """The game's own figures of a report's games: cells a step, ends (completed, battery deaths, collisions),
    charges, coverage, and the same per map (``per_map``) with the yardstick's mean where it was played."""
    out = {k: v for k, v in _figures(games).items() if k not in ("games", "mean_score", "mean_steps")}
    by_map: dict[str, list] = {}
    for g in games:
        by_map.setdefault(g.map or "", []).append(g)
    per_map = {}
    for name, played in by_map.items():
        row = _figures(played)
        scored = [g.yardstick_score for g in played if g.yardstick_score is not None]
        if scored:
            row["yardstick_mean_score"] = float(np.mean(scored))
        per_map[name] = row
    out["per_map"] = per_map
    return out


def report_lines(summary: dict, yardstick: str) -> list[str]:
    """The lines of a readable report: the mean score, the ends, then the per-map table."""
    lines = [
        f"score mean {summary['mean_score']:.1f}  min {summary['min_score']:.0f}  max {summary['max_score']:.0f}  | "
        f"steps {summary['mean_steps']:.1f}  | {summary['cells_a_step']:.3f} cells a step",
        f"completed {summary['completed']}/{summary['games']} ({100 * summary['completed_share']:.0f}%)  | battery "
        f"deaths {summary['battery_deaths']}  | collisions {summary['collisions']}  | charges "
        f"{summary['mean_charges']:.1f} a game  | map cleaned {100 * summary['mean_coverage']:.1f}%",
        "",
        f"{'map':<12} {'games':>5} {'score':>8} {yardstick:>9} {'steps':>7} {'cells/st':>8} {'done':>5} "
        f"{'battery':>7} {'hit':>4}",
    ]
    rows = dict(summary["per_map"])
    if len(rows) > 1:
        rows["all maps"] = summary
    for name, row in rows.items():
        yard = f"{row['yardstick_mean_score']:9.1f}" if "yardstick_mean_score" in row else f"{'-':>9}"
        lines.append(f"{name:<12} {row['games']:>5} {row['mean_score']:8.1f} {yard} {row['mean_steps']:7.1f} "
                     f"{row['cells_a_step']:8.3f} {row['completed']:>5} {row['battery_deaths']:>7} "
                     f"{row['collisions']:>4}")
    return lines


def worst_table(games: Sequence, worst: int, yardstick: str) -> list[str]:
    """The ``worst`` lowest-scoring games, one line each."""
    lines = [f"{'game':>5} {'map':<12} {'score':>7} {'steps':>6} {'charges':>7} {yardstick:>9} {'gap':>7}  end"]
    for g in sorted(games, key=lambda g: (g.score, g.index))[:worst]:
        yard = f"{g.yardstick_score:9.1f}" if g.yardstick_score is not None else f"{'-':>9}"
        gap = f"{g.gap:7.1f}" if g.gap is not None else f"{'-':>7}"
        lines.append(f"{g.index:>5} {g.map or '':<12} {g.score:7.0f} {g.steps:>6} {g.details.get('charges', 0):>7} "
                     f"{yard} {gap}  {g.details.get('end', '')}")
    return lines


# ------------------------------------------------------------------------------------------ training runs
def episode_metrics(info: dict) -> dict[str, float]:
    """A finished training episode's logged values (``train_episodes/*``): score, steps, cells a step, the end,
    charges, coverage, and each reward term's sum over the episode (unweighted)."""
    out = {"score": float(info["score"]), "steps": float(info["steps"]),
           "cells_a_step": float(info["score"]) / max(1.0, float(info["steps"])),
           "completed_rate": float(info["end"] == "completed"), "battery_death": float(info["end"] == "battery"),
           "collision": float(info["end"] == "collision"), "charges": float(info["charges"]),
           "coverage": float(info["coverage"])}
    out.update({f"reward_terms/{k}": float(v) for k, v in info.get("episode_reward_terms", {}).items()})
    return out


#: a curriculum's success metrics: the value of one finished episode
SUCCESS_METRICS = {
    "completed_rate": lambda info: float(info["end"] == "completed"),
    "score": lambda info: float(info["score"]),
}
