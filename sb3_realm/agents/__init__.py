"""Agents: one policy interface (``name``, ``reset(env)``, ``act(env, obs) -> int``) and one episode loop
(:func:`play_episode`) for a random policy, a game's expert (the oracle), an SB3 checkpoint or live model, and a
submission folder."""

from .base import Policy, RandomPolicy, play_episode
from .checkpoint import UntrustedCheckpointError, load_model
from .load import PolicySpec, load_policy
from .sb3 import ModelPolicy, SB3Policy
from .submission import SubmissionPolicy, SubmissionProcess

__all__ = [
    "ModelPolicy",
    "Policy",
    "PolicySpec",
    "RandomPolicy",
    "SB3Policy",
    "SubmissionPolicy",
    "SubmissionProcess",
    "UntrustedCheckpointError",
    "load_model",
    "load_policy",
    "play_episode",
]
