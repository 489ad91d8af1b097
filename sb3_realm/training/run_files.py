"""A training run's folder: the files a run writes at its top level (:data:`RUN_FILES`, :data:`MADE_BY_A_RUN`),
the checks before a run writes anything there (:func:`run_folder`, :func:`start_new_run`, :func:`check_run_parts`),
and the removal of what a new run made when it fails before it saved a model (:func:`removed_if_unfinished`).
``train`` and ``imitate`` share them."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..arguments import not_utf8
from ..atomic import check_writable_folder, remove_made
from .checkpoints import CHECKPOINT_NAME, list_checkpoints
from .config import TrainConfig

__all__ = [
    "INIT_MODEL",
    "MADE_BY_A_RUN",
    "RUN_FILES",
    "check_run_parts",
    "removed_if_unfinished",
    "run_folder",
    "start_new_run",
]


#: files a run writes at its top level: a new run never starts in a folder that holds one
RUN_FILES = ("config.yaml", "final_model.zip", "best_model.zip", "eval.json")
#: where a run started from another model (``--init-from``) keeps a copy of it
INIT_MODEL = "init_model.zip"
#: everything a run may write at its top level; a new run that fails before it saved a model removes those it made
MADE_BY_A_RUN = ("config.yaml", "checkpoints", "tb", INIT_MODEL, "warm_start.json", "eval.json", "vecnormalize.json",
                 "best_model.zip", "final_model.zip")


def check_run_parts(run_dir: Path, extra: tuple[str, ...] = ()) -> None:
    """Refuse a part of the run (each of :data:`MADE_BY_A_RUN` and ``extra``, and each entry of ``checkpoints/``
    named as a checkpoint) that leads outside it through a symbolic link: a run reads, writes and removes only
    inside its own folder, so a linked ``checkpoints/`` never has its folders rotated away, a linked ``tb/`` never
    gets event files, and a linked ``final_model.zip`` is never replaced. A link that stays inside the run is its
    own business. ``train`` and ``imitate`` both check this before any work."""
    room = os.path.realpath(run_dir)
    folder = run_dir / "checkpoints"  # every entry named as a checkpoint, links included
    checkpoints = [f"checkpoints/{p.name}" for p in (sorted(folder.iterdir()) if folder.is_dir() else [])
                   if CHECKPOINT_NAME.fullmatch(p.name)]
    for part in dict.fromkeys((*extra, *MADE_BY_A_RUN, *checkpoints)):
        if not os.path.lexists(run_dir / part):
            continue
        real = os.path.realpath(run_dir / part)
        if not Path(real).is_relative_to(room):
            raise ValueError(f"run directory {str(run_dir)!r}: {part} leads outside the run (a symbolic link to "
                             f"{real!r}); a run works only inside its own folder: put the real {part} there (or "
                             "remove the link), or start the run again with --out")


def start_new_run(config: TrainConfig, run_dir: Path) -> None:
    """Checks before a new run writes anything: ``run_dir`` holds no run yet (no checkpoints, none of
    :data:`RUN_FILES`), and the config carries no other features version; then records the current version in
    ``config``."""
    taken = [name for name in RUN_FILES if (run_dir / name).exists()]
    if (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir()):
        taken.append("checkpoints/")
    saved = list_checkpoints(run_dir / "checkpoints") or any(
        (run_dir / name).exists() for name in ("final_model.zip", "best_model.zip"))
    if taken and not saved:  # a start that was killed before it saved a model: nothing to resume
        raise ValueError(f"run directory {str(run_dir)!r} holds the start of a run that saved no model "
                         f"({', '.join(taken)}; killed before its first checkpoint), so there is nothing to resume: "
                         "delete the folder (or those entries) to start the run again there, or choose another "
                         "folder with --out (out: in the config)")
    if taken:
        raise ValueError(f"run directory {str(run_dir)!r} already holds a run ({', '.join(taken)}); a new run would "
                         f"overwrite it: use --resume {run_dir} to continue it, or --out (out: in the config) to "
                         "start a new run in a folder of its own")
    version = config.spec.submission.features.FEATURE_VERSION
    if config.feature_version not in (None, version):
        raise ValueError(f"feature_version = {config.feature_version!r} in the config, but this sb3_realm computes "
                         f"features version {version}; a new run always uses the current one: "
                         "remove feature_version from the config (it is copied from an older run's config.yaml)")
    config.feature_version = version


def run_folder(config: TrainConfig, resume: str | Path | None = None) -> Path:
    """The folder of a run (``resume``, else ``config.out``), once it is known that it can be written
    (:func:`~sb3_realm.atomic.check_writable_folder`) and that its name is UTF-8: TensorBoard, which writes the
    run's logs, takes no other path, and a name with a byte that is not UTF-8 would fail the run after it wrote
    its first files. Nothing is written."""
    where = resume if resume is not None else config.out
    problem = not_utf8(os.fspath(where))
    if problem is not None:
        flag = "--resume" if resume is not None else "out (--out)"
        raise ValueError(f"run directory {os.fspath(where)!r} ({flag}): its name holds {problem}; a run writes "
                         "its logs with TensorBoard, which takes only UTF-8 paths: rename the folder, or choose "
                         "a name in UTF-8; nothing was written")
    return check_writable_folder(where, "run directory")


@contextlib.contextmanager
def removed_if_unfinished(run_dir: Path, made: tuple[str, ...] = MADE_BY_A_RUN) -> Iterator[None]:
    """The block of a new run: when it raises before the run saved a model, what it made is removed
    (:func:`_remove_unfinished_run`, for the entries ``made``), so that the same command can run again. ``train``
    and ``imitate`` (with its ``dataset/``) both start a run in it."""
    existed = run_dir.is_dir()
    before = _entries(run_dir, made) if existed else set()
    try:
        yield
    except BaseException:
        _remove_unfinished_run(run_dir, existed, before, made)
        raise


def _entries(run_dir: Path, made: tuple[str, ...] = MADE_BY_A_RUN) -> set[str]:
    """The entries of ``run_dir`` a run may add to (``made``), and those of its folders among them
    (``tb/run_1``), as relative POSIX paths."""
    found = set(os.listdir(run_dir))
    for name in made:
        folder = run_dir / name
        if folder.is_dir() and not folder.is_symlink():
            found |= {f"{name}/{child}" for child in os.listdir(folder)}
    return found


def _remove_unfinished_run(run_dir: Path, existed: bool, before: set[str],
                           made: tuple[str, ...] = MADE_BY_A_RUN) -> None:
    """After a new run failed: when it saved no model (no checkpoint, no best or final model), remove what it made
    (the run folder when it made it, else the entries of ``made`` it added, and what it added in those folders that
    were there before, such as ``tb/run_2``), so that the same command can run again; a run that saved a model is
    left for ``--resume`` or the user."""
    if not run_dir.is_dir() or list_checkpoints(run_dir / "checkpoints"):
        return
    if any((run_dir / name).exists() and name not in before for name in ("best_model.zip", "final_model.zip")):
        return
    if not existed:
        with contextlib.suppress(OSError):
            remove_made(run_dir, run_dir.parent)
        return
    for name in made:
        path = run_dir / name
        if name not in before:
            added = [path] if path.exists() or path.is_symlink() else []
        elif path.is_dir() and not path.is_symlink():
            added = [path / child for child in os.listdir(path) if f"{name}/{child}" not in before]
        else:
            added = []
        for item in added:
            with contextlib.suppress(OSError):
                remove_made(item, run_dir)
