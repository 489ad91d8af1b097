"""The proof behind ``build-submission --check``, in guarded processes that cannot import sb3_realm, SB3 or
gymnasium, on a stand-in of the platform's framework: the shared one (``sb3_realm.submission``'s
``platform_stub/framework.py``, :func:`check_on_shared_stand_in`) or a layout's own (its ``harness.py`` beside its
stand-in, :func:`check_on_own_stand_in`). Each layout (:mod:`sb3_realm.export.layouts`) runs one of them with its own
defaults. On the shared stand-in:

1. the upload folder loads as the platform loads it (its conf, the algorithm registry, the registrations, the
   preload keys; a folder without ``conf/`` gets the stand-in's minimal conf with the folder's lines to merge);
2. a training task with the preload keys runs its workflow on the simulator until at least ``task_episodes``
   episodes have ended and two models are saved, without an ERROR line (platform failures injected: ``env.reset``
   and ``score`` sometimes None);
3. every model the task saved holds the exported weights, tensor for tensor (same keys, ``torch.equal``); for a
   package built with ``--workflow finetune``, whose later saves hold fine-tuned weights, the first save does (the
   workflow takes it before any sample reaches the learner);
4. every save, loaded as the platform's actor loads a model to evaluate (the model first, then its conf's preload
   keys, which travel in every save), plays with its own weights, not the preload's (:func:`saves_play_as_themselves`);
5. the evaluation loop on the first saved model, loaded that way (an ERROR line of that loading fails the check), and
   the SB3 model
   (``model.predict(deterministic=True)`` on the training env's observation) see the same states: every action must
   be identical, over the leaderboard games and more games until ``min_states`` states (competition-shaped
   observations, ``env_info`` None right after a reset, as the platform's loop does); then the SB3 model plays the
   leaderboard games on its own and the scores must be identical too."""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ..agents import SB3Policy, play_episode
from ..agents.submission import (
    PlatformProcess,
    SubmissionProcess,
    TrainingTaskProcess,
    env_kwargs_of,
    manifest_game,
    platform_obs,
    read_manifest,
)
from ..atomic import inside
from ..evaluation import game_seed, protocol_configs
from ..submission import BLOCKED_MODULES
from ..submission.stand_in import weights_digest

__all__ = [
    "TASK_OVERRIDES",
    "check_on_own_stand_in",
    "check_on_shared_stand_in",
    "run_own_platform_task",
    "run_platform_task",
    "same_weights",
    "saves_play_as_themselves",
]

# the stand-in's training task: small batches and frequent model dumps, as the official train_test.py sets them, so
# that the learner trains and the actors sync to the model pool within a few games
TASK_OVERRIDES = {"train_batch_size": 64, "replay_buffer_capacity": 1024, "dump_model_freq": 5}


def _reference(model_path, trust_pickle, manifest: dict):
    """The policy the package must play as: the SB3 model, with the game's search around it where the package was
    built with one (its ``model/spec.json`` records the settings)."""
    policy = SB3Policy(model_path, trust_pickle=trust_pickle)
    settings = (manifest.get("spec") or {}).get("search")
    searched = manifest_game(manifest).submission.searched
    if settings and searched is not None:
        return searched(policy, settings)
    return policy


def same_weights(path_a: str | os.PathLike, path_b: str | os.PathLike) -> bool:
    """Whether two state-dict files hold the same tensors under the same keys (``torch.equal`` on each; the keys'
    order aside)."""
    a, b = (torch.load(p, map_location="cpu", weights_only=True) for p in (path_a, path_b))
    return set(a) == set(b) and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)


def _saved_file(save: dict, task_dir: str | os.PathLike) -> Path | None:
    """The weights file of a save the task reported, or None when it is not a file inside the task's folder
    ``task_dir`` (the report comes from the process that ran the package's code)."""
    saved = Path(save["model_dir"]) / "ckpt" / f"model.ckpt-{int(save['id'])}.pkl"
    inside_task = Path(os.path.realpath(saved)).is_relative_to(Path(os.path.realpath(task_dir)))
    return saved if inside_task and saved.is_file() else None


def _judge_task(report: dict, exported: Path, episodes: int, task_dir: str | os.PathLike,
                workflow: str = "keep") -> dict:
    """A finished training task's report with each save compared to the ``exported`` weights file
    (``exported_weights``, ``exported_weights_kept``, ``first_save_exported``) and ``ok``: no crash or ERROR line,
    ``episodes`` games ended, two saves, every one the exported weights (``workflow`` ``finetune``: the first one),
    no blocked module imported. A save is read only from inside the task's folder ``task_dir``."""
    for save in report["saves"]:
        saved = _saved_file(save, task_dir)
        save["exported_weights"] = saved is not None and same_weights(saved, exported)
    saves = report["saves"]
    report["exported_weights_kept"] = bool(saves) and all(s["exported_weights"] for s in saves)
    report["first_save_exported"] = bool(saves) and saves[0]["exported_weights"]
    report["workflow"] = workflow
    weights = report["first_save_exported"] if workflow == "finetune" else report["exported_weights_kept"]
    report["ok"] = (report["crashed"] is None and not report["errors"] and report["episodes"] >= episodes
                    and len(saves) >= 2 and weights and not set(report["modules"]) & set(BLOCKED_MODULES))
    return report


def saves_play_as_themselves(saves: list[dict], task_dir: str | os.PathLike, loaded) -> bool:
    """Whether every save of a task plays with its own weights once loaded as the platform's actor loads a model to
    evaluate (the model, then the preload keys of its conf: their file, the exported weights, travels in every save
    and must not replace a fine-tuned save's). ``loaded(save)`` loads one in the stand-in's guarded process and
    returns ``(digest, errors)``: the :func:`~sb3_realm.submission.stand_in.weights_digest` of the weights its Agent
    then holds and the loading's ERROR lines. Each save gets ``plays_own_weights`` (and ``load_errors``)."""
    for save in saves:
        saved = _saved_file(save, task_dir)
        digest, errors = loaded(save)
        own = None if saved is None else weights_digest(torch.load(saved, map_location="cpu", weights_only=True))
        save["plays_own_weights"] = own is not None and digest == own and not errors
        save["load_errors"] = list(errors)
    return bool(saves) and all(s["plays_own_weights"] for s in saves)


def run_platform_task(folder: str | os.PathLike, task_dir: str | os.PathLike, *, map_path: str | None = None,
                      seed: int = 0, episodes: int = 3, max_step: int = 300, fault_rate: float = 0.02) -> dict:
    """A training task of the upload ``folder`` on the platform stand-in (step 2 of the module docstring), in
    ``task_dir``; returns the task's report with ``exported_weights_kept`` (step 3)."""
    manifest = read_manifest(folder)
    game = manifest_game(manifest)
    sim = game.env.make(**env_kwargs_of(manifest, map_path))
    platform_env = game.submission.competition_env
    if platform_env is None:  # a game without a submission builds no package to get here
        raise ValueError(f"{game.title} has no platform env (GameSpec.submission.competition_env): its packages "
                         "cannot be checked")
    env = platform_env(sim.game_map, sim.rules, seed=seed, fault_rate=fault_rate, fault_seed=seed + 1)
    options = {"episodes": episodes, "saves": 2, "max_episodes": max(30, 10 * episodes), "step_seconds": 1.0,
               "overrides": TASK_OVERRIDES}
    with TrainingTaskProcess(folder, task_dir, options, max_step=max_step) as task:
        report = task.run(env)
    if "platform_error" in report:
        return {**report, "ok": False, "saves": [], "exported_weights_kept": False}
    return _judge_task(report, inside(folder, manifest["weights"]["file"]), episodes, task_dir,
                       manifest.get("platform_training", "keep"))


def _load_shared(save: dict, manifest: dict, task_dir: str | os.PathLike) -> tuple[str | None, list[str]]:
    """A save loaded on the shared stand-in as the platform's actor loads a model to evaluate: ``(digest, errors)``
    (:func:`saves_play_as_themselves`)."""
    try:
        with SubmissionProcess(save["model_dir"], layout=manifest["layout"], model_pool=Path(task_dir) / "model_pool",
                               game=manifest_game(manifest).name) as sub:
            return sub.hello.get("weights_sha256"), list(sub.hello.get("errors", []))
    except RuntimeError as exc:  # it does not load as the platform loads it
        return None, [str(exc)]


def check_on_shared_stand_in(folder: str | os.PathLike, model_path: str | os.PathLike, *, games: int, max_step: int,
                             map_path: str | None = None, seed: int = 0, treasures: int = 9, min_states: int = 10_000,
                             task_episodes: int = 3, task_max_step: int = 300, progress: bool = False,
                             trust_pickle: bool | None = None) -> dict:
    """Prove, on the shared stand-in of the platform's framework (``platform_stub/``), that the upload ``folder``
    survives a platform training task with the exported weights and that the model it saves acts exactly like the SB3
    model ``model_path`` (module docstring): ``games`` leaderboard games of at most ``max_step`` steps on the map
    ``map_path`` (None: the training run's).

    :return: a report; ``ok`` is True when the task passed, kept the weights, and every action and every
        leaderboard score is identical.
    """
    manifest = read_manifest(folder)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batch-1 inference; more threads only wait on each other (and on the submission)
    try:
        with tempfile.TemporaryDirectory(prefix="sb3-realm-platform-") as task_dir:
            task = run_platform_task(folder, task_dir, map_path=map_path, seed=seed, episodes=task_episodes,
                                     max_step=min(task_max_step, max_step))
            if not task["saves"]:
                return {"ok": False, "platform_task": _summary(task), "states": 0, "identical_actions": False,
                        "identical_scores": False}
            first = task["saves"][0]
            try:
                sub = SubmissionProcess(first["model_dir"], layout=manifest["layout"],
                                        model_pool=Path(task_dir) / "model_pool", game=manifest_game(manifest).name)
            except RuntimeError as exc:  # the saved model does not load as the platform loads it
                return {"ok": False, "platform_task": _summary(task), "evaluated_model_id": first["id"],
                        "evaluation_error": str(exc), "states": 0, "identical_actions": False,
                        "identical_scores": False}
            with sub:
                report = _parity(sub, _reference(model_path, trust_pickle, manifest), manifest, map_path, games,
                                 seed, treasures, max_step, min_states, progress)
                report["evaluation_errors"] = list(sub.hello.get("errors", []))  # ERROR lines of loading the save
                hello = sub.hello
            report["saves_play_as_themselves"] = saves_play_as_themselves(
                task["saves"], task_dir, lambda save: (hello.get("weights_sha256"), report["evaluation_errors"])
                if save is first else _load_shared(save, manifest, task_dir))
    finally:
        torch.set_num_threads(threads)
    report["evaluated_model_id"] = first["id"]
    report["platform_task"] = _summary(task)
    report["ok"] = (report["ok"] and task["ok"] and not report["evaluation_errors"]
                    and report["saves_play_as_themselves"])
    return report


def _summary(task: dict) -> dict:
    """The task's report without its log and module list (the log's ERROR lines stay)."""
    return {k: v for k, v in task.items() if k not in ("log", "modules")} | {"saves": _save_summaries(task["saves"])}


def _save_summaries(saves: list[dict]) -> list[dict]:
    """What the report says of each save: its id, whether it holds the exported weights and whether it plays its
    own once loaded for an evaluation (with the loading's ERROR lines)."""
    keys = ("id", "exported_weights", "plays_own_weights", "load_errors")
    return [{k: s[k] for k in keys if k in s} for s in saves]


def _parity(sub, reference, manifest, map_path, games, seed, treasures, max_step, min_states, progress) -> dict:
    game = manifest_game(manifest)
    env = game.env.make(**env_kwargs_of(manifest, map_path))
    leaderboard = protocol_configs("leaderboard", seed=seed, games=games, treasures=treasures, max_step=max_step,
                                   game=game.name)
    extra = (protocol_configs("leaderboard", seed=seed + 1 + k, games=1, treasures=int(t), max_step=max_step,
                              game=game.name)[0]
             for k, t in enumerate(itertools.cycle(game.submission.parity_treasure_counts)))
    bar = tqdm(total=min_states, desc="check", unit="state") if progress else None
    mismatches: list[dict] = []
    states, n_mismatch, sub_scores, index = 0, 0, [], 0
    for conf in itertools.chain(leaderboard, extra):
        if index >= len(leaderboard) and states >= min_states:
            break
        obs, _ = env.reset(seed=game_seed(seed, index), options=conf)
        reference.reset(env)
        done, info = False, {}
        while not done:
            action = sub.act(*platform_obs(env))
            expected = reference.act(env, obs)
            if action != expected:
                n_mismatch += 1
                if len(mismatches) < 20:
                    mismatches.append({"game": index, "step": int(env.game.step_no), "submission": action,
                                       "sb3": expected})
            states += 1
            if bar:
                bar.update()
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        if index < len(leaderboard):
            sub_scores.append(float(info["score"]))
        index += 1
    if bar:
        bar.close()
    sb3_scores = [float(play_episode(env, reference, game_seed(seed, i), conf)["score"])  # the SB3 model alone
                  for i, conf in enumerate(leaderboard)]
    identical = n_mismatch == 0 and sub_scores == sb3_scores
    return {"ok": identical, "states": states, "games": index, "leaderboard_games": len(leaderboard),
            "identical_actions": n_mismatch == 0, "mismatched_states": n_mismatch, "first_mismatches": mismatches,
            "identical_scores": sub_scores == sb3_scores, "submission_scores": sub_scores, "sb3_scores": sb3_scores,
            "mean_score": float(np.mean(sub_scores)), "torch_threads": sub.hello.get("torch_threads", 1),
            "imported_top_level_modules": sub.hello["modules"], "map": env.game_map.name, "algo": reference.algo}


# --------------------------------------------------------------------------------------- a layout with its own stand-in
class _TaskEnv:
    """The platform's env of a training task on a layout's own stand-in (its platform serves ``env_obs``): the game's
    competition env over ``maps`` (id -> map), each game at most ``max_step`` steps, with the platform's failures
    injected (``env.reset`` returning None, ``env_reward`` None) at ``fault_rate``."""

    def __init__(self, game, maps, seed: int, max_step: int, fault_rate: float) -> None:
        self.env = game.submission.competition_env(maps, seed=seed)
        self.max_step, self.fault_rate = max_step, fault_rate
        self.rng = np.random.default_rng(seed + 1)
        self.faults = 0

    def _fault(self) -> bool:
        hit = bool(self.rng.random() < self.fault_rate)
        self.faults += hit
        return hit

    def reset(self, usr_conf):
        if self._fault():
            return None
        if isinstance(usr_conf, dict) and isinstance(usr_conf.get("env_conf"), dict):
            inner = dict(usr_conf["env_conf"])
            inner["max_step"] = min(int(inner.get("max_step", self.max_step)), self.max_step)
            usr_conf = {"env_conf": inner}
        return self.env.reset(usr_conf)

    def step(self, act):
        env_reward, env_obs = self.env.step(act)
        return (None if self._fault() else env_reward), env_obs


def _open_maps(game, maps_dir: str | None) -> dict:
    """Map id -> map for the competition env: the open maps of ``maps_dir``, else the package's own ten (ids 1..10
    stand for own_1..own_10, so that a task runs without Tencent's files)."""
    if maps_dir is not None:
        return {k: game.maps.load(os.path.join(maps_dir, game.maps.competition_file.replace("<k>", str(k))))
                for k in range(1, 11)}
    return {k: game.maps.builtin[f"own_{k}"]() for k in range(1, 11)}


def run_own_platform_task(folder: str | os.PathLike, task_dir: str | os.PathLike, *, maps_dir: str | None = None,
                          seed: int = 0, episodes: int = 3, max_step: int = 300, fault_rate: float = 0.02) -> dict:
    """A training task of the code package ``folder`` on its layout's own stand-in (its preload keys, its workflow, its
    saves), in ``task_dir``; returns the task's report with ``exported_weights_kept`` (every save holds the exported
    weights, tensor for tensor) and ``ok``."""
    manifest = read_manifest(folder)
    game = manifest_game(manifest)
    env = _TaskEnv(game, _open_maps(game, maps_dir), seed, max_step, fault_rate)
    # the workflow saves after its first game, then every 30 minutes of the task's (simulated) clock: games enough
    # for two saves even when each lasts a few steps
    options = {"episodes": episodes, "saves": 2, "max_episodes": max(400, 10 * episodes), "step_seconds": 1.0,
               "overrides": TASK_OVERRIDES}
    with PlatformProcess(manifest["layout"], "train", folder, str(Path(task_dir).resolve()),
                         json.dumps(options)) as task:
        done = task.serve(env.reset, env.step)
    if "platform_error" in done:
        return {"platform_error": done["platform_error"], "ok": False, "saves": [], "exported_weights_kept": False,
                "errors": [], "crashed": None}
    report = done["report"]
    report["faults_injected"] = env.faults
    return _judge_task(report, inside(folder, manifest["weights"]["file"]), episodes, task_dir,
                       manifest.get("platform_training", "keep"))


def _load_own(save: dict, manifest: dict) -> tuple[str | None, list[str]]:
    """A save loaded on its layout's own stand-in as the platform's evaluation loads it (an evaluation of no game):
    ``(digest, errors)`` (:func:`saves_play_as_themselves`)."""
    with PlatformProcess(manifest["layout"], "eval-model", save["model_dir"]) as evaluation:
        done = evaluation.serve(lambda usr_conf: None, lambda act: (None, None))
    if "platform_error" in done:
        return None, [done["platform_error"]]
    return done["report"].get("weights_sha256"), list(done["report"]["errors"])


class _ParityServer:
    """The evaluation loop's environment for the parity check: the game's Gym env playing ``configs`` (then more
    games of the same maps until ``min_states`` states), each state's ``env_obs`` to the submission and its action
    compared with the SB3 model's on the same state."""

    def __init__(self, env, reference, configs: list[dict], seed: int, min_states: int, bar) -> None:
        self.env, self.reference, self.configs, self.seed = env, reference, configs, seed
        self.min_states, self.bar = min_states, bar
        self.index, self.states, self.n_mismatch = -1, 0, 0
        self.mismatches: list[dict] = []
        self.scores: list[float] = []
        self.obs, self.score, self.expected, self.done = None, 0.0, None, True

    def config(self, index: int) -> dict:
        return self.configs[index % len(self.configs)]

    def reset(self, usr_conf):
        if self.index + 1 >= len(self.configs) and self.states >= self.min_states:
            return None  # the end of the evaluation
        self.index += 1
        self.obs, _ = self.env.reset(seed=game_seed(self.seed, self.index), options=self.config(self.index))
        self.reference.reset(self.env)
        self.score, self.expected, self.done = 0.0, None, False
        return self.env.platform_obs()

    def sent(self) -> None:
        """The SB3 model's action on the state just sent, while the submission works on it."""
        self.expected = None if self.done else self.reference.act(self.env, self.obs)

    def step(self, act: int):
        expected = self.reference.act(self.env, self.obs) if self.expected is None else self.expected
        if act != expected:
            self.n_mismatch += 1
            if len(self.mismatches) < 20:
                self.mismatches.append({"game": self.index, "step": int(self.env.game.step_no), "submission": act,
                                        "sb3": int(expected)})
        self.states += 1
        if self.bar is not None:
            self.bar.update()
        self.obs, _, terminated, truncated, _ = self.env.step(act)
        score = float(self.env.game.total_score)  # the competition's score, shown to the workflow as env_reward
        reward, self.score = score - self.score, score
        self.expected, self.done = None, bool(terminated or truncated)
        if (terminated or truncated) and self.index < len(self.configs):
            self.scores.append(self.score)
        env_obs = self.env.platform_obs()
        return {"env_id": env_obs["env_id"], "frame_no": env_obs["frame_no"], "reward": reward}, env_obs


def check_on_own_stand_in(folder: str | os.PathLike, model_path: str | os.PathLike, *, maps_dir: str | None = None,
                          games: int = 10, seed: int = 0, max_step: int | None = None, min_states: int = 10_000,
                          task_episodes: int = 3, task_max_step: int = 300, progress: bool = False,
                          trust_pickle: bool | None = None, settings: tuple[str, ...] | None = None) -> dict:
    """The proof for a code package on its layout's own stand-in of the platform's framework (its ``harness.py``,
    where the platform hands the Agent ``env_obs``): its training task with the preload keys saves the exported weights
    unchanged (``--workflow finetune``: its first save), every save plays with its own weights once loaded as the
    platform loads a model to evaluate, and the platform's evaluation loop on the first saved model plays the SB3
    model's action on every
    state (``games`` games of the game's default protocol under each of ``settings``, then more until
    ``min_states`` states), with identical scores on those games (the SB3 model then plays them alone).

    :param settings: the game's named settings the games are played under (None: all of them, e.g. Gorge Chase's
        ``default`` and ``final``, the final round's, which a leaderboard evaluation may set); the report names
        each with its ``usr_conf`` values (``settings``)."""
    manifest = read_manifest(folder)
    game = manifest_game(manifest)
    played = tuple(game.settings) if settings is None else tuple(settings)
    for name in played:
        game.check_settings(name, "--check settings", [game])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with tempfile.TemporaryDirectory(prefix="sb3-realm-platform-") as task_dir:
            task = run_own_platform_task(folder, task_dir, maps_dir=maps_dir, seed=seed, episodes=task_episodes,
                                         max_step=task_max_step)
            summary = _summary(task)
            if not task["saves"]:
                return {"ok": False, "platform_task": summary, "states": 0, "identical_actions": False,
                        "identical_scores": False}
            first = task["saves"][0]
            protocol = next(iter(game.evaluation.protocols))
            configs = protocol_configs(protocol, seed=seed, max_step=max_step, game=game.name)
            configs = [configs[(i * len(configs)) // games] for i in range(games)] if games < len(configs) else configs
            keep = ("max_step",) if max_step is not None else ()
            configs = [game.apply_settings(name, conf, keep=keep) for name in played for conf in configs]
            env = game.env.make()
            reference = _reference(model_path, trust_pickle, manifest)
            bar = tqdm(total=min_states, desc="check", unit="state") if progress else None
            server = _ParityServer(env, reference, configs, seed, min_states, bar)
            with PlatformProcess(manifest["layout"], "eval-model", first["model_dir"]) as evaluation:
                done = evaluation.serve(server.reset, server.step, server.sent)
            if bar is not None:
                bar.close()
            first_loaded = ((None, [done["platform_error"]]) if "platform_error" in done else
                            (done["report"].get("weights_sha256"), list(done["report"]["errors"])))
            own = saves_play_as_themselves(task["saves"], task_dir, lambda save: first_loaded if save is first
                                           else _load_own(save, manifest))
            summary = _summary(task)
    finally:
        torch.set_num_threads(threads)
    if "platform_error" in done:
        return {"ok": False, "platform_task": summary, "evaluated_model_id": first["id"],
                "evaluation_error": done["platform_error"], "states": server.states, "identical_actions": False,
                "identical_scores": False}
    sb3_scores = [float(play_episode(env, reference, game_seed(seed, i), conf)["score"])
                  for i, conf in enumerate(configs)]
    leaked = sorted(set(done["report"]["modules"]) & set(BLOCKED_MODULES))
    identical = server.n_mismatch == 0 and server.scores == sb3_scores
    return {"ok": identical and task["ok"] and not leaked and not done["report"]["errors"] and own,
            "saves_play_as_themselves": own,
            "states": server.states, "games": server.index + 1, "protocol_games": len(configs),
            "protocol": protocol, "identical_actions": server.n_mismatch == 0,
            "mismatched_states": server.n_mismatch, "first_mismatches": server.mismatches,
            "identical_scores": server.scores == sb3_scores, "submission_scores": server.scores,
            "sb3_scores": sb3_scores, "mean_score": float(np.mean(server.scores)) if server.scores else 0.0,
            "evaluation_errors": done["report"]["errors"], "imported_top_level_modules": done["report"]["modules"],
            "leaked_modules": leaked, "maps": sorted({c["map_name"] for c in configs}), "algo": reference.algo,
            "settings": {name: game.apply_settings(name, {}, keep=keep) for name in played},
            "evaluated_model_id": first["id"], "platform_task": summary}
