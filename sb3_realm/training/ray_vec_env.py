"""SB3 rollouts stepped by Ray actors (``env.vec_env: ray``): :class:`RayVecEnv`.

Each actor (one CPU, one torch thread) holds an SB3 ``DummyVecEnv`` of ``envs_per_actor`` of the envs and steps them
as one batch, so that a vec step costs one message to each actor and one answer back, however many envs an actor
holds. The auto-reset, the terminal observations and the ``TimeLimit.truncated`` infos are DummyVecEnv's own, so a
run sees the same observations, rewards, dones and infos as under ``DummyVecEnv`` or ``SubprocVecEnv`` for the same
seeds and actions.

The actors run on the Ray cluster at ``address`` (else ``$RAY_ADDRESS``) or on a Ray instance started on this machine
for as long as the env lives (:func:`~sb3_realm.executors.connect_ray`). Ray is the optional extra ``pip install
'sb3-realm[ray]'``; without it :class:`RayVecEnv` raises :class:`~sb3_realm.executors.RayNotInstalledError`.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from ..executors import connect_ray, disconnect_ray

__all__ = ["RayVecEnv", "peak_rss_mib"]

#: seconds that :meth:`RayVecEnv.close` waits for the actors to close their envs before it kills them
CLOSE_TIMEOUT = 30.0


def peak_rss_mib() -> float | None:
    """The peak resident memory of this process in MiB: ``resource.getrusage`` on Linux and macOS, else psutil's
    peak working set (Windows) or its current resident memory; None where neither is available."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        resource = None  # type: ignore[assignment]
    if resource is not None:
        scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale, 1)
    try:  # pragma: no cover - Windows
        import psutil
    except ImportError:  # pragma: no cover
        return None
    info = psutil.Process().memory_info()  # pragma: no cover
    return round(getattr(info, "peak_wset", info.rss) / (1024 * 1024), 1)  # pragma: no cover


def _writable(value: Any) -> Any:
    """``value`` (an observation: an array, or a dict or tuple of arrays) with a writable copy of each read-only
    array (Ray hands arrays back read-only, zero-copy, where SB3's other vec envs hand fresh ones)."""
    if isinstance(value, np.ndarray):
        return value if value.flags.writeable else value.copy()
    if isinstance(value, dict):
        return type(value)((k, _writable(v)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(_writable(v) for v in value)
    return value


def _concat_obs(parts: Sequence[VecEnvObs], space: spaces.Space) -> VecEnvObs:
    """The actors' batches of observations as one batch in env order; Dict and Tuple observations key by key (as
    SB3's vec envs stack them)."""
    if isinstance(space, spaces.Dict):
        return {key: np.concatenate([part[key] for part in parts]) for key in space.spaces}  # type: ignore[call-overload]
    if isinstance(space, spaces.Tuple):
        return tuple(np.concatenate([part[i] for part in parts]) for i in range(len(space.spaces)))  # type: ignore[index]
    return np.concatenate(parts)  # type: ignore[arg-type]


class _EnvActor:
    """One Ray actor: a ``DummyVecEnv`` of its share of the envs, stepped as one batch; every method that takes
    ``indices`` takes them within this actor's envs."""

    def __init__(self, env_fns: list[Callable[[], gym.Env]]) -> None:
        import torch

        torch.set_num_threads(1)
        self.venv = DummyVecEnv(env_fns)

    def spaces(self) -> tuple[spaces.Space, spaces.Space]:
        return self.venv.observation_space, self.venv.action_space

    def step(self, actions: np.ndarray) -> tuple:
        obs, rewards, dones, infos = self.venv.step(actions)
        return obs, rewards, dones, infos, list(self.venv.reset_infos)

    def reset(self, seeds: list[int | None], options: list[dict]) -> tuple:
        self.venv._seeds = list(seeds)
        self.venv._options = list(options)
        obs = self.venv.reset()
        return obs, list(self.venv.reset_infos)

    def env_method(self, indices: list[int], name: str, args: tuple, kwargs: dict) -> list:
        return self.venv.env_method(name, *args, indices=indices, **kwargs)

    def get_attr(self, indices: list[int], name: str) -> list:
        return self.venv.get_attr(name, indices=indices)

    def set_attr(self, indices: list[int], name: str, value: Any) -> list:
        self.venv.set_attr(name, value, indices=indices)
        return [None] * len(indices)

    def is_wrapped(self, indices: list[int], wrapper_class: type[gym.Wrapper]) -> list[bool]:
        return self.venv.env_is_wrapped(wrapper_class, indices=indices)

    def has_attr(self, name: str) -> bool:
        return self.venv.has_attr(name)

    def get_images(self) -> list:
        return [env.render() for env in self.venv.envs]

    def peak_rss_mib(self) -> float | None:
        return peak_rss_mib()

    def close(self) -> None:
        self.venv.close()


#: :class:`_EnvActor` as Ray's actor class, made on first use: importing this module needs no Ray (an optional extra)
_REMOTE: dict[str, Any] = {}


def _remote_actor_class() -> Any:
    """``ray.remote(num_cpus=1)(_EnvActor)``: one CPU per actor. Ray's workers import the class by its module path."""
    if "actor" not in _REMOTE:
        import ray

        _REMOTE["actor"] = ray.remote(num_cpus=1)(_EnvActor)
    return _REMOTE["actor"]


class RayVecEnv(VecEnv):
    """An SB3 ``VecEnv`` whose envs Ray actors step: ``ceil(len(env_fns) / envs_per_actor)`` actors, each holding a
    ``DummyVecEnv`` of ``envs_per_actor`` consecutive envs (the last actor may hold fewer) and stepping them as one
    batch. It does what ``SubprocVecEnv`` does (seeds and options at reset, ``env_method`` / ``get_attr`` /
    ``set_attr`` / ``env_is_wrapped`` with ``indices``, ``get_images``), so PPO, MaskablePPO (whose action masks come
    by ``env_method("action_masks")``) and RecurrentPPO train on it unchanged.

    :param env_fns: the envs' factories, pickled to the actors by Ray (cloudpickle): module-level functions or
        ``functools.partial`` of them, with picklable arguments, as for ``SubprocVecEnv``.
    :param envs_per_actor: the envs each actor steps.
    :param address: the Ray cluster to join (else ``$RAY_ADDRESS``; neither: a Ray instance started on this machine,
        stopped by :meth:`close`).
    :raises RayNotInstalledError: Ray is not installed.
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env]], envs_per_actor: int = 8,
                 address: str | None = None) -> None:
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("RayVecEnv needs at least one env factory")
        if isinstance(envs_per_actor, bool) or not isinstance(envs_per_actor, int) or envs_per_actor < 1:
            raise ValueError(f"envs_per_actor = {envs_per_actor!r} must be an integer >= 1")
        n_envs = len(env_fns)
        n_actors = math.ceil(n_envs / envs_per_actor)
        self._started_ray = connect_ray(address, cpus=n_actors)  # RayNotInstalledError without Ray
        import ray

        self._ray: Any = ray
        self._actors: list = []
        self._refs: list | None = None
        self.waiting = False
        self.closed = False
        #: each actor's envs, as (first, stop) in env order
        self.bounds = [(start, min(start + envs_per_actor, n_envs)) for start in range(0, n_envs, envs_per_actor)]
        #: each env's actor and its index among that actor's envs
        self._where = [(a, i - start) for a, (start, stop) in enumerate(self.bounds) for i in range(start, stop)]
        try:
            for start, stop in self.bounds:
                self._actors.append(_remote_actor_class().options(max_restarts=0, max_concurrency=1).remote(
                    env_fns[start:stop]))
            # every actor's answer: an env that cannot be made is reported here, not at the first step
            observation_space, action_space = self._ray.get([actor.spaces.remote() for actor in self._actors])[0]
            super().__init__(n_envs, observation_space, action_space)
        except BaseException:
            self._kill()
            raise

    @property
    def n_actors(self) -> int:
        """How many actors step the envs."""
        return len(self._actors)

    # stepping and resetting: one message to each actor, one ray.get for all their answers

    def step_async(self, actions: np.ndarray) -> None:
        self._refs = [actor.step.remote(actions[start:stop])
                      for actor, (start, stop) in zip(self._actors, self.bounds, strict=True)]
        self.waiting = True

    def step_wait(self) -> VecEnvStepReturn:
        refs, self._refs = self._refs or [], None
        try:
            results = self._ray.get(refs)
        finally:
            self.waiting = False
        obs, rewards, dones, infos, reset_infos = zip(*results, strict=True)
        all_infos = [info for part in infos for info in part]
        for info in all_infos:
            if "terminal_observation" in info:
                info["terminal_observation"] = _writable(info["terminal_observation"])
        self.reset_infos = [info for part in reset_infos for info in part]
        return (_concat_obs(obs, self.observation_space), np.concatenate(rewards), np.concatenate(dones),
                all_infos)

    def reset(self) -> VecEnvObs:
        results = self._ray.get([actor.reset.remote(self._seeds[start:stop], self._options[start:stop])
                           for actor, (start, stop) in zip(self._actors, self.bounds, strict=True)])
        obs, reset_infos = zip(*results, strict=True)
        self.reset_infos = [info for part in reset_infos for info in part]
        # seeds and options are used once
        self._reset_seeds()
        self._reset_options()
        return _concat_obs(obs, self.observation_space)

    # the envs' methods and attributes, by env index

    def _call(self, method: str, indices: VecEnvIndices, *args: Any) -> list:
        """``method`` of the actors holding the envs of ``indices``, each called once with its own envs' indices;
        the answers in the order of ``indices``."""
        targets = list(self._get_indices(indices))
        local: dict[int, list[int]] = {}
        for i in targets:
            a, j = self._where[i]
            local.setdefault(a, []).append(j)
        actors = list(local)
        answers = self._ray.get([getattr(self._actors[a], method).remote(local[a], *args) for a in actors])
        per_actor = {a: iter(answer) for a, answer in zip(actors, answers, strict=True)}
        return [next(per_actor[self._where[i][0]]) for i in targets]

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        """Call instance methods of vectorized environments (see base class)."""
        return self._call("env_method", indices, method_name, method_args, method_kwargs)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Return attribute from vectorized environment (see base class)."""
        return self._call("get_attr", indices, attr_name)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set attribute inside vectorized environments (see base class)."""
        self._call("set_attr", indices, attr_name, value)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Check if worker environments are wrapped with a given wrapper (see base class)."""
        return self._call("is_wrapped", indices, wrapper_class)

    def has_attr(self, attr_name: str) -> bool:
        """Check if an attribute exists for a vectorized environment (see base class)."""
        return all(self._ray.get([actor.has_attr.remote(attr_name) for actor in self._actors]))

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            import warnings

            warnings.warn(f"The render mode is {self.render_mode}, but this method assumes it is `rgb_array` to "
                          "obtain images.", stacklevel=2)
            return [None for _ in range(self.num_envs)]
        parts = self._ray.get([actor.get_images.remote() for actor in self._actors])
        return [image for part in parts for image in part]

    def actor_peak_rss_mib(self) -> list[float | None]:
        """Each actor's peak resident memory in MiB (its process's, as :func:`peak_rss_mib` measures it)."""
        return list(self._ray.get([actor.peak_rss_mib.remote() for actor in self._actors]))

    # closing

    def close(self) -> None:
        """Close the envs, end the actors, and stop Ray if this env started it."""
        if self.closed:
            return
        self.closed = True
        if self.waiting and self._refs:
            with contextlib.suppress(Exception):
                self._ray.get(self._refs, timeout=CLOSE_TIMEOUT)
        self._refs, self.waiting = None, False
        with contextlib.suppress(Exception):
            self._ray.get([actor.close.remote() for actor in self._actors], timeout=CLOSE_TIMEOUT)
        self._kill()

    def _kill(self) -> None:
        actors, self._actors = self._actors, []
        for actor in actors:
            with contextlib.suppress(Exception):
                self._ray.kill(actor)
        if self._started_ray:
            self._started_ray = False
            disconnect_ray()
