"""Atomic file writes (a temporary file in the same folder, flushed to disk, then renamed over the target, so a
crash or a kill never leaves half a file), file checksums, the writability check of output folders, and the lock that
lets one command at a time work in a folder."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path, PureWindowsPath

from filelock import FileLock, Timeout

try:
    import fcntl
except ImportError:  # Windows: no flock (and no bind mounts; its links and junctions resolve to the folder)
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FolderInUse",
    "OutsideFolder",
    "atomic_write",
    "check_output_file",
    "check_portable_path",
    "check_writable_folder",
    "hold_folder",
    "inside",
    "not_a_file",
    "own_leftovers",
    "remove_made",
    "sha256_file",
    "share_folder",
    "temp_names",
    "writing",
]


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Name ``path`` in an ``OSError`` of the writes in the block that names no file (a full disk's ``write`` names
    none), so that its message says which file could not be written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def atomic_write(path: str | os.PathLike, write: Callable[[io.BufferedWriter], object],
                 mode: int | None = None) -> Path:
    """Call ``write(binary_file)`` on a temporary file beside ``path``, then rename it to ``path``.

    :param mode: permissions of the file, less the process's umask (default: the temporary file's own, 0600).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with writing(path), os.fdopen(fd, "wb") as f:
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
    be copied to Windows. An empty path names nothing and is refused."""
    if not str(path).strip():
        raise ValueError(f"{what} {str(path)!r} is empty; give a name or a path, e.g. runs/NAME")
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
    process may write in. Creates nothing. An empty path is refused: it would write into the current folder."""
    if not str(path).strip():
        raise ValueError(f"{what} {str(path)!r} names no folder (it would write into the current one); give one, e.g. "
                         "runs/NAME")
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
    if not str(path).strip():
        raise ValueError(f"{what} {str(path)!r} names no file; give a file path, e.g. runs/NAME/report.json")
    path = check_portable_path(path, what)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is an existing folder, not a file; give a file path, e.g. "
                         f"{str(path / 'out')!r} with its extension")
    check_writable_folder(path.parent, f"the folder of {what} {str(path)!r},")
    return path


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as a file (``"is empty"``, ``"is a folder, not a file"``, ``"is a named pipe, not
    a file"`` (a socket, a device), ``"does not exist"``), or None when it is one. As ``arguments.special_file``
    says it (that module stays beside this one, not above it)."""
    if not str(path).strip():
        return "is empty"
    p = Path(path).expanduser()
    if p.is_dir():
        return "is a folder, not a file"
    if p.is_file():
        return None
    try:
        mode = p.stat().st_mode
    except OSError:
        return "does not exist"
    kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return f"is {kind}, not a file"


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FolderInUse(ValueError):
    """Another command holds the folder (the message names it and the holder's pid)."""


def _lock_path(folder: Path) -> Path:
    return folder.parent / f".{folder.name}.lock"


def _open_folder(folder: Path) -> int | None:
    """A descriptor of ``folder`` itself, for the lock on its identity; None where the system has no ``flock``
    (Windows) or the folder is not there (yet) or cannot be opened."""
    if fcntl is None:
        return None
    try:
        return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None


def _lock_identity(fd: int, shared: bool) -> bool:
    """Lock the folder open as ``fd`` (shared or exclusive, never waiting); False when another process holds it in a
    way that excludes this lock. A file system without ``flock`` (some network ones) counts as locked: the lock
    beside the folder still holds it."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True


def _identity_holder(fd: int) -> str:
    """The pid of a process that holds a lock on the folder open as ``fd`` (Linux's ``/proc/locks``), or
    ``"unknown"``."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if "FLOCK" in parts and key in parts and "->" not in parts:
                    return parts[parts.index(key) - 1]
    except (OSError, ValueError):
        pass
    return "unknown"


def _in_use(what: str, folder: Path, holder: str) -> FolderInUse:
    return FolderInUse(f"{what} {str(folder)!r} is in use by another sb3-realm command (pid {holder}); wait for it to "
                       "end, or choose another folder")


@contextlib.contextmanager
def hold_folder(folder: str | os.PathLike, what: str = "folder") -> Iterator[Path]:
    """Hold ``folder`` for this process while the block runs: an OS-level lock on ``.<name>.lock`` beside it (never
    inside it; released by the system when a process dies, so a killed command leaves nothing held), with the
    holder's pid in ``.<name>.lock.pid``. Another command on the same folder meanwhile raises :class:`FolderInUse` at
    once. The lock's files (and a parent folder made for them, when left empty) are removed when the block ends. The
    lock is the resolved folder's, so a symbolic link to a folder and the folder itself are held as one; a folder that
    exists is held by its identity too (its device and inode, with ``flock`` on the folder itself, where the system
    has it), so a second path to it that no link explains (a bind mount) is held as the same folder."""
    folder = Path(folder)
    real = Path(os.path.realpath(folder))
    lock_path = _lock_path(real)
    made = [p for p in [lock_path.parent, *lock_path.parent.parents] if not p.exists()]
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_path), timeout=0)
    pid_path = lock_path.with_name(lock_path.name + ".pid")
    identity = None
    try:
        try:
            lock.acquire()
        except Timeout:
            try:
                holder = pid_path.read_text(encoding="utf-8").strip() or "unknown"
            except OSError:
                holder = "unknown"
            raise _in_use(what, folder, holder) from None
        try:
            identity = _open_folder(real)
            if identity is not None and not _lock_identity(identity, shared=False):
                raise _in_use(what, folder, _identity_holder(identity))
            text = f"{os.getpid()}\n"
            atomic_write(pid_path, lambda f: f.write(text.encode("utf-8")))
            yield folder
        finally:
            if identity is not None:
                os.close(identity)  # releases its flock
            with contextlib.suppress(OSError):
                pid_path.unlink()
            # unlinked while held: a command that opened the old file meanwhile finds it gone once it locks it and
            # takes a new one (filelock checks the file's link count after locking)
            with contextlib.suppress(OSError):
                lock_path.unlink()
            lock.release()
    finally:
        for path in made:  # the parents made for the lock, innermost first, if nothing else went there
            with contextlib.suppress(OSError):
                path.rmdir()


def _path_lock_holder(folder: Path) -> str | None:
    """The pid (text) of the command that holds the resolved ``folder`` by the lock beside it, or None. Creates
    nothing: a folder without a lock file is not held."""
    lock_path = _lock_path(folder)
    if not lock_path.is_file():
        return None
    lock = FileLock(str(lock_path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            return lock_path.with_name(lock_path.name + ".pid").read_text(encoding="utf-8").strip() or "unknown"
        except OSError:
            return "unknown"
    except OSError:  # a lock file this process may not open: another user's, not this command's to judge
        return None
    with contextlib.suppress(OSError):
        lock_path.unlink()  # as hold_folder leaves it: held while unlinked, so nothing is left beside the folder
    lock.release()
    return None


@contextlib.contextmanager
def share_folder(folder: str | os.PathLike, what: str = "output folder") -> Iterator[Path]:
    """For a command that only adds a file of its own to ``folder`` (``eval --json``): raise :class:`FolderInUse`,
    before any work, when another command holds ``folder`` or a folder above it (:func:`hold_folder`: a run that
    ``train`` or ``imitate`` writes, an upload folder being built), and keep holding it shared while the block runs,
    so that such a command started meanwhile is refused, while other commands that share it (two evaluations writing
    their reports into one folder) both run. Creates nothing. The shared hold needs ``flock`` (not on Windows) and a
    folder that exists; otherwise the block runs after the check only."""
    folder = Path(folder)
    real = Path(os.path.realpath(folder))
    identity = None
    try:
        for above in [p for p in [real, *real.parents] if p.name]:
            holder = _path_lock_holder(above)
            fd = _open_folder(above) if holder is None else None
            if fd is not None and not _lock_identity(fd, shared=True):
                holder = _identity_holder(fd)
                os.close(fd)
                fd = None
            if holder is not None:
                where = "" if above == real else f", in {str(above)!r},"
                raise FolderInUse(f"{what} {str(folder)!r}{where} is in use by another sb3-realm command (pid "
                                  f"{holder}), which may replace or remove what this command writes there; wait for "
                                  "it to end, or write elsewhere; nothing was done")
            if fd is not None and above == real:
                identity = fd  # held shared until the block ends
            elif fd is not None:
                os.close(fd)
        yield folder
    finally:
        if identity is not None:
            os.close(identity)


class OutsideFolder(ValueError):
    """A path read from a file leads outside the folder it must stay in (the message names both and the fix)."""


def inside(folder: str | os.PathLike, name: str | os.PathLike, source: str = "a file") -> Path:
    """``folder / name`` for a ``name`` read from a file (``source`` says which, for the message), once it is known to
    stay inside ``folder``: a relative path on every system (no root, no drive, no backslash), no ``..`` part, and
    no symbolic link on the way that leads out of ``folder``. Anything else raises :class:`OutsideFolder`, so a
    damaged or hostile index can never make a command read, write or delete a file elsewhere."""
    folder = Path(folder)
    text = str(name)
    problem = None
    if not text.strip():
        problem = "is empty"
    elif "\\" in text or PureWindowsPath(text).anchor or Path(text).is_absolute():
        problem = "is not a plain relative path"
    elif ".." in Path(text).parts:
        problem = "climbs out with '..'"
    else:
        real = os.path.realpath(folder / text)
        if not Path(real).is_relative_to(os.path.realpath(folder)):
            problem = f"leads through a symbolic link to {real!r}"
    if problem is not None:
        raise OutsideFolder(f"{source} names {text!r}, which {problem}; every path it names must stay inside "
                            f"{str(folder)!r}: the file is damaged or not this package's; restore it, or start the "
                            "folder again")
    return folder / text


# the random part of a name from tempfile.mkstemp / mkdtemp (eight of its letters)
_TEMP_TOKEN = "[a-z0-9_]{8}"


def temp_names(name: str, prefix: str | None = None, suffix: str = ".tmp") -> re.Pattern:
    """The names of the temporary files and folders this package makes for ``name`` (``tempfile`` with
    ``prefix=f".{name}."`` and ``suffix``, or with ``prefix`` itself when given): exactly those, so that a
    neighbour's leftovers (``.NAME.v2.*.tmp`` beside ``NAME``, a name holding glob characters) never match."""
    start = re.escape(f".{name}." if prefix is None else prefix)
    return re.compile(f"{start}{_TEMP_TOKEN}{re.escape(suffix)}")


def own_leftovers(folder: str | os.PathLike, pattern: re.Pattern) -> list[Path]:
    """The entries of ``folder`` whose whole name matches ``pattern`` (a :func:`temp_names` pattern or another
    exact one), sorted; symbolic links are never among them (this package makes none)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name) and not p.is_symlink())


def remove_made(path: str | os.PathLike, folder: str | os.PathLike) -> None:
    """Remove ``path``, a file or a folder tree that this command made inside ``folder``: a path that is not inside
    ``folder`` (after resolving every link above it) raises :class:`OutsideFolder` and nothing is removed; a
    symbolic link is unlinked, never followed; a folder's own links are unlinked, never followed (``shutil.rmtree``);
    a missing path is no error."""
    path, folder = Path(path), Path(folder)
    where, room = Path(os.path.realpath(path.parent)) / path.name, Path(os.path.realpath(folder))
    if where == room or not where.is_relative_to(room) or path.name in ("", ".", ".."):
        raise OutsideFolder(f"refusing to remove {str(path)!r}: it is not inside {str(folder)!r}, the folder this "
                            "command writes")
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path)
    elif path.exists():  # a pipe, a socket: nothing this package makes, but nothing to follow either
        path.unlink(missing_ok=True)
