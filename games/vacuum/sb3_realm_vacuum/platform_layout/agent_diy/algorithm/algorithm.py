"""The learner's step. A package built to keep its weights (the default) learns nothing: every model a training
task saves is the exported policy. Built for fine-tuning (``Config.FINETUNE``), each batch is one REINFORCE step on
the samples' discounted returns (normalised), with the action mask the policy trained with."""

import numpy as np
import torch

from agent_diy.conf.conf import SPEC, Config
from agent_diy.model.policy import reinforce_step

MAPS_SHAPE = tuple(int(side) for side in SPEC["maps_shape"])


class Algorithm:
    def __init__(self, model, device, logger=None):
        self.model, self.device, self.logger = model, device, logger
        self.optimizer = None

    def learn(self, list_sample_data):
        """The loss of the step taken, or None when nothing was learnt."""
        if not Config.FINETUNE or not list_sample_data:
            return None
        if self.optimizer is None:
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=Config.LEARNING_RATE)

        def stack(name, dtype=np.float32):
            return torch.as_tensor(np.stack([np.asarray(getattr(s, name), dtype=dtype) for s in list_sample_data]),
                                   device=self.device)

        maps = stack("maps").reshape(len(list_sample_data), *MAPS_SHAPE)
        vector, mask = stack("vector"), stack("legal_action", bool)
        starts = [bool(np.asarray(s.episode_start).reshape(-1)[0]) for s in list_sample_data]
        acts = stack("act").reshape(-1).long()
        ret = stack("ret").reshape(-1)
        return reinforce_step(self.model, self.optimizer, maps, vector, mask, starts, acts, ret)

