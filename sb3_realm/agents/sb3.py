"""SB3 / sb3-contrib models as policies: a live model (:class:`ModelPolicy`, e.g. during training) or a checkpoint
file (:class:`SB3Policy`). One place handles action masks (MaskablePPO), the LSTM state (RecurrentPPO) and frame
stacking (as ``VecFrameStack``: oldest first, zeros after a reset)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from .. import games
from ..games import GameEnv
from ..models.algorithms import ALGORITHMS, Algorithm, action_distribution, algorithm
from ..models.saved import (
    check_checkpoint_file,
    checkpoint_algorithm,
    run_config,
    run_frame_stack,
    run_mask_wall_moves,
)
from .checkpoint import load_model

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.stacked_observations import StackedObservations

__all__ = ["ModelPolicy", "SB3Policy"]


def _vec_env():
    """SB3's ``vec_env`` module, imported on first use rather than at the top: SB3 loads torch, and the agents layer
    also serves the random, oracle and submission players and ``sb3-realm --help``, which start without it."""
    from stable_baselines3.common import vec_env

    return vec_env


def _stacked_observations(n_envs: int, n_stack: int, space, order):
    from stable_baselines3.common.vec_env.stacked_observations import StackedObservations  # lazy: see _vec_env

    return StackedObservations(n_envs, n_stack, space, order)


def _algorithm_of(model) -> Algorithm | None:
    """The registry entry whose class ``model`` is an instance of (None for a foreign class: plain ``predict``)."""
    for entry in ALGORITHMS.values():
        if isinstance(model, entry.cls):
            return entry
    return None


class ModelPolicy:
    """An in-memory SB3 model as a policy (``name``, ``reset(env)``, ``act(env, obs)``): deterministic by default, with
    ``env.action_masks()`` for MaskablePPO and the LSTM state for RecurrentPPO. The observation goes through the
    training VecEnv's own ``VecFrameStack`` / ``VecNormalize`` / ``VecTransposeImage`` wrappers (their current
    statistics, never updated), so the model sees what it sees in training; without a VecEnv, ``frame_stack`` frames
    are stacked as ``VecFrameStack`` does.

    :param model: the SB3 / sb3-contrib model.
    :param venv: the training VecEnv whose observation wrappers to replay, or None for none.
    :param name: the policy name in reports.
    :param frame_stack: frames the model expects when there is no ``venv`` to replay.
    :param deterministic: play the most likely action (else sample from the policy).
    :param mask_walls: MaskablePPO: the mask forbids moves straight into an adjacent wall (the env option
        ``mask_wall_moves`` the model was trained with) whatever the env it plays in; None: the env's own
        ``action_masks()``.
    """

    def __init__(self, model, venv: VecEnv | None = None, name: str = "model", frame_stack: int = 1,
                 deterministic: bool = True, mask_walls: bool | None = None) -> None:
        self.model, self.name, self.frame_stack = model, name, int(frame_stack)
        self.deterministic = bool(deterministic)
        self.mask_walls = mask_walls
        entry = _algorithm_of(model)
        self.masked = entry is not None and entry.maskable
        self.recurrent = entry is not None and entry.recurrent
        vec = _vec_env()
        chain: list = []
        while isinstance(venv, vec.VecEnvWrapper):
            if not isinstance(venv, (vec.VecFrameStack, vec.VecNormalize, vec.VecTransposeImage)) and \
                    venv.observation_space != venv.venv.observation_space:
                raise ValueError(f"{type(venv).__name__} changes the observation and cannot be replayed for "
                                 "evaluation; supported observation wrappers: VecFrameStack, VecNormalize, "
                                 "VecTransposeImage")
            chain.append(venv)
            venv = venv.venv
        self.wrappers = chain[::-1]  # innermost first, the order the observation passes them
        # a deterministic feed-forward PPO / MaskablePPO: its argmax straight from the policy network (what
        # ``predict`` returns, without the mode switch of every call, which costs a fifth of the network at batch 1)
        self._direct = entry is not None and not self.recurrent and self.deterministic
        self._own_stack: StackedObservations | None = None
        self.reset(None)

    def reset(self, env: GameEnv | None) -> None:
        self._state, self._start, self._first = None, np.ones((1,), dtype=bool), True
        vec = _vec_env()
        self._stacks = {id(w): _stacked_observations(1, w.stacked_obs.n_stack, w.venv.observation_space,
                                                     self._order(w.stacked_obs))
                        for w in self.wrappers if isinstance(w, vec.VecFrameStack)}
        if self.frame_stack > 1 and env is not None:  # no VecEnv to replay: stack as a default VecFrameStack does
            self._own_stack = _stacked_observations(1, self.frame_stack, env.observation_space, None)

    @classmethod
    def _order(cls, stack: StackedObservations):
        if hasattr(stack, "sub_stacked_observations"):
            return {k: cls._order(s) for k, s in stack.sub_stacked_observations.items()}
        return "first" if stack.channels_first else "last"

    @staticmethod
    def _stack(stack: StackedObservations, batch, first: bool):
        return stack.reset(batch) if first else stack.update(batch, np.zeros(1, dtype=bool), [{}])[0]

    def model_input(self, obs: dict[str, np.ndarray] | np.ndarray):
        """The raw env observation as the model's batched (1, ...) input."""
        batch = {k: v[None] for k, v in obs.items()} if isinstance(obs, dict) else obs[None]
        if self.frame_stack > 1 and not self.wrappers:
            if self._own_stack is None:
                raise ValueError(f"{self.name}: call reset(env) before act: the frame stack is sized from the env")
            batch = self._stack(self._own_stack, batch, self._first)
        vec = _vec_env()
        for w in self.wrappers:
            if isinstance(w, vec.VecFrameStack):
                batch = self._stack(self._stacks[id(w)], batch, self._first)
            elif isinstance(w, vec.VecNormalize):
                batch = w.normalize_obs(batch)
            elif isinstance(w, vec.VecTransposeImage):
                batch = w.transpose_observations(batch)
        self._first = False
        return batch

    def _argmax(self, batch, masks: np.ndarray | None) -> int:
        import torch  # lazy: see _vec_env

        policy = self.model.policy
        if policy.training:  # as predict does; a model being trained is switched back by its own train()
            policy.set_training_mode(False)
        with torch.no_grad():
            obs, _ = policy.obs_to_tensor(batch)
            return int(action_distribution(policy, obs, masks).distribution.probs.argmax(dim=1)[0])

    def act(self, env: GameEnv, obs: dict[str, np.ndarray]) -> int:
        batch = self.model_input(obs)
        if self._direct:
            return self._argmax(batch, env.action_masks(self.mask_walls)[None] if self.masked else None)
        if self.masked:
            action, _ = self.model.predict(batch, deterministic=self.deterministic,
                                           action_masks=env.action_masks(self.mask_walls)[None])
        elif self.recurrent:
            action, self._state = self.model.predict(batch, state=self._state, episode_start=self._start,
                                                     deterministic=self.deterministic)
            self._start = np.zeros((1,), dtype=bool)
        else:
            action, _ = self.model.predict(batch, deterministic=self.deterministic)
        return int(np.asarray(action).reshape(-1)[0])


class SB3Policy(ModelPolicy):
    """A trained SB3 / sb3-contrib checkpoint (``.zip``) as a deterministic policy.

    :param path: the checkpoint.
    :param algo: its algorithm name; default: read from the checkpoint.
    :param device: torch device of the model.
    :param frame_stack: frames the model expects; default: read from the run's config.
    :param trust_pickle: let SB3 unpickle the checkpoint's entries (only for a file you made yourself); default: they
        are rebuilt from plain data (:mod:`.checkpoint`).

    :attr:`game` is the game its run config records (None when it records none). A MaskablePPO checkpoint plays
    with the action mask of its run (``env.mask_wall_moves`` in ``config.yaml``), whatever the env's own option.
    """

    def __init__(self, path: str | os.PathLike, algo: str | None = None, device: str = "cpu",
                 frame_stack: int | None = None, trust_pickle: bool | None = None) -> None:
        self.path = check_checkpoint_file(path)  # a missing, empty, truncated or non-zip file is named as such
        self.algo = algo or checkpoint_algorithm(self.path)
        model = load_model(self.path, algo_cls=algorithm(self.algo).cls, device=device, trust_pickle=trust_pickle)
        super().__init__(model, name=self.path.name, frame_stack=frame_stack or run_frame_stack(self.path),
                         mask_walls=run_mask_wall_moves(self.path))
        recorded = (run_config(self.path) or {}).get("game")
        self.game = recorded if recorded in games.GAMES else None  # the game its run config records, if any
