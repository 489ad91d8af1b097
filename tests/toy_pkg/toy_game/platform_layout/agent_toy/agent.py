"""The toy platform's Agent: the exported policy acting on the platform's observation. The platform builds it with
no argument, loads the preloaded weights with ``load_model(path, id)`` and asks ``exploit(env_obs)`` for each step's
action. Imports torch, numpy, the standard library and the package's own modules only."""

import json
import os

import numpy as np
import torch

from agent_toy.feature import features
from agent_toy.model.model import Model


class Agent:
    def __init__(self):
        folder = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(folder, "model", "spec.json"), encoding="utf-8") as fh:
            self.spec = json.load(fh)
        self.model = Model(self.spec)
        self.model.eval()

    def load_model(self, path, id):
        """The weights ``model.ckpt-<id>.pkl`` of the folder ``path`` (a plain CPU state dict)."""
        weights = os.path.join(path, f"model.ckpt-{int(id)}.pkl")
        self.model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))

    def exploit(self, env_obs):
        """The greedy action of the policy on the platform's observation of a state."""
        walls = np.array(env_obs["walls"], dtype=bool)
        hero = tuple(env_obs["hero"])
        treasures = [tuple(cell) for cell in env_obs["treasures"]]
        exit_cell = tuple(env_obs["exit"])
        maps, vector = features.encode(walls, hero, treasures, exit_cell, int(env_obs["step_no"]),
                                       int(env_obs["max_step"]))
        mask = torch.from_numpy(features.legal_moves(walls, hero)[None])
        with torch.no_grad():
            logits, _ = self.model(torch.from_numpy(maps[None]), torch.from_numpy(vector[None]))
            return int(self.model.greedy(logits, mask)[0])
