"""Config files: YAML read as data (never code), ``base:`` chains of recipes merged, ``--set`` overrides, and the
recipes' old names mapped to their new ones."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import yaml

from ..atomic import not_a_file

__all__ = ["RENAMED_CONFIGS", "apply_overrides", "merge_config", "read_config_file"]


def _parse_value(text: str):
    try:
        return yaml.safe_load(text)  # data only: numbers, strings, lists, mappings; never code
    except yaml.YAMLError as exc:
        raise ValueError(f"cannot parse value {text!r} ({exc})") from exc


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``key.sub=value`` overrides (values parsed as YAML data) to a config dict."""
    data = dict(data)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"--set {item!r}: expected key=value, e.g. --set algo.hyperparams.n_steps=256")
        key, _, raw = item.partition("=")
        parts = key.strip().split(".")
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"--set {item!r}: {part!r} is not a section")
        node[parts[-1]] = _parse_value(raw)
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``" at line L, column C: what"`` of a YAML error, on one line."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    return f"{where}: {problem}"


#: recipes that were renamed or moved: the old path's end (its file name, or its last folder and file name) -> the new
#: path under ``configs/``; a config path that does not exist and ends in an old one gets one line naming the new one
RENAMED_CONFIGS: dict[str, str] = {
    "imitate.yaml": "realm/imitate/base.yaml", "imitate_default_map.yaml": "realm/imitate/fifteen_minutes.yaml",
    "imitate_default_map_all_sets.yaml": "realm/imitate/all_sets.yaml",
    "imitate_default_map_slow.yaml": "realm/imitate/past_the_oracle.yaml",
    "imitate_real_map.yaml": "realm/imitate/competition_fifteen_minutes.yaml",
    "imitate_real_map_all_sets.yaml": "realm/imitate/competition_all_sets.yaml",
    "imitate_real_map_slow.yaml": "realm/imitate/competition_oracle_level.yaml",
    "imitate_real_map_refined.yaml": "realm/imitate/competition_past_the_oracle.yaml",
    # the recipes of the first game moved into its folder, configs/realm/
    **{name: f"realm/{name}" for name in ("ppo.yaml", "maskable_ppo.yaml", "recurrent_ppo.yaml", "tiny.yaml",
                                          "finetune.yaml")},
    **{f"imitate/{name}.yaml": f"realm/imitate/{name}.yaml"
       for name in ("base", "quick", "fifteen_minutes", "all_sets", "past_the_oracle", "competition_fifteen_minutes",
                    "competition_all_sets", "competition_oracle_level", "competition_past_the_oracle")},
}


def _renamed(path: Path) -> str | None:
    """The new path under ``configs/`` of a recipe that was renamed or moved, when ``path`` ends in its old one."""
    parts = path.as_posix().split("/")
    for n in (2, 1):
        new = RENAMED_CONFIGS.get("/".join(parts[-n:])) if len(parts) >= n else None
        if new is not None and not path.as_posix().endswith(new):
            return new
    return None


def _read_yaml(path: str | os.PathLike) -> dict:
    """One config file's own mapping (its ``base:`` not followed)."""
    p = Path(path)
    problem = not_a_file(path)
    if problem:
        renamed = _renamed(p) if p.name and not p.exists() else None
        if renamed:
            raise ValueError(f"config file {str(path)!r} {problem}: that recipe is now configs/{renamed} (the "
                             "recipes are named by purpose, in the folder of their game); pass --config configs/"
                             + renamed)
        raise ValueError(f"config file {str(path)!r} {problem}; see configs/ for examples")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"config file {str(p)!r} is not valid YAML{_yaml_problem(exc)}; fix it "
                         "(configs/realm/ppo.yaml shows the shape)") from exc
    if not isinstance(data, dict):
        raise ValueError(f"config file {str(p)!r} holds a {type(data).__name__}, not a mapping of keys (seed:, "
                         "env:, algo:, ...); see configs/realm/ppo.yaml for the shape")
    return data


def merge_config(base: dict, overlay: dict) -> dict:
    """``overlay`` laid over ``base``: mappings merge key by key (at any depth), anything else (a number, a string,
    a list) is replaced whole by the overlay's value."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_config_file(path: str | os.PathLike, _chain: tuple[Path, ...] = ()) -> dict:
    """The mapping of a config file with its ``base:`` resolved: ``base: FILE`` (relative to the file's own folder)
    names the config it extends, and the file lists only what differs (merged by :func:`merge_config`; a base may
    have its own base). The result holds no ``base`` key: it is the whole config."""
    data = _read_yaml(path)
    if "base" not in data:
        return data
    base = data.pop("base")
    if not isinstance(base, str) or not base.strip():
        raise ValueError(f"config file {str(path)!r}: base = {base!r}; it must name the config file this one extends, "
                         "relative to its folder (e.g. base: base.yaml)")
    here = Path(path).resolve()
    target = (here.parent / base).resolve()
    chain = (*_chain, here)
    if target in chain:
        loop = " -> ".join(str(p.name) for p in (*chain, target))
        raise ValueError(f"config file {str(path)!r}: base = {base!r} makes a loop ({loop}); a base must not extend "
                         "the file that names it: point one of these base: lines at a config that does not lead back "
                         "to this file, or delete that line and copy into its file the keys its base gave it")
    if not target.is_file():
        renamed = _renamed(target) if not target.exists() else None
        moved = f" (that recipe is now configs/{renamed})" if renamed else ""
        raise ValueError(f"config file {str(path)!r}: base = {base!r} is not a file ({target}){moved}; name the "
                         "config it extends by its path relative to this file's folder (e.g. base: ppo.yaml in a "
                         "file beside configs/realm/ppo.yaml)")
    return merge_config(read_config_file(target, chain), data)


