"""Gorge Chase's evaluation protocols and their figures.

A protocol is a named list of maps; each map is played ``games`` times from fixed env seeds, so every policy plays
exactly the same games. The competition ranks on five hidden maps, so a policy is judged on maps it never trained on:

- ``hidden``: the package's maps ``own_6`` .. ``own_10``, stand-ins for the five hidden maps (no download needed);
- ``test``: open maps 9 and 10 and the five stand-ins;
- ``validation``: open map 8 (for choosing models and trials);
- ``train``: open maps 1 to 7;
- ``open``: the ten open maps;
- ``maps``: the maps you name (``--maps own_2,open_5,path/to/map.json``).

Open maps are read as ``gorge_chase_map_<k>.json`` from the maps folder the env is given (``maps_dir``). A game's
``usr_conf`` is the default episode configuration with its map's name under ``map_name``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .rules import GorgeConfig

__all__ = [
    "DEFAULT_GAMES",
    "HIDDEN_STAND_INS",
    "MAP_LISTS",
    "OPEN_MAPS",
    "PROTOCOLS",
    "SHIPPED_MAPS",
    "SUCCESS_METRICS",
    "TRAINING_MAPS",
    "VALIDATION_MAPS",
    "check_eval_configs",
    "check_map_name",
    "describe_protocol",
    "episode_metrics",
    "evaluate_args",
    "held_out_configs",
    "protocol_configs",
    "protocol_maps",
    "random_starts",
    "report_lines",
    "result_details",
    "summarize",
    "survived",
    "worst_table",
]

PROTOCOLS = ("hidden", "test", "validation", "train", "open", "maps")
OPEN_MAPS = tuple(f"open_{k}" for k in range(1, 11))
#: the maps shipped with the package (``sb3_realm/games/gorge/data/gorge_own_<k>.json.gz``, generated from seed k by
#: ``tools/gorge_mapgen.py``); ``default`` is the first
SHIPPED_MAPS = tuple(f"own_{k}" for k in range(1, 11))
#: the shipped maps the package's recipes train on
TRAINING_MAPS = SHIPPED_MAPS[:5]
#: the shipped maps that stand in for the competition's five hidden maps: no shipped recipe trains on them
HIDDEN_STAND_INS = SHIPPED_MAPS[5:]
MAP_LISTS: dict[str, tuple[str, ...]] = {
    "hidden": HIDDEN_STAND_INS,
    "test": ("open_9", "open_10", *HIDDEN_STAND_INS),
    "validation": ("open_8",),
    "train": OPEN_MAPS[:7],
    "open": OPEN_MAPS,
}
DEFAULT_GAMES = 20  # games per map
_OPEN = re.compile(r"open_(\d+)$")


def check_map_name(name: object) -> str:
    """``name`` when it names a map the env can play: ``default``, a shipped map (``own_1`` .. ``own_10``), an open
    map ``open_1`` .. ``open_10`` or a path ending in ``.json`` or ``.json.gz``; else a ``ValueError`` naming it and
    the choices."""
    text = str(name).strip() if isinstance(name, str) else ""
    found = _OPEN.match(text)
    if text == "default" or text in SHIPPED_MAPS or (found and 1 <= int(found.group(1)) <= 10) or text.endswith(
            (".json", ".json.gz")):
        return text
    raise ValueError(f"map {name!r} is not a Gorge Chase map: name a shipped map ({', '.join(SHIPPED_MAPS)}), an open "
                     "map open_1 .. open_10 (read from the maps folder, --maps-dir) or the path of a .json map file")


def protocol_maps(protocol: str, maps: Sequence[str] | None = None) -> tuple[str, ...]:
    """The maps ``protocol`` plays (``maps`` for the ``maps`` protocol); ``ValueError`` for an unknown protocol, for
    ``maps`` given to another protocol or missing from ``maps``, and for a name that is not a map."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} for Gorge Chase; choose one of {list(PROTOCOLS)}")
    if protocol != "maps":
        if maps:
            raise ValueError(f"--maps is played only by --protocol maps, not by {protocol!r} (which plays "
                             f"{', '.join(MAP_LISTS[protocol])}): add --protocol maps, or drop --maps")
        return MAP_LISTS[protocol]
    if not maps:
        raise ValueError("the maps protocol needs the maps to play, e.g. --maps own_2,open_5")
    return tuple(check_map_name(m) for m in maps)


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int | None = None,
                     custom: list[list[int]] | None = None, max_step: int | None = None,
                     maps: Sequence[str] | None = None) -> list[dict]:
    """The ``usr_conf`` dicts of a protocol: ``games`` per map (default :data:`DEFAULT_GAMES`), map by map, each the
    default configuration with ``treasure_count`` = ``treasures`` and ``max_step`` where given and the map under
    ``map_name``. ``seed`` picks nothing here: the evaluation seeds each game's env from it."""
    del seed  # every game's env seed comes from it (evaluation.game_seed)
    if custom:
        raise ValueError("--sets (treasure sets) belongs to Back to the Realm; a Gorge Chase protocol plays maps: "
                         "drop --sets, and name maps with --protocol maps --maps own_2,open_5")
    names = protocol_maps(protocol, maps)
    n = DEFAULT_GAMES if games is None else games
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"--games {n!r} must be an integer >= 1 (games per map)")
    overrides = {k: v for k, v in (("treasure_count", treasures), ("max_step", max_step)) if v is not None}
    conf = GorgeConfig.from_usr_conf(overrides).to_usr_conf()  # refuses a value out of range, naming it
    return [{**conf, "map_name": name} for name in names for _ in range(n)]


def describe_protocol(protocol: str, treasures: int | None) -> str:
    """What ``protocol`` plays, in words (the CLI prints it)."""
    del treasures  # every protocol plays the configured treasure count
    if protocol == "maps":
        return "the maps of --maps"
    return f"the maps {', '.join(MAP_LISTS.get(protocol, ()))}"


def check_eval_configs(configs: list) -> list[GorgeConfig]:
    """The evaluation games of a training run, parsed (each a ``usr_conf`` with its ``map_name``); ``ValueError``
    naming the first that is not one."""
    parsed = []
    for i, c in enumerate(configs):
        if not isinstance(c, dict) or "map_name" not in c:
            raise ValueError(f"configs[{i}] = {c!r}: a Gorge Chase evaluation game is a usr_conf with its map under "
                             "map_name, as protocol_configs() makes them")
        check_map_name(c["map_name"])
        parsed.append(GorgeConfig.from_usr_conf({k: v for k, v in c.items() if k != "map_name"}))
    return parsed


def random_starts(config: GorgeConfig) -> list[dict]:
    """Gorge Chase draws the hero's start itself (at reset): a curriculum has no start to choose."""
    del config
    return []


# ------------------------------------------------------------------------------------------------ figures
def result_details(info: dict) -> dict:
    """A game's own figures from its final ``info`` (:attr:`~sb3_realm.evaluation.GameResult.details`): the
    treasures taken, the flashes used and the buffs taken, survived to max_step, caught after the speed-up, the step
    of the catch and the free 4-neighbours of the hero's cell when caught (a cornered hero has one). Its reports keep
    the keys they had when the Realm's figures were shared ones: an empty treasure set (``treasure_ids``,
    ``missed``) and ``reached_end`` False."""
    caught = bool(info.get("caught"))
    return {"treasure_ids": (), "reached_end": False, "treasures": int(info["treasures"]), "missed": (),
            "flash_used": int(info.get("flash_used", 0)), "buff_used": int(info.get("buff_used", 0)),
            "survived": not caught, "caught_after_speedup": bool(info.get("caught_after_speedup")),
            "caught_step": int(info["steps"]) if caught else None,
            "free_neighbours": info.get("free_neighbours") if caught else None}


def _figures(games: Sequence) -> dict:
    caught = [g for g in games if not g.details.get("survived", True)]
    return {
        "games": len(games),
        "mean_score": float(np.mean([g.score for g in games])),
        "mean_steps": float(np.mean([g.steps for g in games])),
        "mean_treasures": float(np.mean([g.treasures for g in games])),
        "survived": len(games) - len(caught),
        "survival_share": float((len(games) - len(caught)) / len(games)),
        "deaths_before_speedup": sum(not g.details.get("caught_after_speedup") for g in caught),
        "deaths_after_speedup": sum(bool(g.details.get("caught_after_speedup")) for g in caught),
        "mean_flash_used": float(np.mean([g.flash_used for g in games])),
        "mean_buff_used": float(np.mean([g.buff_used for g in games])),
    }


def summarize(games: Sequence) -> dict:
    """The game's own figures of a report's games (each with ``score``, ``steps``, ``treasures``, ``flash_used``,
    ``buff_used``, ``map`` and :func:`result_details` under ``details``): survival, deaths before and after the
    speed-up, the free neighbours when caught, and the same per map (``per_map``)."""
    out = {k: v for k, v in _figures(games).items() if k not in ("games", "mean_score", "mean_steps")}
    out.update(flash_games=int(sum(g.flash_used > 0 for g in games)),
               buff_games=int(sum(g.buff_used > 0 for g in games)))
    free = Counter(g.details.get("free_neighbours") for g in games if not g.details.get("survived", True))
    out["free_neighbours_when_caught"] = {str(k): v for k, v in sorted(free.items(), key=lambda kv: (kv[0] is None,
                                                                                                  kv[0] or 0))}
    out["cornered"] = free.get(1, 0)
    by_map: dict[str, list] = {}
    for g in games:
        by_map.setdefault(g.map or "", []).append(g)
    per_map = {}
    for name, played in by_map.items():
        row = _figures(played)
        if any(g.yardstick_score is not None for g in played):
            scored = [g.yardstick_score for g in played if g.yardstick_score is not None]
            row["yardstick_mean_score"] = float(np.mean(scored))
        per_map[name] = row
    out["per_map"] = per_map
    return out


def report_lines(summary: dict, yardstick: str) -> list[str]:
    """The lines of a readable report for :func:`summarize`'s figures: the policy's mean score, survival and deaths,
    then the per-map table and its total row (the policy's mean beside the yardstick's)."""
    lines = [
        f"score mean {summary['mean_score']:.2f}  min {summary['min_score']:.2f}  max {summary['max_score']:.2f}  | "
        f"steps {summary['mean_steps']:.1f}  | treasures {summary['mean_treasures']:.2f}",
        f"survived {summary['survived']}/{summary['games']} ({100 * summary['survival_share']:.0f}%)  | caught "
        f"before the speed-up {summary['deaths_before_speedup']}, after it {summary['deaths_after_speedup']}  | "
        f"cornered (1 free neighbour) {summary['cornered']}  | free neighbours when caught "
        f"{summary['free_neighbours_when_caught']}",
        f"flashes {summary['mean_flash_used']:.2f} a game  | buffs {summary['mean_buff_used']:.2f} a game",
        "",
        f"{'map':<12} {'games':>5} {'score':>8} {yardstick:>9} {'steps':>7} {'tr':>5} {'survived':>8} "
        f"{'died<su':>7} {'died>su':>7} {'flash':>5}",
    ]
    rows = dict(summary["per_map"])
    if len(rows) > 1:  # the total row: every game of the report
        rows["all maps"] = summary
    for name, row in rows.items():
        yard = f"{row['yardstick_mean_score']:9.1f}" if "yardstick_mean_score" in row else f"{'-':>9}"
        lines.append(f"{name:<12} {row['games']:>5} {row['mean_score']:8.1f} {yard} {row['mean_steps']:7.1f} "
                     f"{row['mean_treasures']:5.2f} {row['survived']:>8} {row['deaths_before_speedup']:>7} "
                     f"{row['deaths_after_speedup']:>7} {row['mean_flash_used']:5.2f}")
    return lines


def worst_table(games: Sequence, worst: int, yardstick: str) -> list[str]:
    """The ``worst`` lowest-scoring games, one line each."""
    lines = [f"{'game':>5} {'map':<12} {'score':>8} {'steps':>6} {'tr':>3} {'flash':>5} {'buff':>4} "
             f"{yardstick:>9} {'gap':>7}  end"]
    for g in sorted(games, key=lambda g: (g.score, g.index))[:worst]:
        yard = f"{g.yardstick_score:9.1f}" if g.yardstick_score is not None else f"{'-':>9}"
        gap = f"{g.gap:7.1f}" if g.gap is not None else f"{'-':>7}"
        d = g.details
        end = ("survived" if d.get("survived", True) else
               f"caught at step {d.get('caught_step')} ({'after' if d.get('caught_after_speedup') else 'before'} the "
               f"speed-up, {d.get('free_neighbours')} free neighbours)")
        lines.append(f"{g.index:>5} {g.map or '':<12} {g.score:8.1f} {g.steps:>6} {g.treasures:>3} {g.flash_used:>5} "
                     f"{g.buff_used:>4} {yard} {gap}  {end}")
    return lines


# ------------------------------------------------------------------------------------------ training runs
def episode_metrics(info: dict) -> dict[str, float]:
    """A finished training episode's logged values (``train_episodes/*``), from its final ``info``: score, steps,
    treasures, survival, catches before and after the speed-up, a cornered catch (one free 4-neighbour), flashes and
    buffs, and each reward term's sum over the episode (unweighted)."""
    caught = bool(info["caught"])
    after = bool(info["caught_after_speedup"])
    out = {"score": float(info["score"]), "steps": float(info["steps"]), "treasures": float(info["treasures"]),
           "survival_rate": float(not caught), "caught_before_speedup": float(caught and not after),
           "caught_after_speedup": float(after), "cornered": float(caught and info.get("free_neighbours") == 1),
           "flashes": float(info["flash_used"]), "flash_rate": float(info["flash_used"] > 0),
           "buff_rate": float(info["buff_used"] > 0)}
    out.update({f"reward_terms/{k}": float(v) for k, v in info.get("episode_reward_terms", {}).items()})
    return out


#: a curriculum's success metrics: the value of one finished episode
SUCCESS_METRICS = {
    "survival_rate": lambda info: float(not info["caught"]),
    "score": lambda info: float(info["score"]),
    "steps": lambda info: float(info["steps"]),
}

#: the held-out maps of a training run that names none: the validation map
VALIDATION_MAPS = MAP_LISTS["validation"]


def held_out_configs(usr_conf: dict, games: int, seed: int, maps: Sequence[str]) -> list[dict]:
    """A training run's held-out games: ``games`` per map of ``maps`` (empty: the validation map, open_8), each the
    competition's default configuration with the run's max_step. ``seed`` picks nothing here: the evaluation seeds
    each game's env from it."""
    config = GorgeConfig.from_usr_conf(usr_conf)
    return protocol_configs("maps", seed=seed, games=games, max_step=config.max_step,
                            maps=list(maps) or list(VALIDATION_MAPS))


def evaluate_args(usr_confs: Sequence[dict]) -> dict:
    """The arguments of :func:`~sb3_realm.evaluation.evaluate` that play exactly the games ``usr_confs`` (each with
    its map under ``map_name``, the same number of games on each map, map by map, and one ``max_step``, as
    :func:`held_out_configs` makes them), in order: the ``maps`` protocol on their maps."""
    maps = list(dict.fromkeys(conf["map_name"] for conf in usr_confs))
    return {"protocol": "maps", "maps": maps, "games": len(usr_confs) // len(maps),
            "max_step": usr_confs[0]["max_step"]}


def survived(game) -> bool:
    """A game (a :class:`~sb3_realm.evaluation.GameResult`) survived to max_step: never caught, and not cut short
    before its end (an imitation rollout's step limit)."""
    return bool(game.details.get("survived")) and not game.cut
