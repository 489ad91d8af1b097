"""robot_vacuum's 13.0.1 code package (layout ``vacuum13``), which the game brings itself: its folder
(:data:`LAYOUT_FOLDER`: ``layout.toml``, the ``agent_diy`` template, the stand-in ``harness.py`` and ``platform/``)
is named in the spec's ``Submission.layout_folders``, and its ``layout.toml`` names :class:`Vacuum13`.

The package is Gorge Chase 15.0.1's in shape (the rules' code-package section), so :class:`Vacuum13` is the
``gorge15`` layout's builder with this layout's data: built only into a copy of the user's own 13.0.1 package, the
weights inside the algorithm folder (where its preload keys look), the conf key for key as the user's with only the
training algorithm, the preload keys and the algorithm's table edited, the whole package in the zip.

Its check (:meth:`Vacuum13.check`) runs on the layout's own stand-in of the 13.0.1 framework (Gorge Chase's stand-in
with 8 actions), in processes that cannot import sb3_realm, SB3, gymnasium or this game: a training task of the
package with its preload keys keeps the exported weights, every save plays with its own weights, and the platform's
evaluation loop on the first save, fed the platform's ``env_obs`` dicts (:meth:`VacuumEnv.platform_obs
<sb3_realm_vacuum.env.VacuumEnv.platform_obs>`), plays the SB3 model's action on every state and its score on every
game.

Importing this module is cheap (no torch, no sb3_realm): :class:`Vacuum13` is made on first use."""

from __future__ import annotations

import os
from pathlib import Path

# Vacuum13 is made on first use (module __getattr__)
__all__ = ["LAYOUT_FOLDER", "LAYOUT_NAME", "Vacuum13", "check_package", "run_task"]  # noqa: F822

#: the layout's name (``--layout``, the manifests' ``layout``)
LAYOUT_NAME = "vacuum13"
#: the layout's folder: ``layout.toml``, the ``agent_diy`` template and the stand-in (``harness.py``, ``platform/``)
LAYOUT_FOLDER = Path(__file__).resolve().parent / "platform_layout"
#: the maps of a training task on the stand-in, by the platform's map id: the package's own ten (open maps need
#: Tencent's files, given with ``maps_dir``)
TASK_MAPS = tuple(f"own_{k}" for k in range(1, 11))
GAME = "sb3_realm_vacuum"  # this game's package, which the platform does not have either


def __getattr__(name: str):
    if name == "Vacuum13":
        cls = _layout_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _TaskEnv:
    """The platform's env of a training task: :class:`~sb3_realm_vacuum.observation.VacuumCompetitionEnv` over
    ``maps`` (id -> map), each game at most ``max_step`` steps, with the platform's failures injected (``env.reset``
    returning None, ``env_reward`` None) at ``fault_rate``."""

    def __init__(self, maps: dict, seed: int, max_step: int, fault_rate: float) -> None:
        import numpy as np

        from .observation import VacuumCompetitionEnv

        self.env = VacuumCompetitionEnv(maps, seed=seed)
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


class _ParityServer:
    """The evaluation loop's environment for the parity check: the game's Gym env playing ``configs`` (then more
    games of the same configs until ``min_states`` states), each state's ``env_obs`` to the package and its action
    compared with the SB3 model's on the same state; ``seeds(index)`` is the env seed of game ``index``."""

    def __init__(self, env, reference, configs: list[dict], seeds, min_states: int) -> None:
        self.env, self.reference, self.configs, self.seeds = env, reference, configs, seeds
        self.min_states = min_states
        self.index, self.states, self.n_mismatch = -1, 0, 0
        self.mismatches: list[dict] = []
        self.scores: list[float] = []
        self.obs, self.expected, self.done = None, None, True

    def reset(self, usr_conf):
        del usr_conf  # the evaluation's games are the check's
        if self.index + 1 >= len(self.configs) and self.states >= self.min_states:
            return None  # the end of the evaluation
        self.index += 1
        conf = self.configs[self.index % len(self.configs)]
        self.obs, _ = self.env.reset(seed=self.seeds(self.index), options=conf)
        self.reference.reset(self.env)
        self.expected, self.done = None, False
        return self.env.unwrapped.platform_obs()

    def sent(self) -> None:
        """The SB3 model's action on the state just sent, while the package works on it."""
        self.expected = None if self.done else int(self.reference.act(self.env, self.obs))

    def step(self, act: int):
        expected = int(self.reference.act(self.env, self.obs)) if self.expected is None else self.expected
        game = self.env.unwrapped.game
        if act != expected:
            self.n_mismatch += 1
            if len(self.mismatches) < 20:
                self.mismatches.append({"game": self.index, "step": int(game.step_no), "package": int(act),
                                        "sb3": expected})
        self.states += 1
        self.obs, _, terminated, truncated, info = self.env.step(act)
        self.expected, self.done = None, bool(terminated or truncated)
        if self.done and self.index < len(self.configs):
            self.scores.append(float(info["score"]))
        env_obs = self.env.unwrapped.platform_obs()
        # the platform's env_reward: the cells the robot cleaned in the step (the score it added)
        return {"env_id": env_obs["env_id"], "frame_no": env_obs["frame_no"],
                "reward": float(game.cleaned_cell is not None)}, env_obs


def _task_maps(maps_dir: str | None) -> dict:
    """Map id -> map of a training task: the open maps of ``maps_dir`` (``robot_vacuum_map_<k>.json``), else the
    package's own ten (:data:`TASK_MAPS`)."""
    from .maps import maps_folder_map, shipped_map

    if maps_dir is not None:
        return {k: maps_folder_map(maps_dir, k) for k in range(1, 11)}
    return {k: shipped_map(name) for k, name in enumerate(TASK_MAPS, 1)}


def _saved_weights(save: dict, task_dir: str | os.PathLike) -> Path | None:
    """The weights file of a save the task reported, when it is a file inside the task's folder ``task_dir`` (the
    report comes from the process that ran the package's code)."""
    saved = Path(save["model_dir"]) / "ckpt" / f"model.ckpt-{int(save['id'])}.pkl"
    inside_task = Path(os.path.realpath(saved)).is_relative_to(Path(os.path.realpath(task_dir)))
    return saved if inside_task and saved.is_file() else None


def _load_own(save: dict, layout: str) -> tuple[str | None, list[str]]:
    """A save loaded on the stand-in as the platform's evaluation loads it (an evaluation of no game): ``(digest of
    the weights it plays with, errors)``."""
    from sb3_realm.agents.guarded import PlatformProcess

    with PlatformProcess(layout, "eval-model", save["model_dir"]) as evaluation:
        done = evaluation.serve(lambda usr_conf: None, lambda act: (None, None))
    if "platform_error" in done:
        return None, [done["platform_error"]]
    return done["report"].get("weights_sha256"), list(done["report"]["errors"])


def _summary(task: dict) -> dict:
    """The task's report without its log and module list (the log's ERROR lines stay), each save by its id, whether
    it holds the exported weights and whether it plays them once loaded for an evaluation."""
    keys = ("id", "exported_weights", "plays_own_weights", "load_errors")
    saves = [{k: s[k] for k in keys if k in s} for s in task["saves"]]
    return {k: v for k, v in task.items() if k not in ("log", "modules")} | {"saves": saves}


def run_task(folder: str | os.PathLike, task_dir: str | os.PathLike, *, maps_dir: str | None = None, seed: int = 0,
             episodes: int = 3, max_step: int = 300, fault_rate: float = 0.02) -> dict:
    """A training task of the built package ``folder`` on the layout's stand-in (its preload keys, its workflow, its
    saves) in ``task_dir``, on the maps of ``maps_dir`` (None: the package's own ten), each game at most
    ``max_step`` steps, with the platform's failures injected at ``fault_rate``; returns the task's report with, for
    each save, ``exported_weights`` (it holds the exported weights, tensor for tensor), and ``exported_weights_kept``,
    ``first_save_exported`` and ``ok`` (no crash or ERROR line, ``episodes`` games ended, two saves, each the exported
    weights (``--workflow finetune``: the first one), no blocked module imported)."""
    import json

    from sb3_realm.agents.guarded import PlatformProcess
    from sb3_realm.agents.manifest import read_manifest
    from sb3_realm.atomic import inside
    from sb3_realm.export.check import TASK_OVERRIDES, same_weights
    from sb3_realm.submission import BLOCKED_MODULES

    manifest = read_manifest(folder)
    env = _TaskEnv(_task_maps(maps_dir), seed, max_step, fault_rate)
    # the workflow saves after its first game, then every 30 minutes of the task's (simulated) clock
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
    exported = inside(folder, manifest["weights"]["file"])
    saves = report["saves"]
    for save in saves:
        saved = _saved_weights(save, task_dir)
        save["exported_weights"] = saved is not None and same_weights(saved, exported)
    report["exported_weights_kept"] = bool(saves) and all(s["exported_weights"] for s in saves)
    report["first_save_exported"] = bool(saves) and saves[0]["exported_weights"]
    finetune = manifest.get("platform_training", "keep") == "finetune"
    weights = report["first_save_exported"] if finetune else report["exported_weights_kept"]
    report["ok"] = (report["crashed"] is None and not report["errors"] and report["episodes"] >= episodes
                    and len(saves) >= 2 and weights and not set(report["modules"]) & {*BLOCKED_MODULES, GAME})
    return report


def check_package(folder: str | os.PathLike, model_path: str | os.PathLike, *, maps_dir: str | None = None,
                  games: int = 5, seed: int = 0, max_step: int | None = None, min_states: int = 10_000,
                  task_episodes: int = 3, task_max_step: int = 300, trust_pickle: bool | None = None) -> dict:
    """The proof of ``build-submission --check`` for the built package ``folder`` and the SB3 model ``model_path``
    (the module docstring): :func:`run_task`, then the platform's evaluation loop on the task's first save, fed the
    ``env_obs`` of ``games`` games of the game's default protocol (spread over its maps) under each of the game's
    named settings, of at most ``max_step`` steps (None: the game's own), then more games until ``min_states``
    states; the SB3 model then plays the same games alone.

    :return: a report; ``ok`` is True when the task passed, every save plays its own weights, and every action and
        every score is identical (the package's, as the env and as the stand-in's loop counted it, and the SB3
        model's).
    """
    import tempfile

    import numpy as np
    import torch

    from sb3_realm.agents import SB3Policy, play_episode
    from sb3_realm.agents.guarded import PlatformProcess
    from sb3_realm.agents.manifest import manifest_game, read_manifest
    from sb3_realm.evaluation import game_seed, protocol_configs
    from sb3_realm.export.check import saves_play_as_themselves
    from sb3_realm.submission import BLOCKED_MODULES

    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"--games {games!r} must be an integer >= 1 (the check's games under each setting)")
    manifest = read_manifest(folder)
    game = manifest_game(manifest)
    protocol = next(iter(game.evaluation.protocols))
    configs = protocol_configs(protocol, seed=seed, max_step=max_step, game=game.name)
    configs = [configs[(i * len(configs)) // games] for i in range(games)] if games < len(configs) else configs
    keep = ("max_step",) if max_step is not None else ()
    played = tuple(game.settings)
    configs = [game.apply_settings(name, conf, keep=keep) for name in played for conf in configs]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batch-1 inference; more threads only wait on each other
    try:
        with tempfile.TemporaryDirectory(prefix="sb3-realm-vacuum-platform-") as task_dir:
            task = run_task(folder, task_dir, maps_dir=maps_dir, seed=seed, episodes=task_episodes,
                            max_step=task_max_step)
            if not task["saves"]:
                return {"ok": False, "platform_task": _summary(task), "states": 0, "identical_actions": False,
                        "identical_scores": False}
            first = task["saves"][0]
            env = game.env.make()
            reference = SB3Policy(model_path, trust_pickle=trust_pickle)
            server = _ParityServer(env, reference, configs, lambda index: game_seed(seed, index), min_states)
            with PlatformProcess(manifest["layout"], "eval-model", first["model_dir"]) as evaluation:
                done = evaluation.serve(server.reset, server.step, server.sent)
            first_loaded = ((None, [done["platform_error"]]) if "platform_error" in done else
                            (done["report"].get("weights_sha256"), list(done["report"]["errors"])))
            own = saves_play_as_themselves(task["saves"], task_dir, lambda save: first_loaded if save is first
                                           else _load_own(save, manifest["layout"]))
        summary = _summary(task)
        if "platform_error" in done:
            return {"ok": False, "platform_task": summary, "evaluated_model_id": first["id"],
                    "evaluation_error": done["platform_error"], "states": server.states,
                    "identical_actions": False, "identical_scores": False}
        sb3_scores = [float(play_episode(env, reference, game_seed(seed, i), conf)["score"])
                      for i, conf in enumerate(configs)]
    finally:
        torch.set_num_threads(threads)
    report = done["report"]
    leaked = sorted(set(report["modules"]) & {*BLOCKED_MODULES, GAME})
    # the scores: the package's games as the env counted them, as the stand-in's loop summed env_reward, and the SB3
    # model's own games
    stand_in_scores = [float(s) for s in report["scores"][:len(configs)]]
    identical_scores = server.scores == sb3_scores == stand_in_scores
    identical_actions = server.n_mismatch == 0 and server.states > 0
    return {"ok": identical_actions and identical_scores and task["ok"] and not leaked and not report["errors"]
            and own and report["games"] == server.index + 1,
            "saves_play_as_themselves": own, "states": server.states, "games": server.index + 1,
            "protocol_games": len(configs), "protocol": protocol, "identical_actions": identical_actions,
            "mismatched_states": server.n_mismatch, "first_mismatches": server.mismatches,
            "identical_scores": identical_scores, "package_scores": server.scores, "sb3_scores": sb3_scores,
            "stand_in_scores": stand_in_scores,
            "mean_score": float(np.mean(server.scores)) if server.scores else 0.0,
            "evaluation_errors": report["errors"], "imported_top_level_modules": report["modules"],
            "leaked_modules": leaked, "maps": sorted({c["map_name"] for c in configs}), "algo": reference.algo,
            "settings": {name: game.apply_settings(name, {}, keep=keep) for name in played},
            "evaluated_model_id": first["id"], "platform_task": summary}


def _layout_class():
    """:class:`Vacuum13`, made on first use: it subclasses sb3_realm's ``gorge15`` layout, whose import loads torch
    (seconds), which the game's registration never needs."""
    from sb3_realm.export.layouts.gorge15 import Gorge15

    class Vacuum13(Gorge15):
        """robot_vacuum's 13.0.1 layout (see the module docstring); its check plays 5 games of the game's default
        protocol (one a map of its five) under each of its named settings unless told otherwise."""

        code_package_required = ("the package is built into a copy of your own robot_vacuum 13.0.1 code package "
                                 "(the folder your Kaiwu client gives you, with kaiwu.json, conf/ and agent_diy/), "
                                 "never one written from nothing")
        check_games = 5

        def check(self, folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
                  maps_dir: str | None = None, games: int | None = None, seed: int = 0, treasures: int = 9,
                  max_step: int | None = None, min_states: int = 10_000, task_episodes: int = 3,
                  task_max_step: int = 300, progress: bool = False, trust_pickle: bool | None = None) -> dict:
            """:func:`check_package`: ``maps_dir`` holds the open maps of its training task (None: the package's own
            maps); ``games`` games (None: 5) of the game's default protocol under each of its named settings;
            ``map_path``, ``treasures`` and ``progress`` are not used."""
            del map_path, treasures, progress
            return check_package(folder, model_path, maps_dir=maps_dir,
                                 games=self.check_games if games is None else games, seed=seed, max_step=max_step,
                                 min_states=min_states, task_episodes=task_episodes, task_max_step=task_max_step,
                                 trust_pickle=trust_pickle)

    Vacuum13.__module__, Vacuum13.__qualname__ = __name__, "Vacuum13"
    return Vacuum13
