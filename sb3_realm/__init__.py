"""sb3_realm: train, evaluate, tune and package Stable-Baselines3 agents for "Back to the Realm"."""

from .envs import ENV_IDS, RealmEnv, RewardWeights, register_envs
from .game import EpisodeConfig, Rules, default_map, load_map
from .version import __version__

__all__ = ["ENV_IDS", "RealmEnv", "RewardWeights", "EpisodeConfig", "Rules", "default_map", "load_map",
           "register_envs", "__version__"]

register_envs()
