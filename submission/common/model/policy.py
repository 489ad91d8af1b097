"""The exported model acting and learning, for the Agent of every layout: batch-1 inference with the LSTM state
carried between calls (restarted at an episode start) through a TorchScript-traced trunk, batches of several games
each from a fresh state, and the REINFORCE step of on-platform fine-tuning. Imports torch, numpy and the model."""

import warnings

import numpy as np
import torch

from diy.model.model import Trunk


class Acting:
    """The model's action probabilities for the platform's observations (objects with ``maps``, ``vector``,
    ``legal_action`` and ``episode_start``), as Stable-Baselines3 / sb3-contrib compute them."""

    def __init__(self, model, device):
        self.model, self.device = model, device
        self.lstm_state = None
        self.traced = None  # torch.jit.trace of the stateless trunk, for batch-1 inference

    def forget(self):
        """Drop the LSTM state and the traced trunk (new weights, or a new game)."""
        self.lstm_state = None
        self.traced = None

    def probs(self, list_obs_data):
        """(B, n_actions) probabilities; a batch of one carries the LSTM state, a larger one starts each game from a
        fresh state and leaves the carried one alone."""
        batched = len(list_obs_data) != 1
        if not batched:  # the platform's case: no stacking, views of the arrays
            o = list_obs_data[0]
            maps, vector, mask = (torch.from_numpy(np.ascontiguousarray(a)[None])
                                  for a in (o.maps, o.vector, o.legal_action))
        else:
            maps, vector, mask = (torch.from_numpy(np.stack([getattr(o, k) for o in list_obs_data]))
                                  for k in ("maps", "vector", "legal_action"))
        if self.device.type != "cpu":
            maps, vector, mask = maps.to(self.device), vector.to(self.device), mask.to(self.device)
        start = bool(list_obs_data[0].episode_start)
        with torch.no_grad():
            if batched:
                logits, _ = self.model(maps, vector, None, True)
            elif self.device.type == "cpu":
                args = (maps, vector)
                if self.model.lstm is not None:  # the state restarts from zeros at an episode start
                    args += self.model.initial_state(1) if self.lstm_state is None or start else self.lstm_state
                if self.traced is None:
                    self.traced = self._trace(args)
                out = self.traced(*args)
                if self.model.lstm is None:
                    logits = out
                else:
                    logits, self.lstm_state = out[0], (out[1], out[2])
            else:
                logits, self.lstm_state = self.model(maps, vector, self.lstm_state, start)
            return self.model.probs(logits, mask)

    def _trace(self, example):
        """The batch-1 model traced by TorchScript (same kernels as eager, without the Python overhead); the eager
        module where tracing is missing or fails (it is deprecated in recent torch)."""
        trunk = Trunk(self.model)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", torch.jit.TracerWarning)  # nn.LSTM's shape checks: batch 1 only
                return torch.jit.trace(trunk, example, check_trace=False)
        except Exception:  # any tracing failure: run eagerly
            return trunk


def reinforce_step(model, optimizer, maps, vector, mask, starts, acts, ret):
    """One REINFORCE step on a stream of samples in order (tensors; ``starts``: episode starts, for the LSTM): the
    log-probabilities of the actions taken, weighted by their normalised discounted returns; returns the loss."""
    advantage = (ret - ret.mean()) / (ret.std() + 1e-8) if len(ret) > 1 else ret
    model.train()
    log_probs = model.log_probs(model.sequence_logits(maps, vector, starts), mask)
    loss = -(log_probs.gather(1, acts[:, None])[:, 0] * advantage).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.eval()
    return float(loss.detach())
