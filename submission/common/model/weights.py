"""The exported weights on disk, for the Agent of every layout: a plain CPU ``state_dict`` saved with ``torch.save``
(bytes that depend on the tensors only), a ``.sha256`` beside each save, and loading that checks the file against it
(or, for the exported file itself, against the package's manifest) before ``torch.load(..., weights_only=True)``.
Saved files get the ordinary mode of a new file (0666 less the umask, as ``open`` gives), never a temporary file's
0600. Imports torch and the standard library only."""

import hashlib
import io
import json
import os
import secrets
from pathlib import Path

import torch

PREFIX, SUFFIX = "model.ckpt-", ".pkl"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def state_bytes(state):
    """``torch.save`` into memory: the archive's inner folder is always ``archive``, so the bytes depend on the
    tensors only, never on a file name."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def _new_file(folder, name):
    """A new file beside ``name`` in ``folder``, opened for writing: ``(fd, path)``. Made with mode 0666, so that the
    umask gives it the mode any new file gets (``tempfile.mkstemp`` would make it 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)  # O_BINARY: Windows, no newline edits
    while True:
        tmp = os.path.join(str(folder), f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


def write_atomically(target, data):
    """``data`` into ``target`` through a file beside it renamed into place: a crash never leaves half a file."""
    fd, tmp = _new_file(target.parent, target.name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def weights_file(folder, id):
    """``<folder>/model.ckpt-<id>.pkl``; ``id`` ``"latest"``: the highest integer id there (FileNotFoundError when
    there is none)."""
    folder = Path(folder)
    if str(id) == "latest":
        ids = sorted(int(p.name[len(PREFIX):-len(SUFFIX)]) for p in folder.glob(f"{PREFIX}*{SUFFIX}")
                     if p.name[len(PREFIX):-len(SUFFIX)].isdigit()) if folder.is_dir() else []
        if not ids:
            raise FileNotFoundError(f"load_model: no {PREFIX}<id>{SUFFIX} in {folder}")
        id = ids[-1]
    return folder / f"{PREFIX}{id}{SUFFIX}"


def save_state(model, target):
    """Write the model's CPU state dict to ``target`` and its sha256 to ``target.sha256``, each atomically."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = state_bytes({k: v.detach().cpu() for k, v in model.state_dict().items()})
    write_atomically(target, data)
    write_atomically(target.with_name(target.name + ".sha256"), (sha256(data) + "\n").encode("utf-8"))
    return str(target)


def expected_sha256(target, ckpt_dir, manifest):
    """The checksum ``target`` must have: its ``.sha256``, else, for the exported file (in ``ckpt_dir``, or either
    of the package's copies the manifest names, relative to the package: the folder above the manifest's), the
    manifest's, else None (a file saved elsewhere without one)."""
    side = target.with_name(target.name + ".sha256")
    if side.is_file():
        return side.read_text(encoding="utf-8").strip()
    manifest = Path(manifest)
    if manifest.is_file():
        weights = json.loads(manifest.read_text(encoding="utf-8"))["weights"]
        copies = [manifest.parent.parent / weights[key] for key in ("file", "preload_file") if weights.get(key)]
        if (target.parent.resolve() == Path(ckpt_dir).resolve() and Path(weights["file"]).name == target.name) or \
                any(target.resolve() == copy.resolve() for copy in copies):
            return weights["sha256"]
    return None


def is_exported(target, manifest):
    """Whether the file ``target`` is an intact copy of the package's exported weights file (the preload's): the name
    and the sha256 that the manifest ``manifest`` records for it, and a ``.sha256`` beside it, if any, that agrees
    (False without a manifest or a file). A save of the same weights under another id is not."""
    target, manifest = Path(target), Path(manifest)
    if not (target.is_file() and manifest.is_file()):
        return False
    weights = json.loads(manifest.read_text(encoding="utf-8"))["weights"]
    digest, side = sha256(target.read_bytes()), target.with_name(target.name + ".sha256")
    if side.is_file() and side.read_text(encoding="utf-8").strip() != digest:
        return False  # loading it fails loudly on the mismatch
    return target.name == Path(weights["file"]).name and digest == weights["sha256"]


def read_state(target, ckpt_dir, manifest, device, log):
    """The state dict in ``target`` after its checksum is checked (RuntimeError on a mismatch, FileNotFoundError
    naming what is there when it is missing); ``log(level, message)`` reports a file without a checksum."""
    target = Path(target)
    if not target.is_file():
        folder = target.parent
        found = sorted(p.name for p in folder.glob(f"{PREFIX}*{SUFFIX}")) if folder.is_dir() else []
        raise FileNotFoundError(f"load_model: no weights file {target}; found {found or 'none'} there")
    data = target.read_bytes()
    expected = expected_sha256(target, ckpt_dir, manifest)
    if expected is None:
        log("info", f"load_model: {target} has no checksum (no .sha256 beside it); loading its tensors")
    elif sha256(data) != expected:
        raise RuntimeError(f"load_model: checksum mismatch for {target}: sha256 {sha256(data)} but expected "
                           f"{expected}; the weights file is corrupt or not the one this package was built with")
    try:
        return torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only; the file's checksum was checked above
        return torch.load(io.BytesIO(data), map_location=device)
