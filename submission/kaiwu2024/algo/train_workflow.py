"""A minimal working training loop for the platform: play episodes with the exploring policy, turn them into
samples, learn, save now and then. (Serious training happens with sb3-realm and Stable-Baselines3; this keeps the
submission complete and lets the platform fine-tune it.)

It reads the platform's protocol as the platform hands it over: ``usr_conf`` wrapped as ``{"diy": {...}}``;
``env.reset`` may return None and is retried (at most ``MAX_RESETS`` times, with a log line); ``score`` is an object
whose ``score`` field grows by 100 at the step of each treasure pickup, and may be None under load (that step's
gain then shows at the next step that has a score).

Reward of a step: ``TREASURE_REWARD`` per treasure picked up (``score.score`` grew by 100 each), plus, at the step
that reaches the end, ``END_REWARD`` + ``STEP_LEFT_REWARD`` per step left of ``max_step``.
"""

from .config import Config
from .feature.definition import Frame, action_process, observation_process, sample_process

USR_CONF = {"diy": {"start": 2, "end": 1, "treasure_random": 1, "treasure_num": 9, "talent_type": 1,
                    "max_step": 2000}}
TREASURE_REWARD = 1.0
END_REWARD = 1.5
STEP_LEFT_REWARD = 0.002
MAX_RESETS = 10  # env.reset returning None this many times in a row stops the workflow


def _get(obj, name):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _log(logger, message):
    if logger is not None:
        logger.info(message)


def reset_env(env, usr_conf, logger=None):
    """``env.reset(usr_conf)``, retried while it returns None (the platform's timeout), ``MAX_RESETS`` times at
    most."""
    for attempt in range(1, MAX_RESETS + 1):
        obs = env.reset(usr_conf=usr_conf)
        if obs is not None:
            return obs
        _log(logger, f"env.reset returned None (attempt {attempt} of {MAX_RESETS}); retrying")
    raise RuntimeError(f"env.reset returned None {MAX_RESETS} times in a row; check usr_conf {usr_conf!r} (the "
                       "platform wraps it as {'diy': {...}}) and the environment's health")


def run_episode(env, agent, usr_conf=None, logger=None):
    """One episode with ``agent.predict``; returns its frames and the leaderboard score (0 without the end)."""
    usr_conf = usr_conf or USR_CONF
    max_step = int((usr_conf.get("diy") or {}).get("max_step", 2000))
    obs, env_info = reset_env(env, usr_conf, logger), None
    frames, done, last_score, final = [], False, 0.0, 0.0
    while not done:
        obs_data = observation_process(obs, env_info)
        act_data = agent.predict([obs_data])[0]
        _, obs, score, terminated, truncated, env_info = env.step(action_process(act_data))
        reward = 0.0
        if score is None:
            _log(logger, "env.step returned score None; its treasure gain counts at the next step with a score")
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
    return frames, final


def workflow(envs, agents, logger=None, monitor=None, episodes=None, usr_conf=None):
    """The platform's entry point: learn from episode after episode (``episodes`` None = until stopped)."""
    env, agent = envs[0], agents[0]
    if not agent.loaded:
        agent.load_model(id=Config.CKPT_ID)  # start from the exported policy
    episode = 0
    while episodes is None or episode < episodes:
        frames, score = run_episode(env, agent, usr_conf, logger)
        loss = agent.learn(sample_process(frames))
        episode += 1
        _log(logger, f"episode {episode}: score {score:.1f}, steps {len(frames)}, loss {loss:.4f}")
        if episode % Config.SAVE_EVERY_EPISODES == 0:
            agent.save_model(id=str(episode))
    return episode
