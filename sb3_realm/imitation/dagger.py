"""An imitation run (``sb3-realm imitate``): expert games, behaviour cloning, DAgger rounds, the best round kept.

Round 0: the expert plays ``expert_games`` games alone; the policy is fitted on them. Round r >= 1 (DAgger, the shape
of HumanCompatibleAI ``imitation``'s ``SimpleDAggerTrainer``): the current policy plays ``dagger_games`` games (each
step the expert's action with probability ``beta(r)``), the expert labels every state visited, the states join the
dataset as a new shard, and the policy is fitted again on the whole dataset. Every round reads as

    collect -> fit -> evaluate -> choose -> save

(:meth:`Imitation.collect`, :meth:`Imitation.fit`, :func:`evaluate_model`, :meth:`~.records.RunState.choose`,
:class:`~.records.RunWriter`). Which games are labelled and which round is kept is ``imitation.selection``
(:mod:`~sb3_realm.imitation.selection`): after every round the deterministic policy plays the held-out leaderboard
games (``eval_games`` drawn from ``eval_seed``; env seeds the training never uses) and, with a sweep, every treasure
set of the leaderboard's count (and a sample or all of the others); the sweep games it loses are labelled first next
round, and the kept round is the one that loses the fewest of them. ``final_model.zip`` is the kept round's model,
never simply the last round's.

A run folder holds ``config.yaml``, ``dataset/`` (the expert data, one shard per round), ``checkpoints/`` (one per
round, atomic: a run killed at any moment resumes from its last complete round with ``--resume``; shards a killed
round appended after it are dropped), ``tb/`` (``imitation/*`` and ``eval/*`` scalars), ``eval.json``,
``best_model.zip`` and ``final_model.zip``: what ``eval``, ``replay`` and ``build-submission`` accept unchanged.

A resumed run folder may come from elsewhere: before anything is written, its parts must lie inside it, its
checkpoint's state must have the shape this package writes, its dataset must be the one that checkpoint was trained
on, and every shard of it must load as plain arrays; each refusal is one line naming the file and what to do.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

import numpy as np
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

from ..agents import load_model
from ..atomic import atomic_write, hold_folder, inside
from ..evaluation import GameResult, game_seed, played_report
from ..games import GameEnv
from ..models.algorithms import algorithm
from ..models.saved import warn_feature_version
from ..training.checkpoints import check_checkpoint, latest_checkpoint, list_checkpoints
from ..training.config import save_config
from ..training.run import (
    MADE_BY_A_RUN,
    build_model,
    check_run_parts,
    record_config,
    removed_if_unfinished,
    resume_changes,
    run_folder,
    start_new_run,
)
from .bc import BCStats, action_accuracy, disagreement_weights, disagreements, fit, fit_sequences
from .collect import Collector, Rollouts
from .config import ImitateConfig, check_run_config
from .dataset import ExpertDataset, Layout
from .expert import ExpertSpec
from .records import ResumePoint, RoundRecord, RunState, RunWriter
from .selection import (
    fill_from_screening,
    is_leaderboard_set,
    keep_key,
    slow_games,
    sweep_games,
    sweep_labels,
    training_games,
)

__all__ = ["Imitation", "evaluate_expert", "evaluate_model", "expert_spec", "imitate"]


def _check_config(config: ImitateConfig) -> None:
    algo = algorithm(config.algo.name)  # the registry: every algorithm it lists clones (single frames)
    if config.env.frame_stack != 1:
        raise ValueError(f"env.frame_stack = {config.env.frame_stack}: imitation datasets hold single frames; set "
                         f"env.frame_stack: 1 ({algo.name} clones from single frames)")
    if algo.recurrent and config.imitation.disagree_weight != 1:
        raise ValueError(f"imitation.disagree_weight = {config.imitation.disagree_weight!r} weighs single states, "
                         f"which {algo.name} does not clone (it learns whole episodes in order): set it to 1, or "
                         "use maskable_ppo or ppo")


def expert_spec(config: ImitateConfig) -> ExpertSpec:
    """The expert of ``config``'s ``imitation`` section (its kind, tie rule and refine settings)."""
    im = config.imitation
    return ExpertSpec(im.expert, tie_break=im.tie_break, refine=im.refine_settings(config.spec), game=config.game)


# ---------------------------------------------------------------------------------------------------- evaluation
def _held_out(config: ImitateConfig) -> tuple[str, list[tuple[int, dict]]]:
    """The held-out games (the game's held-out configs of ``env.usr_conf``, ``eval_games``, ``eval_seed`` and
    ``eval_maps``) with their env seeds, and the protocol they are reported as (the game's
    :attr:`~sb3_realm.games.GameSpec.evaluation.held_out_protocol`: the Realm's ``leaderboard``, Gorge Chase's
    ``maps``)."""
    confs = config.held_out_configs()
    seeded = [(game_seed(config.eval_seed, i), conf) for i, conf in enumerate(confs)]
    return config.spec.evaluation.held_out_protocol, seeded


def evaluate_model(model, config: ImitateConfig, collector: Collector, map_name: str) -> dict:
    """The summary of the held-out games played by the deterministic ``model``, batched over ``collector``'s
    workers: for the Realm the same games and figures as ``sb3-realm eval --protocol leaderboard --seed EVAL_SEED``,
    for Gorge Chase those of ``--protocol maps --maps EVAL_MAPS``."""
    protocol, games = _held_out(config)
    env_kwargs = config.env.env_kwargs(usr_conf=False, game=config.spec)
    played = collector.play(model, config.algo.name, env_kwargs, games, masked=algorithm(config.algo.name).maskable,
                            game=config.game)
    return played_report(played, seed=config.eval_seed, name="model", protocol=protocol, map_name=map_name,
                         game=config.game).summary()


def evaluate_expert(config: ImitateConfig, collector: Collector, map_name: str) -> dict:
    """The summary of the same held-out games played by the expert (the reference beside the model's)."""
    protocol, games = _held_out(config)
    played = collector.play_expert(config.env.env_kwargs(usr_conf=False, game=config.spec), games,
                                   expert_spec(config))
    return played_report(played, seed=config.eval_seed, name=config.imitation.expert, protocol=protocol,
                         map_name=map_name, game=config.game).summary()


# ---------------------------------------------------------------------------------------------------- the run
class Imitation:
    """One imitation run: its config, workers, state and writer, and the steps of a round (module docstring)."""

    def __init__(self, config: ImitateConfig, run_dir: Path, collector: Collector | None = None) -> None:
        self.config, self.im, self.run_dir = config, config.imitation, run_dir
        self.env_kwargs = config.env.env_kwargs(usr_conf=False, game=config.spec)
        #: the leaderboard's episode config (``env.usr_conf``): its treasure count is the sweep's main count
        self.usr = config.spec.episodes.config.from_usr_conf(config.env.usr_conf)
        self.algo = algorithm(config.algo.name)
        self.expert = expert_spec(config)
        self.state = RunState()
        #: plays the games: ``imitate`` gives it its pool of workers; without one, games are played in this process
        self.collector = collector or Collector(1)
        self.writer = RunWriter(run_dir, config)
        self.stats: dict = {}  # the current round's selection counts (screening, sweep labels, slow games)
        self.swept: list[GameResult] | None = None  # the sweep of the model as it stands
        # the model's env (spaces, and the rollout size its hyperparameters are checked against); never stepped here
        self.venv = DummyVecEnv([lambda: config.spec.env.make(**self.env_kwargs)] * config.env.n_envs)
        self.map_name = cast(GameEnv, self.venv.envs[0].unwrapped).game_map.name

    def close(self) -> None:
        self.venv.close()
        self.writer.close()

    # -------------------------------------------------------------------------------------- model and state
    def new_model(self):
        return build_model(self.config, self.venv)

    def load(self, point: ResumePoint, changes: dict):
        """The model of the checkpoint the run resumes from (with the hyperparameters ``changes``); the run's state
        becomes the one it records."""
        ckpt = point.checkpoint
        warn_feature_version(ckpt / "model.zip")
        model = load_model(ckpt / "model.zip", algo_cls=self.algo.cls, env=self.venv, device=self.config.device,
                           **changes)
        record_config(model, self.config)
        self.state = point.state
        return model

    # -------------------------------------------------------------------------------------- which games
    def play(self, model, games: list[tuple[int, dict]], max_steps: int = 0) -> list[GameResult]:
        """The deterministic ``model``'s results on ``games``, over the run's workers."""
        return self.collector.play(model, self.config.algo.name, self.env_kwargs, games, masked=self.algo.maskable,
                                   max_steps=max_steps, game=self.config.game)

    def sweep_games(self) -> list[tuple[int, dict]]:
        return sweep_games(self.im.selection, self.usr, self.im.treasure_counts, self.config.eval_seed)

    def sweep(self, model) -> list[GameResult] | None:
        """The sweep of ``model`` (None without one)."""
        if not self.im.selection.swept:
            return None
        return self.play(model, self.sweep_games(), max_steps=self.im.dagger_max_steps)

    def reference_steps(self, games: list[tuple[int, dict]]) -> list[int]:
        """The expert's own steps on ``games`` (the sweep's sets of the leaderboard's count), played once a run and
        kept in its checkpoints: a resume plays them again only for another expert or set of games."""
        key = hashlib.sha256(json.dumps([*self.expert.reference_key(), self.env_kwargs, games], sort_keys=True,
                                        default=str).encode("utf-8")).hexdigest()
        if self.state.reference is None or self.state.reference["key"] != key:
            played = self.collector.play_expert(self.env_kwargs, games, self.expert)
            self.state.reference = {"key": key, "steps": [g.steps for g in played]}
        return self.state.reference["steps"]

    def dagger_games(self, model, round_no: int) -> list[tuple[int, dict]]:
        """The ``dagger_games`` games the learner plays for the expert in round ``round_no``: the sweep games that
        ``selection.label`` names, then with ``screen_games`` those of a screening the learner never finishes, then
        fresh ones (:mod:`~sb3_realm.imitation.selection`). A round the sweep's games fill plays no screening."""
        im, selection = self.im, self.im.selection
        labelled: list[tuple[int, dict]] = []
        if selection.swept:
            if self.swept is None:  # a resumed run: sweep the model it resumed from
                self.swept = self.sweep(model)
            swept = list(zip(self.sweep_games(), self.swept or [], strict=True))
            slow: list[tuple[int, dict]] = []
            if "slow" in selection.label:
                main = [game for game, _ in swept if is_leaderboard_set(game[1]["treasure_id"], self.usr)]
                slow, slow_stats = slow_games(swept, self.reference_steps(main), self.usr, selection.slow_margin)
                self.stats.update(slow_stats)
            labelled, label_stats = sweep_labels(selection, swept, self.usr, dagger_games=im.dagger_games,
                                                 seed=self.config.seed, round_no=round_no, slow=slow)
            self.stats = {**label_stats, **self.stats}
        if not im.screen_games or len(labelled) >= im.dagger_games:  # nothing left for screened games to fill
            fresh = training_games(self.config, round_no, max(0, im.dagger_games - len(labelled)))
            return (labelled + fresh)[:im.dagger_games]
        pool = training_games(self.config, round_no, max(im.screen_games, im.dagger_games))
        played = self.play(model, pool, max_steps=im.dagger_max_steps)
        self.stats.update(screen_games=len(pool), screen_reached_end=sum(r.reached_end for r in played))
        return fill_from_screening(labelled, pool, played, dagger_games=im.dagger_games, seed=self.config.seed,
                                   round_no=round_no)

    # -------------------------------------------------------------------------------------- one round
    def collect(self, model, dataset: ExpertDataset, round_no: int) -> tuple[Rollouts, str]:
        """Round ``round_no``'s games played and labelled; their states appended to ``dataset`` as a shard."""
        im = self.im
        with tempfile.TemporaryDirectory(prefix="sb3-realm-learner-") as tmp:
            if round_no == 0:
                games, learner, beta, source = training_games(self.config, 0, im.expert_games), None, 1.0, "expert"
            else:
                learner = str(Path(tmp) / "learner.zip")
                model.save(learner)
                games, beta = self.dagger_games(model, round_no), im.beta(round_no)
                source = f"dagger round {round_no} (beta {beta:g})"
            rollouts = self.collector.run(self.env_kwargs, games, expert=self.expert, learner=learner, beta=beta,
                                          seed=self.config.seed + round_no,
                                          max_steps=im.dagger_max_steps if learner else 0, overrun=im.dagger_overrun,
                                          takeover=im.dagger_takeover)
        dataset.append(rollouts.block, source, expert=self.expert.label)
        return rollouts, source

    def fit(self, model, dataset: ExpertDataset, round_no: int) -> BCStats:
        """Fit ``model``'s policy on the whole dataset (round 0's epochs and rate, or the refits')."""
        im = self.im
        data = dataset.all()  # the shards as they are in memory: no copy
        kwargs = {"epochs": im.epochs if round_no == 0 else im.dagger_epochs, "batch_size": im.batch_size,
                  "final_lr": im.final_lr,
                  "learning_rate": im.learning_rate if round_no == 0 else im.dagger_learning_rate,
                  "ent_weight": im.ent_weight, "l2_weight": im.l2_weight,
                  "rng": np.random.default_rng([self.config.seed, round_no, 2]),
                  "on_update": self.writer.fit_logger(self.state.updates, len(data))}
        flags = disagreements(data, self.config.spec.expert_setup().suggested_actions)
        if self.algo.recurrent:
            stats = fit_sequences(model.policy, data, window=im.window, **kwargs)
        else:
            stats = fit(model.policy, data, masked=self.algo.maskable,
                        weights=disagreement_weights(flags, im.disagree_weight), **kwargs)
        if self.config.spec.expert_setup().suggested_actions is not None:
            index = np.flatnonzero(flags)
            self.stats["disagree_states"] = len(index)
            self.stats["disagree_accuracy"] = (action_accuracy(model.policy, data.gather(index),
                                                               masked=self.algo.maskable) if len(index) else None)
        self.state.updates += stats.updates
        model.num_timesteps = dataset.states  # env steps behind the model: the states it learnt from
        return stats

    def play_round(self, model, dataset: ExpertDataset, round_no: int) -> RoundRecord:
        """collect -> fit -> evaluate -> choose -> save."""
        t0 = time.perf_counter()
        rollouts, source = self.collect(model, dataset, round_no)
        t1 = time.perf_counter()
        bc = self.fit(model, dataset, round_no)
        t2 = time.perf_counter()
        summary = evaluate_model(model, self.config, self.collector, self.map_name)
        self.swept = self.sweep(model)
        key = keep_key(self.im.selection, summary["mean_score"], self.swept, self.usr)
        if self.state.choose(key, summary["mean_score"], round_no):
            self.writer.best_model(model)
        t3 = time.perf_counter()
        self.state.elapsed += t3 - t0
        record = self._record(round_no, source, rollouts, dataset, bc, summary, key, (t1 - t0, t2 - t1, t3 - t2))
        self.stats = {}
        self.state.history.append(record)
        self.state.round = round_no
        self.writer.round_done(model, self.state, record, dataset.meta["shards"])
        return record

    def _record(self, round_no: int, source: str, rollouts: Rollouts, dataset: ExpertDataset, bc: BCStats,
                summary: dict, key: tuple, seconds: tuple[float, float, float]) -> RoundRecord:
        played, success = rollouts.games, self.config.spec.evaluation.success
        sweep = {} if self.swept is None else {"sweep_games": len(self.swept),
                                               "sweep_lost": sum(not r.won for r in self.swept),
                                               "sweep_mean_score": key[1]}
        return RoundRecord(
            round=round_no, source=source, games_played=len(played), states=dataset.states,
            new_states=len(rollouts.block),
            learner_wins=int(sum(success.of_game(g) and not g.taken_over for g in played)),
            games_cut=int(sum(g.cut for g in played)), games_taken_over=int(sum(bool(g.taken_over) for g in played)),
            learner_mean_score=float(np.mean([0.0 if g.taken_over else g.score for g in played])),
            bc_loss=bc.loss, bc_accuracy=bc.accuracy, bc_entropy=bc.entropy, updates=self.state.updates,
            eval_mean_score=summary["mean_score"],
            eval_reached_end=summary[success.reached], eval_wins=summary[success.count], eval_games=summary["games"],
            eval_mean_steps=summary["mean_steps"],
            eval_missed_treasure_games=summary.get("games_with_missed_treasure"),
            yardstick_mean_score=self.state.yardstick_score, best_round=self.state.best_round,
            collect_s=round(seconds[0], 2), fit_s=round(seconds[1], 2), eval_s=round(seconds[2], 2),
            wall_s=round(self.state.elapsed, 2),
            labelled_per_s=round(len(rollouts.block) / seconds[0], 2) if seconds[0] > 0 else None,
            **self.stats, **sweep)


# ---------------------------------------------------------------------------------------------------- entry point
@dataclass(frozen=True)
class _Resume:
    """What a resumed run starts from, all checked before anything is written: the checkpoint's
    :class:`~.records.ResumePoint`, the hyperparameters the config changes, and the dataset (its first
    ``point.shards`` shards loaded)."""

    point: ResumePoint
    changes: dict
    dataset: ExpertDataset


#: what an imitation run may write at its top level: a training run's entries and its dataset
RUN_PARTS = ("dataset", *MADE_BY_A_RUN)


def _prepare(config: ImitateConfig, resume) -> tuple[Path, _Resume | None]:
    """Validate everything and write nothing yet: the run folder and, when resuming, where it resumes from (the
    checkpoint, its state, the dataset it was trained on, every shard of it loaded as plain arrays) and the
    hyperparameters the config changes (see ``training.run.resume_changes``)."""
    config.validate()
    _check_config(config)
    run_dir = run_folder(config, resume)
    check_run_parts(run_dir, RUN_PARTS)  # a run reads, writes and removes only inside its own folder
    if resume is None:
        start_new_run(config, run_dir)
        if (run_dir / "dataset" / "meta.json").exists():
            raise ValueError(f"run directory {str(run_dir)!r} already holds a dataset; use --resume {run_dir} or "
                             "--out to start a new run elsewhere")
        return run_dir, None
    check_run_config(run_dir)  # resume_changes reads it
    found = latest_checkpoint(run_dir / "checkpoints")
    if found is None:
        kept = list_checkpoints(run_dir / "checkpoints")
        if kept:  # there are checkpoints, all damaged: the newest one's problem says what to do
            check_checkpoint(kept[-1])
        raise ValueError(f"--resume {str(run_dir)!r}: no intact checkpoint under {run_dir / 'checkpoints'} (the "
                         "first round never finished), so there is nothing to resume: delete the folder and run the "
                         "command that started it again, or start the run in another folder with --out")
    ckpt, saved = found
    inside(run_dir / "checkpoints", ckpt.name, f"run directory {str(run_dir)!r}")
    point = ResumePoint.read(ckpt, saved)
    # the dataset must be the one the checkpoint was trained on, every shard of it intact, before anything is written
    dataset = ExpertDataset.open(run_dir / "dataset")
    dataset.check_checkpoint(point.shards, point.shard_sha256, point.states, str(ckpt))
    dataset.verify(point.shards)
    best = run_dir / "best_model.zip"
    if not best.is_file():
        raise ValueError(f"--resume {str(run_dir)!r}: {str(best)!r}, the model of the kept round "
                         f"{point.state.best_round}, is missing; restore it, or start the run again with --out")
    try:
        with zipfile.ZipFile(best) as archive:
            damaged = archive.testzip()
    except (OSError, zipfile.BadZipFile) as exc:
        damaged = str(exc)
    if damaged is not None:
        raise ValueError(f"--resume {str(run_dir)!r}: {str(best)!r}, the model of the kept round "
                         f"{point.state.best_round}, is damaged ({damaged}); restore it, or start the run again with "
                         "--out")
    return run_dir, _Resume(point, resume_changes(run_dir, config), dataset)


def imitate(config: ImitateConfig, resume: str | Path | None = None, progress: bool = False,
            talk: TextIO | None = None):
    """Run (or resume) an imitation run; returns ``(model, run_dir)`` where ``model`` is the kept round's model.

    :param resume: a run folder to continue from its last complete round (its own config, with overrides such as
        more ``imitation.rounds``).
    :param progress: a progress bar over the rounds.
    :param talk: a text stream that gets one line per round as it ends (:func:`round_line`), with or without the
        bar; the command line passes ``sys.stderr``.

    The run folder is held for the run (:func:`~sb3_realm.atomic.hold_folder`): another command on it is refused.
    A new run that fails before its first round saved a checkpoint removes what it made (its ``config.yaml``,
    ``dataset/``, ``tb/``, ...; the folder when it made it), so that the same command can run again
    (:func:`~sb3_realm.training.run.removed_if_unfinished`).
    """
    config.validate()
    folder = run_folder(config, resume)
    with hold_folder(folder, "run directory"):
        if resume is not None:
            return _imitate(config, resume, progress, talk)
        with removed_if_unfinished(folder, RUN_PARTS):
            return _imitate(config, resume, progress, talk)


def round_line(record: RoundRecord, rounds: int) -> str:
    """One line for a finished round: the round out of the run's ``rounds``, the states in the dataset (and the
    round's states labelled a second), the held-out
    score (and the yardstick's, where known), the best round so far, the round's time and the run's."""
    yardstick = "" if record.yardstick_mean_score is None else f" (yardstick {record.yardstick_mean_score:.1f})"
    took = record.collect_s + record.fit_s + record.eval_s
    rate = "" if record.labelled_per_s is None else f" ({record.labelled_per_s:,.1f} labelled a second)"
    return (f"round {record.round}/{rounds}: {record.states:,} states{rate}, held-out score "
            f"{record.eval_mean_score:.1f}"
            f"{yardstick}, best round {record.best_round}, {took:.0f} s ({record.wall_s / 60:.1f} min in all)")


def _imitate(config: ImitateConfig, resume, progress: bool, talk: TextIO | None = None):
    run_dir, resumed = _prepare(config, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)
    run = Imitation(config, run_dir)
    try:
        if resumed is not None:
            model = run.load(resumed.point, resumed.changes)
            dataset = resumed.dataset
            dataset.check_compatible(model.observation_space, model.action_space.n,
                                     getattr(model, "feature_version", "1"))
            dataset.truncate(resumed.point.shards)  # the first write: what a killed round appended goes
        else:
            model = run.new_model()
            dataset = ExpertDataset.create(run_dir / "dataset", expert=run.expert.label, map_name=run.map_name,
                                           feature_version=getattr(model, "feature_version", "1"),
                                           layout=Layout.of(config.game))
        save_config(config, run_dir / "config.yaml")
        rounds = range(run.state.round + 1, config.imitation.rounds + 1)
        bar = None
        if progress and len(rounds):
            from tqdm.auto import tqdm

            bar = tqdm(total=config.imitation.rounds + 1, initial=run.state.round + 1, desc="imitate", unit="round")
        with Collector(config.imitation.workers, config.imitation.executor) as collector:
            run.collector = collector
            if run.state.yardstick_score is None and config.imitation.expert == config.spec.evaluation.yardstick:
                run.state.yardstick_score = evaluate_expert(config, collector, run.map_name)["mean_score"]
            for round_no in rounds:
                record = run.play_round(model, dataset, round_no)
                if talk is not None:
                    line = round_line(record, config.imitation.rounds)
                    if bar:
                        bar.write(line, file=talk)
                    else:
                        print(line, file=talk, flush=True)
                if bar:
                    bar.set_postfix(score=f"{record.eval_mean_score:.1f}", acc=f"{record.bc_accuracy:.3f}",
                                    states=record.states)
                    bar.update()
        if bar:
            bar.close()
        best = run_dir / "best_model.zip"
        atomic_write(run_dir / "final_model.zip", lambda f: f.write(best.read_bytes()))
        run.writer.eval_json(run.state)  # the checkpoint's record, also where a resume played no round
        final = load_model(run_dir / "final_model.zip", algo_cls=run.algo.cls, device=config.device)
    finally:
        torch.set_num_threads(threads)
        run.close()
    return final, run_dir
