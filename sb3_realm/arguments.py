"""argparse types shared by the command lines (``sb3-realm`` and the tuning scripts)."""

from __future__ import annotations

import argparse
import json

__all__ = ["json_dict"]


def json_dict(text: str) -> dict:
    """argparse type of a JSON-object argument (``--usr-conf``, the tuning scripts' ``--enqueue``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"treasure_num\": 3}}' or "
                                         f"'{{\"treasure\": 2.0}}', got {text!r}")
    return value
