"""Behaviour cloning into the policy of an SB3 PPO, sb3-contrib MaskablePPO or RecurrentPPO model.

The loss is the negative log-likelihood of the expert's action under the policy's action distribution
(``policy.get_distribution``; for MaskablePPO with the state's action mask applied, as in training), minus
``ent_weight`` times its entropy, with ``l2_weight`` as Adam's weight decay (the shape of HumanCompatibleAI
``imitation``'s ``bc.py``). Only the actor's path is trained (extractor, policy MLP, action head); the value head is
left as it is. :func:`fit` may weigh each state (``weights``): :func:`disagreements` finds the states whose label
departs from the action the game's features suggest, and :func:`disagreement_weights` weighs them up
(``imitation.disagree_weight``).

RecurrentPPO (:func:`fit_sequences`) learns from whole episodes in order: each episode is cut into windows of
``window`` states, the LSTM state runs on from one window to the next (detached, as SB3 carries the rollout's state
into its training sequences) and starts at zero with the episode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..models.algorithms import action_distribution
from .dataset import Block, Blocks

__all__ = ["BCStats", "action_accuracy", "disagreement_weights", "disagreements", "episode_bounds", "fit",
           "fit_sequences"]


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


def _cosine(learning_rate: float, final_lr: float, update: int, total: int) -> float:
    frac = update / max(1, total - 1)
    return learning_rate * (final_lr + (1 - final_lr) * 0.5 * (1 + math.cos(math.pi * frac)))


def _bc_step(optimizer, dist, actions: torch.Tensor, weight: torch.Tensor | None, ent_weight: float,
             lr: float) -> tuple[float, int, float]:
    """One gradient step on the (``weight``-ed: 0 for padding, more for a state that counts more) negative
    log-likelihood of ``actions`` minus ``ent_weight`` times the entropy; returns the loss, the hits of the argmax
    and the mean entropy, both over the states of a weight above 0, each counted once."""
    log_prob, entropy = dist.log_prob(actions), dist.entropy()
    if weight is None:
        loss = -log_prob.mean() - ent_weight * entropy.mean()
        weight = torch.ones_like(log_prob)
    else:
        loss = -(weight * log_prob).sum() / weight.sum() - ent_weight * (weight * entropy).sum() / weight.sum()
    valid = (weight > 0).float()
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        hit = int(((dist.distribution.probs.argmax(dim=1) == actions).float() * valid).sum())
        mean_entropy = float((valid * entropy).sum() / valid.sum())
    return loss.item(), hit, mean_entropy


def fit(policy, block: Block | Blocks, *, epochs: int, batch_size: int, learning_rate: float, ent_weight: float = 0.0,
        l2_weight: float = 0.0, masked: bool = False, rng: np.random.Generator | None = None, final_lr: float = 0.0,
        on_update=None, weights: np.ndarray | None = None) -> BCStats:
    """Train ``policy`` (an SB3 ``ActorCriticPolicy`` / ``MaskableActorCriticPolicy``) to imitate ``block``.

    :param epochs: passes over the data.
    :param batch_size: states per gradient step.
    :param learning_rate: Adam's learning rate at the start; it decays along a cosine to ``final_lr`` (a fraction of
        it) by the last step, so the fit ends on small steps.
    :param masked: apply the action masks (MaskablePPO).
    :param on_update: called as ``on_update(update, loss, accuracy)`` after each gradient step (logging).
    :param weights: ``(N,)`` the weight of each state in the loss (None: all alike), as
        :func:`disagreement_weights` makes them; the accuracy counts every state once.
    """
    n = len(block)
    if n == 0:
        raise ValueError("behaviour cloning needs at least one state; the dataset is empty")
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float32)
        if weights.shape != (n,) or not np.all(weights > 0):
            raise ValueError(f"weights has the shape {weights.shape} (expected ({n},), one a state) or a weight <= 0")
    rng = rng or np.random.default_rng(0)
    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=learning_rate, weight_decay=l2_weight)
    steps_per_epoch = math.ceil(n / batch_size)
    total = epochs * steps_per_epoch
    policy.set_training_mode(True)
    update, hits = 0, 0
    losses: list[float] = []
    entropies: list[float] = []
    for _ in range(epochs):
        order = rng.permutation(n)
        losses, hits, entropies = [], 0, []
        for start in range(0, n, batch_size):
            index = np.sort(order[start:start + batch_size])  # sorted: faster gathers from the compact arrays
            obs_t, actions, masks = _tensors(policy, block, index)
            dist = action_distribution(policy, obs_t, masks if masked else None)
            weight = None if weights is None else torch.as_tensor(weights[index], device=policy.device)
            loss, hit, entropy = _bc_step(optimizer, dist, actions, weight, ent_weight,
                                          _cosine(learning_rate, final_lr, update, total))
            update += 1
            hits += hit
            losses.append(loss)
            entropies.append(entropy)
            if on_update is not None:
                on_update(update, losses[-1], hit / len(index))
    policy.set_training_mode(False)
    return BCStats(loss=float(np.mean(losses)), accuracy=hits / n, entropy=float(np.mean(entropies)), epochs=epochs,
                   updates=update, samples=epochs * n)


def episode_bounds(data: Block | Blocks) -> np.ndarray:
    """``(E, 2)`` first and end index of each episode of ``data`` (episodes start where ``starts`` is True)."""
    starts = np.concatenate([b.starts for b in data.blocks]) if isinstance(data, Blocks) else data.starts
    first = np.flatnonzero(starts)
    if len(starts) and (not len(first) or first[0] != 0):
        first = np.concatenate([[0], first])  # states before the first marked start: an episode of their own
    return np.stack([first, np.append(first[1:], len(starts))], axis=1) if len(first) else np.zeros((0, 2), int)


def _window_groups(bounds: np.ndarray, n_seq: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Episodes in groups of ``n_seq`` of similar length (little padding), the groups in random order."""
    lengths = bounds[:, 1] - bounds[:, 0]
    order = np.argsort(lengths + rng.random(len(lengths)), kind="stable")  # by length, ties at random
    groups = [bounds[order[i:i + n_seq]] for i in range(0, len(order), n_seq)]
    return [groups[i] for i in rng.permutation(len(groups))]


def fit_sequences(policy, data: Block | Blocks, *, epochs: int, batch_size: int, learning_rate: float,
                  window: int = 64, ent_weight: float = 0.0, l2_weight: float = 0.0,
                  rng: np.random.Generator | None = None, final_lr: float = 0.0, on_update=None) -> BCStats:
    """Train the actor of ``policy`` (sb3-contrib ``RecurrentActorCriticPolicy``: extractor, actor LSTM, policy MLP,
    action head) to imitate ``data`` episode by episode (see the module docstring). Each gradient step takes
    ``batch_size // window`` episodes side by side, one window of each; the other parameters are :func:`fit`'s."""
    bounds = episode_bounds(data)
    if len(bounds) == 0:
        raise ValueError("behaviour cloning needs at least one state; the dataset is empty")
    if window < 1:
        raise ValueError(f"window = {window!r} must be >= 1")
    rng = rng or np.random.default_rng(0)
    n_seq = max(1, batch_size // window)
    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=learning_rate, weight_decay=l2_weight)
    lengths = bounds[:, 1] - bounds[:, 0]
    plan = [_window_groups(bounds, n_seq, rng) for _ in range(epochs)]
    total = sum(math.ceil((g[:, 1] - g[:, 0]).max() / window) for groups in plan for g in groups)
    layers, _, hidden = policy.lstm_hidden_state_shape
    policy.set_training_mode(True)
    update, hits, seen = 0, 0, 0
    losses: list[float] = []
    entropies: list[float] = []
    for groups in plan:
        losses, hits, entropies, seen = [], 0, [], 0
        for group in groups:
            first, length = group[:, 0], group[:, 1] - group[:, 0]
            h = torch.zeros((layers, len(group), hidden), device=policy.device)
            c = torch.zeros_like(h)
            for offset in range(0, int(length.max()), window):
                steps = offset + np.arange(window)
                valid = steps[None, :] < length[:, None]  # (n_seq, window)
                index = first[:, None] + np.minimum(steps[None, :], length[:, None] - 1)  # padding: the last state
                unique, inverse = np.unique(index.ravel(), return_inverse=True)
                obs_t, actions, _ = _tensors(policy, data, unique)
                inverse_t = torch.as_tensor(inverse, device=policy.device)
                obs_t = {k: v[inverse_t] for k, v in obs_t.items()}  # sequence-major: episode by episode
                actions = actions[inverse_t]
                starts = torch.zeros(index.size, device=policy.device)
                dist, (h, c) = policy.get_distribution(obs_t, (h, c), starts)
                h, c = h.detach(), c.detach()
                weight = torch.as_tensor(valid.ravel(), dtype=torch.float32, device=policy.device)
                loss, hit, entropy = _bc_step(optimizer, dist, actions, weight, ent_weight,
                                              _cosine(learning_rate, final_lr, update, total))
                update += 1
                count = int(valid.sum())
                hits, seen = hits + hit, seen + count
                losses.append(loss)
                entropies.append(entropy)
                if on_update is not None:
                    on_update(update, losses[-1], hit / count)
    policy.set_training_mode(False)
    return BCStats(loss=float(np.mean(losses)), accuracy=hits / max(1, seen), entropy=float(np.mean(entropies)),
                   epochs=epochs, updates=update, samples=int(epochs * lengths.sum()))


def disagreements(data: Block | Blocks, suggested) -> np.ndarray:
    """``(N,)`` bool: the states of ``data`` whose expert label differs from the action the game's features suggest
    (``suggested``: the game's :attr:`~sb3_realm.games.ExpertOptions.suggested_actions`, -1 where they suggest
    none); all False where ``suggested`` is None."""
    blocks = data.blocks if isinstance(data, Blocks) else [data]
    if suggested is None:
        return np.zeros(len(data), dtype=bool)
    parts = []
    for block in blocks:
        ref = np.asarray(suggested(block.vector))
        parts.append((ref >= 0) & (ref != block.actions.astype(np.int64)))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def disagreement_weights(flags: np.ndarray, weight: float) -> np.ndarray | None:
    """``(N,)`` float32 weights for :func:`fit`: ``weight`` where ``flags`` (:func:`disagreements`), 1 elsewhere;
    None when ``weight`` is 1 (every state alike)."""
    if weight == 1:
        return None
    return np.where(flags, np.float32(weight), np.float32(1.0)).astype(np.float32)


@torch.no_grad()
def action_accuracy(policy, block: Block | Blocks, *, masked: bool = False, batch_size: int = 2048) -> float:
    """Share of the states whose most likely action (the deterministic policy's) is the expert's."""
    policy.set_training_mode(False)
    hits = 0
    for start in range(0, len(block), batch_size):
        index = np.arange(start, min(start + batch_size, len(block)))
        obs_t, actions, masks = _tensors(policy, block, index)
        dist = action_distribution(policy, obs_t, masks if masked else None)
        hits += int((dist.distribution.probs.argmax(dim=1) == actions).sum())
    return hits / max(1, len(block))
