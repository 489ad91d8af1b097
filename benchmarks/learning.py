"""Learning curve: configs/realm/ppo.yaml on the default map with a small fixed configuration (3 fixed
treasures), competition score and win rate against env steps. Prints JSON, writes a PNG plot.

    python benchmarks/learning.py [--steps 1000000] [--chunk 50000] [--treasures 3,4,5] [--out runs/learning]

After every chunk of training: the deterministic policy's score on the fixed configuration (one game: the env and
the policy are deterministic), and the mean score and win rate of the sampling policy over ``--episodes`` games.
Reports the first step count at which the sampling policy wins >= 90% of its evaluation games.

``--out`` must be a new or empty folder, or an earlier output of this script (its ``learning.json``, ``model.zip`` and
``learning.png``, nothing else), whose files are replaced; any other folder is refused before training, untouched.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.agents import ModelPolicy, play_episode
from sb3_realm.atomic import atomic_write
from sb3_realm.evaluation import write_json_atomic
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.training.config import load_config
from sb3_realm.training.run import build_model, make_vec_env
from sb3_realm.tuning.script import check_output_folder, run_script

#: what this script writes in --out (learning.json last but one, beside the model it describes)
OWN = ("learning.json", "model.zip", "learning.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/realm/ppo.yaml")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--treasures", default="3,4,5", help="fixed treasure ids")
    parser.add_argument("--max-step", type=int, default=1000)
    parser.add_argument("--episodes", type=int, default=20, help="sampling-policy games per evaluation")
    parser.add_argument("--out", default="runs/learning")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--replot", default=None, metavar="JSON",
                        help="only redraw the PNG of a saved learning.json (written beside it, same name)")
    args = parser.parse_args()
    if args.replot:
        saved = json.loads(Path(args.replot).read_text(encoding="utf-8"))
        algo = Path(saved["config"]).stem.replace("_", " ")
        plot_curve(saved["curve"], f"{algo} on the default map, treasures {saved['usr_conf']['treasure_id']}",
                   Path(args.replot).with_suffix(".png"))
        return
    check_output_folder(args.out, OWN, markers=("learning.json",), script="benchmarks/learning.py")
    ids = [int(i) for i in args.treasures.split(",")]
    usr = {"treasure_random": 0, "treasure_id": ids, "max_step": args.max_step}
    config = load_config(args.config, [f"env.usr_conf={json.dumps(usr)}", "device=cpu", *args.overrides])
    torch.set_num_threads(config.torch_threads)
    venv = make_vec_env(config.env, config.seed, game=config.game)
    model = build_model(config, venv)
    env = RealmEnv(**config.env.env_kwargs())
    curve, start = [], time.perf_counter()
    while model.num_timesteps < args.steps:
        model.learn(args.chunk, reset_num_timesteps=False)
        det = play_episode(env, ModelPolicy(model), 0)
        games = [play_episode(env, ModelPolicy(model, deterministic=False), 1000 + i) for i in range(args.episodes)]
        curve.append({"steps": int(model.num_timesteps), "wall_s": round(time.perf_counter() - start, 1),
                      "deterministic_score": det["score"], "deterministic_win": bool(det["win"]),
                      "deterministic_treasures": det["treasures"], "deterministic_steps": det["steps"],
                      "sampled_mean_score": float(np.mean([g["score"] for g in games])),
                      "sampled_win_rate": float(np.mean([g["win"] for g in games])),
                      "sampled_mean_treasures": float(np.mean([g["treasures"] for g in games]))})
        print(json.dumps(curve[-1]), flush=True)
    venv.close()
    reached = next((c["steps"] for c in curve if c["sampled_win_rate"] >= 0.9), None)
    out = Path(args.out)
    result = {"benchmark": "learning", "config": args.config, "usr_conf": usr, "curve": curve,
              "steps_to_90pct_wins": reached, "final": curve[-1] if curve else None, "peak_rss": peak_rss_mib()}
    write_json_atomic(result, out / "learning.json")
    atomic_write(out / "model.zip", model.save)
    plot_curve(curve, f"{config.algo.name} on the default map, treasures {ids}", out / "learning.png")
    print(json.dumps({k: v for k, v in result.items() if k != "curve"}, indent=2))


def plot_curve(curve: list[dict], title: str, path):
    """Score (sampling mean, deterministic) and sampled win rate against env steps; the legend below the axes, clear
    of the tick labels (``--replot JSON`` redraws a saved run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.6))
    steps = [c["steps"] for c in curve]
    lines = ax.plot(steps, [c["sampled_mean_score"] for c in curve], label="score (sampling policy, mean)")
    lines += ax.plot(steps, [c["deterministic_score"] for c in curve], label="score (deterministic)")
    ax.set_xlabel("env steps")
    ax.set_ylabel("competition score")
    ax2 = ax.twinx()
    lines += ax2.plot(steps, [c["sampled_win_rate"] for c in curve], "k--", label="win rate (sampling)")
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("win rate")
    ax.set_title(title)
    fig.tight_layout(rect=(0, 0.1, 1, 1))  # the bottom tenth holds the legend
    fig.legend(lines, [line.get_label() for line in lines], loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.savefig(path)
    plt.close(fig)
    return fig


if __name__ == "__main__":
    run_script(main, "learning.py")
