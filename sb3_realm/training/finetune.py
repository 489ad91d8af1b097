"""RL from a trained model (``sb3-realm train --init-from MODEL.zip``): the checks and weight loading, the critic's
warm start, and the anchor toward the initial policy.

The usual failure of PPO started from a cloned actor is known: the critic is untrained, the first advantages are
noise, and the first updates wreck the actor. :func:`warm_start_value` fits the value head first, on the discounted
returns of the configured reward in games the initial policy plays. :class:`AnchoredPPO` and
:class:`AnchoredMaskablePPO` add a behaviour-cloning term toward the initial policy as a phase after each PPO update
(the PPO loss itself is SB3's, untouched); what they save is a plain PPO / MaskablePPO checkpoint.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecEnv

from .. import games
from ..models.algorithms import action_distribution, detect_algorithm, read_sb3_data
from ..models.saved import model_feature_version

if TYPE_CHECKING:
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
    from stable_baselines3.common.policies import BasePolicy

    class _AnchorBase(OnPolicyAlgorithm):
        """For the type checker only: what :class:`_Anchor` is mixed into (PPO or MaskablePPO)."""

        batch_size: Any  # int in PPO, int | None in MaskablePPO
else:
    _AnchorBase = object

__all__ = [
    "AnchoredMaskablePPO",
    "AnchoredPPO",
    "StartScalarsCallback",
    "anchored_class",
    "check_init_model",
    "load_initial_weights",
    "policy_state",
    "reference_policy",
    "warm_start_value",
]


def check_init_model(path: str | Path, algo: str, game: str | None = None) -> None:
    """Refuse (``ValueError``, nothing unpickled) a model of another game, algorithm or features version (the run
    plays ``game``)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--init-from {str(path)!r} (finetune.init_from) is not a file; give the .zip of a trained "
                         "model, e.g. runs/imitate/final_model.zip")
    data = read_sb3_data(path)
    found = detect_algorithm(path, data)
    if found != algo:
        raise ValueError(f"--init-from {str(path)!r} is a {found} model and the config trains {algo}: the weights of "
                         f"one do not fit the other. Set algo.name: {found} (and its network), or start from a "
                         f"{algo} model")
    version, current = model_feature_version(path), games.get(game).submission.features.FEATURE_VERSION
    if version != current:
        raise ValueError(f"--init-from {str(path)!r} was trained on features version {version}, and this sb3_realm "
                         f"computes version {current}: its inputs would mean something else. "
                         "Start from a model trained with this version (sb3-realm imitate or train)")


def _short(names) -> str:
    names = list(names)
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def policy_state(path: str | Path, policy) -> dict:
    """The policy weights (extractor, actor, critic) of the checkpoint at ``path``, checked against ``policy``: a
    ``ValueError`` names what differs when the checkpoint's network or observation space is not the config's. Its
    optimizer state is never read."""
    path = Path(path)
    data = read_sb3_data(path)
    saved_obs = (data.get("observation_space") or {}).get("spaces")
    ours = str(policy.observation_space.spaces)
    if saved_obs is not None and saved_obs != ours:
        raise ValueError(f"--init-from {str(path)!r} reads the observation {saved_obs}, and this config's env gives "
                         f"{ours}: set env (frame_stack, map size) as the model was trained")
    _, params, _ = load_from_zip_file(path, device=policy.device, load_data=False)
    # SB3 types the params as one TensorDict; each of its values is in fact a module's state dict
    state = cast("dict[str, torch.Tensor] | None", (params or {}).get("policy"))
    if state is None:
        raise ValueError(f"--init-from {str(path)!r} holds no policy weights (policy.pth); is it a model.save file?")
    own = policy.state_dict()
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    shapes = sorted(k for k in set(own) & set(state) if own[k].shape != state[k].shape)
    if missing or extra or shapes:
        what = "; ".join(part for part in (
            f"the config's network has {_short(missing)} that the model lacks" if missing else "",
            f"the model has {_short(extra)} that the config's network lacks" if extra else "",
            f"other shapes for {_short(f'{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}' for k in shapes)}"
            if shapes else "") if part)
        raise ValueError(f"--init-from {str(path)!r}: its network is not the config's ({what}). Set algo.extractor, "
                         "algo.extractor_kwargs, algo.net_arch and algo.policy_kwargs as the model was trained (the "
                         "run's config.yaml beside it has them)")
    return state


def load_initial_weights(model, path: str | Path) -> None:
    """Copy the policy weights of the checkpoint at ``path`` into ``model`` (see :func:`policy_state`); the optimizer
    and the timestep count stay the new model's."""
    model.policy.load_state_dict(policy_state(path, model.policy))


def reference_policy(model, path: str | Path):
    """A frozen copy of ``model``'s policy with the weights of the checkpoint at ``path``: the anchor's reference."""
    ref = copy.deepcopy(model.policy)
    ref.load_state_dict(policy_state(path, ref))
    return ref


# ------------------------------------------------------------------------------------------ critic warm start
def _returns(rewards: list[float], gamma: float) -> np.ndarray:
    out, running = np.empty(len(rewards), dtype=np.float32), 0.0
    for i in range(len(rewards) - 1, -1, -1):
        running = rewards[i] + gamma * running
        out[i] = running
    return out


def _play(model, venv: VecEnv, games: int, masked: bool, gamma: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """``games`` whole episodes of ``model`` (sampled actions) on ``venv``: observations, discounted returns, and the
    episode number of each state."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    obs = venv.reset()
    n = venv.num_envs
    running: list[list] = [[] for _ in range(n)]  # (obs of one env, reward) per step of its current episode
    kept_obs: list[dict] = []
    kept_ret, kept_game = [], []
    done_games = 0
    while done_games < games:
        masks = get_action_masks(venv) if masked else None
        actions, _ = model.predict(obs, deterministic=False, **({"action_masks": masks} if masked else {}))
        new_obs, rewards, dones, _ = venv.step(actions)
        assert isinstance(obs, dict)  # the game env's Dict observations (stacked or not)
        for i in range(n):
            running[i].append(({k: np.array(v[i]) for k, v in obs.items()}, float(rewards[i])))
            if dones[i]:
                if done_games < games:
                    kept_obs.extend(o for o, _ in running[i])
                    kept_ret.append(_returns([r for _, r in running[i]], gamma))
                    kept_game.extend([done_games] * len(running[i]))
                    done_games += 1
                running[i] = []
        obs = new_obs
    stacked = {k: np.stack([o[k] for o in kept_obs]) for k in kept_obs[0]}
    return stacked, np.concatenate(kept_ret), np.asarray(kept_game)


def _value_parameters(policy) -> list:
    params = list(policy.mlp_extractor.value_net.parameters()) + list(policy.value_net.parameters())
    if not policy.share_features_extractor:
        params += list(policy.vf_features_extractor.parameters())
    return params


def _values(policy, obs: dict, index: np.ndarray, features: torch.Tensor | None) -> torch.Tensor:
    if features is not None:  # shared extractor: its output is fixed, computed once
        return policy.value_net(policy.mlp_extractor.forward_critic(features[index])).flatten()
    batch, _ = policy.obs_to_tensor({k: v[index] for k, v in obs.items()})
    return policy.predict_values(batch).flatten()


def warm_start_value(model, venv: VecEnv, games: int, *, epochs: int = 20, learning_rate: float = 1e-3,
                     batch_size: int = 256, holdout: float = 0.2, seed: int = 0) -> dict:
    """Fit the value head of ``model`` (PPO or MaskablePPO) to the discounted returns (the model's ``gamma``) of
    ``games`` episodes the model plays on ``venv``, sampling its actions. Only the critic's own layers learn (with a
    shared features extractor, the extractor stays as it is), so the actor acts exactly as before. A fifth of the
    games is held out: returns the mean squared error on them before and after the fit, and the sizes."""
    masked = isinstance(model, MaskablePPO)
    policy = model.policy
    obs, returns, game = _play(model, venv, games, masked, float(model.gamma))
    policy.set_training_mode(False)
    held = game >= games - max(1, round(games * holdout)) if games > 1 else np.zeros_like(game, dtype=bool)
    train_idx, test_idx = np.flatnonzero(~held), np.flatnonzero(held)
    if len(test_idx) == 0:
        test_idx = train_idx
    target = torch.as_tensor(returns, device=policy.device)
    features = None
    if policy.share_features_extractor:
        with torch.no_grad():
            chunks = []
            for start in range(0, len(returns), 1024):
                batch, _ = policy.obs_to_tensor({k: v[start:start + 1024] for k, v in obs.items()})
                chunks.append(policy.extract_features(batch, policy.vf_features_extractor))
            features = torch.cat(chunks)

    def test_loss() -> float:
        with torch.no_grad():
            losses = [F.mse_loss(_values(policy, obs, idx, features), target[idx], reduction="sum").item()
                      for idx in np.array_split(test_idx, max(1, len(test_idx) // 1024))]
        return float(sum(losses) / len(test_idx))

    before = test_loss()
    params = _value_parameters(policy)
    optimizer = torch.optim.Adam(params, lr=learning_rate)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(train_idx)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            loss = F.mse_loss(_values(policy, obs, idx, features), target[idx])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
    policy.zero_grad(set_to_none=True)
    return {"games": int(games), "states": len(returns), "held_out_states": len(test_idx),
            "mean_return": float(returns.mean()), "value_loss_before": before, "value_loss_after": test_loss()}


# ------------------------------------------------------------------------------------------ anchor
class _Anchor(_AnchorBase):
    """After SB3's PPO update (``train``), ``anchor_epochs`` passes over the rollout minimising ``anchor_coef *
    KL(initial || current)`` with the policy's own optimizer. ``reference``: the initial policy (frozen, never
    saved: the checkpoint stays a plain PPO / MaskablePPO)."""

    anchor_coef: float = 0.0
    anchor_epochs: int = 1
    reference: BasePolicy | None = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "reference"]

    def set_anchor(self, reference_policy, coef: float, epochs: int = 1) -> None:
        self.reference = copy.deepcopy(reference_policy).to(self.device)
        self.reference.set_training_mode(False)
        for p in self.reference.parameters():
            p.requires_grad_(False)
        self.anchor_coef, self.anchor_epochs = float(coef), int(epochs)

    def train(self) -> None:
        super().train()
        if not self.anchor_coef or self.reference is None:
            return
        self.policy.set_training_mode(True)
        kls = []
        for _ in range(self.anchor_epochs):
            for data in self.rollout_buffer.get(self.batch_size):
                masks = getattr(data, "action_masks", None)
                masks = None if masks is None else masks.cpu().numpy()
                with torch.no_grad():
                    ref = action_distribution(self.reference, data.observations, masks).distribution
                cur = action_distribution(self.policy, data.observations, masks).distribution
                kl = torch.distributions.kl_divergence(ref, cur).mean()
                self.policy.optimizer.zero_grad()
                (self.anchor_coef * kl).backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
                kls.append(kl.item())
        self.policy.set_training_mode(False)
        self.logger.record("train/anchor_kl", float(np.mean(kls)))


class AnchoredPPO(_Anchor, PPO):
    """PPO with the anchor phase of :class:`_Anchor`; saves a plain PPO checkpoint (``PPO.load`` reads it)."""


class AnchoredMaskablePPO(_Anchor, MaskablePPO):
    """MaskablePPO with the anchor phase of :class:`_Anchor`; ``MaskablePPO.load`` reads what it saves."""


def anchored_class(algo: str):
    """The anchored class of ``ppo`` / ``maskable_ppo``."""
    return {"ppo": AnchoredPPO, "maskable_ppo": AnchoredMaskablePPO}[algo]


class StartScalarsCallback(BaseCallback):
    """Records ``scalars`` (e.g. the warm start's value losses) in the run's TensorBoard log at step 0."""

    def __init__(self, scalars: dict[str, float]) -> None:
        super().__init__()
        self.scalars = dict(scalars)

    def _on_training_start(self) -> None:
        for key, value in self.scalars.items():
            self.logger.record(key, value)
        self.logger.dump(self.num_timesteps)

    def _on_step(self) -> bool:
        return True
