"""Imitation benchmark: the oracle teaches an SB3 policy (``sb3-realm imitate``); the competition score of the
deterministic SB3 model against wall time, then every treasure set and the other games of the competition, with the
oracle beside it. Prints JSON, writes the JSON and a PNG curve.

    python benchmarks/imitation.py [--config configs/realm/imitate/base.yaml] [--map PATH] [--out runs/bench-imitation]
                                   [--json docs/imitation_default_map.json] [--plot docs/imitation_default_map.png]

With ``--finetune-config configs/realm/finetune.yaml`` (or ``--finetune-run DIR``, a finished one), a second phase: PPO
fine-tuning from the imitation model (``sb3-realm train --init-from``), its held-out evaluations on the same time
axis, and the 715 sets again for its best model, set by set against the imitation model and the oracle.

Phases, each timed: the imitation run (expert data + behaviour cloning + DAgger rounds; its held-out evaluation
after every round is the curve: ``eval_games`` leaderboard games on env seeds the training never used); then,
outside the timed run, ``sb3-realm eval``'s exhaustive protocol (all 715 nine-treasure sets) for the final model and
for the oracle, and the other games of the competition (start 2, end 1, max_step 2000): ``--random-games`` random
sets of each treasure count 0..13 (seed 777) and the fixed set of each count (ids 3..3+n-1). Peak RSS of this
process and of its worker processes (the largest one) are reported.

``--out`` (and ``OUT-finetune``) must be new or empty folders; ``--overwrite`` replaces an earlier run of this script
there (a folder with its ``config.yaml`` and nothing but a run's files), removing only those files. Any other folder
is refused, untouched.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.atomic import check_output_file, check_writable_folder
from sb3_realm.evaluation import evaluate, write_json_atomic
from sb3_realm.evaluation.reports import with_yardstick_keys
from sb3_realm.imitation import imitate
from sb3_realm.imitation.config import load_imitate_config, read_run_config
from sb3_realm.training import train
from sb3_realm.training.config import load_config
from sb3_realm.tuning.script import check_output_folder, remove_outputs, run_script

#: what an imitation run and a fine-tuning run write in their folders (config.yaml first)
IMITATE_RUN = ("config.yaml", "dataset", "checkpoints", "tb", "eval.json", "best_model.zip", "final_model.zip")
FINETUNE_RUN = ("config.yaml", "checkpoints", "tb", "eval.json", "best_model.zip", "final_model.zip",
                "vecnormalize.json", "init_model.zip", "warm_start.json")


def finetune_folder(out: str) -> Path:
    """The folder of the fine-tuning run beside ``--out``: ``OUT-finetune``."""
    return Path(f"{Path(out)}-finetune")


def read_eval(run_dir: Path) -> dict:
    """An imitation run's ``eval.json``, also one written before the yardstick's keys were renamed."""
    return with_yardstick_keys(json.loads((run_dir / "eval.json").read_text(encoding="utf-8")))


def summary(report) -> dict:
    s = report.summary()
    keys = ("games", "wins", "reached_end", "mean_score", "min_score", "mean_steps", "games_with_missed_treasure",
            "yardstick_mean_score", "mean_gap_to_yardstick", "max_gap_to_yardstick")
    return {k: s[k] for k in keys if k in s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/realm/imitate/base.yaml")
    parser.add_argument("--map", dest="map_path", default=None, help="map JSON (default: the config's map)")
    parser.add_argument("--out", default="runs/bench-imitation", help="run folder (and OUT-finetune); refused if it "
                                                                       "exists, unless --overwrite")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out (and OUT-finetune)")
    parser.add_argument("--run", default=None, help="evaluate this finished imitate run instead of running one (its "
                                                      "config.yaml and eval.json give the config and the curve)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config override KEY=VALUE")
    parser.add_argument("--workers", type=int, default=2, help="processes of the final evaluations")
    parser.add_argument("--random-games", type=int, default=20, help="random games per treasure count 0..13")
    parser.add_argument("--skip-other-games", action="store_true", help="only the 715 sets after the run")
    parser.add_argument("--finetune-config", default=None, help="then fine-tune with this config (--init-from the "
                                                                    "imitation model)")
    parser.add_argument("--finetune-run", default=None, help="a finished fine-tuning run to report instead")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the JSON here")
    parser.add_argument("--plot", default=None, help="write the PNG curve here")
    args = parser.parse_args()
    fresh = ([] if args.run else [(args.out, IMITATE_RUN)]) + \
        ([(str(finetune_folder(args.out)), FINETUNE_RUN)] if args.finetune_config and not args.finetune_run else [])
    check_writable_folder(args.out, "--out")  # OUT-finetune is named after it, even with --run
    earlier = {}
    for out, own in fresh:  # checked before any work starts
        found = check_output_folder(out, own, markers=("config.yaml",), script="benchmarks/imitation.py")
        if found and not args.overwrite:
            raise ValueError(f"--out: {out!r} holds an earlier run of this script; choose another --out, or add "
                             "--overwrite to replace it")
        earlier[Path(out)] = found
    for flag, path in (("--json", args.json_path), ("--plot", args.plot)):
        if path is not None:
            check_output_file(path, flag)

    if args.run is not None:
        run_dir = Path(args.run)
        config = read_run_config(run_dir)
        report = read_eval(run_dir)
        run_s, rss_run = report["history"][-1]["wall_s"], None  # measured by the run itself; RSS not seen here
    else:
        overrides = [*args.overrides, f"out={json.dumps(args.out)}"]
        if args.map_path:
            overrides.append(f"env.map_path={json.dumps(args.map_path)}")
        config = load_imitate_config(args.config, overrides)
        remove_outputs(args.out, earlier[Path(args.out)])  # an earlier run with --overwrite (checked above)
        t0 = time.perf_counter()
        _, run_dir = imitate(config)
        run_s = time.perf_counter() - t0
        rss_run = peak_rss_mib()
        report = read_eval(run_dir)
    model = str(run_dir / "final_model.zip")
    env_kwargs = {k: v for k, v in config.env.env_kwargs(usr_conf=False).items() if k != "map_path"}
    common = {"map_path": config.env.map_path, "workers": args.workers, "env_kwargs": env_kwargs}

    t1 = time.perf_counter()
    exhaustive = evaluate(model, "exhaustive", treasures=9, **common)  # the yardstick (the oracle) plays each set too
    exhaustive_s = time.perf_counter() - t1
    result = {
        "benchmark": "imitation", "config": str(run_dir / "config.yaml") if args.run else args.config,
        "map": config.env.map_path or config.env.map_name,
        "imitate_wall_s": round(run_s, 1), "peak_rss_during_imitate": rss_run,
        "curve": [{k: h.get(k) for k in ("round", "wall_s", "states", "bc_accuracy", "eval_mean_score", "eval_wins",
                                         "eval_reached_end", "eval_games", "games_cut", "screen_games",
                                         "screen_reached_end")}
                  for h in report["history"]],
        "held_out_yardstick_mean_score": report["yardstick_mean_score"], "best_round": report["best_round"],
        "exhaustive_9": summary(exhaustive), "exhaustive_s": round(exhaustive_s, 1),
    }
    if not args.skip_other_games:
        others = {}
        for n in range(14):
            rand = evaluate(model, "leaderboard", seed=777, games=args.random_games, treasures=n, **common)
            fixed = evaluate(model, "fixed", treasures=n, **common)
            others[str(n)] = {"random": summary(rand), "fixed": summary(fixed)}
        result["other_games"] = others
        # won: the end reached with every treasure, not only the end reached
        result["other_games_all_won"] = all(v["random"]["wins"] == v["random"]["games"] and
                                            v["fixed"]["wins"] == 1 for v in others.values())
    if args.finetune_config or args.finetune_run:
        result["finetune"] = finetune_phase(args, model, exhaustive, common, earlier)
    result["peak_rss_total"] = peak_rss_mib()
    print(json.dumps(result, indent=2))
    if args.json_path:
        write_json_atomic(result, args.json_path)
    if args.plot:
        plot_curve(result, args.plot)


def finetune_phase(args, model: str, before, common: dict, earlier: dict[Path, list[Path]]) -> dict:
    """Fine-tune from ``model`` (or read a finished run), then its best model on the 715 sets, set by set against
    ``before`` (the imitation model's exhaustive report, which has the oracle's per-set scores); ``earlier``: the
    entries of an earlier run in the fine-tuning folder, which ``--overwrite`` replaces."""
    if args.finetune_run:
        run_dir = Path(args.finetune_run)
        run_s, rss = None, None
    else:
        out = finetune_folder(args.out)
        remove_outputs(out, earlier[out])  # an earlier run with --overwrite (checked in main)
        overrides = [f"out={json.dumps(str(out))}", f"finetune.init_from={json.dumps(model)}", "progress_bar=false"]
        if args.map_path:
            overrides.append(f"env.map_path={json.dumps(args.map_path)}")
        t0 = time.perf_counter()
        _, run_dir = train(load_config(args.finetune_config, overrides))
        run_s, rss = time.perf_counter() - t0, peak_rss_mib()
    history = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
    t1 = time.perf_counter()
    after = evaluate(str(run_dir / "best_model.zip"), "exhaustive", treasures=9, **common)
    exhaustive_s = time.perf_counter() - t1
    gain = np.array([a.score - b.score for a, b in zip(after.games, before.games, strict=True)])
    steps = np.array([b.steps - a.steps for a, b in zip(after.games, before.games, strict=True)
                      if a.won and b.won])
    return {
        "run": str(run_dir), "finetune_wall_s": None if run_s is None else round(run_s, 1),
        "peak_rss_during_finetune": rss,
        "warm_start": json.loads((run_dir / "warm_start.json").read_text(encoding="utf-8"))
        if (run_dir / "warm_start.json").is_file() else None,
        "curve": [{k: h.get(k) for k in ("timesteps", "wall_s", "mean_score", "wins", "games", "new_best")}
                  for h in history],
        "exhaustive_9": summary(after), "exhaustive_s": round(exhaustive_s, 1),
        "against_imitation": {"sets_better": int((gain > 1e-9).sum()), "sets_equal": int((np.abs(gain) <= 1e-9).sum()),
                              "sets_worse": int((gain < -1e-9).sum()), "mean_gain": float(gain.mean()),
                              "mean_steps_saved_on_won_sets": float(steps.mean()) if len(steps) else None},
    }


def plot_curve(result: dict, path: str) -> None:
    """The held-out score after each round against wall time, the oracle beside it (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve, ex = result["curve"], result["exhaustive_9"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([c["wall_s"] / 60 for c in curve], [c["eval_mean_score"] for c in curve], "o-",
            label="SB3 model (deterministic), held-out games")
    if result.get("held_out_yardstick_mean_score") is not None:
        ax.axhline(result["held_out_yardstick_mean_score"], color="gray", ls="--", label="oracle, same games")
    fine = result.get("finetune")
    if fine and fine["curve"] and all(c.get("wall_s") is not None for c in fine["curve"]):
        start = result["imitate_wall_s"]
        ax.plot([(start + c["wall_s"]) / 60 for c in fine["curve"]], [c["mean_score"] for c in fine["curve"]], "s-",
                label=f"PPO fine-tuning, held-out games (715 sets: {fine['exhaustive_9']['mean_score']:.2f})")
    ax.set_xlabel("wall time (min), expert data + imitation, 2 cores")
    ax.set_ylabel("mean competition score")
    ax.set_title(f"imitation on {Path(str(result['map'])).name}: {ex['wins']}/715 sets won, mean "
                 f"{ex['mean_score']:.2f} (oracle {ex.get('yardstick_mean_score', np.nan):.2f})", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    run_script(main, "imitation.py")
