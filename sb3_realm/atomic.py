"""Atomic file writes (a temporary file in the same folder, flushed to disk, then renamed over the target, so a
crash or a kill never leaves half a file), file checksums and the writability check of output folders."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path, PureWindowsPath
from typing import IO

__all__ = ["atomic_write", "check_writable_folder", "check_output_file", "check_portable_path", "sha256_file"]


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], object], mode: int | None = None) -> Path:
    """Call ``write(binary_file)`` on a temporary file beside ``path``, then rename it to ``path``.

    :param mode: permissions of the file, less the process's umask (default: the temporary file's own, 0600).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, mode & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


_RESERVED_CHARS = set('<>:"|?*') | {chr(c) for c in range(32)}
_RESERVED_NAMES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


def check_portable_path(path: str | os.PathLike, what: str = "path") -> Path:
    """Raise ``ValueError`` (naming the part and the fix) when a path the package creates from user input could not
    be created on Windows, where the competition client runs: a part with ``< > : " | ? *`` or a control character,
    a reserved device name (``con``, ``nul``, ``com1`` ..., with any extension) or a trailing dot or space. A drive
    (``C:``) and the root are allowed; the check is the same on every system, so a run folder named on Linux can
    be copied to Windows."""
    win = PureWindowsPath(str(path))
    parts = win.parts[1:] if win.anchor else win.parts
    if win.drive and not win.root:
        parts = (win.drive, *parts)  # "a:b" is a name with a colon here, not a drive
    for part in parts:
        bad = sorted(set(part) & _RESERVED_CHARS)
        if bad:
            shown = ", ".join(repr(c) for c in bad)
            raise ValueError(f"{what} {str(path)!r}: {part!r} holds {shown}, which Windows does not allow in file "
                             "names; use letters, digits, '-', '_' and '.'")
        if part.split(".")[0].strip().lower() in _RESERVED_NAMES:
            raise ValueError(f"{what} {str(path)!r}: {part!r} is a reserved device name on Windows (con, prn, aux, "
                             "nul, com1-9, lpt1-9, with any extension); choose another name")
        if part not in (".", "..") and part.endswith((".", " ")):
            raise ValueError(f"{what} {str(path)!r}: {part!r} ends with a dot or a space, which Windows drops; "
                             "choose another name")
    return Path(path)


def check_writable_folder(path: str | os.PathLike, what: str = "output folder") -> Path:
    """Raise ``ValueError`` (naming the path and the fix) unless ``path`` is, or can be created as, a folder this
    process may write in. Creates nothing."""
    path = check_portable_path(path, what)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ValueError(f"{what} {str(path)!r} cannot be created: {str(probe)!r} is a file, not a folder; choose "
                         "another path")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(path)!r} is not writable (no write permission in {str(probe)!r}); choose "
                         "another path or fix its permissions")
    return path


def check_output_file(path: str | os.PathLike, what: str = "output file") -> Path:
    """Raise ``ValueError`` (naming the path and the fix) unless ``path`` can be written as a file: it is not a
    folder, and its folder is, or can be created as, one this process may write in. Creates nothing; call it before
    the work whose result goes there."""
    path = check_portable_path(path, what)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is an existing folder, not a file; give a file path, e.g. "
                         f"{str(path / 'out')!r} with its extension")
    check_writable_folder(path.parent, f"the folder of {what} {str(path)!r},")
    return path


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
