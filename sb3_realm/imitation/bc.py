"""Behaviour cloning into the policy of an SB3 PPO or sb3-contrib MaskablePPO model.

The loss is the negative log-likelihood of the expert's action under the policy's action distribution
(``policy.get_distribution``; for MaskablePPO with the state's action mask applied, as in training), minus
``ent_weight`` times its entropy, with ``l2_weight`` as Adam's weight decay (the shape of HumanCompatibleAI
``imitation``'s ``bc.py``). Only the actor's path is trained (extractor, policy MLP, action head); the value head is
left as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .dataset import Block, Blocks

__all__ = ["BCStats", "fit", "action_accuracy"]


@dataclass
class BCStats:
    """What one :func:`fit` did: mean loss, accuracy (argmax = expert) and entropy of its last epoch, and counts."""

    loss: float
    accuracy: float
    entropy: float
    epochs: int
    updates: int
    samples: int


def _gather(data: Block | Blocks, index: np.ndarray) -> Block:
    return data.gather(index) if isinstance(data, Blocks) else data.take(index)


def _tensors(policy, data: Block | Blocks, index: np.ndarray) -> tuple[dict, torch.Tensor, np.ndarray]:
    batch = _gather(data, index)
    obs = batch.observations()  # maps (B, 4, 51, 51) uint8, vector (B, 216)
    device = policy.device
    obs_t = {k: torch.as_tensor(v, device=device) for k, v in obs.items()}
    actions = torch.as_tensor(batch.actions.astype(np.int64), device=device)
    return obs_t, actions, batch.masks


def _distribution(policy, obs_t: dict, masks: np.ndarray, masked: bool):
    if masked:
        return policy.get_distribution(obs_t, action_masks=masks)
    return policy.get_distribution(obs_t)


def fit(policy, block: Block | Blocks, *, epochs: int, batch_size: int, learning_rate: float, ent_weight: float = 0.0,
        l2_weight: float = 0.0, masked: bool = False, rng: np.random.Generator | None = None, final_lr: float = 0.0,
        on_update=None) -> BCStats:
    """Train ``policy`` (an SB3 ``ActorCriticPolicy`` / ``MaskableActorCriticPolicy``) to imitate ``block``.

    :param epochs: passes over the data.
    :param batch_size: states per gradient step.
    :param learning_rate: Adam's learning rate at the start; it decays along a cosine to ``final_lr`` (a fraction of
        it) by the last step, so the fit ends on small steps.
    :param masked: apply the action masks (MaskablePPO).
    :param on_update: called as ``on_update(update, loss, accuracy)`` after each gradient step (logging).
    """
    n = len(block)
    if n == 0:
        raise ValueError("behaviour cloning needs at least one state; the dataset is empty")
    rng = rng or np.random.default_rng(0)
    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=learning_rate, weight_decay=l2_weight)
    steps_per_epoch = math.ceil(n / batch_size)
    total = epochs * steps_per_epoch
    policy.set_training_mode(True)
    update, losses, hits, entropies = 0, [], 0, []
    for _ in range(epochs):
        order = rng.permutation(n)
        losses, hits, entropies = [], 0, []
        for start in range(0, n, batch_size):
            index = np.sort(order[start:start + batch_size])  # sorted: faster gathers from the compact arrays
            obs_t, actions, masks = _tensors(policy, block, index)
            dist = _distribution(policy, obs_t, masks, masked)
            log_prob = dist.log_prob(actions)
            entropy = dist.entropy()
            loss = -log_prob.mean() - ent_weight * entropy.mean()
            frac = update / max(1, total - 1)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate * (final_lr + (1 - final_lr) * 0.5 * (1 + math.cos(math.pi * frac)))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            update += 1
            with torch.no_grad():
                hit = int((dist.distribution.probs.argmax(dim=1) == actions).sum())
            hits += hit
            losses.append(loss.item())
            entropies.append(entropy.mean().item())
            if on_update is not None:
                on_update(update, losses[-1], hit / len(index))
    policy.set_training_mode(False)
    return BCStats(loss=float(np.mean(losses)), accuracy=hits / n, entropy=float(np.mean(entropies)), epochs=epochs,
                   updates=update, samples=epochs * n)


@torch.no_grad()
def action_accuracy(policy, block: Block | Blocks, *, masked: bool = False, batch_size: int = 2048) -> float:
    """Share of the states whose most likely action (the deterministic policy's) is the expert's."""
    policy.set_training_mode(False)
    hits = 0
    for start in range(0, len(block), batch_size):
        index = np.arange(start, min(start + batch_size, len(block)))
        obs_t, actions, masks = _tensors(policy, block, index)
        dist = _distribution(policy, obs_t, masks, masked)
        hits += int((dist.distribution.probs.argmax(dim=1) == actions).sum())
    return hits / max(1, len(block))
