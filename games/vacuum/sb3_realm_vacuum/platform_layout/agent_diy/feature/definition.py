"""The data classes the platform's framework carries and the processing of one episode into samples.

``ObsData`` and ``ActData`` are made with the platform's ``create_cls``; ``SampleData``'s integer values declare each
field's length, which the framework uses to flatten a sample for the learner (every field is sent as that many
float32 values). The model input comes from the package's features module, copied verbatim as ``features.py``.
Imports name the algorithm folder absolutely (``from agent_diy.…``), as the official package does."""

import numpy as np
from common_python.utils.common_func import create_cls

from agent_diy.conf.conf import Config

ObsData = create_cls("ObsData", maps=None, vector=None, legal_action=None, episode_start=None)
ActData = create_cls("ActData", action=None, d_action=None, prob=None, value=None)
SampleData = create_cls(
    "SampleData",
    maps=Config.MAPS_SIZE,  # the model input's maps, flattened
    vector=Config.VECTOR_SIZE,
    legal_action=Config.N_ACTIONS,
    episode_start=1,
    act=1,
    reward=1,
    ret=1,  # the discounted return from this step
)


def sample_process(frames):
    """``(obs_data, act_data, reward, done)`` tuples of one episode, in order -> SampleData with the discounted
    return of each step (arrays of the lengths SampleData declares)."""
    samples, ret = [], 0.0
    for obs, act, reward, done in reversed(frames):
        ret = float(reward) + (0.0 if done else Config.GAMMA * ret)
        samples.append(SampleData(
            maps=np.asarray(obs.maps, dtype=np.float32).reshape(-1),
            vector=np.asarray(obs.vector, dtype=np.float32),
            legal_action=np.asarray(obs.legal_action, dtype=np.float32),
            episode_start=np.array([float(bool(obs.episode_start))], dtype=np.float32),
            act=np.array([float(act.action[0])], dtype=np.float32),
            reward=np.array([float(reward)], dtype=np.float32),
            ret=np.array([ret], dtype=np.float32)))
    return samples[::-1]
