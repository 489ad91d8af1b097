"""The platform's data classes and processing functions: competition observation -> model input (the package's
features module, copied verbatim as ``features.py``), action -> env action, frames -> training samples and back
to flat numpy arrays.

Every function is registered with ``@attached`` and every data class made with ``create_cls``: the platform's own
evaluation workflow and its sample transport find them through that registry, not by importing this module. Imports
name the algorithm folder absolutely (``from diy.…``): the platform's model loader rewrites exactly those lines
when it loads a saved model, and a relative import fails there."""

import numpy as np
from kaiwu_agent.utils.common_func import attached, create_cls

from diy.config import Config
from diy.feature.features import MAP_SHAPE, VECTOR_SIZE, episode_start, observation_to_model_input

ObsData = create_cls("ObsData", maps=None, vector=None, legal_action=None, episode_start=None)
ActData = create_cls("ActData", act=None, prob=None)
Frame = create_cls("Frame", obs_data=None, act_data=None, reward=None, done=None)
SampleData = create_cls("SampleData", maps=None, vector=None, legal_action=None, episode_start=None, act=None,
                        reward=None, ret=None)

MAPS_SIZE = int(np.prod(MAP_SHAPE))
N_ACTIONS = Config.N_ACTIONS
SAMPLE_SIZE = MAPS_SIZE + VECTOR_SIZE + N_ACTIONS + 4  # maps, vector, mask, episode_start, act, reward, ret
if SAMPLE_SIZE != Config.SAMPLE_DIM:
    raise ValueError(f"config.py's SAMPLE_DIM {Config.SAMPLE_DIM} is not the {SAMPLE_SIZE} values of a sample; the "
                     "package is inconsistent: rebuild it with sb3-realm build-submission")


@attached
def observation_process(raw_obs, env_info=None):
    """Competition ``(obs, env_info)`` -> ObsData: maps (4, 51, 51) uint8, vector (216,) float32, legal_action (16,)
    bool, episode_start (the first observation of an episode: ``env_info`` is None after ``reset`` or step_no is 0;
    the agent restarts its LSTM state there, so one Agent can serve game after game)."""
    model_input, mask = observation_to_model_input(raw_obs, env_info, mask_walls=Config.MASK_WALL_MOVES)
    return ObsData(maps=model_input["maps"], vector=model_input["vector"], legal_action=mask,
                   episode_start=episode_start(env_info))


@attached
def action_process(act_data):
    """ActData -> the env's action (0..7 move, 8..15 flash)."""
    act = int(act_data.act)
    if not 0 <= act < N_ACTIONS:
        raise ValueError(f"act = {act} is not an action 0..{N_ACTIONS - 1}")
    return act


@attached
def sample_process(list_frames):
    """Frames of finished or cut episodes, in order -> SampleData with the discounted return of each step."""
    samples, ret = [], 0.0
    for frame in reversed(list_frames):
        ret = float(frame.reward) + (0.0 if frame.done else Config.GAMMA * ret)
        obs = frame.obs_data
        samples.append(SampleData(maps=obs.maps, vector=obs.vector, legal_action=obs.legal_action,
                                  episode_start=bool(obs.episode_start), act=int(frame.act_data.act),
                                  reward=float(frame.reward), ret=ret))
    return samples[::-1]


@attached
def SampleData2NumpyData(g_data):  # the platform's name
    """SampleData -> one flat float32 array of SAMPLE_SIZE values."""
    return np.concatenate([
        np.asarray(g_data.maps, dtype=np.float32).ravel(), np.asarray(g_data.vector, dtype=np.float32),
        np.asarray(g_data.legal_action, dtype=np.float32),
        np.array([g_data.episode_start, g_data.act, g_data.reward, g_data.ret], dtype=np.float32)])


@attached
def NumpyData2SampleData(s_data):  # the platform's name
    """The inverse of :func:`SampleData2NumpyData` (a flat array, or one of shape (1, SAMPLE_SIZE), as the platform's
    replay buffer may hand it over)."""
    s_data = np.asarray(s_data, dtype=np.float32)
    if s_data.size != SAMPLE_SIZE:
        raise ValueError(f"a sample is {SAMPLE_SIZE} float32 values (Config.SAMPLE_DIM), got shape {s_data.shape}")
    s_data = s_data.reshape(-1)
    a, b, c = MAPS_SIZE, MAPS_SIZE + VECTOR_SIZE, MAPS_SIZE + VECTOR_SIZE + N_ACTIONS
    return SampleData(maps=np.rint(s_data[:a]).astype(np.uint8).reshape(MAP_SHAPE), vector=s_data[a:b].copy(),
                      legal_action=s_data[b:c] > 0.5, episode_start=bool(s_data[c] > 0.5), act=int(s_data[c + 1]),
                      reward=float(s_data[c + 2]), ret=float(s_data[c + 3]))
