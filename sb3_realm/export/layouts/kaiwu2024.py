"""The 2024 code package of "Back to the Realm" (``kaiwu2024``): the weights in the package's own ``ckpt/``, the
``[app]`` settings, the registry entry and the servers' algorithm in its conf (or, without a code package, the lines
to merge by hand), ``ckpt/``, ``conf/`` and the algorithm folder in the zip, and the check on the shared stand-in of
the platform's ``kaiwu_agent`` framework."""

from __future__ import annotations

import os
from pathlib import Path

from ...submission import LAYOUTS, layout_spec
from ..check import check_on_shared_stand_in
from ..code_package import (
    MERGE_FILE,
    CodePackage,
    edit_settings,
    ensure_registration,
    merge_text,
    package_settings,
    set_yaml_value,
    write_conf,
)
from .base import Layout, numbered, smoke_test_step, zip_note

__all__ = ["LAYOUT", "Kaiwu2024"]

NAME = "kaiwu2024"


class Kaiwu2024(Layout):
    """The 2024 layout (see the module docstring); its check plays 30 leaderboard games of at most 2,000 steps unless
    told otherwise."""

    check_games = 30
    check_max_step = 2000

    def weights_folder(self, root: Path, algo_root: Path) -> Path:
        return root / "ckpt"

    def conf_edits(self, root: Path, algo_dir: str, ckpt_id: int, sample_dim: int,
                   package: CodePackage | None) -> dict | None:
        """The 2024 package's conf: the [app] settings (the workflow's algorithm among them), the registry entry and
        the algorithm whose Agent the servers build (the app conf's ``policies.train_one.algo``), or, without a code
        package, the lines to merge; returns the edits made."""
        layout = self.spec
        settings, last = package_settings(layout, algo_dir, ckpt_id, sample_dim)
        if package is None:
            (root / MERGE_FILE).write_text(merge_text(layout, algo_dir, ckpt_id, sample_dim), encoding="utf-8")
            return None
        copy_dir = [part.strip() for part in str(package.app.get("copy_dir", "")).split(",") if part.strip()]
        if algo_dir not in copy_dir:
            settings["copy_dir"] = ",".join([*copy_dir, algo_dir])
        write_conf(root / layout["app_conf"], edit_settings(package.app_conf, layout["app_table"], settings, last))
        entry = {key: value.format(algo=algo_dir) for key, value in layout["registration"].items()}
        write_conf(root / layout["algo_conf"], ensure_registration(package.registry, algo_dir, entry))
        edits = {"settings": {**settings, **last}, "registration": algo_dir}
        if package.servers is not None:  # the servers build the Agent of this conf's algo: the same folder
            rel, text = package.servers
            keys = [layout["project_code"], *layout["servers_key"]]
            write_conf(root / rel, set_yaml_value(text, keys, algo_dir))
            edits["servers_conf"] = {"file": rel, "key": ".".join(keys), "value": algo_dir}
        return edits

    def zip_names(self, out: Path, algo_dir: str) -> list[str]:
        """The three folders of the 2024 recipe's upload."""
        return ["ckpt", "conf", algo_dir]

    def next_steps(self, manifest: dict, out: Path) -> str:
        algo, ckpt = manifest["algo_dir"], manifest["weights"]["ckpt_id"]
        layout = self.spec
        keep = manifest.get("platform_training", "keep") == "keep"
        if manifest.get("code_package"):
            steps = [f"{out} is a copy of your code package (代码包) with the policy in {algo}/ and ckpt/, ready to "
                     "upload; your own folder is unchanged.",
                     smoke_test_step(out, algo),
                     f"In the Kaiwu client (开悟客户端), upload {out} as your code package."]
        else:
            steps = [f"{out} holds the algorithm folder {algo}/, ckpt/ and {MERGE_FILE} (no conf/: yours stays).",
                     f"Copy {out / algo} and {out / 'ckpt'} into your code package (代码包), the folder the Kaiwu "
                     f"client (开悟客户端) gives you, replacing its {algo}/.",
                     f"Merge these lines (also in {out / MERGE_FILE}) into its {layout['app_conf']}: they replace the "
                     "lines with the same keys, and the eval lines go last. Or build again with --code-package "
                     "YOUR_CODE_PACKAGE to get a complete copy with these edits made.\n" +
                     "\n".join(f"       {line}" for line in (out / MERGE_FILE).read_text(encoding="utf-8").splitlines()
                               if not line.startswith("#")),
                     "Upload that code package in the Kaiwu client."]
        steps += [f"Start a training task (训练任务) on it, and in the task's dialog pick the algorithm (算法) {algo}. "
                  f"{layout['app_conf']} (the workflow) and {layout['servers_conf']} (the Agent its servers build) "
                  f"must name the same algorithm; both name {algo} already, and we expect the dialog to set both to "
                  "the one picked (an assumption: if the task's log names another Agent, set both by hand). The conf "
                  f"preloads {algo}/ckpt/model.ckpt-{ckpt}.pkl (preload_model = true, preload_model_dir "
                  f"{layout['project_root']}/{algo}/ckpt). " +
                  ("Its training keeps these weights, so every model the task saves is your policy: the first save "
                   "comes after the first episode, then one every 2 minutes; stop the task once one is listed."
                   if keep else "Its training fine-tunes these weights (--workflow finetune): the first save, after "
                                "the first episode, is your policy as exported; each later one (every 2 minutes) is "
                                "a newer policy, and each is evaluated with its own weights."),
                  "In model management (模型管理), pick a model the task saved and start an evaluation task (评估任务) "
                  "with it, or submit it to the leaderboard. Only the platform can sign a model: the model to "
                  "evaluate is one its training task saved."]
        return numbered(steps) + zip_note(manifest)

    def check(self, folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
              maps_dir: str | None = None, games: int | None = None, seed: int = 0, treasures: int = 9,
              max_step: int | None = None, min_states: int = 10_000, task_episodes: int = 3,
              task_max_step: int = 300, progress: bool = False, trust_pickle: bool | None = None) -> dict:
        """The check on the shared stand-in (``maps_dir`` is not used: the games are played on ``map_path``, else
        the training run's map)."""
        return check_on_shared_stand_in(
            folder, model_path, map_path=map_path, games=self.check_games if games is None else games, seed=seed,
            treasures=treasures, max_step=self.check_max_step if max_step is None else max_step,
            min_states=min_states, task_episodes=task_episodes, task_max_step=task_max_step, progress=progress,
            trust_pickle=trust_pickle)


LAYOUT = Kaiwu2024(NAME, LAYOUTS[NAME], layout_spec(NAME))
