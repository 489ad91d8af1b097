"""Rollouts labelled by the expert, in parallel worker processes.

Each game is played from its own env seed and ``usr_conf``. At every state the expert (the oracle by default) gives
its action, which is stored with the Gym env's observation and the action mask; the action actually played is the
expert's (expert data) or, in DAgger, the learner's except with probability ``beta`` the expert's (and every step
once the expert has taken over a game the learner overran: ``CollectJob.takeover``). The expert is
reset at the start of each game and asked at every state in order, so its per-episode state follows the game it
labels.

The refined expert (``oracle-refined``) starts every game with a beam search from the start, a function of the treasure
set (:class:`~sb3_realm.games.realm.experts.refine.SearchKey`): the :class:`Collector` keeps the first searches its jobs
made and hands each job those of its games' sets, so a set labelled again (the sweep's slow sets, round after round,
after the expert's own games of them) replays its first search instead of searching again, with the same labels.

The same workers also play the learner's own games (:meth:`Collector.play`: the screening, the held-out evaluation
and the sweep of an imitation run), each a share of the games batched by :func:`~sb3_realm.evaluation.play_games`.

Workers are module-level functions with picklable jobs, so they run under ``spawn`` as under ``forkserver``
(:mod:`sb3_realm.processes`), and as Ray tasks on a cluster (:mod:`sb3_realm.executors`): a job carries everything
its worker needs, the learner's weights included, so a worker on another machine needs only the package and the maps.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .. import games as _games
from ..agents import SB3Policy, load_model, play_episode
from ..evaluation import GameResult, game_result, play_games
from ..executors import Executor, check_executor, make_executor
from ..models.algorithms import algorithm_class
from .dataset import Block, Layout
from .expert import ExpertSpec

__all__ = [
    "CollectJob",
    "Collector",
    "ExpertPlayJob",
    "PlayJob",
    "Rollouts",
    "collect_games",
    "expert_play_job",
    "play_job",
]


#: the expert of a job that names none (as jobs did when the package played only the Realm): the Realm's yardstick,
#: its oracle planner, ties broken by the lowest action
ORACLE = ExpertSpec(_games.GAMES[_games.LEGACY_GAME].evaluation.yardstick)


@dataclass(frozen=True)
class CollectJob:
    """Games for one worker call.

    :param env_kwargs: the game env's arguments (map, rules, mask option), as in training; the game is the
        expert's (:attr:`ExpertSpec.game <sb3_realm.agents.PolicySpec.game>`).
    :param games: ``(env seed, usr_conf)`` per game.
    :param expert: the labelling policy (:class:`~.expert.ExpertSpec`: its kind, tie rule, refine settings and the
        refined expert's first searches of the job's sets).
    :param learner: SB3 checkpoint of the policy that plays (DAgger), or None: the expert plays every step.
    :param beta: with a learner, the probability that a step plays the expert's action instead.
    :param seed: seed of the ``beta`` draws.
    :param max_steps: a game stops after this many steps even if not over (0: play to the end): a learner that loops
        would otherwise fill the dataset with the same few states until ``max_step``.
    :param overrun: with a learner, a game also stops once it runs this many steps past the expert's own plan for it
        (the oracle's ``planned_steps``; 0: no such stop).
    :param takeover: with a learner, a game that reaches ``max_steps`` or its ``overrun`` is not cut: the expert
        takes over and plays it to the end from where the learner went astray (its states labelled as the rest),
        in the manner of HG-DAgger: the data then holds the way out of the learner's loop, not only its first move.
    """

    env_kwargs: dict
    games: tuple
    expert: ExpertSpec = ORACLE
    learner: str | None = None
    beta: float = 1.0
    seed: int = 0
    max_steps: int = 0
    overrun: int = 0
    takeover: bool = False


@dataclass
class Rollouts:
    """What a collection produced: the labelled states, one :class:`~sb3_realm.evaluation.GameResult` per game and
    the refined expert's new first searches (``{SearchKey: packed sequence}``, see :class:`CollectJob`)."""

    block: Block
    games: list[GameResult] = field(default_factory=list)
    searches: dict = field(default_factory=dict)


_CACHE: dict = {}


def _env_and_expert(env_kwargs: dict, spec: ExpertSpec):
    """The worker's env and expert for ``spec``, kept from one job to the next while they stay the same; the refined
    expert starts the job with ``spec``'s first searches and no new ones."""
    key = (repr(sorted(env_kwargs.items())), replace(spec, searches=()))
    if _CACHE.get("key") != key:
        env = _games.get(spec.game).env.make(**env_kwargs)
        _CACHE.update(key=key, env=env, expert=spec.build(env), learners={})
    expert = _CACHE["expert"]
    _games.get(spec.game).expert_setup().start_searches(expert, spec.searches)
    return _CACHE["env"], expert


def _new_searches(expert, spec: ExpertSpec) -> dict:
    """The first searches the refined expert made in this job (none for another expert)."""
    return _games.get(spec.game).expert_setup().new_searches(expert)


def _learner(path: str) -> SB3Policy:
    learners = _CACHE["learners"]
    if path not in learners:
        learners.clear()  # one learner per round: drop the previous round's
        learners[path] = SB3Policy(path)
    return learners[path]


def collect_games(job: CollectJob) -> Rollouts:
    """Play the job's games (see the module docstring); returns the labelled states in compact form."""
    env, expert = _env_and_expert(job.env_kwargs, job.expert)
    learner = _learner(job.learner) if job.learner is not None else None
    rng = np.random.default_rng(job.seed)
    maps, vectors, actions, masks, starts = [], [], [], [], []
    games: list[GameResult] = []
    for env_seed, conf in job.games:
        obs, _ = env.reset(seed=int(env_seed), options=conf)
        expert.reset(env)
        if learner is not None:
            learner.reset(env)
        done, info, first, expert_steps, taken_over = False, {}, True, 0, 0
        while not done:
            label = expert.act(env, obs)
            maps.append(obs["maps"])
            vectors.append(obs["vector"])
            mask = env.action_masks()
            if not mask[label]:  # an expert that may take an action the model's mask leaves out (Gorge's scripted
                mask = mask.copy()  # policy standing still against a wall): its label stays learnable
                mask[label] = True
            masks.append(mask)
            actions.append(label)
            starts.append(first)
            first = False
            # a recurrent learner sees every state, also those the expert plays, so that its LSTM state is its own
            proposed = learner.act(env, obs) if learner is not None and learner.recurrent else None
            if learner is None or taken_over or rng.random() < job.beta:
                action, expert_steps = label, expert_steps + 1
            else:
                action = proposed if proposed is not None else learner.act(env, obs)
                if action != label and hasattr(expert, "played_other"):
                    expert.played_other()  # the expert's loop guard counts its own moves only
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            limit = job.max_steps or env.game.config.max_step
            planned = getattr(expert, "planned_steps", None) if learner is not None and job.overrun else None
            if planned is not None:
                limit = min(limit, planned + job.overrun)
            if not done and not taken_over and env.game.step_no >= limit:
                if job.takeover and learner is not None:
                    taken_over = env.game.step_no  # the expert plays the rest of the game
                else:
                    info, done = env.episode_summary(), True  # cut: the game was not over
        games.append(game_result(info, env, index=len(games), seed=env_seed, conf=conf, game=job.expert.game,
                                 expert_steps=expert_steps, taken_over=taken_over,
                                 cut=not (env.game.terminated or env.game.truncated)))
    layout = Layout.of(job.expert.game)
    block = (Block.from_observations(np.stack(maps), np.stack(vectors), actions, np.stack(masks), starts, layout)
             if actions else Block.empty(layout))
    return Rollouts(block, games, _new_searches(expert, job.expert))


@dataclass(frozen=True)
class PlayJob:
    """A share of the games of :meth:`Collector.play`: the deterministic model saved at ``path`` (of algorithm
    ``algo``) plays ``games`` (``(env seed, usr_conf)`` each) batched, as :func:`~sb3_realm.evaluation.play_games`
    with ``masked`` and ``max_steps``."""

    path: str
    algo: str
    env_kwargs: dict
    games: tuple
    masked: bool = False
    max_steps: int = 0
    game: str | None = None
    #: the saved model's bytes, for a worker that cannot read ``path`` (a Ray worker on another machine); empty: read
    #: ``path``
    data: bytes = b""


def play_job(job: PlayJob) -> list[GameResult]:
    """Play a :class:`PlayJob`'s games; one summary per game, in order (see ``play_games``)."""
    with tempfile.TemporaryDirectory(prefix="sb3-realm-player-") as tmp:
        path = job.path
        if job.data:
            path = str(Path(tmp) / Path(job.path).name)
            Path(path).write_bytes(job.data)
        model = load_model(path, algo_cls=algorithm_class(job.algo), device="cpu")
    return play_games(model.policy, job.env_kwargs, list(job.games), masked=job.masked, max_steps=job.max_steps,
                      game=job.game)


@dataclass(frozen=True)
class ExpertPlayJob:
    """A share of the games of :meth:`Collector.play_expert`: ``expert`` (as :class:`CollectJob`'s) plays ``games``
    (``(env seed, usr_conf)`` each), nothing recorded but each game's result."""

    env_kwargs: dict
    games: tuple
    expert: ExpertSpec = ORACLE


def expert_play_job(job: ExpertPlayJob) -> tuple[list[GameResult], dict]:
    """Play an :class:`ExpertPlayJob`'s games: one result per game, in order, and the refined expert's new first
    searches (as :class:`Rollouts`')."""
    env, expert = _env_and_expert(job.env_kwargs, job.expert)
    played: list[GameResult] = []
    for env_seed, conf in job.games:
        info = play_episode(env, expert, int(env_seed), conf)
        played.append(game_result(info, env, index=len(played), seed=env_seed, conf=conf, game=job.expert.game))
    return played, _new_searches(expert, job.expert)


def _init_worker(game_paths: tuple[str, ...] = ()) -> None:
    import torch

    _games.adopt(game_paths)  # the parent's games, by import path (under forkserver and spawn a worker starts afresh)
    torch.set_num_threads(1)  # batch-1 inference in each worker; more threads only contend for the cores


class Collector:
    """Runs collection jobs in ``workers`` workers (in this process when ``workers`` is 1 and the executor is
    ``processes``); a context manager that keeps its workers for every round of a run. It also keeps the refined
    expert's first searches that its jobs made (see the module docstring), by treasure set, for the jobs that play
    the same sets again.

    :param workers: worker processes (Ray workers with ``executor="ray"``).
    :param executor: ``processes`` or ``ray`` (:mod:`sb3_realm.executors`); the results are the same with either.
    :param ray_address: the Ray cluster to join (default: ``$RAY_ADDRESS``, else a Ray instance of the run).
    """

    def __init__(self, workers: int = 1, executor: str = "processes", ray_address: str | None = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers = {workers!r} must be an integer >= 1")
        self.workers = workers
        self.executor = check_executor(executor, ray_address)
        self.ray_address = ray_address
        self._pool: Executor | None = None
        self._searches: dict[frozenset, dict] = {}  # treasure set -> {SearchKey: packed sequence or None}

    def _searches_for(self, games: tuple) -> tuple:
        """The kept first searches of ``games``' treasure sets (games whose ``usr_conf`` names its set; a set drawn
        from the env seed is only known once the game starts, and such a game is a fresh one)."""
        sets = {frozenset(conf["treasure_id"]) for _, conf in games
                if conf.get("treasure_random") == 0 and conf.get("treasure_id")}
        return tuple(item for ids in sets for item in self._searches.get(ids, {}).items())

    def _keep(self, searches: dict) -> None:
        for key, packed in searches.items():
            self._searches.setdefault(key.available, {})[key] = packed

    def __enter__(self) -> Collector:
        if self.workers > 1 or self.executor != "processes":
            self._pool = make_executor(self.executor, self.workers, _init_worker, (_games.references(),),
                                       address=self.ray_address)
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            # interrupted (Ctrl-C, SIGTERM, an error): the running jobs (a labelling job may run for minutes) are not
            # waited for
            pool.close(cancel=exc_type is not None)

    def _shares(self, games: list, per_worker: int) -> list[tuple]:
        """``games`` cut into interleaved shares (long and short games spread evenly): ``per_worker`` a worker with
        a pool, one share without."""
        n = min(len(games), self.workers * per_worker if self._pool is not None else 1)
        return [tuple(games[i::n]) for i in range(n)]

    def _map(self, fn, jobs: list) -> list:
        """``fn`` of each job, in the pool's workers (in this process without a pool), results in job order."""
        if self._pool is None:
            return [fn(job) for job in jobs]
        return list(self._pool.map(fn, jobs))

    @staticmethod
    def _in_order(parts: list[list[GameResult]], total: int) -> list[GameResult]:
        """The results of :meth:`_shares`' interleaved shares put back in the order of the games (each ``index``
        its place there)."""
        played: list = [None] * total
        for i, part in enumerate(parts):
            played[i::len(parts)] = part
        return [replace(result, index=i) for i, result in enumerate(played)]

    def run(self, env_kwargs: dict, games: list[tuple[int, dict]], *, expert: ExpertSpec = ORACLE,
            learner: str | None = None, beta: float = 1.0, seed: int = 0, max_steps: int = 0,
            overrun: int = 0, takeover: bool = False) -> Rollouts:
        """Collect ``games``, split evenly over the workers (the states and game results come job by job)."""
        if not games:
            return Rollouts(Block.empty(Layout.of(expert.game)), [])
        jobs = [CollectJob(env_kwargs, share, replace(expert, searches=self._searches_for(share)), learner, beta,
                           seed * 1_000 + i, max_steps, overrun, takeover)
                for i, share in enumerate(self._shares(games, 4))]
        parts = self._map(collect_games, jobs)
        searches = {k: v for p in parts for k, v in p.searches.items()}
        self._keep(searches)
        played = [g for p in parts for g in p.games]  # job by job
        return Rollouts(Block.concatenate([p.block for p in parts]),
                        [replace(g, index=i) for i, g in enumerate(played)], searches)

    def play(self, model, algo: str, env_kwargs: dict, games: list[tuple[int, dict]], *, masked: bool = False,
             max_steps: int = 0, game: str | None = None) -> list[GameResult]:
        """:func:`~sb3_realm.evaluation.play_games` of the in-memory SB3 ``model`` (algorithm ``algo``) on ``games``
        of ``game``, shared out over the workers (in this process when there is no pool):
        the same games with the same deterministic actions, one result per game in the order of ``games``."""
        if self._pool is None or len(games) < 2:
            return play_games(model.policy, env_kwargs, games, masked=masked, max_steps=max_steps, game=game)
        with tempfile.TemporaryDirectory(prefix="sb3-realm-player-") as tmp:
            path = str(Path(tmp) / "model.zip")
            model.save(path)
            data = Path(path).read_bytes() if self.executor == "ray" else b""  # a Ray worker may be on another machine
            jobs = [PlayJob(path, algo, env_kwargs, share, masked, max_steps, game, data)
                    for share in self._shares(games, 1)]
            parts = self._map(play_job, jobs)
        return self._in_order(parts, len(games))

    def play_expert(self, env_kwargs: dict, games: list[tuple[int, dict]],
                    expert: ExpertSpec = ORACLE) -> list[GameResult]:
        """The expert's own games of ``games``, shared out over the workers: one result per game in the order of
        ``games`` (what a learner's game is compared with)."""
        if not games:
            return []
        jobs = [ExpertPlayJob(env_kwargs, share, replace(expert, searches=self._searches_for(share)))
                for share in self._shares(games, 4)]
        parts = self._map(expert_play_job, jobs)
        for _, searches in parts:
            self._keep(searches)
        return self._in_order([played for played, _ in parts], len(games))
