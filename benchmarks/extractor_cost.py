"""Extractor cost on a CPU: Gorge Chase's ``gorge`` extractor against the Realm's ``fovea``, each on its own game's
observation, one torch thread. Per extractor: its multiply-adds a state, the policy's forward latency at batch 1
(p50, p99) and batch 256 (per state), and MaskablePPO's learning throughput (env steps a second over a short run with
4 envs in a DummyVecEnv: rollouts and updates together). Prints JSON.

    python benchmarks/extractor_cost.py [--states 2000] [--learn-steps 8192]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script


def conv_macs(extractor, shape: tuple[int, ...]) -> int:
    """Multiply-adds of the extractor's conv and linear layers for one observation of ``shape`` (the maps)."""
    total = 0
    hooks = []

    def count(module, inputs, output):
        nonlocal total
        if isinstance(module, torch.nn.Conv2d):
            total += output[0].numel() * module.in_channels * module.kernel_size[0] * module.kernel_size[1] // (
                module.groups)
        elif isinstance(module, torch.nn.Linear):
            total += module.in_features * module.out_features

    for m in extractor.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            hooks.append(m.register_forward_hook(count))
    space = extractor._observation_space
    obs = {k: torch.as_tensor(np.asarray(v.sample())[None], dtype=torch.float32) for k, v in space.spaces.items()}
    with torch.no_grad():
        extractor(obs)
    for h in hooks:
        h.remove()
    return total


def measure(name: str, make_env, extractor: str, states: int, learn_steps: int) -> dict:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_realm.models.extractors import EXTRACTORS

    venv = DummyVecEnv([make_env] * 4)
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=512, batch_size=256, n_epochs=4, seed=0, device="cpu",
                        policy_kwargs={"features_extractor_class": EXTRACTORS[extractor]})
    policy = model.policy
    space = policy.observation_space
    obs1 = [{k: np.asarray(v.sample())[None] for k, v in space.spaces.items()} for _ in range(states)]
    times = []
    with torch.no_grad():
        for o in obs1:
            t = time.perf_counter()
            policy.predict(o, deterministic=True)
            times.append(time.perf_counter() - t)
    ms = np.asarray(times) * 1000
    batch = {k: np.stack([np.asarray(v.sample()) for _ in range(256)]) for k, v in space.spaces.items()}
    best = np.inf
    with torch.no_grad():
        for _ in range(5):
            t = time.perf_counter()
            policy.predict(batch, deterministic=True)
            best = min(best, time.perf_counter() - t)
    start = time.perf_counter()
    model.learn(learn_steps)
    learn_s = time.perf_counter() - start
    return {
        "game": name, "extractor": extractor, "maps_shape": list(space["maps"].shape),
        "vector_size": int(space["vector"].shape[0]),
        "macs_per_state": conv_macs(policy.features_extractor, tuple(space["maps"].shape)),
        "parameters": int(sum(p.numel() for p in policy.parameters())),
        "predict_batch1_p50_ms": round(float(np.percentile(ms, 50)), 4),
        "predict_batch1_p99_ms": round(float(np.percentile(ms, 99)), 4),
        "predict_batch256_us_per_state": round(float(best / 256 * 1e6), 2),
        "learn_steps": learn_steps, "learn_steps_per_s": round(learn_steps / learn_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=2000, help="observations timed at batch size 1")
    parser.add_argument("--learn-steps", type=int, default=8192, help="env steps of the MaskablePPO run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from sb3_realm.games.gorge.env import GorgeEnv
    from sb3_realm.games.gorge.protocols import TRAINING_MAPS
    from sb3_realm.games.realm.env import RealmEnv

    results = [
        measure("gorge", lambda: GorgeEnv(map_names=list(TRAINING_MAPS)), "gorge", args.states, args.learn_steps),
        measure("realm", RealmEnv, "fovea", args.states, args.learn_steps),
    ]
    print(json.dumps({"results": results, "torch_threads": 1, "torch": torch.__version__,
                      "machine": platform.processor() or platform.machine(), "peak_rss_mib": peak_rss_mib()},
                     indent=2))


if __name__ == "__main__":
    main()
