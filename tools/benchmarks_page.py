"""Write the tables of the benchmarks pages from the JSON files under docs/, so the pages cannot drift from their data.

A page marks each generated table::

    <!-- table: NAME -->
    | ... |
    <!-- /table -->

``python tools/benchmarks_page.py`` rewrites every marked region of docs/benchmarks.md (English) and
docs/zh/benchmarks.md (Chinese, where it exists) from the JSON files; ``--check`` changes nothing and exits 1, printing
the differing tables, when a page is stale. ``PROSE`` lists the figures that the pages state in running text, with the
JSON value each comes from; ``--check`` also fails when one of them is missing from a page.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = {"en": DOCS / "benchmarks.md", "zh": DOCS / "zh" / "benchmarks.md"}
REGION = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)

# the words of the tables, English and Chinese
WORDS = {
    "en": {
        "policy": "policy, protocol",
        "won": "won",
        "mean_steps": "mean steps",
        "mean_score": "mean score",
        "min_score": "min score",
        "all_sets": "oracle, all {n} sets",
        "leaderboard": "oracle, leaderboard ({n} game{s}, seed {seed})",
        "refined": "`oracle-refined` (its tour played step-exactly), {n} sets",
        "value": "value",
        "curve": "held-out curve, rounds 0 to {last} ({games} games won, oracle {oracle})",
        "curve_best": "**{v}** (round {r}, {score}, kept)",
        "sets": "the {n} sets",
        "sets_v": "{won} / {n} won, {missed} games with a missed treasure, mean {mean} (oracle {oracle})",
        "other": "other games",
        "other_v": "{rw} / {rg} random sets won, {fw} / {fg} fixed sets",
        "wall": "wall time: imitation / the {n} sets",
        "study_wall": "study wall time",
        "env_steps": "env steps",
        "wall_time": "wall time",
        "sampled": "sampled: won / treasures / mean score",
        "deterministic": "deterministic: score (steps, treasures)",
        "study_wall_v": "{s} s ({n} trials: {c} complete, {p} pruned, {f} failed)",
        "trial0": "trial 0 (default weights)",
        "best": "best trial",
        "best_v": "{v}, trial {t} ({above} of the {n} score above 300; {zero} score 0)",
        "unseen_default": "unseen seeds, default weights",
        "unseen_best": "unseen seeds, best weights",
        "unseen_v": "{per}, mean {mean} ({share}% of {k} x {g} games reach the end: {wins})",
        "check_wall": "retraining and evaluation",
        "check_wall_v": "{s} s (total {t} s)",
        "mean_score_of": "`{p}` mean score",
        "survived_of": "`{p}` survived",
        "caught_of": "`{p}` caught: before monster 2 / before the speed-up / after",
        "ft_of": "`{p}` flashes / treasures",
        "paired": "planner − scripted (paired, ± s.e.)",
        "all": "all",
        "settings": "settings",
        "default": "default",
        "final": "final",
        "steps": "steps",
        "planner_ms": "planner mean / p99 / max (ms)",
        "features_ms": "planner and features mean / p99 / max (ms)",
        "exploit_ms": "package `exploit()` mean / p99 / max (ms)",
        "cpu_ms": "processor time a step: planner / planner and features, mean (ms)",
        "clone": "clone",
        "clone_paired": "clone − planner (paired, ± s.e.)",
        "same": "games scored as the planner",
        "open": "open_9 + open_10 (clone)",
        "caught_split": "caught before / after the speed-up",
        "ft": "flashes / treasures a game",
        "phase_il": "imitation ({n} states)",
        "phase_rl": "RL ({n} env steps)",
        "yardstick_row": "`scripted` (no training)",
        "wall_min": "training wall time",
        "phase": "phase",
        "score_test": "mean score (test maps)",
        "steps_survived": "mean steps survived",
        "treasures": "treasures",
        "survived": "games survived",
        "after": "caught after the speed-up",
        "map": "map",
        "recipe_weights": "recipe's weights",
        "tuned_weights": "tuned weights",
        "model": "model",
        "ms_of": "`{p}` time a step: mean / p99 (ms)",
        "searched_of": "`{p}` steps searched / actions changed a game",
        "pair": "`{a}` − `{b}` (paired, ± s.e.)",
        "exploit_cpu_ms": "package `exploit()` processor time mean / p99 / max (ms)",
    },
    "zh": {
        "policy": "策略、协议",
        "won": "获胜",
        "mean_steps": "平均步数",
        "mean_score": "平均得分",
        "min_score": "最低得分",
        "all_sets": "全知规划器，全部 {n} 组",
        "leaderboard": "全知规划器，排行榜（{n} 局，种子 {seed}）",
        "refined": "`oracle-refined`（按步精确地走它的路线），{n} 组",
        "value": "数值",
        "curve": "留出对局曲线，第 0 到 {last} 轮（获胜局数，共 {games} 局；全知规划器 {oracle}）",
        "curve_best": "**{v}**（第 {r} 轮，{score}，保留）",
        "sets": "全部 {n} 组",
        "sets_v": "获胜 {won} / {n}，{missed} 局漏拿宝箱，平均 {mean}（全知规划器 {oracle}）",
        "other": "其他对局",
        "other_v": "随机组合 {rw} / {rg} 局获胜，固定组合 {fw} / {fg}",
        "wall": "耗时：模仿学习 / 全部 {n} 组",
        "study_wall": "调参总耗时",
        "env_steps": "环境步数",
        "wall_time": "耗时",
        "sampled": "采样策略：获胜 / 宝箱 / 平均得分",
        "deterministic": "确定性策略：得分（步数，宝箱）",
        "study_wall_v": "{s} 秒（{n} 次试验：完成 {c}，剪枝 {p}，失败 {f}）",
        "trial0": "试验 0（默认权重）",
        "best": "最佳试验",
        "best_v": "{v}，试验 {t}（{n} 次中 {above} 次高于 300；{zero} 次为 0）",
        "unseen_default": "未见过的种子，默认权重",
        "unseen_best": "未见过的种子，最佳权重",
        "unseen_v": "{per}，平均 {mean}（{k} x {g} 局中 {share}% 到达终点：{wins}）",
        "check_wall": "重新训练与评估",
        "check_wall_v": "{s} 秒（合计 {t} 秒）",
        "mean_score_of": "`{p}` 平均得分",
        "survived_of": "`{p}` 存活",
        "caught_of": "`{p}` 被抓：怪物 2 出现前 / 加速前 / 加速后",
        "ft_of": "`{p}` 闪现 / 宝箱",
        "paired": "`planner` − `scripted`（配对，± 标准误）",
        "all": "全部",
        "settings": "设置",
        "default": "默认",
        "final": "决赛",
        "steps": "步数",
        "planner_ms": "规划器 平均 / p99 / 最大（毫秒）",
        "features_ms": "规划器加特征 平均 / p99 / 最大（毫秒）",
        "exploit_ms": "代码包 `exploit()` 平均 / p99 / 最大（毫秒）",
        "cpu_ms": "每步处理器时间：规划器 / 规划器加特征，平均（毫秒）",
        "clone": "克隆",
        "clone_paired": "克隆 − `planner`（配对，± 标准误）",
        "same": "与 `planner` 得分相同的对局",
        "open": "open_9 + open_10（克隆）",
        "caught_split": "加速前 / 加速后被抓",
        "ft": "每局闪现 / 宝箱",
        "phase_il": "模仿学习（{n} 个状态）",
        "phase_rl": "强化学习（{n} 环境步）",
        "yardstick_row": "`scripted`（不训练）",
        "wall_min": "训练耗时",
        "phase": "阶段",
        "score_test": "平均得分（测试地图）",
        "steps_survived": "平均存活步数",
        "treasures": "宝箱",
        "survived": "存活局数",
        "after": "加速后被抓",
        "map": "地图",
        "recipe_weights": "配方的权重",
        "tuned_weights": "调参后的权重",
        "model": "模型",
        "ms_of": "`{p}` 每步用时：平均 / p99（毫秒）",
        "searched_of": "`{p}` 搜索的步数占比 / 每局改动的动作",
        "pair": "`{a}` − `{b}`（配对，± 标准误）",
        "exploit_cpu_ms": "代码包 `exploit()` 处理器时间 平均 / p99 / 最大（毫秒）",
    },
}


#: the yardstick's keys as the benchmark files written before the rename name them: old -> new
OLD_YARDSTICK_KEYS = {
    "oracle_score": "yardstick_score",
    "oracle_steps": "yardstick_steps",
    "oracle_mean_score": "yardstick_mean_score",
    "mean_gap_to_oracle": "mean_gap_to_yardstick",
    "max_gap_to_oracle": "max_gap_to_yardstick",
    "held_out_oracle_mean_score": "held_out_yardstick_mean_score",
}


def yardstick_keys(data: dict) -> dict:
    """One mapping of a benchmark file with the yardstick's keys of a file written before the rename
    (``oracle_mean_score``, ...) under their new names; a new key already there wins."""
    for old, new in OLD_YARDSTICK_KEYS.items():
        if old in data:
            value = data.pop(old)
            data.setdefault(new, value)
    return data


def load(name: str) -> dict:
    """A benchmark file of docs/, old or new yardstick keys alike read under the new names."""
    return json.loads((DOCS / name).read_text(encoding="utf-8"), object_hook=yardstick_keys)


def half_up(x: float) -> int:
    """Rounded half away from zero, as the pages print (Python's round() rounds half to even)."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def thousands(x: float) -> str:
    return f"{half_up(x):,}"


def one(x: float) -> str:
    return f"{x:.1f}"


def mean_se(diffs: list[float]) -> tuple[float, float]:
    n = len(diffs)
    m = sum(diffs) / n
    if n < 2:
        return m, 0.0
    var = sum((d - m) ** 2 for d in diffs) / (n - 1)
    return m, math.sqrt(var / n)


def signed(x: float) -> str:
    r = half_up(x)
    return f"+{r:,}" if r > 0 else f"{r:,}" if r < 0 else "0"


def paired(a: list[float], b: list[float], what: str) -> list[float]:
    """The differences a - b game by game; both lists must hold the same games."""
    if len(a) != len(b):
        raise SystemExit(f"{what}: {len(a)} games against {len(b)}; a paired comparison needs the same games")
    return [x - y for x, y in zip(a, b, strict=True)]


def row(cells: list) -> str:
    return "|" + "|".join(f" {c} " if str(c) else " " for c in cells) + "|"


def table(head: list, rows: list[list]) -> str:
    lines = [row(head), "|" + "---|" * len(head)] + [row(r) for r in rows]
    return "\n".join(lines) + "\n"


# --- the Realm ---------------------------------------------------------------------------------------------------


def oracle_real_map(w: dict) -> str:
    d = load("oracle_refined_real_map.json")

    def cells(label: str, s: dict) -> list:
        return [
            label,
            f"{s['wins']} / {s['episodes']}",
            one(s["mean_steps"]),
            f"{s['mean_score']:.2f}",
            one(s["min_score"]),
        ]

    lb = d["leaderboard"]
    rows = [
        cells(w["all_sets"].format(n=d["all_sets"]["episodes"]), d["all_sets"]),
        cells(w["leaderboard"].format(n=lb["games"], s="" if lb["games"] == 1 else "s", seed=lb["seed"]), lb),
        cells(w["refined"].format(n=d["refined"]["episodes"]), d["refined"]),
    ]
    return table([w["policy"], w["won"], w["mean_steps"], w["mean_score"], w["min_score"]], rows)


def other_games_counts(d: dict) -> tuple[int, int, int, int]:
    og = d["other_games"].values()
    return (
        sum(g["random"]["wins"] for g in og),
        sum(g["random"]["games"] for g in og),
        sum(g["fixed"]["wins"] for g in og),
        sum(g["fixed"]["games"] for g in og),
    )


def imitation_default_map(w: dict) -> str:
    d = load("imitation_default_map.json")
    curve = d["curve"]
    best = d["best_round"]
    values = []
    for c in curve:
        v = c["eval_wins"]
        values.append(
            w["curve_best"].format(v=v, r=c["round"], score=f"{c['eval_mean_score']:.2f}")
            if c["round"] == best
            else str(v)
        )
    ex = d["exhaustive_9"]
    rw, rg, fw, fg = other_games_counts(d)
    rows = [
        [
            w["curve"].format(
                last=curve[-1]["round"],
                games=curve[0]["eval_games"],
                oracle=f"{d['held_out_yardstick_mean_score']:.2f}",
            ),
            ", ".join(values),
        ],
        [
            w["sets"].format(n=ex["games"]),
            w["sets_v"].format(
                won=ex["wins"],
                n=ex["games"],
                missed=ex["games_with_missed_treasure"],
                mean=f"{ex['mean_score']:.2f}",
                oracle=f"{ex['yardstick_mean_score']:.2f}",
            ),
        ],
        [w["other"], w["other_v"].format(rw=rw, rg=rg, fw=fw, fg=fg)],
        [w["wall"].format(n=ex["games"]), f"{d['imitate_wall_s']:.0f} s / {d['exhaustive_s']:.0f} s"],
    ]
    return table(["", w["value"]], rows)


def tune_study_default(w: dict) -> str:
    d = load("tune_study_default_map.json")
    st, ck = d["study"], d["check"]
    t = st["trials"]
    values = st["values"]
    k, g = len(ck["train_seeds"]), ck["games"]

    def unseen(s: dict) -> str:
        return w["unseen_v"].format(
            per=" / ".join(one(x) for x in s["per_seed_mean_score"]),
            mean=one(s["mean_score"]),
            share=half_up(100 * s["win_rate"]),
            k=k,
            g=g,
            wins=", ".join(f"{half_up(r * g)}/{g}" for r in s["per_seed_win_rate"]),
        )

    rows = [
        [
            w["study_wall"],
            w["study_wall_v"].format(
                s=thousands(st["wall_s"]), n=t["finished"], c=t["complete"], p=t["pruned"], f=t["fail"]
            ),
        ],
        [w["trial0"], one(st["default_weights_value"])],
        [
            w["best"],
            w["best_v"].format(
                v=one(st["best_value"]),
                t=st["best_number"],
                above=sum(1 for v in values if v is not None and v > 300),
                n=len(values),
                zero=sum(1 for v in values if v == 0),
            ),
        ],
        [w["unseen_default"], unseen(ck["default"])],
        [w["unseen_best"], unseen(ck["best"])],
        [w["check_wall"], w["check_wall_v"].format(s=thousands(ck["wall_s"]), t=thousands(d["total_wall_s"]))],
    ]
    return table(["", w["value"]], rows)


def learning_default_map(w: dict) -> str:
    d = load("learning_default_map.json")
    rows = []
    for c in d["curve"]:
        det = f"{one(c['deterministic_score'])} ({c['deterministic_steps']}, {c['deterministic_treasures']})"
        rows.append(
            [
                thousands(c["steps"]),
                f"{half_up(c['wall_s'])} s",
                " / ".join(
                    [
                        f"{half_up(100 * c['sampled_win_rate'])}%",
                        f"{c['sampled_mean_treasures']:.2f}",
                        str(half_up(c["sampled_mean_score"])),
                    ]
                ),
                det,
            ]
        )
    return table([w["env_steps"], w["wall_time"], w["sampled"], w["deterministic"]], rows)


# --- Gorge Chase -------------------------------------------------------------------------------------------------


def _policy_rows(w: dict, p: str, cols: list[dict]) -> list[list[str]]:
    """A policy's mean score, games survived and catches by phase, one column a map (and the overall one)."""
    return [
        [w["mean_score_of"].format(p=p)] + [thousands(c["mean_score"]) for c in cols],
        [w["survived_of"].format(p=p)] + [f"{half_up(c['survival_share'] * c['games'])} / {c['games']}" for c in cols],
        [w["caught_of"].format(p=p)]
        + [" / ".join(str(c["caught"][k]) for k in ("before_monster2", "monster2_to_speedup", "after_speedup"))
           for c in cols],
    ]


def planner_table(w: dict, settings: str) -> str:
    d = load("gorge_planner.json")
    maps = d["maps"]
    pol = d["settings"][settings]["policies"]
    rows = []
    for p in d["policies"]:
        cols = [pol[p]["maps"][x] for x in maps] + [pol[p]["overall"]]
        rows += _policy_rows(w, p, cols)
        rows.append([w["ft_of"].format(p=p)] + [f"{one(c['mean_flashes'])} / {one(c['mean_treasures'])}" for c in cols])
    a, b = pol["planner"]["maps"], pol["scripted"]["maps"]
    cells, every = [], []
    for x in maps:
        diffs = paired(a[x]["scores"], b[x]["scores"], f"gorge_planner.json {settings} {x}")
        every += diffs
        m, se = mean_se(diffs)
        cells.append(f"{signed(m)} ± {half_up(se)}")
    m, se = mean_se(every)
    rows.append([w["paired"], *cells, f"{signed(m)} ± {half_up(se)}"])
    return table(["", *maps, w["all"]], rows)


def search_table(w: dict, settings: str, name: str = "gorge_search.json") -> str:
    """The rollout searches beside the planner and the yardstick (docs/gorge_search.json, benchmarks/gorge_planner.py
    with the four policies; docs/gorge_search_400.json, the search with a package's budget beside the planner)."""
    d = load(name)
    maps = d["maps"]
    pol = d["settings"][settings]["policies"]
    rows = []
    for p in [p for p in d["policies"] if p in pol]:  # a settings may have been played by fewer of them
        cols = [pol[p]["maps"][x] for x in maps] + [pol[p]["overall"]]
        rows += _policy_rows(w, p, cols)
        if "searched_share" in cols[-1]:
            rows.append(
                [w["searched_of"].format(p=p)]
                + [f"{half_up(100 * c['searched_share'])}% / {one(c['changed_per_game'])}" for c in cols]
            )
        rows.append([w["ms_of"].format(p=p)] + [f"{one(c['act_ms']['mean'])} / {half_up(c['act_ms']['p99'])}"
                                                 for c in cols])
    for a, b in (("search", "planner"), ("ceiling", "scripted"), ("search", "scripted")):
        if a not in pol or b not in pol:
            continue
        cells, every = [], []
        for x in maps:
            where = f"{name} {settings} {x}"
            diffs = paired(pol[a]["maps"][x]["scores"], pol[b]["maps"][x]["scores"], where)
            every += diffs
            m, se = mean_se(diffs)
            cells.append(f"{signed(m)} ± {half_up(se)}")
        m, se = mean_se(every)
        rows.append([w["pair"].format(a=a, b=b), *cells, f"{signed(m)} ± {half_up(se)}"])
    return table(["", *maps, w["all"]], rows)


def search_exploit(w: dict) -> str:
    """A package built with ``--search``: its ``exploit()`` a step, wall clock and processor time
    (docs/gorge_search_exploit.json, benchmarks/gorge_agent_speed.py --package)."""
    d = load("gorge_search_exploit.json")

    def t(s: dict) -> str:
        return f"{one(s['mean_ms'])} / {half_up(s['p99_ms'])} / {half_up(s['max_ms'])}"

    rows = []
    for k in ("default", "final"):
        s = d["settings"][k]
        rows.append([w[k], thousands(s["exploit"]["steps"]), t(s["exploit"]), t(s["exploit_cpu"])])
    return table([w["settings"], w["steps"], w["exploit_ms"], w["exploit_cpu_ms"]], rows)


def gorge_agent_speed(w: dict) -> str:
    d = load("gorge_agent_speed.json")

    def t(s: dict) -> str:
        mx = s["max_ms"]
        return f"{one(s['mean_ms'])} / {one(s['p99_ms'])} / {half_up(mx) if mx >= 100 else one(mx)}"

    settings = [d["settings"][k] for k in ("default", "final")]
    cpu = all("features_cpu" in s for s in settings)  # processor time: recorded since a later version of the script
    exploit = all("exploit" in s for s in settings)  # a built package's exploit(): with --package only
    rows = []
    for k, s in zip(("default", "final"), settings, strict=True):
        row = [w[k], thousands(s["steps"]), t(s["planner"]), t(s["features"])]
        if cpu:
            row.append(f"{one(s['planner_cpu']['mean_ms'])} / {one(s['features_cpu']['mean_ms'])}")
        if exploit:
            row.append(t(s["exploit"]))
        rows.append(row)
    head = [w["settings"], w["steps"], w["planner_ms"], w["features_ms"]]
    return table(head + ([w["cpu_ms"]] if cpu else []) + ([w["exploit_ms"]] if exploit else []), rows)


def gorge_learned(w: dict) -> str:
    plan = load("gorge_planner.json")
    rows = []
    for k in ("default", "final"):
        learned = load(f"gorge_learned_{k}.json")
        s = learned["summary"]
        pol = plan["settings"][k]["policies"]
        by_map: dict[str, list[float]] = {}
        for g in learned["games"]:
            by_map.setdefault(g["map"], []).append(g["score"])
        diffs, same = [], 0
        for x in plan["maps"]:
            d = paired(by_map.get(x, []), pol["planner"]["maps"][x]["scores"], f"gorge_learned_{k}.json {x}")
            diffs += d
            same += sum(1 for v in d if v == 0)
        m, se = mean_se(diffs)
        opens = by_map.get("open_9", []) + by_map.get("open_10", [])
        rows.append(
            [
                w[k],
                thousands(s["mean_score"]),
                thousands(pol["planner"]["overall"]["mean_score"]),
                thousands(pol["scripted"]["overall"]["mean_score"]),
                f"{signed(m)} ± {half_up(se)}",
                f"{same} / {len(diffs)}",
                thousands(sum(opens) / len(opens)) if opens else "",
                f"{s['deaths_before_speedup']} / {s['deaths_after_speedup']}",
            ]
        )
    head = [
        w["settings"],
        w["clone"],
        "`planner`",
        "`scripted`",
        w["clone_paired"],
        w["same"],
        w["open"],
        w["caught_split"],
    ]
    return table(head, rows)


def gorge_learned_maps(w: dict) -> str:
    maps = load("gorge_planner.json")["maps"]
    rows = []
    for k in ("default", "final"):
        per_map = load(f"gorge_learned_{k}.json")["summary"]["per_map"]
        s = load(f"gorge_learned_{k}.json")["summary"]
        rows.append(
            [w[k]]
            + [thousands(per_map[x]["mean_score"]) if x in per_map else "" for x in maps]
            + [f"{one(s['mean_flash_used'])} / {one(s['mean_treasures'])}"]
        )
    return table([w["settings"], *maps, w["ft"]], rows)


def gorge_recipe_curve(w: dict) -> str:
    d = load("gorge_imitation_recipe.json")

    def cells(c: dict) -> list:
        return [
            thousands(c["mean_score"]),
            thousands(c["mean_steps"]),
            one(c["mean_treasures"]),
            f"{half_up(c['survival_share'] * c['games'])} / {c['games']}",
            str(c["deaths_after_speedup"]),
        ]

    rows = []
    for c in d["curve"]:
        phase = (w["phase_il"] if c["phase"] == "imitation" else w["phase_rl"]).format(n=thousands(c["steps"]))
        rows.append([f"{c['wall_s'] / 60:.1f} min", phase, *cells(c)])
    rows.append([w["yardstick_row"], "", *cells(d["yardstick"])])
    head = [w["wall_min"], w["phase"], w["score_test"], w["steps_survived"], w["treasures"], w["survived"], w["after"]]
    return table(head, rows)


def gorge_recipe_maps(w: dict) -> str:
    d = load("gorge_imitation_recipe.json")
    rows = [
        [
            f"`{x}`",
            thousands(d["final"]["per_map"][x]["mean_score"]),
            thousands(d["yardstick"]["per_map"][x]["mean_score"]),
        ]
        for x in d["test_maps"]
    ]
    return table([w["map"], w["model"], "`scripted`"], rows)


def gorge_reward_study_maps(w: dict) -> str:
    c = load("gorge_reward_study.json")["check"]
    maps = list(c["default"]["per_map_mean_score"])
    rows = [
        [f"`{x}`", thousands(c["default"]["per_map_mean_score"][x]), thousands(c["best"]["per_map_mean_score"][x])]
        for x in maps
    ]
    return table([w["map"], w["recipe_weights"], w["tuned_weights"]], rows)


TABLES = {
    "oracle-real-map": oracle_real_map,
    "imitation-default-map": imitation_default_map,
    "tune-study-default": tune_study_default,
    "learning-default-map": learning_default_map,
    "gorge-planner-default": lambda w: planner_table(w, "default"),
    "gorge-planner-final": lambda w: planner_table(w, "final"),
    "gorge-agent-speed": gorge_agent_speed,
    "gorge-search-default": lambda w: search_table(w, "default"),
    "gorge-search-final": lambda w: search_table(w, "final"),
    "gorge-search-exploit": search_exploit,
    "gorge-search-400-default": lambda w: search_table(w, "default", "gorge_search_400.json"),
    "gorge-search-400-final": lambda w: search_table(w, "final", "gorge_search_400.json"),
    "gorge-learned": gorge_learned,
    "gorge-learned-maps": gorge_learned_maps,
    "gorge-recipe-curve": gorge_recipe_curve,
    "gorge-recipe-maps": gorge_recipe_maps,
    "gorge-reward-study-maps": gorge_reward_study_maps,
}


def _refined_saves() -> str:
    d = load("oracle_refined_real_map.json")
    r, a = d["refined"], d["all_sets"]
    same = r["episodes"] - r["sets_better"] - r["sets_worse"]
    return (
        f"saves {r['steps_saved_mean']:.2f} steps ({r['mean_score'] - a['mean_score']:.2f} points) a game: "
        f"{r['sets_better']} sets shorter, {same} the same, {r['sets_worse']} one step longer"
    )


def _planner_paired(settings: str) -> tuple[float, float]:
    pol = load("gorge_planner.json")["settings"][settings]["policies"]
    diffs = []
    for x in load("gorge_planner.json")["maps"]:
        diffs += paired(pol["planner"]["maps"][x]["scores"], pol["scripted"]["maps"][x]["scores"], x)
    return mean_se(diffs)


def _planner_vs_scripted() -> str:
    pol = load("gorge_planner.json")["settings"]["default"]["policies"]
    m, se = _planner_paired("default")
    a, b = pol["planner"]["overall"]["mean_score"], pol["scripted"]["overall"]["mean_score"]
    side = "below" if m < 0 else "above"
    return f"{half_up(abs(m))} ± {half_up(se)} points {side} it, with {thousands(a)} against {thousands(b)}"


def _recipe_prose() -> tuple[str, str]:
    d = load("gorge_imitation_recipe.json")
    f, y, il = d["final"], d["yardstick"], d["curve"][0]
    return (
        f"({half_up(f['mean_steps'])} steps against {half_up(y['mean_steps'])}), mostly before the speed-up "
        f"({f['deaths_before_speedup']} of {f['games']} games)",
        f"the scripted policy scores {thousands(il['expert_validation_score'])} on the same 20 games. "
        f"The kept round is round {il['best_round']}",
    )


def _all_sets(name: str) -> str:
    d = load(name)
    nine = f"{d['by_count']['9']['won']} at {d['nine_treasure_mean_score']:.2f}"
    return f"**{nine}** | **{thousands(d['won_other_counts'])}**"


def _real_fast() -> tuple[str, str]:
    d = load("imitation_real_map.json")
    best = d["best_round"]
    curve = ", ".join(
        f"**{c['eval_mean_score']:.1f}** (round {best}, kept)" if c["round"] == best else f"{c['eval_mean_score']:.1f}"
        for c in d["curve"]
    )
    rw, rg, fw, fg = other_games_counts(d)
    return (
        f"held-out curve (200 games, oracle {d['held_out_yardstick_mean_score']:.2f}), rounds 0 to "
        f"{d['curve'][-1]['round']}: {curve}",
        f"{d['exhaustive_9']['games_with_missed_treasure']} with a missed treasure; other games: {rw + fw} / {rg + fg}",
    )


def _reward_study_prose() -> str:
    c = load("gorge_reward_study.json")["check"]

    def per(x: dict) -> str:
        return " / ".join(str(half_up(v)) for v in x["per_seed_mean_score"])

    d, b = c["default"], c["best"]
    return (
        f"{per(d)}, mean {half_up(d['mean_score'])} ({one(d['mean_treasures'])} treasures, "
        f"... {per(b)}, mean {half_up(b['mean_score'])} ({one(b['mean_treasures'])} treasures, "
        f"... {100 * c['best_over_default']:+.1f}%"
    )


def _legs() -> str:
    ft, il = load("legs_finetune_real_map.json"), load("legs_imitation_real_map.json")
    legs = ft["per_leg_mean_steps_difference"][5:]
    return (
        f"Per leg ({ft['sets']} sets): on the sets where model and oracle take the same order ({ft['sets_same_order']} "
        f"for the fine-tuned model, {il['sets_same_order']} for the clone), they are "
        f"{ft['mean_total_steps_difference_same_order']:.2f} and {il['mean_total_steps_difference_same_order']:.2f} "
        "steps a game behind the oracle; "
        f"the fine-tuned model loses them in legs 6 to 10 ({min(legs):.2f} to {max(legs):.2f} steps a leg) and partly "
        f"wins them back in leg 5 ({ft['per_leg_mean_steps_difference'][4]:.2f}). They flash in the same leg as the "
        f"oracle in {half_up(100 * ft['flash_leg_same'])}% and {half_up(100 * il['flash_leg_same'])}% of the games."
    )


def _agent_rss(lang: str) -> str:
    mib = half_up(load("gorge_agent_speed.json")["peak_rss_mib"]["self_mib"])
    return f"peak RSS {mib} MiB" if lang == "en" else f"峰值 RSS {mib} MiB"


# Figures stated in running text, with the value each comes from: (page language, a function of the data that gives
# the text). ``--check`` fails when a page does not contain the text that the data gives.
PROSE = [
    ("en", lambda: _agent_rss("en")),
    ("zh", lambda: _agent_rss("zh")),
    ("en", _refined_saves),
    (
        "en",
        lambda: "within {m:.2f}% of its plan's prediction".format(
            m=100 * load("oracle_refined_real_map.json")["all_sets"]["gap_played_vs_planned"]["max_abs"]
        ),
    ),
    ("en", _planner_vs_scripted),
    ("en", _legs),
    (
        "en",
        lambda: "| defaults | {} | ... | best of {} trials (trial {}) | {} |".format(
            thousands(load("gorge_planner_study.json")["default_value"]),
            load("gorge_planner_study.json")["trials"],
            load("gorge_planner_study.json")["best_trial"],
            thousands(load("gorge_planner_study.json")["best_value"]),
        ),
    ),
    ("en", _reward_study_prose),
    ("en", lambda: _real_fast()[0]),
    ("en", lambda: _real_fast()[1]),
    ("en", lambda: _all_sets("all_sets_real_map.json")),
    ("en", lambda: _all_sets("all_sets_default_map.json")),
    (
        "en",
        lambda: "first wins at least 90% of its games at {} steps".format(
            thousands(load("learning_default_map.json")["steps_to_90pct_wins"])
        ),
    ),
    (
        "en",
        lambda: "PPO's best deterministic game, {},".format(
            one(max(c["deterministic_score"] for c in load("learning_default_map.json")["curve"]))
        ),
    ),
    ("en", lambda: _recipe_prose()[0]),
    ("en", lambda: _recipe_prose()[1]),
    (
        "en",
        lambda: "It scores {:.2f} over the 715 sets of the competition map".format(
            load("oracle_refined_real_map.json")["all_sets"]["mean_score"]
        ),
    ),
    (
        "en",
        lambda: "Time per game over the 715 sets: {:.2f} s planning and {:.2f} s acting".format(
            load("oracle_refined_real_map.json")["all_sets"]["plan_seconds_per_episode"],
            load("oracle_refined_real_map.json")["all_sets"]["act_seconds_per_episode"],
        ),
    ),
    (
        "en",
        lambda: "({} ± {} over {} games, paired by game)".format(
            signed(_planner_paired("final")[0]),
            half_up(_planner_paired("final")[1]),
            load("gorge_planner.json")["settings"]["final"]["policies"]["planner"]["overall"]["games"],
        ),
    ),
]


def render(text: str, lang: str) -> str:
    words = WORDS[lang]

    def sub(m: re.Match) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise SystemExit(f"unknown table {name!r} in the {lang} page; known: {', '.join(TABLES)}")
        return m.group(1) + TABLES[name](words) + m.group(4)

    return REGION.sub(sub, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page differs from its data")
    ap.add_argument("--page", action="append", default=[], help="LANG=PATH: a page other than docs/ (for tests)")
    args = ap.parse_args(argv)
    pages = dict(PAGES)
    for spec in args.page:
        lang, _, path = spec.partition("=")
        pages[lang] = Path(path)
    stale = False
    for lang, path in pages.items():
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        new = render(text, lang)
        if new != text:
            stale = True
            if args.check:
                sys.stdout.writelines(
                    difflib.unified_diff(
                        text.splitlines(True), new.splitlines(True), f"{path} (page)", f"{path} (from the JSON files)"
                    )
                )
            else:
                path.write_text(new, encoding="utf-8")
                print(f"rewrote the tables of {path}")
        if args.check:
            flat = " ".join(new.split())  # a figure may run over a line break
            for plang, figure in PROSE:
                parts = [" ".join(p.split()) for p in figure().split("...")]
                if plang == lang and not re.search(".*?".join(re.escape(p.strip()) for p in parts), flat):
                    stale = True
                    print(f"{path}: the text {figure()!r}, which the data gives, is not on the page")
    return 1 if (stale and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
