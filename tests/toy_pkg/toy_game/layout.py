"""The toy platform's layout, which the toy game brings itself (its folder ``platform_layout/`` is named in the
spec's ``Submission.layout_folders``; its ``layout.toml`` names :class:`ToyLayout`): a package is a copy of the
user's own toy code package with the policy in ``agent_toy/`` and its conf's ``[app]`` table selecting it and
preloading the weights; ``--check`` runs the package on the layout's stand-in (``harness.py``) in a process that
cannot import sb3_realm, SB3, gymnasium or this game, and compares every action and every score with the SB3
model's."""

from __future__ import annotations

import os
from pathlib import Path

from sb3_realm.agents import SB3Policy, play_episode
from sb3_realm.agents.guarded import PlatformProcess
from sb3_realm.agents.manifest import manifest_game, read_manifest
from sb3_realm.evaluation import game_seed, protocol_configs
from sb3_realm.export.code_package import CodePackage, edit_settings, write_conf
from sb3_realm.export.layouts import Layout
from sb3_realm.export.layouts.base import numbered, zip_note
from sb3_realm.submission import BLOCKED_MODULES

__all__ = ["ToyLayout"]


class _Evaluation:
    """The toy platform's environment for the check: the game's env playing ``configs``, each state's ``env_obs``
    to the package and its action compared with the SB3 model's on the same state."""

    def __init__(self, env, reference, configs: list[dict], seed: int) -> None:
        self.env, self.reference, self.configs, self.seed = env, reference, configs, seed
        self.index, self.states, self.obs = -1, 0, None
        self.mismatches: list[dict] = []
        self.scores: list[float] = []

    def reset(self, usr_conf):
        del usr_conf  # the evaluation's games are the protocol's
        if self.index + 1 >= len(self.configs):
            return None  # the end of the evaluation
        self.index += 1
        self.obs, _ = self.env.reset(seed=game_seed(self.seed, self.index), options=self.configs[self.index])
        self.reference.reset(self.env)
        return self.env.unwrapped.platform_obs()

    def step(self, act: int):
        expected = int(self.reference.act(self.env, self.obs))
        if act != expected:
            self.mismatches.append({"game": self.index, "state": self.states, "package": act, "sb3": expected})
        self.states += 1
        self.obs, reward, terminated, truncated, info = self.env.step(act)
        if terminated or truncated:
            self.scores.append(float(info["score"]))
        return {"reward": float(reward)}, self.env.unwrapped.platform_obs()


class ToyLayout(Layout):
    """The toy platform's code package (see the module docstring)."""

    code_package_required = ("the package is built into a copy of your own toy code package (the folder with "
                             "kaiwu.json and conf/app.toml)")

    def weights_folder(self, root: Path, algo_root: Path) -> Path:
        return algo_root / "ckpt"

    def conf_edits(self, root: Path, algo_dir: str, ckpt_id: int, sample_dim: int,
                   package: CodePackage | None) -> dict:
        """The package's ``conf/app.toml`` as the user's, with the algorithm and the preload keys of ``[app]`` set."""
        if package is None:
            raise ValueError(f"--layout {self.name} needs --code-package: {self.code_package_required}")
        settings = {"algo": algo_dir[len(self.spec["folder_prefix"]):], "preload_model": True,
                    "preload_model_id": ckpt_id}
        write_conf(root / self.spec["app_conf"], edit_settings(package.app_conf, self.spec["app_table"], settings, {}))
        return {"settings": settings}

    def zip_names(self, out: Path, algo_dir: str) -> list[str]:
        """The whole code package."""
        return sorted(p.name for p in out.iterdir())

    def next_steps(self, manifest: dict, out: Path) -> str:
        steps = [f"{out} is a copy of your toy code package with the policy in {manifest['algo_dir']}/ (weights "
                 f"{manifest['weights']['file']}); its {self.spec['app_conf']} selects and preloads it.",
                 f"Upload {out} to the toy platform as your code package."]
        return numbered(steps) + zip_note(manifest)

    def check(self, folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
              maps_dir: str | None = None, games: int | None = None, seed: int = 0, treasures: int = 9,
              max_step: int | None = None, min_states: int = 10_000, task_episodes: int = 3,
              task_max_step: int = 300, progress: bool = False, trust_pickle: bool | None = None) -> dict:
        """The package's evaluation on the stand-in plays ``games`` games (None: the protocol's own) of the game's
        default protocol, of at most ``max_step`` steps, with the SB3 model's action on every state and its scores;
        the options of a training task and of maps are not used (the toy platform has neither)."""
        manifest = read_manifest(folder)
        game = manifest_game(manifest)
        configs = protocol_configs(game.evaluation.protocols[0], seed=seed, games=games, max_step=max_step,
                                   game=game.name)
        env = game.env.make()
        reference = SB3Policy(model_path, trust_pickle=trust_pickle)
        evaluation = _Evaluation(env, reference, configs, seed)
        with PlatformProcess(manifest["layout"], "eval-package", folder) as platform:
            done = platform.serve(evaluation.reset, evaluation.step)
        if "platform_error" in done:
            return {"ok": False, "platform_error": done["platform_error"], "states": evaluation.states,
                    "identical_actions": False, "identical_scores": False}
        report = done["report"]
        sb3_scores = [float(play_episode(env, reference, game_seed(seed, i), conf)["score"])
                      for i, conf in enumerate(configs)]
        leaked = sorted(set(report["modules"]) & set(BLOCKED_MODULES))
        identical_actions = not evaluation.mismatches and evaluation.states > 0
        identical_scores = evaluation.scores == sb3_scores
        return {"ok": identical_actions and identical_scores and not leaked and not report["errors"]
                and report["games"] == len(configs), "games": report["games"], "states": evaluation.states,
                "identical_actions": identical_actions, "mismatched_states": len(evaluation.mismatches),
                "first_mismatches": evaluation.mismatches[:20], "identical_scores": identical_scores,
                "package_scores": evaluation.scores, "sb3_scores": sb3_scores, "leaked_modules": leaked,
                "evaluation_errors": report["errors"], "algo": report["algo"]}
