"""Settings of the exported agent. What ``sb3-realm build-submission`` knows about the trained policy is in
``model/spec.json`` (written by the exporter); this module exposes it with the platform-side knobs."""

import json
from pathlib import Path

ALGO_DIR = Path(__file__).resolve().parent.parent
SPEC = json.loads((ALGO_DIR / "model" / "spec.json").read_text(encoding="utf-8"))
_MAPS_SIZE = 1
for _side in SPEC["maps_shape"]:
    _MAPS_SIZE *= int(_side)


class Config:
    ALGO = SPEC["algo"]  # ppo | maskable_ppo | recurrent_ppo (what was trained)
    N_ACTIONS = SPEC["n_actions"]  # 8 moves
    MAPS_SIZE = _MAPS_SIZE
    VECTOR_SIZE = SPEC["vector_size"]
    GAMMA = SPEC["gamma"]  # discount of the returns in the samples
    LEARNING_RATE = SPEC["learning_rate"]  # of the on-platform fine-tuning (FINETUNE)
    # "keep": a platform training task keeps the exported weights (learn changes nothing); "finetune": learn takes
    # REINFORCE steps on the platform's samples
    PLATFORM_TRAINING = SPEC["platform_training"]
    FINETUNE = SPEC["platform_training"] == "finetune"
    SEED = 0  # of the exploring policy (predict)
    CKPT_DIR = ALGO_DIR / "ckpt"  # the exported weights: the preload folder "{agent_name}/ckpt"
    CKPT_ID = int(SPEC["ckpt_id"])  # their id: ckpt/model.ckpt-<CKPT_ID>.pkl (preload_model_id)
    MANIFEST = ALGO_DIR / "manifest.json"  # source model, config, feature version, sha256 of every file
    TRAIN_ENV_CONF = f"{ALGO_DIR.name}/conf/train_env_conf.toml"  # read by the workflow, relative to the package
    # workflow/train_workflow.py: the first save after the first episode, then one every SAVE_INTERVAL_S seconds
    # (the official workflow's interval; the platform allows 2 saves a minute and 200 a task), MAX_SAVES at most
    SAVE_INTERVAL_S = 1800
    MAX_SAVES = 190
    # the reward of a step (agent.last_reward, set by observation_process): the cells the robot cleaned in it (the
    # competition's score, one per cell), times REWARD_SCALE
    REWARD_SCALE = 1.0
