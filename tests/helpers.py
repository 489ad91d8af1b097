"""Helpers shared by several test modules (imported explicitly, not through conftest)."""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np

from sb3_realm.game import RealmMap

REPO = Path(__file__).resolve().parents[1]


def strip_feature_version(model_zip: str | Path, out: str | Path | None = None) -> Path:
    """Rewrite an SB3 ``.zip`` without its recorded ``feature_version``, as a model saved before versions were
    recorded (into ``out``, default: in place)."""
    model_zip = Path(model_zip)
    out = Path(out) if out is not None else model_zip
    with zipfile.ZipFile(model_zip) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data.pop("feature_version", None)
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return out


def make_legacy_run(run_dir: str | Path) -> None:
    """Turn a training run into one from before feature versions were recorded: no version in any model ``.zip``,
    null in ``config.yaml``."""
    run_dir = Path(run_dir)
    for model_zip in run_dir.rglob("*.zip"):
        strip_feature_version(model_zip)
    config = run_dir / "config.yaml"
    lines = [("feature_version: null" if line.startswith("feature_version:") else line)
             for line in config.read_text(encoding="utf-8").splitlines()]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def open_map(size: int = 40, walls: list[tuple[slice, slice]] = (), grid_positions=None) -> RealmMap:
    """A square room with a 2-cell wall border, optional wall blocks ``(z_slice, x_slice)`` and 16 positions given
    in grid cells (default: a 4 x 4 lattice far from each other)."""
    walk = np.zeros((size, size), dtype=bool)
    walk[2:-2, 2:-2] = True
    for zs, xs in walls:
        walk[zs, xs] = False
    if grid_positions is None:
        lattice = [4 + 9 * i for i in range(4)]
        grid_positions = [(gx, gz) for gz in lattice for gx in lattice]
    return RealmMap(walkable=walk, positions_world=[RealmMap.grid_to_world(gx, gz) for gx, gz in grid_positions])


def load_tool(name: str) -> ModuleType:
    """The module ``tools/<name>.py`` of the repository (build tools live beside the package, not in it)."""
    key = f"_sb3_realm_tool_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, REPO / "tools" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
