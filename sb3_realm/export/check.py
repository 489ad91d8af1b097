"""The proof behind ``build-submission --check``, through the stand-in of the platform's framework
(``sb3_realm.submission``'s ``platform_stub/framework.py``), in guarded processes that cannot import sb3_realm, SB3
or gymnasium:

1. the upload folder loads as the platform loads it (its conf, the algorithm registry, the registrations, the
   preload keys; a folder without ``conf/`` gets the stand-in's minimal conf with the folder's lines to merge);
2. a training task with the preload keys runs its workflow on the simulator until at least ``task_episodes``
   episodes have ended and two models are saved, without an ERROR line (platform failures injected: ``env.reset``
   and ``score`` sometimes None);
3. every model the task saved holds the exported weights, tensor for tensor (same keys, ``torch.equal``);
4. the evaluation loop on the first saved model, loaded as the platform's model loader does, and the SB3 model
   (``model.predict(deterministic=True)`` on the training env's observation) see the same states: every action must
   be identical, over the leaderboard games and more games until ``min_states`` states (competition-shaped
   observations, ``env_info`` None right after a reset, as the platform's loop does); then the SB3 model plays the
   leaderboard games on its own and the scores must be identical too."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ..agents import SB3Policy, play_episode
from ..agents.submission import (
    SubmissionProcess,
    TrainingTaskProcess,
    env_kwargs_of,
    manifest_game,
    platform_obs,
    read_manifest,
)
from ..evaluation import game_seed, protocol_configs
from ..submission import BLOCKED_MODULES

__all__ = ["check_submission", "run_platform_task", "same_weights"]

# the stand-in's training task: small batches and frequent model dumps, as the official train_test.py sets them, so
# that the learner trains and the actors sync to the model pool within a few games
TASK_OVERRIDES = {"train_batch_size": 64, "replay_buffer_capacity": 1024, "dump_model_freq": 5}


def same_weights(path_a: str | os.PathLike, path_b: str | os.PathLike) -> bool:
    """Whether two state-dict files hold the same tensors under the same keys (``torch.equal`` on each; the keys'
    order aside)."""
    a, b = (torch.load(p, map_location="cpu", weights_only=True) for p in (path_a, path_b))
    return set(a) == set(b) and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)


def run_platform_task(folder: str | os.PathLike, task_dir: str | os.PathLike, *, map_path: str | None = None,
                      seed: int = 0, episodes: int = 3, max_step: int = 300, fault_rate: float = 0.02) -> dict:
    """A training task of the upload ``folder`` on the platform stand-in (step 2 of the module docstring), in
    ``task_dir``; returns the task's report with ``exported_weights_kept`` (step 3)."""
    manifest = read_manifest(folder)
    game = manifest_game(manifest)
    sim = game.make_env(**env_kwargs_of(manifest, map_path))
    env = game.competition_env(sim.game_map, sim.rules, seed=seed, fault_rate=fault_rate, fault_seed=seed + 1)
    options = {"episodes": episodes, "saves": 2, "max_episodes": max(30, 10 * episodes), "step_seconds": 1.0,
               "overrides": TASK_OVERRIDES}
    with TrainingTaskProcess(folder, task_dir, options, max_step=max_step) as task:
        report = task.run(env)
    if "platform_error" in report:
        return {**report, "ok": False, "saves": [], "exported_weights_kept": False}
    exported = Path(folder) / manifest["weights"]["file"]
    for save in report["saves"]:
        saved = Path(save["model_dir"]) / "ckpt" / f"model.ckpt-{save['id']}.pkl"
        save["exported_weights"] = saved.is_file() and same_weights(saved, exported)
    report["exported_weights_kept"] = bool(report["saves"]) and all(s["exported_weights"] for s in report["saves"])
    report["ok"] = (report["crashed"] is None and not report["errors"] and report["episodes"] >= episodes
                    and len(report["saves"]) >= 2 and report["exported_weights_kept"]
                    and not set(report["modules"]) & set(BLOCKED_MODULES))
    return report


def check_submission(folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
                     games: int = 30, seed: int = 0, treasures: int = 9, max_step: int = 2000,
                     min_states: int = 10_000, task_episodes: int = 3, task_max_step: int = 300,
                     progress: bool = False, trust_pickle: bool | None = None) -> dict:
    """Prove that the upload ``folder`` survives a platform training task with the exported weights and that the
    model it saves acts exactly like the SB3 model ``model_path`` (module docstring).

    :return: a report; ``ok`` is True when the task passed, kept the weights, and every action and every
        leaderboard score is identical.
    """
    manifest = read_manifest(folder)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batch-1 inference; more threads only wait on each other (and on the submission)
    try:
        with tempfile.TemporaryDirectory(prefix="sb3-realm-platform-") as task_dir:
            task = run_platform_task(folder, task_dir, map_path=map_path, seed=seed, episodes=task_episodes,
                                     max_step=min(task_max_step, max_step))
            if not task["saves"]:
                return {"ok": False, "platform_task": _summary(task), "states": 0, "identical_actions": False,
                        "identical_scores": False}
            first = task["saves"][0]
            try:
                sub = SubmissionProcess(first["model_dir"], layout=manifest["layout"],
                                        model_pool=Path(task_dir) / "model_pool", game=manifest_game(manifest).name)
            except RuntimeError as exc:  # the saved model does not load as the platform loads it
                return {"ok": False, "platform_task": _summary(task), "evaluated_model_id": first["id"],
                        "evaluation_error": str(exc), "states": 0, "identical_actions": False,
                        "identical_scores": False}
            with sub:
                report = _parity(sub, SB3Policy(model_path, trust_pickle=trust_pickle), manifest, map_path, games,
                                 seed, treasures, max_step, min_states, progress)
    finally:
        torch.set_num_threads(threads)
    report["evaluated_model_id"] = first["id"]
    report["platform_task"] = _summary(task)
    report["ok"] = report["ok"] and task["ok"]
    return report


def _summary(task: dict) -> dict:
    """The task's report without its log and module list (the log's ERROR lines stay)."""
    return {k: v for k, v in task.items() if k not in ("log", "modules")} | {
        "saves": [{"id": s["id"], "exported_weights": s["exported_weights"]} for s in task["saves"]]}


def _parity(sub, reference, manifest, map_path, games, seed, treasures, max_step, min_states, progress) -> dict:
    game = manifest_game(manifest)
    env = game.make_env(**env_kwargs_of(manifest, map_path))
    leaderboard = protocol_configs("leaderboard", seed=seed, games=games, treasures=treasures, max_step=max_step,
                                   game=game.name)
    extra = (protocol_configs("leaderboard", seed=seed + 1 + k, games=1, treasures=int(t), max_step=max_step,
                              game=game.name)[0]
             for k, t in enumerate(itertools.cycle(game.parity_treasure_counts)))
    bar = tqdm(total=min_states, desc="check", unit="state") if progress else None
    mismatches: list[dict] = []
    states, n_mismatch, sub_scores, index = 0, 0, [], 0
    for conf in itertools.chain(leaderboard, extra):
        if index >= len(leaderboard) and states >= min_states:
            break
        obs, _ = env.reset(seed=game_seed(seed, index), options=conf)
        reference.reset(env)
        done, info = False, {}
        while not done:
            action = sub.act(*platform_obs(env))
            expected = reference.act(env, obs)
            if action != expected:
                n_mismatch += 1
                if len(mismatches) < 20:
                    mismatches.append({"game": index, "step": int(env.game.step_no), "submission": action,
                                       "sb3": expected})
            states += 1
            if bar:
                bar.update()
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        if index < len(leaderboard):
            sub_scores.append(float(info["score"]))
        index += 1
    if bar:
        bar.close()
    sb3_scores = [float(play_episode(env, reference, game_seed(seed, i), conf)["score"])  # the SB3 model alone
                  for i, conf in enumerate(leaderboard)]
    identical = n_mismatch == 0 and sub_scores == sb3_scores
    return {"ok": identical, "states": states, "games": index, "leaderboard_games": len(leaderboard),
            "identical_actions": n_mismatch == 0, "mismatched_states": n_mismatch, "first_mismatches": mismatches,
            "identical_scores": sub_scores == sb3_scores, "submission_scores": sub_scores, "sb3_scores": sb3_scores,
            "mean_score": float(np.mean(sub_scores)), "torch_threads": sub.hello.get("torch_threads", 1),
            "imported_top_level_modules": sub.hello["modules"], "map": env.game_map.name, "algo": reference.algo}
