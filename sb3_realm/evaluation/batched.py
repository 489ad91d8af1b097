"""Many games of a single-frame PPO / MaskablePPO / RecurrentPPO model at once, deterministic, in this process.

Imitation asks "which games does the policy still lose?" every round, and training keeps its best model by held-out
games: over hundreds of games, played one at a time through ``model.predict``, that costs a forward pass of batch 1
per step. :func:`play_games` keeps ``batch`` games running side by side and asks the policy once per step for all of
them (the same argmax of the same network, with the action mask for MaskablePPO, one LSTM state per game for
RecurrentPPO), so a thousand games take tens of seconds on 2 cores. Each game is the one :func:`evaluate` and
the imitation collector play for the same ``(env seed, usr_conf)``; :func:`evaluate_batched` gives the same report
as :func:`evaluate`.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import games as _games
from ..models.algorithms import action_distribution
from .protocols import game_seed
from .reports import EvalReport, GameResult

__all__ = ["evaluate_batched", "game_result", "play_games", "played_report"]


def game_result(info: dict, env, *, index: int, seed: int, conf: dict | None, game: str | None = None,
                **extra) -> GameResult:
    """The :class:`GameResult` of a game of ``game`` that ``env`` ended with summary ``info``, played from env seed
    ``seed`` with ``usr_conf`` ``conf``: the map ``conf`` names, the game's own details and its success."""
    del env  # the game's figures are those of its summary
    return GameResult.from_summary(info, index=index, game=_games.get(game), seed=int(seed),
                                   map=(conf or {}).get("map_name"), **extra)


@torch.no_grad()
def _actions(policy, maps: np.ndarray, vector: np.ndarray, masks: np.ndarray | None, lstm=None):
    """The argmax actions of ``policy`` for a batch of states, and for a recurrent policy (``lstm``: ``(h, c,
    starts)``) its next ``(h, c)`` (None otherwise)."""
    obs = {"maps": torch.as_tensor(maps, device=policy.device), "vector": torch.as_tensor(vector, device=policy.device)}
    state = None
    if lstm is not None:
        h, c, starts = lstm
        dist, state = policy.get_distribution(obs, (h, c), torch.as_tensor(starts, dtype=torch.float32,
                                                                          device=policy.device))
    else:
        dist = action_distribution(policy, obs, masks)
    return dist.distribution.probs.argmax(dim=1).cpu().numpy(), state


def play_games(policy, env_kwargs: dict, games: list[tuple[int, dict]], *, masked: bool = False,
               max_steps: int = 0, batch: int = 64, game: str | None = None) -> list[GameResult]:
    """Play ``games`` (``(env seed, usr_conf)`` each) of ``game`` (required) with the deterministic
    ``policy`` (an SB3 actor-critic policy, ``model.policy``); returns one :class:`GameResult` per game, in order
    (``index`` its place in ``games``, ``seed`` its env seed, ``cut`` when stopped at ``max_steps`` before the game
    was over; 0: play to the end).
    """
    if batch < 1:
        raise ValueError(f"batch = {batch!r} must be >= 1")
    policy.set_training_mode(False)
    spec = _games.get(game)
    make_env = spec.env.make
    envs = [make_env(**env_kwargs) for _ in range(min(batch, len(games)))]
    results: list[GameResult | None] = [None] * len(games)
    slots: list[tuple[int, dict] | None] = [None] * len(envs)  # (game index, current obs) per env
    pending = iter(range(len(games)))

    def start(slot: int) -> None:
        index = next(pending, None)
        if index is None:
            slots[slot] = None
            return
        seed, conf = games[index]
        obs, _ = envs[slot].reset(seed=int(seed), options=conf)
        slots[slot] = (index, obs)

    recurrent = hasattr(policy, "lstm_actor")  # sb3-contrib's RecurrentActorCriticPolicy
    if recurrent:
        shape = policy.lstm_hidden_state_shape  # (layers, 1, hidden)
        h = torch.zeros((shape[0], len(envs), shape[2]), device=policy.device)
        c = torch.zeros_like(h)
        first = np.ones(len(envs), dtype=bool)  # a game starts in the slot: its LSTM state starts afresh
    for slot in range(len(envs)):
        start(slot)
    while any(s is not None for s in slots):
        running = {i: s for i, s in enumerate(slots) if s is not None}
        live = list(running)
        maps = np.stack([running[i][1]["maps"] for i in live])
        vector = np.stack([running[i][1]["vector"] for i in live])
        masks = np.stack([envs[i].action_masks() for i in live]) if masked else None
        lstm = (h[:, live], c[:, live], first[live]) if recurrent else None
        chosen, state = _actions(policy, maps, vector, masks, lstm)
        if recurrent:
            assert state is not None  # a recurrent policy returns its next LSTM state
            h[:, live], c[:, live] = state
            first[live] = False
        for i, action in zip(live, chosen, strict=True):
            env, (index, _) = envs[i], running[i]
            obs, _, terminated, truncated, _info = env.step(int(action))
            cut = bool(max_steps) and not (terminated or truncated) and env.game.step_no >= max_steps
            if terminated or truncated or cut:
                summary = env.episode_summary()
                results[index] = game_result(summary, env, index=index, seed=games[index][0],
                                             conf=games[index][1], game=game, cut=cut)
                start(i)
                if recurrent:
                    first[i] = True
            else:
                slots[i] = (index, obs)
    for env in envs:
        env.close()
    return [r for r in results if r is not None]


def evaluate_batched(policy, configs: list[dict], *, seed: int = 0, env_kwargs: dict, masked: bool = False,
                     name: str = "model", protocol: str = "custom", map_name: str | None = None,
                     game: str | None = None) -> EvalReport:
    """The report of :func:`~sb3_realm.evaluation.evaluate` for an SB3 policy (``model.policy``, single frames) on
    the games ``configs`` (usr_conf dicts from :func:`~sb3_realm.evaluation.protocol_configs`, played from
    ``seed``), played by :func:`play_games`: the same games, actions and figures, without worker processes."""
    games = [(game_seed(seed, i), conf) for i, conf in enumerate(configs)]
    played = play_games(policy, env_kwargs, games, masked=masked, game=game)
    named = list(dict.fromkeys(conf["map_name"] for conf in configs if "map_name" in conf))
    where = map_name or (", ".join(named) if named else None) or env_kwargs.get("map_path") or env_kwargs.get(
        "map_name", "default")
    return played_report(played, seed=seed, name=name, protocol=protocol, map_name=str(where), game=game)


def played_report(played: list[GameResult], *, seed: int, name: str, protocol: str, map_name: str,
                  game: str | None = None) -> EvalReport:
    """The :class:`EvalReport` of games ``played`` by :func:`play_games` (game ``i`` from env seed
    ``game_seed(seed, i)``, as :func:`evaluate_batched` plays them) of ``game``."""
    return EvalReport(policy=name, protocol=protocol, map=map_name, seed=seed, games=list(played),
                      game=_games.get(game).name)
