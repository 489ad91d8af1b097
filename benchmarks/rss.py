"""Peak resident memory of a benchmark: this process and its largest finished child, in MiB (POSIX ``resource``;
``{}`` where the module does not exist, as on Windows). Imported by the benchmark scripts beside it."""

from __future__ import annotations

import sys

try:
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None

__all__ = ["peak_rss_mib"]


def peak_rss_mib() -> dict:
    if resource is None:
        return {}
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return {"self_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale, 1),
            "largest_child_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / scale, 1)}
