"""Training callbacks: Realm episode metrics, competition evaluation keeping the best model, and a curriculum.

All three read the finished episodes from ``self.locals["infos"]`` / ``self.locals["dones"]`` (the ``info`` of a
game env's episode end carries the competition ``score``), so they work the same with
``DummyVecEnv``, ``SubprocVecEnv`` and ``VecNormalize`` (which leaves infos alone).

The competition evaluation (:class:`CompetitionEvalCallback`, :func:`eval_line`, :func:`read_eval_history`) lives in
:mod:`.eval_callback` and is importable from here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import HParam

from .. import games
from .eval_callback import CompetitionEvalCallback, eval_line, read_eval_history

__all__ = [
    "PHASE_KEYS",
    "SUCCESS_METRICS",
    "CompetitionEvalCallback",
    "ConfigLogCallback",
    "CurriculumCallback",
    "MetricsCallback",
    "RealmMetricsCallback",
    "StopAtTimesteps",
    "eval_line",
    "read_eval_history",
]

PHASE_KEYS = ("usr_conf", "until_step", "until_success", "random_start")


#: the old name of the Realm's curriculum success metrics, from when the package played only Back to the Realm (each
#: game's are its spec's ``env.success_metrics``)
SUCCESS_METRICS: Mapping[str, Callable[[dict], float]] = games.GAMES[games.LEGACY_GAME].env.success_metrics


def _finished(locals_: dict[str, Any]) -> Iterator[tuple[int, dict]]:
    """``(env index, info)`` of every episode that ended on this step (its final ``info`` holds the score)."""
    for i, (info, done) in enumerate(zip(locals_["infos"], locals_["dones"], strict=True)):
        if done and "score" in info:
            yield i, info



class StopAtTimesteps(BaseCallback):
    """End training once the model's total timesteps reach ``timesteps``: a rollout that ends there is trained on, one
    that would go on past it is dropped (the other callbacks still see its last step).

    :param timesteps: the total to stop at.
    """

    def __init__(self, timesteps: int) -> None:
        super().__init__()
        self.timesteps = int(timesteps)

    def _on_step(self) -> bool:
        if self.num_timesteps < self.timesteps:
            return True
        return self.locals.get("n_steps") == self.locals.get("n_rollout_steps", 0) - 1  # the rollout's last step

class MetricsCallback(BaseCallback):
    """Log competition metrics of the training episodes (played by the sampling policy, with its exploration: not
    the held-out ``eval/*`` games), averaged over the last ``window`` finished episodes, at the end of every rollout,
    as ``train_episodes/<name>``: the game's :attr:`~sb3_realm.games.GameSpec.env.episode_metrics`. The Realm's:
    ``score``, ``win_rate``, ``treasures``, ``steps``, ``flash_rate`` and ``buff_rate`` (fraction of episodes that
    used the flash / took the buff at least once), ``bumps`` and ``reward_by_term/<term>`` (each reward term's
    contribution to the episode's return). Gorge Chase's: ``score``, ``steps``, ``treasures``, ``survival_rate``,
    ``caught_before_speedup``, ``caught_after_speedup``, ``cornered``, ``flashes``, ``flash_rate``, ``buff_rate`` and
    ``reward_terms/<term>``.

    :param window: episodes in the moving averages.
    :param verbose: verbosity level.
    :param game: the game of the training envs, one of :func:`sb3_realm.games.names` (required).
    """

    def __init__(self, window: int = 100, verbose: int = 0, game: str | None = None) -> None:
        super().__init__(verbose)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window = {window!r} must be an integer >= 1 (episodes in the moving average)")
        self.window = window
        self.episode_metrics = games.get(game).env.episode_metrics
        self.episodes: deque[dict[str, float]] = deque(maxlen=window)

    def _on_step(self) -> bool:
        for _, info in _finished(self.locals):
            self.episodes.append(self.episode_metrics(info))
        return True

    def _on_rollout_end(self) -> None:
        if not self.episodes:
            return
        for key in self.episodes[-1]:
            self.logger.record(f"train_episodes/{key}", float(np.mean([e[key] for e in self.episodes if key in e])))


#: the old name of :class:`MetricsCallback`, from when the package played only Back to the Realm; it logs the
#: metrics of any game
RealmMetricsCallback = MetricsCallback


def _flatten(data: Mapping, prefix: str = "") -> dict[str, float | int | str | bool]:
    out: dict[str, float | int | str | bool] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value if isinstance(value, (int, float, str, bool)) else str(value)
    return out


class ConfigLogCallback(BaseCallback):
    """At the start of training, the run's config as TensorBoard HParams (one row per run in the HPARAMS tab,
    keys flattened as ``algo.hyperparams.learning_rate``), beside the run's ``eval/score`` and
    ``train_episodes/score``, so runs can be compared by what they were trained with.

    :param config: the run's config as plain data (``config_to_dict``).
    """

    def __init__(self, config: Mapping, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.hparams = _flatten(config)

    def _on_training_start(self) -> None:
        metrics = {"eval/score": 0.0, "train_episodes/score": 0.0}  # placeholders: the logged series fill them
        self.logger.record("hparams", HParam(self.hparams, metrics), exclude=("stdout", "log", "json", "csv"))
        self.logger.dump(self.num_timesteps)

    def _on_step(self) -> bool:
        return True


class CurriculumCallback(BaseCallback):
    """Move the training envs through episode-configuration phases.

    Each phase is a dict: ``usr_conf`` (competition keys, applied on top of the previous phase's configuration,
    starting from env 0's configuration when training starts), and ``until_step`` (advance once the model's total
    timesteps reach it) or ``until_success`` (advance once the mean ``metric`` of the last ``window`` episodes
    played under this phase reaches it); the last phase needs neither. ``"random_start": true`` gives every env a
    start drawn from the allowed ids (not the end, not a fixed treasure), redrawn at each of its episode ends.

    A phase is applied with ``env_method("set_config", ...)``, which takes effect at each env's next reset; the
    episode each env is playing at that moment is therefore not counted for ``until_success``, and a redrawn start
    applies from the episode after next. Values are validated against the envs' configuration when training
    starts. ``state_dict()`` / ``load_state_dict()`` carry the phase (and success window) through checkpoints.
    Logs ``curriculum/phase`` and ``curriculum/success``.

    :param phases: the phases, e.g. ``[{"usr_conf": {"treasure_num": 1, "max_step": 500}, "until_step": 100_000},
        {"usr_conf": {"treasure_num": 9, "max_step": 2000}, "until_success": 0.8, "random_start": True}, {...}]``.
    :param metric: success metric, one of the game's ``success_metrics`` (None: its first). The Realm's:
        ``win_rate``, ``treasure_rate`` (fraction of treasures collected) or ``score``; Gorge Chase's:
        ``survival_rate``, ``score`` or ``steps``.
    :param window: episodes in the success average (it must be full before a phase can advance).
    :param seed: seed of the random starts.
    :param verbose: 1 prints each phase change.
    :param game: the game of the training envs, one of :func:`sb3_realm.games.names` (required).
    """

    def __init__(self, phases: Sequence[Mapping], metric: str | None = None, window: int = 50,
                 seed: int | None = None, verbose: int = 0, game: str | None = None) -> None:
        super().__init__(verbose)
        self.spec = games.get(game)
        metric = next(iter(self.spec.env.success_metrics)) if metric is None else metric
        if metric not in self.spec.env.success_metrics:
            raise ValueError(f"metric = {metric!r}; choose one of {list(self.spec.env.success_metrics)} "
                             f"({self.spec.title})")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window = {window!r} must be an integer >= 1")
        if isinstance(phases, (str, bytes, Mapping)) or not isinstance(phases, Sequence) or not phases:
            raise ValueError(f"phases must be a non-empty list of dicts like {{'usr_conf': {{'treasure_num': 1}}, "
                             f"'until_step': 100000}}, got {phases!r}")
        self.phases = [self._check_phase(i, p, len(phases), metric, self.spec.episodes.usr_conf_keys)
                       for i, p in enumerate(phases)]
        self.metric, self.window = metric, window
        self.phase = 0
        self.recent: deque[float] = deque(maxlen=window)
        self.rng = np.random.default_rng(seed)
        self.configs: list = []  # the game's episode configuration of each phase
        self._skip: list[int] = []

    @staticmethod
    def _check_phase(i: int, phase, n: int, metric: str, usr_conf_keys: Sequence[str]) -> dict:
        where = f"curriculum phase {i}"
        if not isinstance(phase, Mapping):
            raise ValueError(f"{where} must be a dict with keys from {list(PHASE_KEYS)}, got {phase!r}")
        for key in phase:
            if key not in PHASE_KEYS:
                raise ValueError(f"{where} has unknown key {key!r}; valid keys are {list(PHASE_KEYS)}")
        usr_conf = phase.get("usr_conf", {})
        if not isinstance(usr_conf, Mapping):
            raise ValueError(f"{where}: 'usr_conf' must be a dict with keys from {list(usr_conf_keys)}, "
                             f"got {usr_conf!r}")
        for key in usr_conf:
            if key not in usr_conf_keys:
                raise ValueError(f"{where}: usr_conf has unknown key {key!r}; valid keys are {list(usr_conf_keys)}")
        if "until_step" in phase and "until_success" in phase:
            raise ValueError(f"{where} has both 'until_step' and 'until_success'; give one")
        step = phase.get("until_step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 1):
            raise ValueError(f"{where}: 'until_step' = {step!r} must be an integer >= 1 (total timesteps)")
        success = phase.get("until_success")
        if success is not None:
            ok = isinstance(success, (int, float)) and not isinstance(success, bool) and np.isfinite(success)
            if not ok or (metric != "score" and not 0 < success <= 1):
                raise ValueError(f"{where}: 'until_success' = {success!r} must be a number"
                                 f"{'' if metric == 'score' else ' in (0, 1]'} for metric {metric!r}")
        if i < n - 1 and step is None and success is None:
            raise ValueError(f"{where} is not the last and has neither 'until_step' nor 'until_success': later "
                             "phases would never start")
        if not isinstance(phase.get("random_start", False), bool):
            raise ValueError(f"{where}: 'random_start' must be true or false, got {phase['random_start']!r}")
        return {"usr_conf": dict(usr_conf), "until_step": step, "until_success": success,
                "random_start": bool(phase.get("random_start", False))}

    # ------------------------------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """JSON-serialisable state: phase, success window and random-start generator."""
        return {"phase": self.phase, "recent": list(self.recent), "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: Mapping) -> None:
        """Restore :meth:`state_dict`; the phase is applied to the envs now if training has started, else then."""
        phase = state.get("phase") if isinstance(state, Mapping) else None
        if isinstance(phase, bool) or not isinstance(phase, int) or not 0 <= phase < len(self.phases):
            raise ValueError(f"curriculum state {state!r}: 'phase' must be an integer in 0..{len(self.phases) - 1}")
        self.phase = phase
        self.recent = deque((float(v) for v in state.get("recent", [])), maxlen=self.window)
        if "rng" in state:
            self.rng.bit_generator.state = state["rng"]
        if self.configs:
            self._apply()

    # ------------------------------------------------------------------------------------------ hooks
    def _init_callback(self) -> None:
        config = self.training_env.get_attr("base_config", indices=[0])[0]
        self.configs = []
        for i, phase in enumerate(self.phases):
            try:
                config = self.spec.episodes.config.from_usr_conf(phase["usr_conf"], base=config)
            except ValueError as exc:
                raise ValueError(f"curriculum phase {i}: {exc}") from exc
            if phase["random_start"] and not self.spec.episodes.random_starts(config):
                raise ValueError(f"curriculum phase {i}: random_start has no allowed start id (every id is the end "
                                 f"or a fixed treasure: {config.to_usr_conf()})")
            self.configs.append(config)
        self._apply()

    def _apply(self) -> None:
        config = self.configs[self.phase]
        self.training_env.env_method("set_config", **config.to_usr_conf())
        self._skip = [1] * self.training_env.num_envs  # the episodes in flight began under the old configuration
        if self.phases[self.phase]["random_start"]:
            for i in range(self.training_env.num_envs):
                self._random_start(i)

    def _random_start(self, env_index: int) -> None:
        starts = self.spec.episodes.random_starts(self.configs[self.phase])
        start = starts[int(self.rng.choice(len(starts)))]  # the draw of rng.choice(starts)
        self.training_env.env_method("set_config", **start, indices=[env_index])

    def _on_step(self) -> bool:
        score = self.spec.env.success_metrics[self.metric]
        for i, info in _finished(self.locals):
            if self._skip[i]:
                self._skip[i] -= 1
            else:
                self.recent.append(score(info))
            if self.phases[self.phase]["random_start"]:
                self._random_start(i)
        advanced = False
        while self.phase < len(self.phases) - 1 and self._phase_done():
            self.phase += 1
            self.recent.clear()
            advanced = True
        if advanced:
            self._apply()
            self.logger.record("curriculum/phase", self.phase)
            if self.verbose:
                print(f"curriculum: phase {self.phase} at {self.num_timesteps} steps: {self.configs[self.phase]}")
        return True

    def _phase_done(self) -> bool:
        phase = self.phases[self.phase]
        if phase["until_step"] is not None:
            return self.num_timesteps >= phase["until_step"]
        if phase["until_success"] is not None:
            return len(self.recent) == self.window and float(np.mean(self.recent)) >= phase["until_success"]
        return False

    def _on_rollout_end(self) -> None:
        self.logger.record("curriculum/phase", self.phase)
        if self.recent:
            self.logger.record("curriculum/success", float(np.mean(self.recent)))
