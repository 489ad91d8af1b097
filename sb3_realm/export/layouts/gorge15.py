"""The 15.0.1 code package of Gorge Chase (``gorge15``): built only into a copy of the user's own package, the
weights inside the algorithm folder (where its preload keys look), the conf key for key as the user's with only the
training algorithm, the preload keys and the algorithm's table edited, the whole package in the zip, and the check on
the layout's own stand-in of the 15.0.1 framework."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from ...submission import LAYOUTS, layout_spec
from ..check import check_on_own_stand_in
from ..code_package import CodePackage, edit_settings, ensure_table, write_conf
from .base import Layout, final_settings_step, numbered, smoke_test_step, zip_note

__all__ = ["LAYOUT", "Gorge15"]

NAME = "gorge15"


class Gorge15(Layout):
    """The 15.0.1 layout (see the module docstring); its check plays 10 games of the game's default protocol under
    each of its named settings unless told otherwise."""

    code_package_required = ("the package is built into a copy of your own 15.0.1 code package (the folder your "
                             "Kaiwu client gives you, with kaiwu.json, conf/ and agent_diy/), never one written from "
                             "nothing")
    check_games = 10

    def weights_folder(self, root: Path, algo_root: Path) -> Path:
        return algo_root / "ckpt"

    def conf_edits(self, root: Path, algo_dir: str, ckpt_id: int, sample_dim: int,
                   package: CodePackage | None) -> dict:
        """The 15.0.1 package's conf, key for key as the user's with only these edited: the algorithm that trains
        (``app_conf_gorge_chase.toml``), the preload keys (``configure_app.toml``) and, when it is missing or
        differs, the algorithm's table of ``algo_conf_gorge_chase.toml``."""
        if package is None:
            raise ValueError(f"--layout {self.name} needs --code-package: {self.code_package_required}")
        layout = self.spec
        assert package.policy is not None  # read_code_package reads the policy_conf of a layout that names one
        algo = algo_dir[len(layout["folder_prefix"]):]
        policy = {"algo": algo}
        write_conf(root / layout["policy_conf"], edit_settings(package.policy, layout["policy_table"], policy, {}))
        preload = {"preload_model": True, "preload_model_dir": layout["preload_model_dir"],
                   "preload_model_id": ckpt_id}
        write_conf(root / layout["app_conf"], edit_settings(package.app_conf, layout["app_table"], preload, {}))
        entry = {key: value.format(folder=algo_dir, algo=algo) for key, value in layout["registration"].items()}
        registry = package.registry or ""
        if tomllib.loads(registry).get(algo) != entry:
            write_conf(root / layout["algo_conf"], ensure_table(registry, algo, entry))
        return {"settings": {**policy, **preload}, "registration": algo}

    def zip_names(self, out: Path, algo_dir: str) -> list[str]:
        """The whole code package."""
        return sorted(p.name for p in out.iterdir())

    def next_steps(self, manifest: dict, out: Path) -> str:
        layout = self.spec
        folder, ckpt = manifest["algo_dir"], manifest["weights"]["ckpt_id"]
        algo = folder[len(layout["folder_prefix"]):]
        keep = manifest.get("platform_training", "keep") == "keep"
        steps = [
            f"{out} is a copy of your code package (代码包) with the policy in {folder}/ (weights "
            f"{manifest['weights']['file']}); your own folder is unchanged. Its conf selects algo = \"{algo}\" "
            f"({layout['policy_conf']}) and preloads the weights ({layout['app_conf']}: preload_model = true, "
            f"preload_model_dir = \"{layout['preload_model_dir']}\", preload_model_id = {ckpt}).",
            smoke_test_step(out, algo),
            f"In the Kaiwu client (开悟客户端), upload {out} as your code package.",
            "Start a training task (训练任务) on it: it starts from the preloaded weights. " +
            ("Its training keeps them, so every model the task saves is your policy: the first save comes after the "
             "first game; stop the task once one is listed." if keep else
             "Its training fine-tunes them (--workflow finetune): the first save, after the first game, is your "
             "policy as exported; each later one (one every 30 minutes) is a newer policy, and each is evaluated "
             "with its own weights."),
            "In model management (模型管理), pick a model the task saved and start an evaluation task (评估任务) with "
            "it, or submit it to the leaderboard. The platform's evaluation calls the Agent's exploit(env_obs) once "
            "per step: the greedy action of your policy.",
            *final_settings_step(manifest, out),
        ]
        return numbered(steps) + zip_note(manifest)

    def check(self, folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
              maps_dir: str | None = None, games: int | None = None, seed: int = 0, treasures: int = 9,
              max_step: int | None = None, min_states: int = 10_000, task_episodes: int = 3,
              task_max_step: int = 300, progress: bool = False, trust_pickle: bool | None = None) -> dict:
        """The check on the layout's own stand-in: ``maps_dir`` holds the open maps of its training task; ``games``
        games (None: 10) of the game's default protocol are played under each of the game's named settings, the final
        round's among them, of at most ``max_step`` steps (None: the game's own); ``map_path`` and ``treasures`` are
        not used."""
        return check_on_own_stand_in(folder, model_path, maps_dir=maps_dir, games=games or self.check_games,
                                     seed=seed, max_step=max_step, min_states=min_states,
                                     task_episodes=task_episodes, task_max_step=task_max_step, progress=progress,
                                     trust_pickle=trust_pickle)


LAYOUT = Gorge15(NAME, LAYOUTS[NAME], layout_spec(NAME))
