"""The objective: train a trial's config and return its MEAN COMPETITION SCORE on fixed held-out games (never the
shaped reward), reporting intermediate evaluations to Optuna's pruner and catching divergence.

Every trial of a study plays the same games, the base config's held-out games as ``sb3-realm train`` evaluates them:
for the Realm the leaderboard protocol drawn from ``eval_seed`` (``eval_games`` games, its ``usr_conf`` treasure count
and ``max_step``), for Gorge Chase ``eval_games`` games on each map of ``eval_maps``. A trial's ``win_rate`` is the
share of the game's successful games (:attr:`~sb3_realm.games.GameSpec.evaluation.success`): the Realm's games won,
Gorge Chase's survived to max_step.
"""

from __future__ import annotations

import copy
import math
import os
import socket
from dataclasses import replace
from pathlib import Path

import numpy as np
import optuna
import torch

from .. import games
from ..agents import ModelPolicy
from ..evaluation import evaluate
from ..training.callbacks import CompetitionEvalCallback
from ..training.config import TrainConfig, config_to_dict
from ..training.run import train
from .space import convert_params, sample_params

__all__ = ["TrialEvalCallback", "eval_configs", "objective", "trial_dir"]


def eval_configs(config: TrainConfig) -> list[dict]:
    """The held-out games of a study: the run's own (:meth:`~sb3_realm.training.config.TrainConfig.held_out_configs`:
    the Realm's leaderboard draw from ``eval_seed``, Gorge Chase's ``eval_games`` per map of ``eval_maps``)."""
    return config.held_out_configs()


def trial_dir(study_out: str | Path, number: int) -> Path:
    return Path(study_out) / "trials" / f"trial_{number:04d}"


def _finite_params(model) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.policy.parameters())


class TrialEvalCallback(CompetitionEvalCallback):
    """:class:`~sb3_realm.callbacks.CompetitionEvalCallback` for a trial: every ``eval_freq`` calls it evaluates
    the held-out games (TensorBoard ``eval/*``, ``eval.json``, ``best_model.zip`` as in a training run), reports the
    mean score at step ``step_offset + num_timesteps`` and stops training when the pruner says so; at the end of
    training it evaluates the final model (``final_score``). It stops training, with ``diverged`` set, as soon as
    the policy's parameters or a score are not finite.

    With ``per_game=True`` (Wilcoxon pruner) intermediate evaluations are not reported: the final model plays the
    games one by one in a shuffled order, each score reported at step ``step_offset + game index``, and the pruner is
    asked after each game.

    :param trial: the Optuna trial.
    :param eval_freq: callback calls between evaluations; None = only the final evaluation.
    :param configs: the held-out games (:func:`eval_configs`).
    :param best_model_path: see :class:`~sb3_realm.callbacks.CompetitionEvalCallback` (as are the other keywords).
    :param step_offset: added to the reported steps (trials with several training seeds).
    :param per_game: report each game's score (Wilcoxon) instead of the mean of each evaluation.
    :param shuffle_seed: seed of the game order with ``per_game``.
    """

    def __init__(self, trial, eval_freq: int | None, configs, best_model_path, *, step_offset: int = 0,
                 per_game: bool = False, shuffle_seed: int = 0, **kwargs) -> None:
        super().__init__(eval_freq or 1, configs, best_model_path, **kwargs)
        self.trial, self.intermediate = trial, eval_freq is not None
        self.step_offset, self.per_game, self.shuffle_seed = step_offset, per_game, shuffle_seed
        self.pruned: str | None = None
        self.diverged: str | None = None
        self.final_score: float | None = None
        self.final_win_rate: float | None = None
        self.final_treasures: float | None = None
        self.game_scores: dict[int, float] = {}
        self._game_results: dict = {}  # per-game mode: index -> GameResult (won and treasures beside the score)

    def _on_step(self) -> bool:
        if self.pruned or self.diverged:
            return False
        if self.intermediate and self.n_calls % self.eval_freq == 0:
            entry = self.evaluate_now()
            if not math.isfinite(entry["mean_score"]):
                self.diverged = f"score {entry['mean_score']} at {self.num_timesteps} steps"
                return False
            if not self.per_game:
                self.trial.report(entry["mean_score"], self.step_offset + self.num_timesteps)
                if self.trial.should_prune():
                    self.pruned = f"pruned at {self.num_timesteps} steps: mean score {entry['mean_score']:.2f}"
                    return False
        return True

    def _on_rollout_end(self) -> None:
        if not self.diverged and not _finite_params(self.model):
            self.diverged = f"NaN/inf in the policy parameters after {self.num_timesteps} steps"

    def _on_training_end(self) -> None:
        if self.pruned or self.diverged:
            return
        if not _finite_params(self.model):
            self.diverged = f"NaN/inf in the policy parameters after {self.num_timesteps} steps"
            return
        if self.per_game:
            self._play_games()
            return
        entry = self.last_summary
        if entry is None or entry["timesteps"] != self.num_timesteps:
            entry = self.evaluate_now()
            self.trial.report(entry["mean_score"], self.step_offset + self.num_timesteps)
        self.final_score = float(entry["mean_score"])
        self.final_win_rate = float(entry[games.get(self.game).evaluation.success.rate])
        self.final_treasures = float(entry["mean_treasures"])
        if not math.isfinite(self.final_score):
            self.diverged = f"final score {self.final_score}"

    def _play_games(self) -> None:
        policy = ModelPolicy(self.model, self.training_env, name=f"trial_{self.trial.number}")
        spec = games.get(self.game)
        order = np.random.default_rng(self.shuffle_seed).permutation(len(self.configs))
        for index in order.tolist():
            # one game alone plays as it does among the others only in a game of treasure sets (StudyConfig checks)
            report = evaluate(policy, **spec.evaluation.evaluate_args([self.configs[index]]), map_path=self.map_path,
                              seed=self.seed, workers=1, yardstick=False, env_kwargs=self.env_kwargs, game=self.game,
                              allow_overlap=True)
            score = float(report.games[0].score)
            self.game_scores[index], self._game_results[index] = score, report.games[0]
            self.trial.report(score, self.step_offset + index)
            if self.trial.should_prune():
                self.pruned = (f"pruned after {len(self.game_scores)} of {len(self.configs)} games: mean score "
                               f"{np.mean(list(self.game_scores.values())):.2f}")
                return
        self.final_score = float(np.mean(list(self.game_scores.values())))
        self.final_win_rate = float(np.mean([spec.evaluation.success.of_game(g) for g in self._game_results.values()]))
        self.final_treasures = float(np.mean([g.treasures for g in self._game_results.values()]))


def _divergence(exc: BaseException, callback: TrialEvalCallback, reason: str) -> str | None:
    """Why an exception from training counts as divergence (NaN / inf), or None when it does not."""
    if callback.diverged:
        return callback.diverged
    model = getattr(callback, "model", None)
    if model is not None and not _finite_params(model):
        return f"NaN/inf in the policy parameters after {model.num_timesteps} steps ({reason})"
    text = str(exc).lower()
    if "nan" in text or "invalid values" in text:
        return f"NaN in training ({reason})"
    return None


def objective(trial: optuna.Trial, study) -> float:
    """Sample, convert, train (one run per training seed) and return the mean final competition score.

    ``study`` is the :class:`~sb3_realm.tuning.study.StudyConfig`. A diverged trial (NaN parameters or score, or a
    NaN error from training) raises :class:`optuna.TrialPruned` with ``user_attrs["diverged"]`` = the reason; any
    other training error is recorded in ``user_attrs["fail_reason"]`` and re-raised (the trial FAILS, the study goes
    on). ``user_attrs["config"]`` holds the full training config of the trial (as ``--from-study`` rebuilds it),
    ``user_attrs["worker"]`` the ``host:pid`` that ran it.
    """
    base = study.base
    try:
        params = sample_params(study.kind, trial, base, curriculum=study.curriculum)
        config = convert_params(study.kind, params, base)
    except ValueError as exc:
        trial.set_user_attr("fail_reason", f"invalid parameters: {exc}")
        raise
    out = trial_dir(study.out, trial.number)
    config = replace(config, out=str(out))
    trial.set_user_attr("config", config_to_dict(config))
    trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
    trial.set_user_attr("run_dir", str(out))
    configs = eval_configs(base)
    env_kwargs = {k: v for k, v in config.env.env_kwargs(usr_conf=False, game=config.spec).items() if k != "map_path"}
    per_game = study.pruner == "wilcoxon"
    scores, win_rates, treasures = [], [], []
    for k in range(study.train_seeds):
        run = copy.deepcopy(config)
        run.seed, run.eval_freq, run.progress_bar, run.eval_route_every = config.seed + k, 0, False, 0
        run.out = str(out / f"seed_{k}") if study.train_seeds > 1 else str(out)
        n_envs = run.env.n_envs
        callback = TrialEvalCallback(
            trial, max(1, config.eval_freq // n_envs) if config.eval_freq > 0 else None, configs,
            Path(run.out) / "best_model.zip", map_path=config.env.map_path, env_kwargs=env_kwargs,
            json_path=Path(run.out) / "eval.json", seed=config.eval_seed,
            step_offset=k * (len(configs) if per_game else config.total_timesteps), per_game=per_game,
            shuffle_seed=trial.number * 1009 + k, game=config.game)
        try:
            train(run, callbacks=[callback])
        except Exception as exc:  # recorded on the trial, which fails or is pruned; the study goes on
            lines = str(exc).strip().splitlines()
            reason = f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
            diverged = _divergence(exc, callback, reason)
            if diverged:
                trial.set_user_attr("diverged", f"seed {run.seed}: {diverged}")
                raise optuna.TrialPruned(f"diverged: {diverged}") from exc
            trial.set_user_attr("fail_reason", f"seed {run.seed}: {reason}")
            raise
        if callback.diverged:
            trial.set_user_attr("diverged", f"seed {run.seed}: {callback.diverged}")
            raise optuna.TrialPruned(f"diverged: {callback.diverged}")
        if callback.pruned:
            trial.set_user_attr("prune_reason", f"seed {run.seed}: {callback.pruned}")
            if callback.game_scores:
                trial.set_user_attr("partial_mean", float(np.mean(list(callback.game_scores.values()))))
            raise optuna.TrialPruned(callback.pruned)
        # set at the end of a training that neither diverged nor was pruned
        assert callback.final_score is not None and callback.final_win_rate is not None
        assert callback.final_treasures is not None
        scores.append(callback.final_score)
        win_rates.append(callback.final_win_rate)
        treasures.append(callback.final_treasures)
        trial.set_user_attr("seed_scores", scores)
        trial.set_user_attr("win_rate", float(np.mean(win_rates)))  # held-out games, as the score
        trial.set_user_attr("mean_treasures", float(np.mean(treasures)))
    return float(np.mean(scores))
