"""The platform's training workflow for the exported policy: play games with the exploring policy (``predict``),
send their samples to the learner, save on a timer.

By default the package keeps its weights (``learn`` changes nothing), so every model a training task saves is the
exported policy, whatever id the platform gives it; the games feed the platform's monitoring. A package built for
fine-tuning takes REINFORCE steps on these samples instead.

Saves: the first after the first game, before its samples are sent, so that it holds the weights the task began with
(the exported policy, in either workflow; the platform names it ``preload_model_id``), then one every
``Config.SAVE_INTERVAL_S`` seconds (the official workflow's interval), ``Config.MAX_SAVES`` at most; the platform
names each save by its learner's step.

The platform's returns are handled as the official workflow handles them: ``read_usr_conf`` returning None ends the
workflow with an error line; an ``env_obs`` that ``handle_disaster_recovery`` calls abnormal (None, or an error code)
skips the game after ``env.reset`` and abandons it after ``env.step`` (logged, however many fail: the official
workflow skips failures without a limit, and the saves keep coming on their timer); ``predict`` returning nothing
abandons the game.

Reward of a step (13.0.1: the Agent's, not ``env_reward``): ``agent.last_reward`` after ``observation_process`` of the
step's ``env_obs``, the cells the robot cleaned in it times ``Config.REWARD_SCALE``.

Monitoring: at most once a minute, ``reward``, the metric of the official panel (``conf/monitor_builder.py``): the
mean summed reward of the games since the last report.
"""

import os
import time

from common_python.utils.workflow_disaster_recovery import handle_disaster_recovery
from tools.train_env_conf_validate import read_usr_conf

from agent_diy.conf.conf import Config
from agent_diy.feature.definition import sample_process


def _log(logger, level, message):
    if logger is not None:
        getattr(logger, level)(message)


def _clean_score(env_obs):
    info = (env_obs.get("observation") or {}).get("env_info") or {}
    try:
        return float(info.get("clean_score") or 0)
    except (TypeError, ValueError):
        return 0.0


def run_episode(env, agent, env_obs, logger=None):
    """One game from the ``env_obs`` of ``env.reset``; returns ``(frames, score)`` (score: the cells the robot
    cleaned), or ``(None, None)`` when the platform failed mid-game."""
    agent.reset(env_obs)
    agent.load_model(id="latest")  # on the platform: the model pool's newest model (the same weights, kept)
    obs_data, _ = agent.observation_process(env_obs)
    frames = []
    while True:
        acts = agent.predict(list_obs_data=[obs_data])
        if not acts:
            _log(logger, "info", "agent.predict returned nothing; the game is abandoned")
            return None, None
        act_data = acts[0]
        _, env_obs = env.step(agent.action_process(act_data))
        if handle_disaster_recovery(env_obs, logger):
            return None, None
        next_obs_data, _ = agent.observation_process(env_obs)  # the step's reward: agent.last_reward
        done = bool(env_obs["terminated"] or env_obs["truncated"])
        frames.append((obs_data, act_data, agent.last_reward, done))
        if done:
            return frames, _clean_score(env_obs)
        obs_data = next_obs_data


def workflow(envs, agents, logger=None, monitor=None, *args, **kwargs):
    """The platform's entry point: game after game until the platform stops the task (``episodes=N``: N games);
    returns the number of games played to their end."""
    env, agent = envs[0], agents[0]
    usr_conf = read_usr_conf(Config.TRAIN_ENV_CONF, logger)
    if usr_conf is None:
        _log(logger, "error", f"usr_conf is None, please check {Config.TRAIN_ENV_CONF}")
        return 0
    episodes = kwargs.get("episodes")
    played, failed, saves, last_save, last_report, rewards = 0, 0, 0, None, None, []
    while episodes is None or played < episodes:
        env_obs = env.reset(usr_conf)
        frames = None
        if not handle_disaster_recovery(env_obs, logger):
            frames, score = run_episode(env, agent, env_obs, logger)
        now = time.monotonic()
        if frames is None:
            failed += 1
            _log(logger, "info", f"game skipped ({failed} failed so far, {played} played)")
        else:
            if saves == 0:  # before any sample reaches the learner: the weights the task started from
                agent.save_model()
                saves, last_save = 1, time.monotonic()
            agent.send_sample_data(sample_process(frames))
            played += 1
            _log(logger, "info", f"game {played}: score {score:.0f}, steps {len(frames)}")
            rewards.append(sum(frame[2] for frame in frames))
            if monitor is not None and (last_report is None or now - last_report >= 60):
                # the official panel's metric (monitor_builder.py's "reward"): the games' mean summed reward
                monitor.put_data({os.getpid(): {"reward": round(sum(rewards) / len(rewards), 4)}})
                last_report, rewards = now, []
        if played and saves < Config.MAX_SAVES and (last_save is None or now - last_save >= Config.SAVE_INTERVAL_S):
            agent.save_model()
            saves += 1
            last_save = now
    return played
