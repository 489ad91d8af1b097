"""What every platform layout is to the builder: :class:`Layout`, its data (the ``layout.toml`` of its folder) and the
few things it decides itself, and the next-steps lines that more than one layout shows."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path

from ... import games
from ..code_package import CodePackage

__all__ = ["Layout", "final_settings_step", "numbered", "smoke_test_step", "zip_note"]


class Layout(ABC):
    """One platform layout: the shape of a code package the platform accepts, what build-submission writes into it
    and how ``--check`` proves it.

    The data (file names, conf tables, the algorithm folders the platform registers, the registration entries) is the
    layout's ``layout.toml``, read once when the layout is made; a subclass decides the rest: where the weights go,
    which conf lines change, what ``--zip`` holds, what to do next, and how its check runs.

    :param name: the layout's name (``--layout``; the ``layout`` of the manifests built with it).
    :param folder: the folder holding its templates (and, where its framework has one, its stand-in).
    :param spec: its ``layout.toml``, parsed.
    """

    #: why the layout builds only into a copy of the user's own code package (``--code-package``), or None when it
    #: can also write the algorithm folder with the lines to merge by hand
    code_package_required: str | None = None

    def __init__(self, name: str, folder: str | os.PathLike, spec: dict) -> None:
        self.name, self.folder, self.spec = name, Path(folder), spec

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def title(self) -> str:
        """What the layout is, in words (``title`` of its ``layout.toml``)."""
        return str(self.spec["title"])

    @property
    def algo_dirs(self) -> list[str]:
        """The algorithm folders the platform registers."""
        return list(self.spec["algo_dirs"])

    @property
    def default_algo_dir(self) -> str:
        """The algorithm folder of a build that names none."""
        return str(self.spec.get("default_algo_dir", "diy"))

    @abstractmethod
    def weights_folder(self, root: Path, algo_root: Path) -> Path:
        """The folder of ``model.ckpt-<id>.pkl`` in the package ``root`` whose algorithm folder is ``algo_root``."""

    @abstractmethod
    def conf_edits(self, root: Path, algo_dir: str, ckpt_id: int, sample_dim: int,
                   package: CodePackage | None) -> dict | None:
        """Edit the conf of the package being built at ``root`` (a copy of ``package``, or None without a code
        package) for the algorithm folder ``algo_dir``, the weights' id ``ckpt_id`` and the learner's sample length
        ``sample_dim``; returns the edits made (the manifest's ``code_package.edits``)."""

    @abstractmethod
    def zip_names(self, out: Path, algo_dir: str) -> list[str]:
        """The top-level entries of the built folder ``out`` that ``--zip`` puts in the archive."""

    @abstractmethod
    def next_steps(self, manifest: dict, out: Path) -> str:
        """What to do with the folder ``out`` built with this layout (its manifest ``manifest``), in the platform's
        own terms."""

    @abstractmethod
    def check(self, folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
              maps_dir: str | None = None, games: int | None = None, seed: int = 0, treasures: int = 9,
              max_step: int | None = None, min_states: int = 10_000, task_episodes: int = 3,
              task_max_step: int = 300, progress: bool = False, trust_pickle: bool | None = None) -> dict:
        """The proof of ``build-submission --check`` for the folder ``folder`` built from ``model_path`` (see
        :func:`sb3_realm.export.check_submission`), with the layout's own defaults for the options left None."""


def smoke_test_step(out: Path, algo: str) -> str:
    """The optional smoke test of a code package: its own ``train_test.py``, where it has one."""
    if (out / "train_test.py").is_file():
        return (f"Optional smoke test in the Kaiwu client's container: set algorithm_name = \"{algo}\" in "
                f"{out / 'train_test.py'} and run python train_test.py (it stops on any ERROR line).")
    return ("Optional smoke test: this code package has no train_test.py (a copy from a repository may lack it); the "
            "code package your Kaiwu client gives has one, to run in the client's container with algorithm_name = "
            f"\"{algo}\".")


def zip_note(manifest: dict) -> str:
    """What ``--zip`` wrote and what it left out (empty without ``--zip``)."""
    zipped = manifest.get("zip")
    if not zipped:
        return ""
    note = f"\n{zipped['file']} holds the upload."
    if zipped["left_out"]:
        shown = ", ".join(zipped["left_out"][:8]) + (", ..." if len(zipped["left_out"]) > 8 else "")
        note += (f" Left out of it ({len(zipped['left_out'])} files): {shown}. Editors' folders (.idea, .vscode), "
                 "bytecode caches and documents (.pdf) are never uploaded; the files of other models (under a ckpt/ "
                 "folder: their model.ckpt-* weights, kaiwu.json, id_list) are left out unless they are this "
                 "build's: if your package needs one, add it to the archive by hand.")
    return note


def final_settings_step(manifest: dict, out: Path) -> list[str]:
    """The step naming the final round's settings of the package's game (none for a game without them)."""
    game = games.recorded(manifest.get("game"), "the package's manifest", path=manifest.get("game_path"))
    final = game.settings.get("final")
    if not final:
        return []
    values = ", ".join(f"{k} = {v}" for k, v in final.items())
    return [f"The final round's settings ({values}) are most likely the final evaluation's: the evaluation task's "
            "dialog lets you set these keys to score your policy under them; --check plays them too, and "
            f"sb3-realm eval {out} --settings final plays them on this machine."]


def numbered(steps: list[str]) -> str:
    """The steps as the numbered list every layout's next steps are."""
    return "Next steps:\n" + "\n".join(f"  {i}. {step}" for i, step in enumerate(steps, 1))
