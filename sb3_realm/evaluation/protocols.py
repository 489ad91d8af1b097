"""Evaluation by the competition's own scoring, over the fixed games of a game's protocols.

A game's protocols are lists of fixed ``usr_conf`` dicts (:attr:`~sb3_realm.games.GameSpec.evaluation.configs`), so
every policy plays exactly the same games; the Realm's are ``leaderboard`` (30 games of 9 random treasures drawn from
``seed``), ``exhaustive`` (every treasure set: C(13, 9) = 715 games), ``fixed`` and ``custom``
(:mod:`sb3_realm.games.realm.protocols`); Gorge Chase's play named lists of maps, a number of games each
(:mod:`sb3_realm.games.gorge.protocols`).

For every game: competition score, treasures, steps, flash and buff use, the game's own figures (the Realm's win and
missed treasures, Gorge Chase's catch), and the gap to the score of the game's yardstick (the Realm's oracle planner,
Gorge Chase's scripted policy) on the same game.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import games as _games
from ..agents import PolicySpec, play_episode
from ..agents.load import policy_game
from ..executors import check_executor, make_executor
from ..models.saved import warn_feature_version
from .reports import EvalReport, GameResult
from .training_map import check_training_maps, warn_training_map

__all__ = ["PROTOCOLS", "evaluate", "game_seed", "protocol_configs"]

#: the protocols of every game, in order (each game's own are its spec's ``protocols``)
PROTOCOLS = tuple(dict.fromkeys(p for spec in _games.GAMES.values() for p in spec.evaluation.protocols))


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int | None = None,
                     custom: list[list[int]] | None = None, max_step: int | None = None,
                     game: str | None = None, maps: list[str] | None = None) -> list[dict]:
    """The ``usr_conf`` dicts of a protocol of ``game`` (None: the one game that has a protocol of this name; a
    ``ValueError`` asks for ``game`` when several have, or none): the Realm's with fixed treasure ids, Gorge Chase's
    with a map each (``map_name``). None takes the game's default (the Realm: 30 leaderboard games, max_step 2000;
    Gorge Chase: 20 games a map, its configured max_step)."""
    return protocol_game(protocol, game).evaluation.configs(protocol, seed=seed, treasures=treasures, games=games,
                                                            custom=custom, max_step=max_step, maps=maps)


def _protocol_owners(protocol: str) -> list[_games.GameSpec]:
    """The registered games that have a protocol named ``protocol``."""
    return [spec for spec in _games.GAMES.values() if protocol in spec.evaluation.protocols]


def protocol_game(protocol: str, game: str | None = None) -> _games.GameSpec:
    """The game of ``protocol``: ``game``, else the one game that has a protocol of this name (a ``ValueError`` asks
    for ``game`` when several games have one of this name, or none)."""
    if game is not None:
        return _games.get(game)
    owners = _protocol_owners(protocol)
    if len(owners) == 1:
        return owners[0]
    if not owners:
        protocols = list(dict.fromkeys(p for spec in _games.GAMES.values() for p in spec.evaluation.protocols))
        raise ValueError(f"unknown protocol {protocol!r}: no game has it; choose one of {protocols}")
    raise ValueError(f"protocol {protocol!r}: {' and '.join(spec.name for spec in owners)} have a protocol of this "
                     f"name; name the game with game= (one of {[spec.name for spec in owners]})")


def game_seed(seed: int, index: int) -> int:
    """The env seed of game ``index`` of a protocol played from ``seed``: results never depend on which worker (or
    batch) plays which game, and every player of the package plays the same games."""
    return seed * 1_000_003 + index


# ---------------------------------------------------------------------------------------------- playing
_WORKER: dict = {}


def _setup_worker(*init) -> None:
    """A worker process: one torch thread (batch-1 inference; N workers x M threads on N cores only wait on each
    other, several times slower), then :func:`_setup`."""
    import torch  # lazy: only the worker processes set it; this module serves the CLI without torch

    torch.set_num_threads(1)
    _setup(*init)


def _setup(game: str, map_path: str | None, env_kwargs: dict, spec, play_yardstick: bool, seed: int) -> None:
    game_spec = _games.get(game)  # first: a worker process knows the game by its import path (games.reference)
    yardstick = game_spec.evaluation.yardstick
    env = game_spec.env.make(map_path=map_path, **env_kwargs)
    policy = spec.build(env) if isinstance(spec, PolicySpec) else spec
    _WORKER.update(env=env, policy=policy, seed=seed, beside=None, yardstick=yardstick, game=game_spec)
    if play_yardstick and policy.name != yardstick:
        _WORKER["beside"] = PolicySpec(yardstick, game=game_spec.name).build(env)


def _run_one(job: tuple[int, dict]) -> GameResult:
    index, conf = job
    env, policy = _WORKER["env"], _WORKER["policy"]
    seed = game_seed(_WORKER["seed"], index)
    info = play_episode(env, policy, seed, conf)
    beside = _WORKER["beside"] if _WORKER["beside"] is not None else (
        policy if policy.name == _WORKER["yardstick"] else None)
    extra = {}
    if beside is not None:
        o = info if beside is policy else play_episode(env, beside, seed, conf)
        extra = {"yardstick_score": float(o["score"]), "yardstick_steps": int(o["steps"])}
    return GameResult.from_summary(info, index=index, game=_WORKER["game"], seed=seed,
                                   planned_steps=getattr(policy, "planned_steps", None), map=conf.get("map_name"),
                                   **extra)


def _check_protocol(protocol: str, played: _games.GameSpec, policy, game: str | None) -> None:
    """A ``ValueError`` for a protocol of another game than the one ``policy`` plays, naming that game and the
    ``--game`` to pass (a protocol of no game is left to the game's own message)."""
    if protocol in played.evaluation.protocols:
        return
    owners = _protocol_owners(protocol)
    if not owners:
        return
    fix = " or ".join(f"pass --game {spec.name}" for spec in owners)
    if game is not None:
        why = f"--game {game}"
    elif isinstance(policy, str) and policy in played.experts:
        why, fix = "an expert of that game", f"give a policy of {' or '.join(spec.title for spec in owners)}"
    else:  # a checkpoint, a submission folder or a policy object: the game it records
        why, fix = "the game the policy records", f"give a policy of {' or '.join(spec.title for spec in owners)}"
    raise ValueError(f"--protocol {protocol!r} is a protocol of {' and '.join(spec.title for spec in owners)}, and "
                     f"{str(policy)!r} plays {played.title} ({why}), whose protocols are "
                     f"{list(played.evaluation.protocols)}: "
                     f"{fix}, or choose one of {played.title}'s")


def evaluate(policy, protocol: str | None = None, *, map_path: str | None = None, seed: int = 0,
             treasures: int | None = None, games: int | None = None, custom: list[list[int]] | None = None,
             max_step: int | None = None, workers: int = 1, yardstick: bool = True, env_kwargs: dict | None = None,
             progress: bool = False, expert_options: Mapping[str, Any] | None = None,
             trust_pickle: bool | None = None, game: str | None = None, maps: list[str] | None = None,
             allow_overlap: bool = False, settings: str = "default", executor: str = "processes",
             ray_address: str | None = None) -> EvalReport:
    """Play every game of a protocol with ``policy`` (``"random"``, an expert of the game such as ``"oracle"``, a
    checkpoint path or a submission folder; with ``workers=1`` also any object with ``name``, ``reset(env)`` and
    ``act(env, obs)``).

    :param protocol: one of the game's protocols (None: its first, the Realm's ``leaderboard``, Gorge Chase's
        ``hidden``).
    :param games, max_step: None takes the game's default (:func:`protocol_configs`).
    :param maps: the maps of a protocol that plays named maps (Gorge Chase's ``maps``).
    :param allow_overlap: play a checkpoint on maps its run trained on; by default a protocol that names its maps
        refuses them (scores on training maps say little about maps the policy never saw).
    :param workers: processes (Ray workers with ``executor="ray"``); 1 plays in this process unless the executor is
        Ray. Results are the same for any number of workers and either executor.
    :param executor: ``processes`` (worker processes of this machine) or ``ray`` (a Ray cluster:
        :mod:`sb3_realm.executors`).
    :param ray_address: the Ray cluster to join (default: ``$RAY_ADDRESS``, else a Ray instance started for the run).
    :param yardstick: also play the game's yardstick (the Realm's oracle, Gorge Chase's scripted policy) on each
        game and report the gap to its score.
    :param env_kwargs: extra arguments of the game's env (rules, mask_wall_moves, ...), as in training.
    :param expert_options: options of the game's experts for an expert ``policy`` (its
        :attr:`~sb3_realm.games.Experts.play_options`, e.g. ``{"use_flash": False}`` for the Realm's oracle); the
        yardstick beside plays with its defaults. A ``ValueError`` names an option the game's experts do not take.
    :param trust_pickle: let a checkpoint's pickles run (only for a file you made yourself); default: its entries
        are rebuilt from plain data (:mod:`sb3_realm.agents.checkpoint`).
    :param game: the game to play (None: the one the policy records, :func:`~sb3_realm.agents.load.policy_game`).
    :param settings: the game's named settings (:attr:`~sb3_realm.games.GameSpec.settings`, e.g. Gorge Chase's
        ``final``) played over every game's ``usr_conf``; a ``max_step`` given here wins over theirs.
    """
    if workers < 1:
        raise ValueError(f"--workers {workers} must be >= 1")
    check_executor(executor, ray_address)
    in_process = workers == 1 and executor == "processes"
    played = policy_game(policy, game)
    name = played.name
    played.check_settings(settings, "--settings", _games.GAMES.values())
    options = played.check_expert_options(expert_options, "--expert-option")
    protocol = played.evaluation.protocols[0] if protocol is None else protocol
    _check_protocol(protocol, played, policy, game)
    keep = ("max_step",) if max_step is not None else ()
    configs = [played.apply_settings(settings, conf, keep=keep)
               for conf in protocol_configs(protocol, seed=seed, treasures=treasures, games=games, custom=custom,
                                            max_step=max_step, game=name, maps=maps)]
    named_maps = list(dict.fromkeys(c["map_name"] for c in configs if "map_name" in c))
    if named_maps and not allow_overlap:
        check_training_maps(policy, named_maps, game=name, maps_dir=(env_kwargs or {}).get("maps_dir"))
    if isinstance(policy, str):
        spec = PolicySpec(policy, seed=seed, expert_options=tuple(options.items()), trust_pickle=trust_pickle,
                          game=name)
        if Path(policy).is_file():
            warn_feature_version(policy, name)
    elif in_process and hasattr(policy, "act") and hasattr(policy, "reset"):
        spec = policy
    else:
        raise ValueError(f"policy must be 'random', 'oracle' or a checkpoint path (a policy object only with "
                         f"workers=1 and the processes executor), got {policy!r}")
    env_kwargs = dict(env_kwargs or {})
    ref = name if in_process else _games.reference(name)  # a worker process imports the game by its path
    init = (ref, str(map_path) if map_path is not None else None, env_kwargs, spec, yardstick, seed)
    _setup(*init)  # validates the policy and the map here, with a clear error, before any worker starts
    if not named_maps:
        warn_training_map(policy, _WORKER["env"].game_map, game=name)
    for map_name in named_maps:  # every map loads now, not in a worker halfway through
        _WORKER["env"].reset(seed=0, options={**configs[0], "map_name": map_name})
    jobs = list(enumerate(configs))
    bar = None
    if progress:
        from tqdm.auto import tqdm  # lazy: only with progress=True; it costs `sb3-realm --help` 30 ms

        bar = tqdm(total=len(jobs), desc=f"eval {protocol}", unit="game")
    results: list[GameResult] = []
    if in_process:
        for job in jobs:
            results.append(_run_one(job))
            if bar:
                bar.update()
    else:
        chunk = max(1, math.ceil(len(jobs) / (workers * 8)))
        with make_executor(executor, workers, _setup_worker, init, address=ray_address) as pool:
            for r in pool.map(_run_one, jobs, chunksize=chunk):
                results.append(r)
                if bar:
                    bar.update()
    if bar:
        bar.close()
    return EvalReport(policy=_WORKER["policy"].name, protocol=protocol,
                      map=", ".join(named_maps) if named_maps else _WORKER["env"].game_map.name, seed=seed,
                      games=sorted(results, key=lambda r: r.index), game=name, settings=settings,
                      settings_values=played.apply_settings(settings, {}, keep=keep))
