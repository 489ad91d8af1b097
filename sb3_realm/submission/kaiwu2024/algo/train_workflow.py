"""A minimal working training loop for the platform: play episodes with the exploring policy, turn them into
samples, learn, save now and then. (Serious training happens with sb3-realm and Stable-Baselines3; this keeps the
submission complete and lets the platform fine-tune it.)

The reward is the change of the competition score (it only moves when the hero reaches the end) plus
``TREASURE_REWARD`` per treasure collected, read from ``env_info.game_info``.
"""

from .config import Config
from .feature.definition import Frame, action_process, observation_process, sample_process

USR_CONF = {"start": 2, "end": 1, "treasure_random": 1, "treasure_num": 9, "talent_type": 1, "max_step": 2000}
TREASURE_REWARD = 0.1


def _get(obj, name):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def run_episode(env, agent, usr_conf=None):
    """One episode with ``agent.predict``; returns its frames and final competition score."""
    obs, env_info = env.reset(usr_conf=usr_conf or USR_CONF), None
    frames, done, last_score, last_treasures, score = [], False, 0.0, 0, 0.0
    while not done:
        obs_data = observation_process(obs, env_info)
        act_data = agent.predict([obs_data])[0]
        _, obs, score, terminated, truncated, env_info = env.step(action_process(act_data))
        info = _get(env_info, "game_info")
        treasures = int(_get(info, "treasure_count"))
        reward = float(score) - last_score + TREASURE_REWARD * (treasures - last_treasures)
        last_score, last_treasures = float(score), treasures
        done = bool(terminated or truncated)
        frames.append(Frame(obs_data=obs_data, act_data=act_data, reward=reward, done=done))
    return frames, float(score)


def workflow(envs, agents, logger=None, monitor=None, episodes=None, usr_conf=None):
    """The platform's entry point: learn from episode after episode (``episodes`` None = until stopped)."""
    env, agent = envs[0], agents[0]
    if not agent.loaded:
        agent.load_model(id=Config.CKPT_ID)  # start from the exported policy
    episode = 0
    while episodes is None or episode < episodes:
        frames, score = run_episode(env, agent, usr_conf)
        loss = agent.learn(sample_process(frames))
        episode += 1
        if logger is not None:
            logger.info(f"episode {episode}: score {score:.1f}, steps {len(frames)}, loss {loss:.4f}")
        if episode % Config.SAVE_EVERY_EPISODES == 0:
            agent.save_model(id=str(episode))
    return episode
