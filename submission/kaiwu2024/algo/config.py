"""Settings of the exported agent. What ``sb3-realm build-submission`` knows about the trained policy is in
``model/spec.json`` (written by the exporter); this module exposes it with the platform-side knobs.

The platform's learner imports this module as ``<algo>.config`` and reads ``Config.SAMPLE_DIM``: the length of one
sample as ``SampleData2NumpyData`` flattens it (do not remove it)."""

import json
from pathlib import Path

ALGO_DIR = Path(__file__).resolve().parent
SPEC = json.loads((ALGO_DIR / "model" / "spec.json").read_text(encoding="utf-8"))
_MAPS_SIZE = 1
for _side in SPEC["maps_shape"]:
    _MAPS_SIZE *= int(_side)


class Config:
    ALGO = SPEC["algo"]  # ppo | maskable_ppo | recurrent_ppo (what was trained)
    MASK_WALL_MOVES = SPEC["mask_wall_moves"]  # the action mask option the policy was trained with
    N_ACTIONS = SPEC["n_actions"]
    MAPS_SIZE = _MAPS_SIZE
    VECTOR_SIZE = SPEC["vector_size"]
    # one sample: maps, vector, legal actions, then episode_start, act, reward, ret (feature/definition.py)
    SAMPLE_DIM = _MAPS_SIZE + SPEC["vector_size"] + SPEC["n_actions"] + 4
    GAMMA = SPEC["gamma"]  # discount of the returns in the samples
    LEARNING_RATE = SPEC["learning_rate"]  # of the on-platform fine-tuning (FINETUNE)
    # "keep": a platform training task keeps the exported weights (learn changes nothing); "finetune": learn takes
    # REINFORCE steps on the platform's samples
    PLATFORM_TRAINING = SPEC["platform_training"]
    FINETUNE = SPEC["platform_training"] == "finetune"
    SEED = 0  # of the exploring policy (predict)
    # the exported weights, in this folder (they travel in every saved model with it; the preload reads them here;
    # ckpt/ beside this folder holds the same file, for the package's eval lines)
    CKPT_DIR = ALGO_DIR / "ckpt"
    CKPT_ID = int(SPEC["ckpt_id"])  # their id: ckpt/model.ckpt-<CKPT_ID>.pkl (the preload and eval model id)
    MANIFEST = ALGO_DIR / "manifest.json"  # source model, config, feature version, sha256 of every file
    # train_workflow.py: the first save after the first episode, then one every SAVE_INTERVAL_S seconds (the platform
    # allows 2 saves a minute and 100 a task), MAX_SAVES at most
    SAVE_INTERVAL_S = 120
    # samples per agent.learn call, as the official workflows send them (their g_data_truncat): an episode of 2,000
    # steps goes in 8 calls, never one of about 85 MB
    SEND_SIZE = 256
    MAX_SAVES = 90
    # the workflow's episodes: the leaderboard's configuration (the platform wraps usr_conf as {"diy": {...}})
    USR_CONF = {"diy": {"start": 2, "end": 1, "treasure_random": 1, "treasure_num": 9, "talent_type": 1,
                        "max_step": 2000}}
