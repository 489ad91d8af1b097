"""The held-out evaluation of a training run: :class:`CompetitionEvalCallback` plays the held-out games every so many
steps and keeps the model with the best mean competition score; :func:`read_eval_history` reads the run's
``eval.json`` it writes, and :func:`eval_line` says one evaluation in one line."""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
from PIL import Image as PILImage
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Image
from stable_baselines3.common.vec_env import VecFrameStack, unwrap_vec_wrapper

from .. import games
from ..agents import ModelPolicy
from ..atomic import atomic_write
from ..evaluation import evaluate, evaluate_batched, plot_route, record_episode
from ..models.algorithms import algorithm_of
from .checkpoints import VECNORMALIZE_FILE, ResumeWarning, free_name, save_vecnormalize

__all__ = ["CompetitionEvalCallback", "eval_line", "read_eval_history"]


def read_eval_history(path: str | os.PathLike) -> list[dict]:
    """The evaluations of a run's ``eval.json`` (as :class:`CompetitionEvalCallback` writes it), once each entry has
    the shape a resumed run relies on: a mapping with ``timesteps`` a whole number >= 0, and ``best_score`` and
    ``wall_s`` numbers and ``new_best`` true or false where present; else a ``ValueError`` naming the file, the
    entry and the fix."""
    path = Path(path)
    fix = "it is damaged or not this run's: restore it, or move it away to start the run's evaluation list afresh"
    try:
        history = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{str(path)!r} cannot be read as the run's evaluations ({exc}); {fix}") from None
    if not isinstance(history, list):
        raise ValueError(f"{str(path)!r} holds a {type(history).__name__}, not the list of the run's evaluations; "
                         f"{fix}")
    for i, entry in enumerate(history):
        steps = entry.get("timesteps") if isinstance(entry, dict) else None
        problem = None
        if not isinstance(entry, dict):
            problem = f"is a {type(entry).__name__}, not a mapping"
        elif isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            problem = f"has timesteps = {steps!r}, not a whole number >= 0"
        else:
            for key, number in (("best_score", True), ("wall_s", True), ("new_best", False)):
                value = entry.get(key)
                right = (isinstance(value, int | float) and not isinstance(value, bool)) if number \
                    else isinstance(value, bool)
                if key in entry and not right:
                    problem = f"has {key} = {value!r}, of the wrong type"
        if problem is not None:
            raise ValueError(f"{str(path)!r}: entry {i} {problem}; {fix}")
    return history


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def eval_line(entry: Mapping, total_timesteps: int | None = None, game: str | None = None) -> str:
    """One line for a finished held-out evaluation (an entry of ``eval.json``): the evaluation's number, the model's
    timesteps (out of the run's total, where known), the mean competition score, the game's successful games (its
    :attr:`~sb3_realm.games.GameSpec.evaluation.success`: the Realm's games won, Gorge Chase's survived to max_step),
    the best score so far (marked when this evaluation set it) and the run's time so far.

    :param game: the game played, one of :func:`sb3_realm.games.names` (required).
    """
    total = "" if total_timesteps is None else f"/{total_timesteps:,}"
    success = games.get(game).evaluation.success
    rate = (f", {success.verb} {entry[success.count]}/{entry['games']} games"
            if success.count in entry and "games" in entry else "")
    new = " (new best)" if entry.get("new_best") else ""
    return (f"eval {entry['evaluation']} at {entry['timesteps']:,}{total} steps: held-out score "
            f"{entry['mean_score']:.1f}{rate}, best {entry['best_score']:.1f}{new}, "
            f"{_duration(entry['wall_s'])} in all")


class CompetitionEvalCallback(BaseCallback):
    """Every ``eval_freq`` calls (one call = one step of the VecEnv, i.e. ``n_envs`` env steps, as in SB3's
    ``EvalCallback``), play the held-out games ``configs`` deterministically with
    :func:`~sb3_realm.evaluation.evaluate` and keep the model with the best mean competition score (not shaped reward).

    Logs ``eval/score``, ``eval/treasures``, ``eval/steps``, ``eval/best_score`` and the game's own rate
    (its :attr:`~sb3_realm.games.GameSpec.evaluation.success` rate: ``eval/win_rate`` for the Realm,
    ``eval/survival_share`` for Gorge Chase); every
    ``replay_every``-th evaluation also ``eval/route`` (route PNG of the first game, TensorBoard only). The best
    model is written atomically to ``best_model_path``; when the training env has a ``VecNormalize``, evaluation
    normalises observations with its current statistics (see :class:`~sb3_realm.agents.ModelPolicy`) and saves them
    beside the best model as ``vecnormalize.json`` (plain numbers). An existing ``json_path`` is continued (resume):
    its best score counts while ``best_model_path`` exists.

    :param eval_freq: evaluate every ``eval_freq`` callback calls (that many calls' worth of env steps, counted on the
        model's total timesteps, so that a resumed run evaluates at the same steps).
    :param configs: the games' ``usr_conf`` dicts as made by :func:`~sb3_realm.evaluation.protocol_configs` (a
        game's :attr:`~sb3_realm.games.GameSpec.evaluation.held_out_configs`): the Realm's with start 2, end 1, fixed
        ``treasure_id`` and one ``max_step`` (played as the ``custom`` protocol on their sets); Gorge Chase's with
        their map under ``map_name``, the same number of games on each map (played as the ``maps`` protocol).
    :param best_model_path: file of the best model (``.zip`` is appended when it has no suffix).
    :param map_path: map JSON of the evaluation env; None = a built-in map (``env_kwargs["map_name"]``).
    :param env_kwargs: other arguments of the game's env, as in training (``map_name``, ``rules``,
        ``mask_wall_moves``, ...).
    :param json_path: append each evaluation's summary to this JSON list (rewritten atomically); None = no file.
    :param replay_every: log a route image every this many evaluations; 0 = never.
    :param seed: evaluation seed passed to :func:`~sb3_realm.evaluation.evaluate`.
    :param evaluate_at_start: also evaluate before the first update (a run that starts from a trained model: that
        model is the best one until training beats it).
    :param batched: play the games side by side in this process (:func:`~sb3_realm.evaluation.evaluate_batched`:
        the same games, actions and figures, one forward pass a step for all of them: many times faster, so
        that hundreds of held-out games are affordable). Models that read stacked frames or normalised
        observations, or another observation than the env's, are played one game at a time whatever this says.
    :param verbose: 1 prints each evaluation's :func:`eval_line` to stdout.
    :param game: the game played, one of :func:`sb3_realm.games.names` (required).
    :param talk: a text stream that gets each evaluation's :func:`eval_line` as it ends (``sb3-realm train`` passes
        ``sys.stderr`` when no progress bar shows); None = none.
    """

    def __init__(self, eval_freq: int, configs: Sequence[Mapping], best_model_path: str | os.PathLike,
                 map_path: str | os.PathLike | None = None, env_kwargs: dict | None = None,
                 json_path: str | os.PathLike | None = None, replay_every: int = 0, seed: int = 0,
                 evaluate_at_start: bool = False, batched: bool = True, verbose: int = 0,
                 game: str | None = None, talk: TextIO | None = None) -> None:
        super().__init__(verbose)
        self.talk = talk
        self.total_timesteps: int | None = None  # the run's total, known once training starts
        self.game = games.get(game).name
        if isinstance(eval_freq, bool) or not isinstance(eval_freq, int) or eval_freq < 1:
            raise ValueError(f"eval_freq = {eval_freq!r} must be an integer >= 1 (callback calls between evaluations)")
        if not isinstance(replay_every, int) or replay_every < 0:
            raise ValueError(f"replay_every = {replay_every!r} must be an integer >= 0 (0 = no route images)")
        if not configs:
            raise ValueError("configs is empty; pass usr_conf dicts, e.g. protocol_configs('leaderboard', seed=..., "
                             "games=...)")
        parsed = games.get(self.game).evaluation.check_configs(list(configs))
        self.map_names = [c["map_name"] for c in configs if "map_name" in c]
        self.env_kwargs = dict(env_kwargs or {})
        if "map_path" in self.env_kwargs:
            raise ValueError("env_kwargs has 'map_path'; pass it as map_path= instead")
        self.eval_freq, self.replay_every, self.seed = eval_freq, replay_every, seed
        self.configs = [{**c.to_usr_conf(), **({"map_name": m} if self.map_names else {})}
                        for c, m in zip(parsed, self.map_names or [None] * len(parsed), strict=True)]
        self.map_path = None if map_path is None else str(map_path)
        path = Path(best_model_path)
        self.best_model_path = path if path.suffix else path.with_suffix(".zip")
        self.json_path = None if json_path is None else Path(json_path)
        self.best_score = -np.inf
        self.n_evals = 0
        self.history: list[dict] = []
        self.evaluate_at_start = evaluate_at_start
        self.batched = batched
        self._batchable: bool | None = None  # whether the model can be played batched: found at the first evaluation
        self._started = 0.0  # perf_counter at training start, less the wall time of the evaluations before a resume
        self.last_summary: dict | None = None

    @property
    def vecnormalize_path(self) -> Path:
        return self.best_model_path.parent / VECNORMALIZE_FILE

    def _init_callback(self) -> None:
        self.best_model_path.parent.mkdir(parents=True, exist_ok=True)
        if self.json_path is not None and self.json_path.is_file() and not self.history:
            self.history = read_eval_history(self.json_path)
            self.n_evals = len(self.history)
            if self.history and self.best_model_path.is_file():
                self.best_score = max(self.best_score, float(self.history[-1].get("best_score", -np.inf)))
        self._started = time.perf_counter() - float(self.history[-1].get("wall_s", 0.0) if self.history else 0.0)

    def _on_training_start(self) -> None:
        total = self.locals.get("total_timesteps")  # SB3's learn(): the total the model's timesteps will reach
        self.total_timesteps = int(total) if isinstance(total, int | np.integer) else None
        self._forget_lost_evaluations()
        if self.evaluate_at_start and not self.history:
            self.evaluate_now()

    def _on_step(self) -> bool:
        # on the model's total timesteps: every eval_freq calls' worth of steps, as counted from step 0, so that a
        # resumed run evaluates at the same steps as an uninterrupted one
        every = self.eval_freq * self.training_env.num_envs
        if self.num_timesteps // every > (self.num_timesteps - self.training_env.num_envs) // every:
            self.evaluate_now()
        return True

    def _forget_lost_evaluations(self) -> None:
        """A run resumed from a checkpoint older than its last evaluations plays those steps again: their entries are
        dropped (and rewritten to the JSON), so that each evaluation step is listed once, as an uninterrupted run
        lists it. When the best model came from a dropped entry, it is set aside under a name that says so, and the
        next evaluation writes a new best model."""
        kept = [h for h in self.history if int(h.get("timesteps", 0)) <= self.num_timesteps]
        if len(kept) == len(self.history):
            return
        lost, self.history, self.n_evals = self.history[len(kept):], kept, len(kept)
        best_lost = [h for h in lost if h.get("new_best")]
        if best_lost and self.best_model_path.is_file():
            aside = free_name(self.best_model_path.with_name(f"{self.best_model_path.stem}.before-resume-step-"
                                                             f"{int(best_lost[-1]['timesteps'])}.zip"))
            os.replace(self.best_model_path, aside)
            warnings.warn(f"the best model came from step {best_lost[-1]['timesteps']}, after the checkpoint this run "
                          f"resumes from (step {self.num_timesteps}); it is kept as {aside.name} and the next "
                          "evaluation writes a new best model", ResumeWarning, stacklevel=2)
            self.best_score = -np.inf
        elif kept and self.best_model_path.is_file():
            self.best_score = float(kept[-1].get("best_score", -np.inf))
        self._write_history()

    def _write_history(self) -> None:
        if self.json_path is not None:
            text = json.dumps(self.history, indent=2) + "\n"
            atomic_write(self.json_path, lambda f: f.write(text.encode("utf-8")))

    def evaluate_now(self) -> dict:
        """Evaluate the current model, log, keep it if best, append to the JSON; returns the summary."""
        policy = ModelPolicy(self.model, self.training_env, name=f"step_{self.num_timesteps}")
        # the protocol and arguments of these games
        played = games.get(self.game).evaluation.evaluate_args(self.configs)
        if self._plays_batched():
            report = evaluate_batched(self.model.policy, self.configs, seed=self.seed, name=policy.name,
                                      env_kwargs={**self.env_kwargs, "map_path": self.map_path},
                                      masked=algorithm_of(self.model).maskable, game=self.game,
                                      protocol=played["protocol"])
        else:  # the same games as the batched play, one at a time
            report = evaluate(policy, **played, map_path=self.map_path, seed=self.seed, workers=1, yardstick=False,
                              env_kwargs=self.env_kwargs, game=self.game, allow_overlap=True)
        summary = report.summary()
        self.n_evals += 1
        improved = summary["mean_score"] > self.best_score
        if improved:
            self.best_score = summary["mean_score"]
            self._save_best()
        entry = {"evaluation": self.n_evals, "timesteps": int(self.num_timesteps), **summary,
                 "best_score": float(self.best_score), "new_best": bool(improved),
                 "wall_s": round(time.perf_counter() - self._started, 2)}
        self.history.append(entry)
        self.last_summary = entry
        self._write_history()
        rate = games.get(self.game).evaluation.success.rate  # the game's own: a win (the Realm), survival (Gorge Chase)
        for key, name in (("score", "mean_score"), (rate, rate), ("treasures", "mean_treasures"),
                          ("steps", "mean_steps"), ("best_score", "best_score")):
            if name in entry:
                self.logger.record(f"eval/{key}", float(entry[name]))
        if self.replay_every and self.n_evals % self.replay_every == 0:
            self.logger.record("eval/route", Image(self.route_image(policy), "HWC"),
                               exclude=("stdout", "log", "json", "csv"))
        if self.verbose:
            print(eval_line(entry, self.total_timesteps, self.game))
        if self.talk is not None:
            print(eval_line(entry, self.total_timesteps, self.game), file=self.talk, flush=True)
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.dump(self.num_timesteps)
        return entry

    def _plays_batched(self) -> bool:
        """Whether the model reads the env's own observations, so that :func:`evaluate_batched` can play it (found
        once: the model and its env keep their spaces and wrappers)."""
        if not self.batched:
            return False
        if self._batchable is None:
            normalize = self.model.get_vec_normalize_env()
            env = games.get(self.game).env.make(map_path=self.map_path, **self.env_kwargs)
            try:
                self._batchable = (unwrap_vec_wrapper(self.training_env, VecFrameStack) is None
                                   and not (normalize is not None and normalize.norm_obs)
                                   and self.model.observation_space == env.observation_space)
            finally:
                env.close()
        return self._batchable

    def _save_best(self) -> None:
        atomic_write(self.best_model_path, self.model.save)
        vec_normalize = self.model.get_vec_normalize_env()
        if vec_normalize is not None:
            save_vecnormalize(vec_normalize, self.vecnormalize_path)

    def route_image(self, policy: ModelPolicy) -> np.ndarray:
        """(H, W, 3) uint8 route plot (:func:`~sb3_realm.evaluation.plot_route`) of the first game."""
        ep, env = record_episode(policy, map_path=self.map_path, usr_conf=self.configs[0], seed=self.seed,
                                 frames=False, env_kwargs=self.env_kwargs, game=self.game)
        with tempfile.TemporaryDirectory() as tmp:
            png = plot_route(ep, env, Path(tmp) / "route.png", game=self.game,
                             title=f"step {self.num_timesteps}: score {ep.info['score']:.1f}, treasures "
                                   f"{ep.info['treasures']}, steps {ep.info['steps']}")
            with PILImage.open(png) as im:
                return np.asarray(im.convert("RGB"))
