"""The user's own code package (the folder their Kaiwu client gives them): what ``build-submission --code-package``
reads of it and the few lines it edits, keeping every other line of the file as it was.

- :func:`read_code_package`: every entry of the folder first (a symbolic link leading out of it, to a folder or to
  nowhere, and a named pipe, socket or device are refused, naming the entry: nothing is ever read through them), then
  its ``kaiwu.json`` (refused, with what was found, when it is another project or edition than the layout builds
  for), ``conf/configure_app.toml`` and the algorithm registry;
- :func:`copy_package`: its files into the upload folder (bytecode caches aside), each read from inside the package;
- :func:`edit_settings`: ``key = value`` settings of one TOML table replaced in place, new ones added, and some moved
  to the table's end (the eval lines, which the platform's recipe wants last); checked by parsing the result;
- :func:`ensure_registration`: the algorithm folder's entry in the registry (``conf/nature_algo_<game>.yaml``);
- :func:`package_settings` and :func:`merge_text`: the settings a package needs, and the text of the lines to merge
  by hand when no code package is given;
- :func:`write_conf`: an edited conf file written with the line endings it was read with.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..arguments import not_utf8

__all__ = [
    "EVAL_KEYS",
    "MERGE_FILE",
    "CodePackage",
    "CodePackageError",
    "copy_package",
    "edit_settings",
    "ensure_registration",
    "ensure_table",
    "merge_text",
    "package_entries",
    "package_settings",
    "read_code_package",
    "servers_conf_path",
    "set_yaml_value",
    "toml_value",
    "write_conf",
]

MERGE_FILE = "merge_into_configure_app.toml"
EVAL_KEYS = ("eval_model_dir", "eval_model_id")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")


class CodePackageError(ValueError):
    """The code package cannot be used as asked (the message says what was found and what to do)."""


@dataclass(frozen=True)
class CodePackage:
    """What build-submission read of a user's code package."""

    root: Path
    kaiwu: dict
    app_conf: str
    app: dict
    registry: str | None
    policy: str | None = None  # the conf that selects the training algorithm, where the layout has one
    entries: tuple[str, ...] = ()  # its folders and files (relative POSIX paths, parents first), as checked
    servers: tuple[str, str] | None = None  # (relative path, text) of the conf whose algo the servers build
    # what each entry was when checked (device, inode, type; a link's: its file's), so that a copy opens that only
    identities: tuple[tuple[int, int, int], ...] = ()


def _skipped(name: str) -> bool:
    """Python's bytecode caches: never part of a package, never copied."""
    return name == "__pycache__" or name.endswith(".pyc")


_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device file"),
          (stat.S_ISBLK, "a device file"))


def _entry_problem(real_root: Path, path: Path) -> str | None:
    """Why the entry ``path`` of the package whose resolved folder is ``real_root`` cannot be copied, or None: a
    symbolic link must lead to a file inside the package; anything else must be a file or a folder. Nothing is
    opened, so a named pipe cannot block. A name must be UTF-8: the upload's manifest and zip name every file so."""
    problem = not_utf8(path.name)
    if problem is not None:
        return (f"has a name that holds {problem}; the upload's manifest and its zip name every file in UTF-8: rename "
                "it in UTF-8, or remove it from the code package")
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        real = Path(os.path.realpath(path))
        if not os.path.exists(real):
            return (f"is a symbolic link to {target!r}, which does not exist (a dangling link); remove it or point "
                    "it at a file of the package")
        if not real.is_relative_to(real_root):
            return (f"is a symbolic link to {target!r}, outside the code package, and build-submission never copies "
                    "what such a link points to; put the file itself in the package (or remove the link)")
        if real.is_dir():
            return (f"is a symbolic link to the folder {target!r}; build-submission copies a link to a file of the "
                    "package only: put the folder itself there (or remove the link)")
        if not real.is_file():
            return f"is a symbolic link to {target!r}, which is not a plain file; remove it from the code package"
        return None
    for test, kind in _KINDS:
        if test(mode):
            return f"is {kind}, not a file or a folder; remove it from the code package"
    return None


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    """What makes a file or folder itself: its device, its inode and its type."""
    return st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)


def _checked_identity(path: Path) -> tuple[int, int, int]:
    """The identity of what copying the checked entry ``path`` reads: the entry itself, or a link's file."""
    st = os.lstat(path)
    return _identity(os.stat(os.path.realpath(path)) if stat.S_ISLNK(st.st_mode) else st)


def package_entries(root: str | Path) -> tuple[str, ...]:
    """The folders and files of the code package ``root`` (relative POSIX paths, parents first; bytecode caches
    aside), each checked (:func:`_entry_problem`): the first that cannot be copied raises a
    :class:`CodePackageError` naming it and the fix."""
    return tuple(rel for rel, _ in _checked_entries(Path(root)))


def _checked_entries(root: Path) -> list[tuple[str, tuple[int, int, int]]]:
    """:func:`package_entries` with each entry's identity as checked (:func:`_checked_identity`)."""
    real_root = Path(os.path.realpath(root))
    found: list[tuple[str, tuple[int, int, int]]] = []
    pending = [""]
    while pending:
        rel = pending.pop(0)
        try:
            with os.scandir(root / rel if rel else root) as listing:
                names = sorted(entry.name for entry in listing)
        except OSError as exc:
            raise CodePackageError(f"--code-package {str(root)!r}: cannot list {rel or '.'!r} ({exc.strerror}); fix "
                                   "its permissions") from None
        for name in names:
            if _skipped(name):
                continue
            sub = f"{rel}/{name}" if rel else name
            problem = _entry_problem(real_root, root / sub)
            if problem:
                raise CodePackageError(f"--code-package {str(root)!r}: {sub!r} {problem}; nothing was built")
            found.append((sub, _checked_identity(root / sub)))
            if stat.S_ISDIR(os.lstat(root / sub).st_mode):
                pending.append(sub)
    return found


def copy_package(package: CodePackage, target: str | Path) -> None:
    """The files of ``package`` (as :func:`package_entries` listed them) into the folder ``target``, with their
    permissions and times. Each is checked again as it is copied and read from its place inside the package: opened
    without following a link (``O_NOFOLLOW``, where the system has it) and without waiting, and what was opened must
    be what was checked (its device, inode and type, from the file itself), so a file or a folder above it swapped
    meanwhile for a link out, another file or a named pipe is refused (:class:`CodePackageError`) rather than
    copied."""
    root, target = Path(package.root), Path(target)
    real_root = Path(os.path.realpath(root))
    target.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    identities = package.identities or tuple(_checked_identity(root / rel) for rel in package.entries)
    for rel, checked in zip(package.entries, identities, strict=True):
        src = root / rel
        problem = _entry_problem(real_root, src)
        if problem:
            raise CodePackageError(f"--code-package {str(root)!r}: {rel!r} {problem}; nothing was built")
        if stat.S_ISDIR(checked[2]):
            if _identity(os.lstat(src)) != checked:
                raise CodePackageError(_changed(root, rel))
            (target / rel).mkdir(exist_ok=True)
            continue
        # a file of the package by its own name (never a link followed), or the file of the package a link names
        real = Path(os.path.realpath(src)) if os.path.islink(src) else src
        if not Path(os.path.realpath(real)).is_relative_to(real_root):
            raise CodePackageError(_changed(root, rel))
        try:
            fd = os.open(real, flags)
        except OSError as exc:  # ELOOP: swapped for a link since it was checked
            raise CodePackageError(_changed(root, rel, exc.strerror)) from None
        with open(fd, "rb") as source:
            opened = os.fstat(source.fileno())
            if _identity(opened) != checked or not stat.S_ISREG(opened.st_mode):
                raise CodePackageError(_changed(root, rel))
            with open(target / rel, "wb") as copy:
                shutil.copyfileobj(source, copy)
        os.chmod(target / rel, stat.S_IMODE(opened.st_mode))
        os.utime(target / rel, ns=(opened.st_atime_ns, opened.st_mtime_ns))


def _changed(root: Path, rel: str, reason: str | None = None) -> str:
    """The message for an entry that is no longer what was checked when the copy opens it."""
    why = f" ({reason})" if reason else ""
    return (f"--code-package {str(root)!r}: {rel!r} changed while the package was copied{why}: it is not the file "
            "that was checked (replaced, or swapped for a symbolic link, or a folder above it was), and "
            "build-submission copies only what it checked; leave the code package alone while it builds and run it "
            "again; nothing was built")


def _no_kaiwu_json(root: Path, layout: dict) -> str:
    """What to do about a code package without its root ``kaiwu.json``."""
    versions = " or ".join(f"{v}x" for v in layout["versions"])
    example = json.dumps({"version": layout["versions"][0] + "x", "project_code": layout["project_code"]})
    return (f"--code-package {str(root)!r} has no kaiwu.json. Every code package the Kaiwu client (开悟客户端) gives "
            f"holds one at its root, naming the game and the edition: {example}, where x is the client's own "
            f"(project_code {layout['project_code']!r} and version {versions} for {layout['title']}). Copies taken "
            "from a repository often lack it: pass the code package (代码包) folder the client gives, or copy its "
            "kaiwu.json to the root of this folder (never one written by hand with another version than the "
            "client's)")


def _read_conf(path: Path) -> str:
    """A conf file's text with its line endings as they are (no newline translation), so that an edit keeps them."""
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def write_conf(path: str | Path, text: str) -> None:
    """A conf file of the package being built, with its line endings as given (the user's own are kept)."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def read_code_package(path: str | Path, layout: dict, layout_name: str) -> CodePackage:
    """Read and check the code package at ``path`` for the layout ``layout`` (its ``layout.toml``)."""
    root = Path(path)
    hint = ("pass the folder of your official code package, as your Kaiwu client gives it (it holds kaiwu.json, "
            "conf/ and train_test.py)")
    if not root.is_dir():
        raise CodePackageError(f"--code-package {str(root)!r} is not a folder; {hint}")
    checked = _checked_entries(root)  # before any file is read: nothing is read through a link out or a pipe
    kaiwu_path = root / "kaiwu.json"
    try:
        kaiwu = json.loads(kaiwu_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CodePackageError(_no_kaiwu_json(root, layout)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CodePackageError(f"--code-package {str(root)!r}: kaiwu.json does not parse ({exc}); {hint}") from None
    project, version = (kaiwu.get("project_code"), str(kaiwu.get("version", ""))) if isinstance(kaiwu, dict) else \
        (None, "")
    if project != layout["project_code"] or not any(version.startswith(v) for v in layout["versions"]):
        raise CodePackageError(
            f"--code-package {str(root)!r} is the code package of project {project!r} version {version!r} "
            f"(its kaiwu.json); --layout {layout_name} builds for {layout['project_code']!r} version "
            f"{' or '.join(v + 'x' for v in layout['versions'])} ({layout['title']}): use that game's and edition's "
            "code package, or another --layout")
    conf_path = root / layout["app_conf"]
    try:
        conf = _read_conf(conf_path)
        app = tomllib.loads(conf)[layout["app_table"]]
    except FileNotFoundError:
        raise CodePackageError(f"--code-package {str(root)!r} has no {layout['app_conf']}; {hint}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise CodePackageError(f"{conf_path} does not parse as TOML with an [{layout['app_table']}] table ({exc}); "
                               "restore it from your Kaiwu client's code package") from None
    registry_path = root / layout["algo_conf"]
    registry = _read_conf(registry_path) if registry_path.is_file() else None
    if registry is not None:
        _check_registry(registry_path, registry)
    policy = None
    if "policy_conf" in layout:
        policy_path = root / layout["policy_conf"]
        try:
            policy = _read_conf(policy_path)
            found = _table_of(tomllib.loads(policy), layout["policy_table"])
        except FileNotFoundError:
            raise CodePackageError(f"--code-package {str(root)!r} has no {layout['policy_conf']}; {hint}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CodePackageError(f"{policy_path} does not parse as TOML ({exc}); restore it from your Kaiwu "
                                   "client's code package") from None
        if "algo" not in found:
            raise CodePackageError(f"{policy_path} has no [{layout['policy_table']}] table with algo; restore it "
                                   "from your Kaiwu client's code package")
    servers = _read_servers_conf(root, layout, app, hint) if "servers_conf" in layout else None
    return CodePackage(root, kaiwu, conf, app, registry, policy, tuple(rel for rel, _ in checked), servers,
                       tuple(identity for _, identity in checked))


def servers_conf_path(layout: dict, app: dict) -> str:
    """The package-relative path of the conf whose ``policies.train_one.algo`` selects the Agent class the servers
    (aisrv, actor, learner) build: the ``[app]`` table's ``selfplay_app_conf`` or ``noselfplay_app_conf`` (by
    ``self_play``), as the framework reads it; the layout's ``servers_conf`` when the table names none."""
    key = "selfplay_app_conf" if app.get("self_play") is True else "noselfplay_app_conf"
    named = app.get(key)
    return named if isinstance(named, str) and named.strip() else layout["servers_conf"]


def _read_servers_conf(root: Path, layout: dict, app: dict, hint: str) -> tuple[str, str]:
    """The servers' conf of the package (:func:`servers_conf_path`), checked to hold the algorithm key."""
    rel = servers_conf_path(layout, app)
    path = root / rel
    if Path(rel).is_absolute() or ".." in Path(rel).parts:
        raise CodePackageError(f"{root / layout['app_conf']} names the app conf {rel!r}, which is not a path inside "
                               "the code package; restore the line from your Kaiwu client's code package")
    try:
        text = _read_conf(path)
        parsed = yaml.safe_load(text)
    except FileNotFoundError:
        raise CodePackageError(f"--code-package {str(root)!r} has no {rel}, the conf from which the platform's "
                               f"servers build the Agent; {hint}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CodePackageError(f"{path} does not parse as YAML ({exc}); restore it from your Kaiwu client's code "
                               "package") from None
    keys = [layout["project_code"], *layout["servers_key"]]
    if not isinstance(_nested(parsed, keys), str):
        raise CodePackageError(f"{path} has no {'.'.join(keys)} (the algorithm whose Agent the platform's servers "
                               "build); restore it from your Kaiwu client's code package")
    return rel, text


def _nested(data, keys):
    """The value at ``keys`` of nested mappings, or None."""
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


_YAML_KEY = re.compile(r"^(\s*)([A-Za-z0-9_.-]+)\s*:(\s*)(.*)$")


def set_yaml_value(text: str, keys: list[str], value: str) -> str:
    """A block-style YAML file's text with the scalar at ``keys`` (nested mappings) set to ``value``, every other
    line kept as it was (its line endings too, a comment after the value too); checked by parsing the result."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines()
    stack: list[tuple[int, str]] = []
    found = None
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith(("#", "-")):
            continue
        match = _YAML_KEY.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2)))
        if [k for _, k in stack] == keys:
            found = (i, match)
    wanted = f"{'.'.join(keys)}: {value}"
    if found is None:
        raise CodePackageError(f"found no line of {wanted.split(':')[0]} to edit; set it by hand: {wanted}")
    i, match = found
    trailing = re.search(r"\s+#.*$", match.group(4))
    lines[i] = f"{match.group(1)}{match.group(2)}:{match.group(3) or ' '}{value}{trailing.group(0) if trailing else ''}"
    result = newline.join(lines) + (newline if text.endswith(("\n", "\r")) else "")
    before, after = yaml.safe_load(text), yaml.safe_load(result)
    expected = _with_nested(before, keys, value)
    if after != expected:
        raise CodePackageError(f"editing {'.'.join(keys)} line by line did not give the expected value; set it by "
                               f"hand: {wanted}")
    return result


def _with_nested(data, keys, value):
    """A copy of nested mappings with the value at ``keys`` replaced."""
    head, rest = keys[0], keys[1:]
    return {**data, head: _with_nested(data[head], rest, value) if rest else value}


def _check_registry(path: Path, text: str) -> None:
    """The algorithm registry parses (TOML or YAML, by its name) as a mapping of algorithm names."""
    if path.suffix == ".toml":
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CodePackageError(f"{path} does not parse as TOML ({exc}); restore it from your Kaiwu client's code "
                                   "package") from None
        return
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CodePackageError(f"{path} does not parse as YAML ({exc}); restore it from your Kaiwu client's code "
                               "package") from None
    if parsed is not None and not isinstance(parsed, dict):
        raise CodePackageError(f"{path} is not a mapping of algorithm names; restore it from your Kaiwu client's "
                               "code package")


def toml_value(value) -> str:
    """A Python bool, int or str as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)


def _depth_change(line: str) -> int:
    """Open minus closed brackets of one line, outside strings and comments."""
    depth, quote, i = 0, None, 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth


def _settings_of(lines: list[str], table: str) -> tuple[dict[str, tuple[int, int]], int, int]:
    """The settings of ``[table]``: key -> (first line, line after its value), and the table's line span."""
    spans, depth, current, start, end = {}, 0, None, None, None
    key, key_start = None, 0
    for i, line in enumerate(lines):
        if depth == 0:
            stripped = line.strip()
            if stripped.startswith("["):
                name = stripped.strip("[]").split("#")[0].strip().strip("[] ")
                if current == table:
                    end = i
                current = name
                if name == table:
                    start = i + 1
                continue
            match = _KEY.match(line)
            key, key_start = (match.group(1), i) if match else (None, i)
        depth += _depth_change(line)
        if depth == 0 and key is not None:
            if current == table:
                spans[key] = (key_start, i + 1)
            key = None
    if start is None:
        raise CodePackageError(f"no [{table}] table")
    return spans, start, end if end is not None else len(lines)


def edit_settings(text: str, table: str, settings: dict, last: dict) -> str:
    """``text`` (a TOML file) with the settings of ``[table]`` named in ``settings`` set in place (new ones added at the
    table's end) and those in ``last`` removed from where they are and written as the table's last lines, in order.
    Every other line is kept as it was; the result is checked by parsing it."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines()
    spans, _start, end = _settings_of(lines, table)
    replace = {spans[k][0]: (spans[k][1], f"{k} = {toml_value(v)}") for k, v in settings.items() if k in spans}
    drop = {spans[k][0]: spans[k][1] for k in last if k in spans}
    added = [f"{k} = {toml_value(v)}" for k, v in settings.items() if k not in spans]
    added += [f"{k} = {toml_value(v)}" for k, v in last.items()]
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i == end:
            while out and not out[-1].strip():  # the new lines follow the table's last setting
                out.pop()
            out.extend(added)
            added = []
            if end < len(lines):
                out.append("")
        if i in replace:
            stop, line = replace[i]
            out.append(line)
            i = stop
        elif i in drop:
            i = drop[i]
        else:
            out.append(lines[i])
            i += 1
    if added:  # the table runs to the end of the file
        while out and not out[-1].strip():
            out.pop()
        out.extend(added)
    result = newline.join(out) + newline
    before, after = tomllib.loads(text), tomllib.loads(result)
    want = _with_table(before, table, {**_table_of(before, table), **settings, **last})
    order = list(_table_of(after, table))
    if after != want or (last and order[-len(last):] != list(last)):
        wanted = ", ".join(f"{k} = {toml_value(v)}" for k, v in {**settings, **last}.items())
        raise CodePackageError(f"editing the [{table}] table line by line did not give the expected settings; set "
                               f"these lines by hand: {wanted}")
    return result


def _table_of(data: dict, table: str) -> dict:
    """The table ``table`` (a dotted name: ``gorge_chase.policies.train_one``) of parsed TOML, or {}."""
    for part in table.split("."):
        data = data.get(part, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _with_table(data: dict, table: str, value: dict) -> dict:
    """A copy of parsed TOML with the (dotted) table ``table`` replaced by ``value``."""
    head, _, rest = table.partition(".")
    inner = data.get(head, {}) if isinstance(data.get(head), dict) else {}
    return {**data, head: _with_table(inner, rest, value) if rest else value}


def ensure_table(text: str, table: str, entry: dict) -> str:
    """A TOML file's text with the settings of ``entry`` in its ``[table]`` (the table added at the end when it is
    missing); every other line kept as it was, the result checked by parsing it."""
    lines = text.splitlines()
    if any(line.split("#")[0].strip() == f"[{table}]" for line in lines):
        return edit_settings(text, table, entry, {})
    newline = "\r\n" if "\r\n" in text else "\n"
    while lines and not lines[-1].strip():
        lines.pop()
    lines += ([""] if lines else []) + [f"[{table}]"] + [f"{k} = {toml_value(v)}" for k, v in entry.items()]
    result = newline.join(lines) + newline
    if _table_of(tomllib.loads(result), table) != entry:
        raise CodePackageError(f"adding the [{table}] table did not give the expected settings; add it by hand")
    return result


def ensure_registration(text: str | None, algo: str, entry: dict[str, str]) -> str:
    """The algorithm registry's text with ``algo``'s entry set to ``entry`` (the other entries kept line for line)."""
    block = [f"{algo}:"] + [f"  {key}: {value}" for key, value in entry.items()]
    if text is None:
        return "\n".join(block) + "\n"
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.split("#")[0].rstrip() == f"{algo}:"), None)
    if start is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ([""] if lines else []) + block
    else:
        stop = next((j for j in range(start + 1, len(lines)) if lines[j].strip() and not lines[j][0].isspace()),
                    len(lines))
        while stop > start + 1 and not lines[stop - 1].strip():
            stop -= 1
        lines[start:stop] = block
    result = newline.join(lines) + newline
    before = yaml.safe_load(text) or {}
    if yaml.safe_load(result) != {**before, algo: entry}:
        raise CodePackageError(f"editing the algorithm registry line by line did not give the expected entry; add "
                               f"it by hand: {newline.join(block)}")
    return result


def package_settings(layout: dict, algo: str, ckpt_id: int, sample_dim: int) -> tuple[dict, dict]:
    """``(settings, last)`` of ``configure_app.toml`` for a package: the algorithm, the learner's sample length and
    the preload keys, then the two eval lines. The preload reads the copy of the weights inside the algorithm
    folder: the conf, preload keys included, travels in every model a training task saves, and so does that folder
    (``copy_dir``), so an evaluation of any save finds the preload's file rather than logging that it is missing."""
    ckpt_dir = f"{layout['project_root']}/ckpt"
    settings = {"algo": algo, "sample_dim": sample_dim, "preload_model": True,
                "preload_model_dir": f"{layout['project_root']}/{algo}/ckpt", "preload_model_id": ckpt_id}
    return settings, {"eval_model_dir": ckpt_dir, "eval_model_id": ckpt_id}


def merge_text(layout: dict, algo: str, ckpt_id: int, sample_dim: int) -> str:
    """The lines to merge into the user's ``configure_app.toml`` when no code package was given."""
    settings, last = package_settings(layout, algo, ckpt_id, sample_dim)
    lines = [f"# Merge these lines into the [{layout['app_table']}] table of your code package's {layout['app_conf']}",
             "# (replace the lines with the same keys; remove the old eval_model_dir and eval_model_id lines: a key",
             "# set twice breaks the file). The eval lines go last. copy_dir must keep listing "
             f"{algo!r} (the official file's does).",
             *([f"# Set {layout['project_code']}.{'.'.join(layout['servers_key'])} to {algo} in "
                f"{layout['servers_conf']} too",
                "# (the platform's servers build that algorithm's Agent; it must be the workflow's algorithm)."]
               if "servers_conf" in layout else []),
             *[f"{k} = {toml_value(v)}" for k, v in settings.items()],
             *[f"{k} = {toml_value(v)}" for k, v in last.items()]]
    return "\n".join(lines) + "\n"
