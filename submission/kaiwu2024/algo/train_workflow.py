"""The platform's training workflow for the exported policy: play episodes with the exploring policy, hand their
samples to ``learn`` (``Config.SEND_SIZE`` at most a call, as the official workflows send them), save on a timer.

By default the package keeps its weights (``Config.FINETUNE`` False): ``learn`` changes nothing, so every model a
training task saves is the exported policy, whatever id the platform gives it; the episodes feed the platform's
monitoring. A package built for fine-tuning takes REINFORCE steps in ``learn`` instead.

Saves: the first after the first episode, before its samples are sent, so that it holds the weights the task began
with (the exported policy, in either workflow; the platform numbers it ``preload_model_id``), then one every
``Config.SAVE_INTERVAL_S`` seconds (the platform allows 2 a minute and 100 a task), ``Config.MAX_SAVES`` at most;
the platform numbers each save by its learner's step.

The platform's returns are read as its own workflows read them: ``usr_conf`` wrapped as ``{"diy": {...}}``;
``env.reset`` may return None (that episode is skipped, with a log line, however many fail: the official workflows
skip failures without a limit, and the saves keep coming on their timer); ``env.step`` may return None for the
observation, the frame number or ``env_info`` (the episode is abandoned, with a log line) and None for ``score``
(that step's treasure gain shows at the next step that has one); ``predict`` may return None (the episode is
abandoned). ``learn``'s return value is not used: on the platform it only ships the samples to the learner.

Reward of a step: ``TREASURE_REWARD`` per treasure picked up (``score.score`` grew by 100 each), plus, at the step
that reaches the end, ``END_REWARD`` + ``STEP_LEFT_REWARD`` per step left of ``max_step``.
"""

import time

from kaiwu_agent.utils.common_func import attached

from diy.config import Config
from diy.feature.definition import Frame, action_process, observation_process, sample_process

TREASURE_REWARD = 1.0
END_REWARD = 1.5
STEP_LEFT_REWARD = 0.002


def _get(obj, name):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _log(logger, level, message):
    if logger is not None:
        getattr(logger, level)(message)


def run_episode(env, agent, obs, usr_conf, logger=None):
    """One episode from the observation ``obs`` of ``env.reset`` with ``agent.predict``; returns its frames and the
    leaderboard score (0 without the end), or ``(None, None)`` when the platform failed mid-episode."""
    max_step = int((usr_conf.get("diy") or {}).get("max_step", 2000))
    env_info, frames, last_score, final = None, [], 0.0, 0.0
    while True:
        obs_data = observation_process(obs, env_info)
        acts = agent.predict(list_obs_data=[obs_data])
        if not acts:
            _log(logger, "info", "agent.predict returned nothing; the episode is abandoned")
            return None, None
        act_data = acts[0]
        frame_no, obs, score, terminated, truncated, env_info = env.step(action_process(act_data))
        if obs is None or frame_no is None or env_info is None:
            _log(logger, "info", "env.step returned None; the episode is abandoned")
            return None, None
        reward = 0.0
        if score is None:
            _log(logger, "info", "env.step returned score None; its treasure gain counts at the next step with a score")
        else:
            gained = float(_get(score, "score")) - last_score
            reward += TREASURE_REWARD * round(gained / 100.0)
            last_score += gained
        if terminated:  # the end is reached
            info = _get(env_info, "game_info")
            steps_left = max_step - int(_get(info, "step_no"))
            reward += END_REWARD + STEP_LEFT_REWARD * steps_left
            final = 150.0 + 100.0 * int(_get(info, "treasure_count")) + 0.2 * steps_left
        done = bool(terminated or truncated)
        frames.append(Frame(obs_data=obs_data, act_data=act_data, reward=reward, done=done))
        if done:
            return frames, final


@attached
def workflow(envs, agents, logger=None, monitor=None, episodes=None, usr_conf=None):
    """The platform's entry point: episode after episode (``episodes`` None: until the platform stops the task);
    returns the number of episodes played to their end."""
    env, agent = envs[0], agents[0]
    usr_conf = usr_conf or Config.USR_CONF
    played, failed, saves, last_save = 0, 0, 0, None
    while episodes is None or played < episodes:
        obs = env.reset(usr_conf=usr_conf)
        frames = None
        if obs is None:
            _log(logger, "info", "env.reset returned None; trying another episode")
        else:
            agent.load_model(id="latest")  # on the platform: the model pool's newest model (the same weights kept)
            frames, score = run_episode(env, agent, obs, usr_conf, logger)
        if frames is None:
            failed += 1
            _log(logger, "info", f"episode skipped ({failed} failed so far, {played} played)")
        else:
            if saves == 0:  # before any sample reaches the learner: the weights the task started from
                agent.save_model()
                saves, last_save = 1, time.monotonic()
            samples = sample_process(frames)  # each return needs the episode's later rewards: sent at its end
            for start in range(0, len(samples), Config.SEND_SIZE):
                agent.learn(samples[start:start + Config.SEND_SIZE])
            played += 1
            _log(logger, "info", f"episode {played}: score {score:.1f}, steps {len(frames)}")
        now = time.monotonic()
        if played and saves < Config.MAX_SAVES and (last_save is None or now - last_save >= Config.SAVE_INTERVAL_S):
            agent.save_model()
            saves += 1
            last_save = now
    return played
