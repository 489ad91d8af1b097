"""Gymnasium envs of sb3_realm, registered on import of ``sb3_realm``."""

from .realm_env import BUILTIN_MAPS, RealmEnv
from .rewards import TERMS, RewardWeights

__all__ = ["RealmEnv", "RewardWeights", "TERMS", "BUILTIN_MAPS", "ENV_IDS", "register_envs"]

# id -> kwargs. Realm-v0 is the competition game on the shipped default map (leaderboard usr_conf by default);
# RealmSmall-v0 is a 32 x 32 map with 3 treasures and 300 steps, for tests and early curriculum phases.
ENV_IDS = {
    "sb3_realm/Realm-v0": {},
    "sb3_realm/RealmSmall-v0": {"map_name": "small", "treasure_num": 3, "max_step": 300},
}


def register_envs() -> None:
    from gymnasium.envs.registration import register, registry

    for env_id, kwargs in ENV_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point="sb3_realm.envs.realm_env:RealmEnv", kwargs=kwargs)
