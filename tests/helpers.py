"""Helpers shared by several test modules (imported explicitly, not through conftest)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path


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
