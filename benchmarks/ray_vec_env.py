"""Vec env speed: the time of a vec step of RayVecEnv (``env.vec_env: ray``, actors of ``--envs-per-actor`` envs)
against SubprocVecEnv (one process per env) and DummyVecEnv (every env in one process), for the same envs as training
builds them (``make_vec_env`` of a recipe's env section: Gorge Chase's configs/gorge/maskable_ppo.yaml, the features
observation; the Realm's configs/realm/ppo.yaml). Prints JSON.

    python benchmarks/ray_vec_env.py [--game gorge|realm|both] [--envs 16] [--envs-per-actor 8] [--steps 200]
        [--warmup 20] [--repeats 2] [--json PATH]

Each (game, vec env, repeat) runs in a process of its own, the repeats interleaving the vec envs so that a disturbance
from other processes hits them alike; the best repeat of each is reported. The actions are random; with the maskable
recipe (Gorge Chase) they are legal ones, drawn from the masks that MaskablePPO would fetch
(``env_method("action_masks")``, timed apart as ``masks_ms_per_vec_step``). Building the envs (and starting Ray or the
processes) and the warm-up steps are not timed. Peak resident memory: the driver's, each Ray actor's, Ray's daemons'
(gcs_server, raylet, ...: those this run started) and each SubprocVecEnv worker's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

REPO = Path(__file__).resolve().parents[1]
#: the recipe whose env section each game's vec envs are built from
RECIPES = {"gorge": REPO / "configs" / "gorge" / "maskable_ppo.yaml", "realm": REPO / "configs" / "realm" / "ppo.yaml"}
KINDS = ("ray", "subproc", "dummy")


def _random_actions(rng: np.random.Generator, masks: np.ndarray | None, n_envs: int, n_actions: int) -> np.ndarray:
    if masks is None:
        return rng.integers(n_actions, size=n_envs)
    scores = rng.random(masks.shape) * masks  # the largest score among the legal actions: a uniform legal action
    return scores.argmax(axis=1)


def _process_peak_rss_mib(pid: int) -> float | None:
    """The peak resident memory of process ``pid`` in MiB while it runs: ``VmHWM`` of /proc (Linux), else psutil's
    current resident memory; None where neither is available."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)  # kB
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        return None
    return round(psutil.Process(pid).memory_info().rss / (1024 * 1024), 1)


#: Ray's own processes on this machine (not its workers)
_RAY_DAEMONS = ("gcs_server", "raylet", "plasma_store", "log_monitor", "dashboard", "monitor.py", "runtime_env_agent")


def _ray_daemons_peak_rss_mib() -> float | None:
    """The summed peak resident memory of the Ray daemons started by this process (its descendants in /proc whose
    command line names one), in MiB; None without /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    parents: dict[int, int] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    ours = {os.getpid()}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                changed = True
    total = 0.0
    for pid in ours - {os.getpid()}:
        try:
            cmd = (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if any(name in cmd for name in _RAY_DAEMONS) and "ray::" not in cmd:
            total += _process_peak_rss_mib(pid) or 0.0
    return round(total, 1)


def run_one(game: str, kind: str, n_envs: int, envs_per_actor: int, steps: int, warmup: int, seed: int) -> dict:
    """Time one vec env of ``kind`` in this process: ``warmup`` untimed vec steps, then ``steps`` timed."""
    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import make_vec_env

    config = load_config(RECIPES[game], [f"env.n_envs={n_envs}", f"env.vec_env={kind}",
                                         f"env.envs_per_actor={envs_per_actor}"])
    masked = config.algo.name == "maskable_ppo"
    built = time.perf_counter()
    venv = make_vec_env(config.env, seed, game=config.game)
    venv.reset()
    built = time.perf_counter() - built
    rng = np.random.default_rng(seed)
    n_actions = int(venv.action_space.n)
    step_s = masks_s = 0.0
    episodes = 0
    for i in range(warmup + steps):
        start = time.perf_counter()
        masks = np.stack(venv.env_method("action_masks")) if masked else None
        mid = time.perf_counter()
        _obs, _rewards, dones, _infos = venv.step(_random_actions(rng, masks, n_envs, n_actions))
        end = time.perf_counter()
        if i >= warmup:
            masks_s += mid - start
            step_s += end - mid
            episodes += int(dones.sum())
    actors = venv.actor_peak_rss_mib() if kind == "ray" else None
    daemons = _ray_daemons_peak_rss_mib() if kind == "ray" else None
    workers = [_process_peak_rss_mib(p.pid) for p in venv.processes] if kind == "subproc" else None
    venv.close()
    rss = peak_rss_mib()
    out = {
        "game": game, "vec_env": kind, "n_envs": n_envs, "timed_vec_steps": steps, "warmup_vec_steps": warmup,
        "episodes_ended": episodes,
        "ms_per_vec_step": round(1000 * step_s / steps, 3),
        "ms_per_env_step": round(1000 * step_s / steps / n_envs, 4),
        "masks_ms_per_vec_step": round(1000 * masks_s / steps, 3) if masked else None,
        "ms_per_vec_step_with_masks": round(1000 * (step_s + masks_s) / steps, 3),
        "build_s": round(built, 2),
        "driver_peak_rss_mib": rss.get("self_mib"),
    }
    if kind == "ray":
        out["envs_per_actor"] = envs_per_actor
        out["actor_peak_rss_mib"] = actors
        out["ray_daemons_peak_rss_mib"] = daemons
    if kind == "subproc":
        out["worker_peak_rss_mib"] = workers
    return out


def _child(args: argparse.Namespace, game: str, kind: str) -> dict:
    """:func:`run_one` in a fresh process (its own peak memory, no Ray or workers left from another run)."""
    cmd = [sys.executable, __file__, "--one", kind, "--game", game, "--envs", str(args.envs), "--envs-per-actor",
           str(args.envs_per_actor), "--steps", str(args.steps), "--warmup", str(args.warmup), "--seed", str(args.seed)]
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)  # a Ray instance of this run, on this machine
    done = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{game} / {kind} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rss_sum(run: dict) -> float:
    """The driver's peak resident memory plus each worker's and Ray's daemons' (shared pages counted in each: an
    upper bound of the whole)."""
    workers = run.get("actor_peak_rss_mib") or run.get("worker_peak_rss_mib") or []
    return round(run["driver_peak_rss_mib"] + (run.get("ray_daemons_peak_rss_mib") or 0.0) + sum(workers), 1)


def _summary(runs: list[dict]) -> dict:
    best = {kind: min((r for r in runs if r["vec_env"] == kind), key=lambda r: r["ms_per_vec_step_with_masks"])
            for kind in KINDS}
    ray, sub, dummy = best["ray"], best["subproc"], best["dummy"]
    return {
        "best": best,
        "ms_per_vec_step": {kind: best[kind]["ms_per_vec_step"] for kind in KINDS},
        "ms_per_env_step": {kind: best[kind]["ms_per_env_step"] for kind in KINDS},
        "ms_per_vec_step_with_masks": {kind: best[kind]["ms_per_vec_step_with_masks"] for kind in KINDS},
        "ms_per_vec_step_all": {kind: [r["ms_per_vec_step"] for r in runs if r["vec_env"] == kind] for kind in KINDS},
        "ratio_ray_over_subproc": round(ray["ms_per_vec_step"] / sub["ms_per_vec_step"], 3),
        "ratio_ray_over_subproc_with_masks": round(ray["ms_per_vec_step_with_masks"]
                                                   / sub["ms_per_vec_step_with_masks"], 3),
        "ratio_ray_over_dummy": round(ray["ms_per_vec_step"] / dummy["ms_per_vec_step"], 3),
        "ratio_subproc_over_dummy": round(sub["ms_per_vec_step"] / dummy["ms_per_vec_step"], 3),
        "peak_rss_sum_mib": {kind: _rss_sum(best[kind]) for kind in KINDS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=[*RECIPES, "both"], default="both")
    parser.add_argument("--envs", type=int, default=16, help="envs of each vec env")
    parser.add_argument("--envs-per-actor", type=int, default=8, help="envs of each Ray actor")
    parser.add_argument("--steps", type=int, default=200, help="timed vec steps")
    parser.add_argument("--warmup", type=int, default=20, help="untimed vec steps first")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each vec env; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the JSON to PATH")
    parser.add_argument("--one", choices=KINDS, default=None, help=argparse.SUPPRESS)  # a child: one vec env
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.game, args.one, args.envs, args.envs_per_actor, args.steps, args.warmup,
                                 args.seed)))
        return
    report: dict = {"benchmark": "ray_vec_env", "envs": args.envs, "envs_per_actor": args.envs_per_actor,
                    "ray_actors": -(-args.envs // args.envs_per_actor), "timed_vec_steps": args.steps,
                    "warmup_vec_steps": args.warmup, "repeats": args.repeats,
                    "recipes": {game: str(path.relative_to(REPO)) for game, path in RECIPES.items()}, "games": {}}
    for game in (list(RECIPES) if args.game == "both" else [args.game]):
        runs = [_child(args, game, kind) for _ in range(args.repeats) for kind in KINDS]
        report["games"][game] = _summary(runs)
    report.update({"python": platform.python_version(), "cpus": os.cpu_count(),
                   "cpu": platform.processor() or platform.machine()})
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
