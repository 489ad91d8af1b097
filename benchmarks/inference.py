"""Submission inference latency: the built Agent's ``exploit`` at one torch thread and batch size 1, p50 and p99,
against SB3's ``model.predict(deterministic=True)`` on the same observations in the same run. Also the latency of
``observation_process`` (competition observation -> model input) and the package's size on disk. Prints JSON.

    python benchmarks/inference.py [--model runs/ppo/best_model.zip] [--states 3000] [--config configs/realm/ppo.yaml]

Without ``--model`` a model of ``--config`` is trained for 2048 steps first (latency depends on the architecture,
not on the weights). The states come from games of the model itself on the default map.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script


def percentiles(samples: list[float]) -> dict:
    ms = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 4), "p99_ms": round(float(np.percentile(ms, 99)), 4),
            "mean_ms": round(float(ms.mean()), 4)}


def train_model(config_path: str, out: Path) -> Path:
    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import train

    config = load_config(config_path, ["total_timesteps=2048", f"out={json.dumps(str(out))}", "eval_freq=0",
                                       "progress_bar=false", "algo.hyperparams.n_steps=256",
                                       "algo.hyperparams.batch_size=512", "env.n_envs=2"])
    _, run_dir = train(config)
    return run_dir / "final_model.zip"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="SB3 checkpoint; default: train one of --config briefly")
    parser.add_argument("--config", default="configs/realm/ppo.yaml")
    parser.add_argument("--states", type=int, default=3000, help="observations timed")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from sb3_realm.agents import SB3Policy
    from sb3_realm.agents.submission import SubmissionPolicy, platform_obs
    from sb3_realm.export import build_submission
    from sb3_realm.games.realm.env import RealmEnv

    with tempfile.TemporaryDirectory() as tmp:
        model_path = Path(args.model) if args.model else train_model(args.config, Path(tmp) / "run")
        folder = Path(tmp) / "submission"
        build_submission(model_path, folder)
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        weights = sum(p.stat().st_size for p in (folder / "ckpt").glob("*.pkl"))
        sub = SubmissionPolicy(folder)
        ref = SB3Policy(model_path)
        env = RealmEnv(**sub.env_kwargs)
        d, agent = sub.definition, sub.agent
        # collect states: competition observations and the training env's observations, from the model's own play
        comp_obs, env_obs, masks = [], [], []
        seed = 0
        while len(comp_obs) < args.states:
            obs, _ = env.reset(seed=seed, options={"max_step": 500})
            ref.reset(env)
            done = False
            while not done and len(comp_obs) < args.states:
                comp_obs.append(platform_obs(env))
                env_obs.append(obs)
                masks.append(env.action_masks())
                obs, _, term, trunc, _ = env.step(ref.act(env, obs))
                done = term or trunc
            seed += 1
        process_t, exploit_t, predict_t, obs_data = [], [], [], []
        for comp, info in comp_obs:
            t0 = time.perf_counter()
            o = d.observation_process(comp, info)
            process_t.append(time.perf_counter() - t0)
            obs_data.append(o)
        for o in obs_data[:50]:  # warm-up
            agent.exploit([o])
            ref.model.predict(env_obs[0], deterministic=True)
        agree = 0
        for o, e in zip(obs_data, env_obs, strict=True):
            t0 = time.perf_counter()
            a = agent.exploit([o])[0].act
            t1 = time.perf_counter()
            b, _ = ref.model.predict(e, deterministic=True)
            t2 = time.perf_counter()
            exploit_t.append(t1 - t0)
            predict_t.append(t2 - t1)
            agree += int(a == int(b))
        exploit, predict = percentiles(exploit_t), percentiles(predict_t)
        print(json.dumps({
            "benchmark": "inference", "model": str(args.model or f"{args.config} (2048 steps)"),
            "algo": ref.algo, "states": len(obs_data), "torch_threads": torch.get_num_threads(), "batch_size": 1,
            "exploit": exploit, "sb3_predict": predict,
            "speedup_p50": round(predict["p50_ms"] / exploit["p50_ms"], 2),
            "observation_process": percentiles(process_t),
            "same_action_fraction": agree / len(obs_data) if ref.algo == "ppo" else "n/a (masks/LSTM: see --check)",
            "package_bytes": size, "weights_bytes": weights,
            "torch": torch.__version__, "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "peak_rss": peak_rss_mib(),
        }, indent=2))


if __name__ == "__main__":
    main()
