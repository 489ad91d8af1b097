"""Settings of the exported agent. What ``sb3-realm build-submission`` knows about the trained policy is in
``model/spec.json`` (written by the exporter); this module exposes it with the platform-side knobs."""

import json
from pathlib import Path

ALGO_DIR = Path(__file__).resolve().parent
SPEC = json.loads((ALGO_DIR / "model" / "spec.json").read_text(encoding="utf-8"))


class Config:
    ALGO = SPEC["algo"]  # ppo | maskable_ppo | recurrent_ppo (what was trained)
    MASK_WALL_MOVES = SPEC["mask_wall_moves"]  # the action mask option the policy was trained with
    N_ACTIONS = SPEC["n_actions"]
    GAMMA = SPEC["gamma"]  # discount of the minimal on-platform learner (train_workflow.py)
    LEARNING_RATE = SPEC["learning_rate"]
    SEED = 0  # of the exploring policy (predict)
    CKPT_DIR = ALGO_DIR.parent / "ckpt"  # save_model / load_model default folder
    CKPT_ID = SPEC["ckpt_id"]  # id of the exported weights (conf/configure_app.toml's eval_model_id)
    MANIFEST = ALGO_DIR / "manifest.json"  # source model, config, feature version, sha256 of every file
    SAVE_EVERY_EPISODES = 10  # train_workflow.py
