"""An imitation run (``sb3-realm imitate``): expert games, behaviour cloning, DAgger rounds, the best model kept by a
held-out evaluation of the competition score.

Round 0: the expert plays ``expert_games`` games alone; the policy is fitted on them. Round r >= 1 (DAgger, the shape
of HumanCompatibleAI ``imitation``'s ``dagger.py``): the current policy plays ``dagger_games`` games (each step the
expert's action with probability ``beta(r)``), the expert labels every state visited, the states join the dataset as
a new shard, and the policy is fitted again on the whole dataset. After every round the deterministic policy plays
the held-out leaderboard games (``eval_games`` drawn from ``eval_seed``; env seeds the training never uses) and is
kept as ``best_model.zip`` when its mean competition score is the best so far (ties: the later round, which has seen
more data). ``final_model.zip`` is the best model, never simply the last round's. With ``imitation.sweep`` the learner
also plays, after every round, every treasure set of the leaderboard's count (and a sample of the other counts): the
games it loses there are labelled first in the next round, and the best round is the one that loses the fewest of
them, then scores best over them (a game is a function of its treasure set: these are all the leaderboard's games).

A run folder holds ``config.yaml``, ``dataset/`` (the expert data, one shard per round), ``checkpoints/`` (one per
round, atomic: a run killed at any moment resumes from its last complete round with ``--resume``; shards a killed
round appended after it are dropped), ``tb/`` (``imitation/*`` and ``eval/*`` scalars), ``eval.json``,
``best_model.zip`` and ``final_model.zip``: what ``eval``, ``replay`` and ``build-submission`` accept unchanged.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv

from ..agents import load_model
from ..atomic import atomic_write, check_writable_folder, hold_folder
from ..envs import RealmEnv
from ..evaluation import evaluate, game_seed, played_report, protocol_configs
from ..game.rules import EpisodeConfig
from ..models.algorithms import algorithm_class
from ..models.saved import warn_feature_version
from ..training.checkpoints import latest_checkpoint, list_checkpoints, save_checkpoint
from ..training.config import TrainConfig, save_config
from ..training.run import build_model, record_config, resume_changes, start_new_run
from .bc import fit, fit_sequences
from .collect import Collector
from .dataset import ExpertDataset

__all__ = ["imitate", "training_games", "won"]

SUPPORTED = ("ppo", "maskable_ppo", "recurrent_ppo")


def _check_config(config: TrainConfig) -> None:
    if config.algo.name not in SUPPORTED:
        raise ValueError(f"algo.name = {config.algo.name!r}: sb3-realm imitate clones into {list(SUPPORTED)}")
    if config.env.frame_stack != 1:
        raise ValueError(f"env.frame_stack = {config.env.frame_stack}: imitation datasets hold single frames; set "
                         "env.frame_stack: 1")


def won(game: dict) -> bool:
    """Whether a game summary of ``play_games`` is won as the competition's other games count it: the end reached with
    every treasure (``win`` alone is the end reached, also with treasures left behind)."""
    return bool(game["win"]) and not game["missed"]


def training_games(config: TrainConfig, round_no: int, n: int) -> list[tuple[int, dict]]:
    """``(env seed, usr_conf)`` of round ``round_no``'s training games: env seeds drawn from ``(seed, round)`` in
    ``[2**20, 2**31)`` (so never 0..29, the games of ``sb3-realm eval --seed 0``) and never one of the held-out
    evaluation's, treasure counts drawn from ``imitation.treasure_counts``."""
    base = EpisodeConfig.from_usr_conf(config.env.usr_conf)
    counts = config.imitation.treasure_counts or [base.treasure_num]
    held_out = {game_seed(config.eval_seed, i) for i in range(config.eval_games)}
    rng = np.random.default_rng([config.seed, round_no, 1])
    games = []
    while len(games) < n:
        seed = int(rng.integers(2**20, 2**31))
        if seed in held_out:
            continue
        conf = {**base.to_usr_conf(), "treasure_random": 1, "treasure_num": int(rng.choice(counts)), "treasure_id": []}
        games.append((seed, conf))
    return games


class _Run:
    """The state of one imitation run (see the module docstring)."""

    def __init__(self, config: TrainConfig, run_dir: Path) -> None:
        self.config = config
        self.im = config.imitation
        self.run_dir = run_dir
        self.env_kwargs = config.env.env_kwargs(usr_conf=False)
        #: the leaderboard's episode config (``env.usr_conf``): its treasure count is the sweep's main count
        self.usr = EpisodeConfig.from_usr_conf(config.env.usr_conf)
        self.masked = config.algo.name == "maskable_ppo"
        self.recurrent = config.algo.name == "recurrent_ppo"
        self.history: list[dict] = []
        self.best_score = -np.inf  # held-out mean score of the best round
        self.best_key: tuple = (-np.inf,)  # what the best round is chosen by (see select_key)
        self.best_round = -1
        self.oracle_score: float | None = None
        self.elapsed = 0.0
        self.updates = 0
        self.round = -1  # last completed round
        self._screen: dict = {}  # the screening of the current round (screen_games, screen_wins)
        self._swept: list[dict] | None = None  # the sweep of the model as it stands (imitation.sweep)
        #: the expert's steps on the sweep's sets of env.usr_conf's count, in order (imitation.sweep_label_slow), and
        #: the key of the games and expert they were played with: ``{"key": ..., "steps": [...]}``, kept in checkpoints
        self._reference: dict | None = None
        #: plays the learner's own games (screening, held-out evaluation, sweep): ``imitate`` puts its pool here, which
        #: shares them out over the workers; without a pool (as here) they are played in this process
        self.collector = Collector(1)
        self.logger = configure(str(run_dir / "tb"), ["tensorboard"])
        # the model's env (spaces, and the rollout size its hyperparameters are checked against); never stepped here
        self.venv = DummyVecEnv([lambda: RealmEnv(**self.env_kwargs)] * config.env.n_envs)

    # ------------------------------------------------------------------------------------------ model and data
    def new_model(self):
        return build_model(self.config, self.venv)

    def load(self, ckpt: Path, state: dict, changes: dict):
        warn_feature_version(ckpt / "model.zip")
        model = load_model(ckpt / "model.zip", algo_cls=algorithm_class(self.config.algo.name), env=self.venv,
                           device=self.config.device, **changes)
        record_config(model, self.config)
        im = state["imitation"]
        self.round, self.history = im["round"], im["history"]
        self.best_score, self.best_round = im["best_score"], im["best_round"]
        self.best_key = tuple(im.get("best_key", (im["best_score"],)))
        self.oracle_score, self.elapsed, self.updates = im["oracle_score"], im["elapsed"], im["updates"]
        self._reference = im.get("reference")
        return model, im["shards"]

    def _evaluate(self, spec: str) -> dict:
        """The held-out games (leaderboard protocol from ``eval_seed``), played by ``spec``: the report's summary."""
        usr = self.usr
        report = evaluate(spec, "leaderboard", seed=self.config.eval_seed, games=self.config.eval_games,
                          treasures=usr.treasure_num, max_step=usr.max_step, map_path=self.env_kwargs["map_path"],
                          workers=self.im.workers, oracle_gap=False,
                          env_kwargs={k: v for k, v in self.env_kwargs.items() if k != "map_path"})
        return report.summary()

    def _play(self, model, games: list[tuple[int, dict]], max_steps: int = 0) -> list[dict]:
        """``play_games`` of the deterministic ``model`` on ``games``, over the run's workers when it has them."""
        return self.collector.play(model, self.config.algo.name, self.env_kwargs, games, masked=self.masked,
                                   max_steps=max_steps)

    def _dagger_games(self, model, round_no: int) -> list[tuple[int, dict]]:
        """The games the learner plays for the expert in DAgger round ``round_no``: ``dagger_games`` fresh training
        games; with ``screen_games``, the deterministic learner first plays that many (batched) and the games it loses
        come first, the rest drawn at random from the others. With ``sweep``, the lost sweep games come before all of
        them, and a round they fill plays no screening. Put first are the games the learner never finishes (``win``
        false: its loops); a game that ends with a treasure left is lost for the choice of the best round
        (:func:`won`, :meth:`select_key`) but not put first here: measured, putting those first too gave worse models
        (README, imitation benchmarks). With ``sweep_label_left`` they follow the loops."""
        im = self.im
        swept_lost: list[tuple[int, dict]] = []
        if im.sweep:
            if self._swept is None:  # a resumed run: sweep the model it resumed from
                self._swept = self._sweep(model)
            swept = list(zip(self.sweep_games(), self._swept, strict=True))  # (game, its summary)
            swept_lost = [game for game, g in swept if not g["win"]]
            if im.sweep_all and len(swept_lost) > im.dagger_games:
                swept_lost = self._sample_lost(swept_lost, round_no)
            if im.sweep_label_left:  # then the games that reach the end with a treasure left
                swept_lost += [game for game, g in swept if g["win"] and not won(g)]
            self._screen = {"sweep_lost_labelled": min(len(swept_lost), im.dagger_games)}
            if im.sweep_label_slow:  # then the won games that lose the most steps to the expert's
                slow = self._slow_sweep_games(swept)[:im.sweep_label_slow]
                self._screen["sweep_slow_labelled"] = min(len(slow), max(0, im.dagger_games - len(swept_lost)))
                swept_lost += slow
        if not im.screen_games or len(swept_lost) >= im.dagger_games:  # nothing left for screened games to fill
            fresh = training_games(self.config, round_no, max(0, im.dagger_games - len(swept_lost)))
            return (swept_lost + fresh)[:im.dagger_games]
        pool = training_games(self.config, round_no, max(im.screen_games, im.dagger_games))
        played = self._play(model, pool, max_steps=im.dagger_max_steps)
        lost = [i for i, g in enumerate(played) if not g["win"]]
        self._screen.update(screen_games=len(pool), screen_wins=len(pool) - len(lost))
        rng = np.random.default_rng([self.config.seed, round_no, 3])
        rest = [i for i in rng.permutation(len(pool)).tolist() if played[i]["win"]]
        chosen = sorted((lost + rest)[:max(0, im.dagger_games - len(swept_lost))])
        return (swept_lost + [pool[i] for i in chosen])[:im.dagger_games]

    def _slow_sweep_games(self, swept: list[tuple[tuple[int, dict], dict]]) -> list[tuple[int, dict]]:
        """The sweep games of ``env.usr_conf``'s count that the learner wins at least ``sweep_slow_margin`` steps
        slower than the expert's own game of the same set, the slowest first (ties in sweep order)."""
        main = [i for i, (game, _) in enumerate(swept) if self._main(game[1]["treasure_id"])]
        games = [swept[i][0] for i in main]
        expert = [self.im.expert, self.im.tie_break]
        if changed := self.im.changed_refine_settings():  # (the defaults leave the key as it was before refine_*)
            expert.append(changed)
        key = hashlib.sha256(json.dumps([*expert, self.env_kwargs, games], sort_keys=True,
                                        default=str).encode("utf-8")).hexdigest()
        if self._reference is None or self._reference["key"] != key:  # once per run: a resume keeps it
            played = self.collector.play_expert(self.env_kwargs, games, self.im.expert, self.im.tie_break,
                                                self.im.refine_settings())
            self._reference = {"key": key, "steps": [g["steps"] for g in played]}
        over = [(swept[i][1]["steps"] - ref, i) for i, ref in zip(main, self._reference["steps"], strict=True)
                if won(swept[i][1])]
        self._screen["sweep_steps_over_expert"] = float(np.mean([o for o, _ in over])) if over else 0.0
        slow = sorted((-o, i) for o, i in over if o >= self.im.sweep_slow_margin)
        self._screen["sweep_slow"] = len(slow)
        return [swept[i][0] for _, i in slow]

    def _sample_lost(self, lost: list[tuple[int, dict]], round_no: int) -> list[tuple[int, dict]]:
        """``dagger_games`` of the ``lost`` sweep games (``imitation.sweep_all``): those of ``env.usr_conf``'s
        treasure count first, then the others in a random order drawn from ``(seed, round)``."""
        main = [game for game in lost if self._main(game[1]["treasure_id"])]
        other = [game for game in lost if not self._main(game[1]["treasure_id"])]
        rng = np.random.default_rng([self.config.seed, round_no, 5])
        return (main + [other[i] for i in rng.permutation(len(other)).tolist()])[:self.im.dagger_games]

    def expert_name(self) -> str:
        """The expert that labels this run's states, as a dataset records it: ``imitation.expert``, with the
        ``refine_*`` settings that differ from the defaults (only ``oracle-refined`` takes any: the config refuses
        them with another expert; e.g. ``oracle-refined (beam_width 30, max_refines 8)``) and a ``tie_break`` other
        than ``index``."""
        extra = [f"{k} {v}" for k, v in self.im.changed_refine_settings().items()]
        if self.im.tie_break != "index" and self.im.expert in ("oracle", "oracle-refined"):
            extra.append(f"tie_break {self.im.tie_break}")
        return f"{self.im.expert} ({', '.join(extra)})" if extra else self.im.expert

    def _main(self, treasure_ids) -> bool:
        """Whether a game's treasure set (ids) is of ``env.usr_conf``'s count, the leaderboard's."""
        return len(treasure_ids) == self.usr.treasure_num

    def sweep_games(self) -> list[tuple[int, dict]]:
        """The sweep (``imitation.sweep``): ``(env seed, usr_conf)`` of every treasure set of ``env.usr_conf``'s
        count first, then for each other count of ``imitation.treasure_counts`` its fixed set (the first ids of the
        pool, 3.. with the leaderboard's start and end) and ``sweep_other`` random sets drawn from ``eval_seed`` (each
        set once), or with ``sweep_all`` every set of each other count. Sets come from ``env.usr_conf``'s own pool:
        never its start or end id."""
        usr = self.usr
        pool = usr.treasure_pool()
        sets = [tuple(ids) for ids in itertools.combinations(pool, usr.treasure_num)]
        for count in sorted(set(self.im.treasure_counts) - {usr.treasure_num}):
            if self.im.sweep_all:
                sets += list(itertools.combinations(pool, count))  # the first is the fixed set, pool[:count]
                continue
            draw = replace(usr, treasure_random=1, treasure_num=count)
            rng = np.random.default_rng(self.config.eval_seed + count)
            sets += [tuple(pool[:count])] + [draw.draw_treasures(rng) for _ in range(self.im.sweep_other)]
        base = {**usr.to_usr_conf(), "treasure_random": 0}
        unique = list(dict.fromkeys(sets))  # each set once, in order
        return [(game_seed(self.config.eval_seed, i), {**base, "treasure_num": len(ids), "treasure_id": list(ids)})
                for i, ids in enumerate(unique)]

    def _sweep(self, model) -> list[dict]:
        return self._play(model, self.sweep_games(), max_steps=self.im.dagger_max_steps)

    def select_key(self, summary: dict, swept: list[dict] | None) -> tuple:
        """What the best round is chosen by (the larger the better): with the sweep, fewer lost sweep games (of all
        counts, or with ``imitation.select_lost: main`` of ``env.usr_conf``'s count only), then the mean score over the
        sweep's sets of ``env.usr_conf``'s count; without it, the held-out mean score."""
        if swept is None:
            return (summary["mean_score"],)
        main = [g for g in swept if self._main(g["treasure_ids"])]
        counted = main if self.im.select_lost == "main" else swept
        return (-sum(not won(g) for g in counted), float(np.mean([g["score"] for g in main])))

    def _evaluate_model(self, model) -> dict:
        """:meth:`_evaluate` for the model being trained, played batched (:meth:`_play`): the same games (the
        leaderboard protocol's sets and per-game env seeds) and the same figures as ``evaluate``."""
        usr = self.usr
        seed = self.config.eval_seed
        confs = protocol_configs("leaderboard", seed=seed, treasures=usr.treasure_num, games=self.config.eval_games,
                                 max_step=usr.max_step)
        played = self._play(model, [(game_seed(seed, i), conf) for i, conf in enumerate(confs)])
        return played_report(played, seed=seed, name="model", protocol="leaderboard",
                             map_name=self.venv.envs[0].unwrapped.game_map.name).summary()

    # ------------------------------------------------------------------------------------------ one round
    def play_round(self, model, dataset: ExpertDataset, collector: Collector, round_no: int) -> None:
        t0 = time.perf_counter()
        im = self.im
        with tempfile.TemporaryDirectory(prefix="sb3-realm-learner-") as tmp:
            if round_no == 0:
                games, learner, beta, source = training_games(self.config, 0, im.expert_games), None, 1.0, "expert"
            else:
                learner = str(Path(tmp) / "learner.zip")
                model.save(learner)
                games, beta = self._dagger_games(model, round_no), im.beta(round_no)
                source = f"dagger round {round_no} (beta {beta:g})"
            rollouts = collector.run(self.env_kwargs, games, expert=im.expert,
                                     learner=learner, beta=beta, seed=self.config.seed + round_no,
                                     max_steps=im.dagger_max_steps if learner else 0, overrun=im.dagger_overrun,
                                     tie_break=im.tie_break, takeover=im.dagger_takeover,
                                     refine=im.refine_settings())
        dataset.append(rollouts.block, source, expert=self.expert_name())
        collect_s = time.perf_counter() - t0
        played = rollouts.games
        data = dataset.all()  # the shards as they are in memory: no copy
        log_every = max(1, len(data) // im.batch_size // 20)
        base = self.updates

        def on_update(update: int, loss: float, accuracy: float) -> None:
            if update % log_every == 0:
                self.logger.record("imitation/loss", loss)
                self.logger.record("imitation/accuracy", accuracy)
                self.logger.dump(base + update)

        t1 = time.perf_counter()
        fit_kwargs = {"epochs": im.epochs if round_no == 0 else im.dagger_epochs, "batch_size": im.batch_size,
                      "final_lr": im.final_lr,
                      "learning_rate": im.learning_rate if round_no == 0 else im.dagger_learning_rate,
                      "ent_weight": im.ent_weight, "l2_weight": im.l2_weight,
                      "rng": np.random.default_rng([self.config.seed, round_no, 2]), "on_update": on_update}
        if self.recurrent:
            stats = fit_sequences(model.policy, data, window=im.window, **fit_kwargs)
        else:
            stats = fit(model.policy, data, masked=self.masked, **fit_kwargs)
        del data
        fit_s = time.perf_counter() - t1
        self.updates += stats.updates
        model.num_timesteps = dataset.states  # env steps behind the model: the states it learnt from
        t2 = time.perf_counter()
        summary = self._evaluate_model(model)
        self._swept = self._sweep(model) if im.sweep else None
        key = self.select_key(summary, self._swept)
        # a resume that turned imitation.sweep on or off compares unlike keys: the choice starts afresh there
        if len(key) != len(self.best_key) or key >= self.best_key:
            self.best_key, self.best_score, self.best_round = key, summary["mean_score"], round_no
            atomic_write(self.run_dir / "best_model.zip", model.save)
        sweep = {} if self._swept is None else {"sweep_games": len(self._swept),
                                                "sweep_lost": sum(not won(g) for g in self._swept),
                                                "sweep_mean_score": key[1]}
        eval_s = time.perf_counter() - t2
        self.elapsed += time.perf_counter() - t0
        entry = {
            "round": round_no, "source": source, "games_played": len(played), "states": dataset.states,
            "new_states": len(rollouts.block),
            "learner_wins": int(sum(won(g) and not g["taken_over"] for g in played)),
            "games_cut": int(sum(g["cut"] for g in played)),
            "games_taken_over": int(sum(bool(g["taken_over"]) for g in played)),
            "learner_mean_score": float(np.mean([0.0 if g["taken_over"] else g["score"] for g in played])),
            "bc_loss": stats.loss,
            "bc_accuracy": stats.accuracy, "bc_entropy": stats.entropy, "updates": self.updates,
            "eval_mean_score": summary["mean_score"], "eval_wins": summary["wins"],
            "eval_full_wins": summary["full_wins"], "eval_games": summary["games"],
            "eval_mean_steps": summary["mean_steps"], "eval_missed_treasure_games":
                summary["games_with_missed_treasure"], "oracle_mean_score": self.oracle_score,
            "best_round": self.best_round, "collect_s": round(collect_s, 2), "fit_s": round(fit_s, 2),
            "eval_s": round(eval_s, 2), "wall_s": round(self.elapsed, 2), **self._screen, **sweep,
        }
        self._screen = {}
        self.history.append(entry)
        for key, value in (("eval/mean_score", summary["mean_score"]), ("eval/win_rate", summary["win_rate"]),
                           ("eval/mean_steps", summary["mean_steps"]), ("eval/best_mean_score", self.best_score),
                           ("imitation/epoch_accuracy", stats.accuracy), ("imitation/dataset_states", dataset.states),
                           ("imitation/wall_s", self.elapsed)):
            self.logger.record(key, value)
        if sweep:
            self.logger.record("eval/sweep_lost", sweep["sweep_lost"])
            self.logger.record("eval/sweep_mean_score", sweep["sweep_mean_score"])
        if self.oracle_score is not None:
            self.logger.record("eval/gap_to_oracle", self.oracle_score - summary["mean_score"])
        self.logger.dump(self.updates)
        self.round = round_no
        save_checkpoint(model, self.run_dir / "checkpoints", algo=self.config.algo.name, extra={"imitation": {
            "round": round_no, "shards": len(dataset.meta["shards"]), "history": self.history,
            "best_score": self.best_score, "best_key": list(self.best_key), "best_round": self.best_round,
            "oracle_score": self.oracle_score, "reference": self._reference,
            "elapsed": self.elapsed, "updates": self.updates}})
        for old in list_checkpoints(self.run_dir / "checkpoints")[:-self.config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
        text = json.dumps({"history": self.history, "best_round": self.best_round, "best_mean_score": self.best_score,
                           "oracle_mean_score": self.oracle_score}, indent=2) + "\n"
        atomic_write(self.run_dir / "eval.json", lambda f: f.write(text.encode("utf-8")))


def _prepare(config: TrainConfig, resume) -> tuple[Path, tuple[Path, dict, dict] | None]:
    """Validate everything and write nothing yet: the run folder and, when resuming, its last checkpoint and the
    hyperparameters the config changes (see ``training.run.resume_changes``)."""
    config.validate()
    _check_config(config)
    run_dir = check_writable_folder(resume if resume is not None else config.out, "run directory")
    if resume is None:
        start_new_run(config, run_dir)
        if (run_dir / "dataset" / "meta.json").exists():
            raise ValueError(f"run directory {str(run_dir)!r} already holds a dataset; use --resume {run_dir} or "
                             "--out to start a new run elsewhere")
        return run_dir, None
    found = latest_checkpoint(run_dir / "checkpoints")
    if found is None:
        raise ValueError(f"--resume {str(run_dir)!r}: no intact checkpoint under {run_dir / 'checkpoints'} (the "
                         "first round never finished): start the run again with --out")
    if "imitation" not in found[1]:
        raise ValueError(f"--resume {str(run_dir)!r}: its checkpoints are not an imitation run's (resume a training "
                         "run with sb3-realm train --resume)")
    # its index and every shard the checkpoint counts must be intact before anything is written
    ExpertDataset.open(run_dir / "dataset").verify(found[1]["imitation"]["shards"])
    return run_dir, (*found, resume_changes(run_dir, config))


def imitate(config: TrainConfig, resume: str | Path | None = None, progress: bool = False):
    """Run (or resume) an imitation run; returns ``(model, run_dir)`` where ``model`` is the best model.

    :param resume: a run folder to continue from its last complete round (its own config, with overrides such as
        more ``imitation.rounds``).
    :param progress: a progress bar over the rounds.

    The run folder is held for the run (:func:`~sb3_realm.atomic.hold_folder`): another command on it is refused.
    """
    config.validate()
    folder = check_writable_folder(resume if resume is not None else config.out, "run directory")
    with hold_folder(folder, "run directory"):
        return _imitate(config, resume, progress)


def _imitate(config: TrainConfig, resume, progress: bool):
    run_dir, found = _prepare(config, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(config, run_dir / "config.yaml")
    threads = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)
    run = _Run(config, run_dir)
    try:
        if found is not None:
            model, shards = run.load(*found)
            dataset = ExpertDataset.open(run_dir / "dataset")
            dataset.truncate(shards)
        else:
            model = run.new_model()
            dataset = ExpertDataset.create(run_dir / "dataset", expert=run.expert_name(),
                                           map_name=run.venv.envs[0].unwrapped.game_map.name)
        dataset.check_compatible(model.observation_space, model.action_space.n,
                                 getattr(model, "feature_version", "1"))
        rounds = range(run.round + 1, config.imitation.rounds + 1)
        bar = None
        if progress and len(rounds):
            from tqdm.auto import tqdm

            bar = tqdm(total=config.imitation.rounds + 1, initial=run.round + 1, desc="imitate", unit="round")
        with Collector(config.imitation.workers) as collector:
            run.collector = collector
            if run.oracle_score is None and config.imitation.expert == "oracle":
                run.oracle_score = run._evaluate("oracle")["mean_score"]
            for round_no in rounds:
                run.play_round(model, dataset, collector, round_no)
                if bar:
                    last = run.history[-1]
                    bar.set_postfix(score=f"{last['eval_mean_score']:.1f}", acc=f"{last['bc_accuracy']:.3f}",
                                    states=last["states"])
                    bar.update()
        if bar:
            bar.close()
        best = run_dir / "best_model.zip"
        atomic_write(run_dir / "final_model.zip", lambda f: f.write(best.read_bytes()))
        final = load_model(run_dir / "final_model.zip", algo_cls=algorithm_class(config.algo.name),
                           device=config.device)
    finally:
        torch.set_num_threads(threads)
        run.venv.close()
        run.logger.close()
    return final, run_dir
