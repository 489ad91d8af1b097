"""Gorge Chase recipe: the deterministic model's competition score against wall time on the test maps, per map and
in total, with the scripted yardstick on the same games, survival share and peak RSS. Prints JSON, writes a PNG curve
and the JSON beside it.

    python benchmarks/gorge_recipe.py [--config configs/gorge/maskable_ppo.yaml] [--out runs/gorge_recipe]
        [--budget-s 10800] [--chunk-s 1800] [--games 50] [--maps-dir DIR] [--set KEY=VALUE ...]
        [--imitate configs/gorge/imitate.yaml [--imitate-set KEY=VALUE ...] | --imitated RUN]
        [--settings default final]

The config trains as ``sb3-realm train`` trains it (the run folder ``--out``: checkpoints, ``eval.json``, the best
model selected on the config's own held-out maps, never a test map), in chunks of about ``--chunk-s`` seconds of
wall time (each a resume of the run) until ``--budget-s``. After each chunk (its time not counted in the wall time)
the run's best model plays the test maps deterministically: open_9 and open_10 (from ``--maps-dir`` or
``SB3_REALM_GORGE_MAPS``; without them the test maps are the five stand-ins alone) and the five stand-ins for the
hidden maps, own_6 .. own_10, ``--games`` games per map from env seeds fixed by :data:`TEST_SEED`, the competition's
default game (10 treasures, 2 buffs, monster 2 at step 300, the speed-up at 500, max_step 1000). ``--settings``
names the game's settings the test games are played under, each in turn (``default``; ``final``, the final round's:
talent_cooldown 200, monster_interval 200, monster_speedup 300, buff_cooldown 200, max_step 1000): every point of
the curve and the yardstick then hold ``by_settings`` (settings -> figures), the point's own figures being those of
the first (the curve's). The training's own settings are its config's ``env.settings`` (``--set
env.settings=[default,final]``). The yardstick plays the same games once (its figures do not change). ``--replot
JSON`` redraws the PNG of a saved result.

With ``--imitate``, an imitation run (``sb3-realm imitate`` of that config, in ``OUT/imitate``) comes first: its wall
time counts, its kept model is the curve's first point, and the training config (a fine-tuning one such as
``configs/gorge/finetune.yaml``) then starts from it (``finetune.init_from``) for the rest of ``--budget-s``.
``--imitated RUN`` does the same with an imitation run made before (its own recorded wall time counts, resumes
included).

``--out`` must be a new or empty folder: an earlier output of this script is refused (the run would start again over
it), as is any other folder, before the yardstick plays and untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm import games as _games
from sb3_realm.agents import SB3Policy
from sb3_realm.evaluation import evaluate, evaluate_batched, protocol_configs, write_json_atomic
from sb3_realm.evaluation.reports import with_yardstick_keys
from sb3_realm.games.gorge.protocols import HIDDEN_STAND_INS
from sb3_realm.imitation import imitate
from sb3_realm.imitation.config import load_imitate_config
from sb3_realm.training import train
from sb3_realm.training.config import load_config
from sb3_realm.tuning.script import check_output_folder, run_script

#: the seed of the test games' env seeds (evaluation.game_seed): fixed here, never used to train or select
TEST_SEED = 20_260_917
OPEN_TEST_MAPS = ("open_9", "open_10")
#: what this script writes in --out (a training run's files, its imitation run's folder, the result), resumes between
#: chunks included; the run's config.yaml or the imitation's folder comes first
OWN = ("config.yaml", "checkpoints", "tb", "eval.json", "best_model.zip", "final_model.zip", "vecnormalize.json",
       "init_model.zip", "warm_start.json", "imitate", "gorge_recipe.json", "gorge_recipe.png",
       re.compile(r"final_model\.step-\d+\.zip"), re.compile(r"best_model\.before-resume-step-\d+\.zip"))


def test_maps(maps_dir: str | None) -> list[str]:
    return [*(OPEN_TEST_MAPS if maps_dir else ()), *HIDDEN_STAND_INS]


def _figures(summary: dict) -> dict:
    per_map = {name: {k: row[k] for k in ("mean_score", "survival_share", "mean_steps", "mean_treasures",
                                          "deaths_after_speedup")}
               for name, row in summary["per_map"].items()}
    return {"mean_score": summary["mean_score"], "survival_share": summary["survival_share"],
            "mean_steps": summary["mean_steps"], "mean_treasures": summary["mean_treasures"],
            "deaths_before_speedup": summary["deaths_before_speedup"],
            "deaths_after_speedup": summary["deaths_after_speedup"], "games": summary["games"], "per_map": per_map}


def refuse_test_maps(config, maps: list[str], what: str) -> None:
    """Stop when ``config`` trains or selects its model on one of the test ``maps``."""
    if set(maps) & set(config.env.map_names or [config.env.map_name]) | set(maps) & set(config.eval_maps):
        raise SystemExit(f"{what} trains or selects on a test map ({sorted(maps)}): change env.map_names / "
                         "eval_maps")


def evaluate_model(path: Path, maps: list[str], games: int, maps_dir: str | None, settings: str = "default") -> dict:
    """The model's figures on the test games (``games`` per map, under the game's settings ``settings``), played side
    by side in this process."""
    policy = SB3Policy(path)
    spec = _games.get("gorge")
    configs = [spec.apply_settings(settings, conf) for conf in protocol_configs("maps", game="gorge", maps=maps,
                                                                                games=games)]
    report = evaluate_batched(policy.model.policy, configs, seed=TEST_SEED, name=path.name, game="gorge",
                              env_kwargs={"maps_dir": maps_dir} if maps_dir else {}, masked=policy.masked,
                              protocol="maps")
    return _figures(report.summary())


def evaluate_yardstick(maps: list[str], games: int, maps_dir: str | None, settings: str = "default") -> dict:
    """The yardstick's figures on the same games."""
    report = evaluate("scripted", "maps", maps=maps, games=games, seed=TEST_SEED, game="gorge", workers=2,
                      yardstick=False, env_kwargs={"maps_dir": maps_dir} if maps_dir else None, settings=settings)
    return _figures(report.summary())


def evaluate_point(path: Path, maps: list[str], games: int, maps_dir: str | None, settings: list[str],
                   yardstick: dict) -> dict:
    """A point's figures: those of the first ``settings`` with the yardstick's mean beside, and with several settings
    every one's under ``by_settings``."""
    by_settings = {name: {**evaluate_model(path, maps, games, maps_dir, name),
                          "yardstick_mean_score": yardstick[name]["mean_score"]} for name in settings}
    first = by_settings[settings[0]]
    return {**first, "settings": settings[0], **({"by_settings": by_settings} if len(settings) > 1 else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/gorge/maskable_ppo.yaml")
    parser.add_argument("--out", default="runs/gorge_recipe")
    parser.add_argument("--budget-s", type=float, default=3 * 3600.0, help="training wall time in all")
    parser.add_argument("--chunk-s", type=float, default=1800.0, help="training wall time between evaluations")
    parser.add_argument("--games", type=int, default=50, help="test games per map")
    parser.add_argument("--maps-dir", default=os.environ.get("SB3_REALM_GORGE_MAPS") or None)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--replot", default=None, metavar="JSON", help="only redraw the PNG of a saved result")
    parser.add_argument("--imitate", default=None, metavar="CONFIG", help="an imitation config run first")
    parser.add_argument("--imitate-set", dest="imitate_overrides", action="append", default=[])
    parser.add_argument("--imitated", default=None, metavar="RUN", help="an imitation run made before")
    parser.add_argument("--settings", nargs="+", choices=list(_games.get("gorge").settings), default=["default"],
                        help="the game's settings the test games are played under, each in turn (default: default)")
    args = parser.parse_args()
    if len(set(args.settings)) < len(args.settings):
        raise ValueError(f"--settings {' '.join(args.settings)} names a setting twice; name each once")
    if args.replot:
        saved = json.loads(Path(args.replot).read_text(encoding="utf-8"))
        plot_curve(saved, Path(args.replot).with_suffix(".png"))
        return
    if check_output_folder(args.out, OWN, markers=("config.yaml", "imitate"), script="benchmarks/gorge_recipe.py"):
        raise ValueError(f"--out {args.out!r} holds an earlier run of this script; it starts a new one: choose another "
                         "--out (the earlier one was left as it was)")
    out = Path(args.out)
    maps = test_maps(args.maps_dir)
    overrides = [f"out={json.dumps(str(out))}", "progress_bar=false", *args.overrides]
    if args.maps_dir:
        overrides.append(f"env.maps_dir={json.dumps(args.maps_dir)}")
    if args.imitate and args.imitated:
        raise SystemExit("--imitate runs an imitation, --imitated names one made before: give one of them")
    imitated = Path(args.imitated) if args.imitated else out / "imitate" if args.imitate else None
    if imitated is not None:  # the training starts from the imitation run's kept model
        overrides.append(f"finetune.init_from={json.dumps(str(imitated / 'final_model.zip'))}")
    config = load_config(args.config, overrides)
    refuse_test_maps(config, maps, "the config")
    yardstick = {name: evaluate_yardstick(maps, args.games, args.maps_dir, name) for name in args.settings}
    print(json.dumps({"yardstick": {name: {k: v for k, v in figures.items() if k != "per_map"}
                                    for name, figures in yardstick.items()}}), flush=True)
    steps, wall, curve = 0, 0.0, []
    if imitated is not None:
        wall, point = run_imitation(args, imitated, maps, yardstick)
        curve.append(point)
        print(json.dumps({k: v for k, v in curve[-1].items() if k not in ("per_map", "by_settings")}), flush=True)
    # steps per chunk: measured on a first short chunk, then sized to --chunk-s
    probe = int(config.algo.hyperparam("n_steps")) * config.env.n_envs * 4
    while wall < args.budget_s:
        rate = next((c["steps_per_s"] for c in reversed(curve) if c["phase"] == "train"), None)
        chunk = probe if rate is None else max(probe, int(rate * min(args.chunk_s, args.budget_s - wall)))
        config.total_timesteps = steps + chunk
        start = time.perf_counter()
        model, _ = train(config, resume=out if steps else None)
        took = time.perf_counter() - start
        wall += took
        steps = int(model.num_timesteps)
        point = {"phase": "train", "steps": steps, "wall_s": round(wall, 1), "steps_per_s": round(chunk / took, 1)}
        best = out / "best_model.zip" if (out / "best_model.zip").is_file() else out / "final_model.zip"
        point.update(evaluate_point(best, maps, args.games, args.maps_dir, args.settings, yardstick))
        curve.append(point)
        print(json.dumps({k: v for k, v in point.items() if k not in ("per_map", "by_settings")}), flush=True)
    result = {"benchmark": "gorge_recipe", "config": args.config, "overrides": args.overrides,
              "imitate": args.imitate or args.imitated, "imitate_overrides": args.imitate_overrides, "test_maps": maps,
              "games_per_map": args.games, "test_seed": TEST_SEED, "settings": args.settings,
              "budget_s": args.budget_s, "yardstick": yardstick,
              "curve": curve,
              "final": curve[-1], "peak_rss": peak_rss_mib()}
    write_json_atomic(result, out / "gorge_recipe.json")
    plot_curve(result, out / "gorge_recipe.png")
    print(json.dumps({k: v for k, v in result.items() if k != "curve"}, indent=2))


def run_imitation(args, out: Path, maps: list[str], yardstick: dict) -> tuple[float, dict]:
    """The imitation run of ``--imitate`` in ``out`` (or the one made before, ``--imitated``): its wall time and its
    kept model's point on the curve."""
    if args.imitate:
        overrides = [f"out={json.dumps(str(out))}", *args.imitate_overrides]
        if args.maps_dir:
            overrides.append(f"env.maps_dir={json.dumps(args.maps_dir)}")
        config = load_imitate_config(args.imitate, overrides)
        imitate(config)
    else:
        config = load_imitate_config(out / "config.yaml")
    refuse_test_maps(config, maps, "the imitation config")
    report = with_yardstick_keys(json.loads((out / "eval.json").read_text(encoding="utf-8")))  # also an older run's
    took = float(report["history"][-1]["wall_s"])  # the run's own time, resumes included
    point = {"phase": "imitation", "steps": int(report["history"][-1]["states"]), "wall_s": round(took, 1),
             "steps_per_s": None, "rounds": len(report["history"]) - 1, "best_round": report["best_round"],
             "expert_validation_score": report["yardstick_mean_score"],
             "validation_score": report["best_mean_score"]}
    point.update(evaluate_point(out / "final_model.zip", maps, args.games, args.maps_dir, args.settings, yardstick))
    return took, point


def plot_curve(result: dict, path: Path) -> None:
    """The model's mean score on the test maps against training wall time (hours), the yardstick's on the same games
    and the survival share."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = result["curve"]
    hours = [c["wall_s"] / 3600 for c in curve]
    fig, ax = plt.subplots(figsize=(7, 4.6))
    lines = ax.plot(hours, [c["mean_score"] for c in curve], "o-", label="model (deterministic)")
    yardstick = [c["yardstick_mean_score"] for c in curve if c.get("yardstick_mean_score") is not None]
    if yardstick:
        lines += ax.plot(hours, [c["yardstick_mean_score"] for c in curve], "--", label="scripted yardstick")
    ax.set_xlabel("training wall time (hours)")
    ax.set_ylabel(f"mean competition score ({len(result['test_maps'])} test maps)")
    ax.set_ylim(0, max(2500, *(c["mean_score"] for c in curve)))
    ax2 = ax.twinx()
    lines += ax2.plot(hours, [c["survival_share"] for c in curve], "k:", label="survival share (model)")
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("games survived to max_step")
    settings = result.get("settings", ["default"])[0]  # the curve's: the first settings played
    ax.set_title(f"{Path(result['config']).stem} on {', '.join(result['test_maps'])} ({settings} settings)", fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(lines, [line.get_label() for line in lines], loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    run_script(main, "gorge_recipe.py")
