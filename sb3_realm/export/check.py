"""The proof behind ``build-submission --check``: the simulator feeds both the submission (in a guarded process,
competition-shaped observations, ``env_info`` None right after a reset, as the platform's loop does) and the SB3
model (``model.predict(deterministic=True)`` on the training env's observation) the same states; every action must
be identical, over the leaderboard games and more games until ``min_states`` states; then the SB3 model plays the
leaderboard games on its own and the scores must be identical too."""

from __future__ import annotations

import itertools
import os

import numpy as np
import torch
from tqdm.auto import tqdm

from ..agents import SB3Policy, play_episode
from ..agents.submission import SubmissionProcess, env_kwargs_of, platform_obs, read_manifest
from ..envs import RealmEnv
from ..evaluation import game_seed, protocol_configs

__all__ = ["check_submission"]


def check_submission(folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
                     games: int = 30, seed: int = 0, treasures: int = 9, max_step: int = 2000,
                     min_states: int = 10_000, progress: bool = False) -> dict:
    """Prove that the submission in ``folder`` acts exactly like the SB3 model ``model_path`` (module docstring).

    :return: a report; ``ok`` is True when every action and every leaderboard score is identical.
    """
    _, manifest = read_manifest(folder)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batch-1 inference; more threads only wait on each other (and on the submission)
    try:
        return _check(folder, model_path, manifest, map_path, games, seed, treasures, max_step, min_states, progress)
    finally:
        torch.set_num_threads(threads)


def _check(folder, model_path, manifest, map_path, games, seed, treasures, max_step, min_states, progress) -> dict:
    env_kwargs = env_kwargs_of(manifest, map_path)
    env = RealmEnv(**env_kwargs)
    reference = SB3Policy(model_path)
    leaderboard = protocol_configs("leaderboard", seed=seed, games=games, treasures=treasures, max_step=max_step)
    extra = (protocol_configs("leaderboard", seed=seed + 1 + k, games=1, treasures=int(t), max_step=max_step)[0]
             for k, t in enumerate(itertools.cycle(range(1, 14))))
    bar = None
    if progress:
        bar = tqdm(total=min_states, desc="check", unit="state")
    states, n_mismatch, mismatches, sub_scores, index = 0, 0, [], [], 0
    with SubmissionProcess(folder) as sub:
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
            "mean_score": float(np.mean(sub_scores)), "torch_threads": sub.hello["torch_threads"],
            "imported_top_level_modules": sub.hello["modules"], "map": env.game_map.name, "algo": reference.algo}
