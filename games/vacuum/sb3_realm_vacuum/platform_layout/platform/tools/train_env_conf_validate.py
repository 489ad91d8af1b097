"""Stand-in for ``tools.train_env_conf_validate`` of robot_vacuum's 13.0.1 framework: read and check the training
task's ``train_env_conf.toml`` (its ``[env_conf]`` keys and ranges, the rules' configuration section). An unknown
key or a value out of range fails the task, as the platform rejects it."""

import tomllib
from pathlib import Path

__all__ = ["RANGES", "read_usr_conf"]

# the platform's ranges (its guide): key -> (low, high)
RANGES = {"robot_count": (1, 4), "charger_count": (1, 4), "max_step": (1, 2000), "battery_max": (100, 999)}
MAPS = range(1, 11)


def _problem(conf):
    if not isinstance(conf, dict):
        return "no [env_conf] table"
    unknown = sorted(set(conf) - set(RANGES) - {"map", "map_random"})
    if unknown:
        return f"unknown keys {unknown} (robot_vacuum's are map, map_random and {sorted(RANGES)})"
    maps = conf.get("map", list(MAPS))
    if not isinstance(maps, list) or not maps or any(isinstance(m, bool) or m not in MAPS for m in maps):
        return f"map = {maps!r} must be a non-empty list of map ids 1..10"
    if not isinstance(conf.get("map_random", False), bool):
        return f"map_random = {conf['map_random']!r} must be true or false"
    for key, (low, high) in RANGES.items():
        value = conf.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            return f"{key} = {value!r} is outside {low}..{high}"
    return None


def read_usr_conf(path, logger=None):
    """``{"env_conf": {...}}`` from the TOML file at ``path`` (relative to the code package, the working folder of
    the platform's processes), or None with an error line when it is missing or invalid."""
    try:
        conf = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("env_conf")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problem = f"cannot be read ({exc})"
    else:
        problem = _problem(conf)
    if problem:
        if logger is not None:
            logger.error(f"read_usr_conf: {path}: {problem}")
        return None
    return {"env_conf": conf}
