"""What the platform stand-ins of every layout share, loaded by file from this folder (never imported through
sb3_realm): the simulated clock and the task log of the frameworks (``platform_stub/framework.py``,
``gorge15/platform/framework.py``), and the guarded process and the pipe of their harnesses (``harness.py``,
``gorge15/harness.py``), and the digest of the weights an Agent holds. Standard library only."""

import hashlib
import json
import struct
import sys
import traceback
from importlib.abc import MetaPathFinder

__all__ = ["BLOCKED", "Clock", "Log", "agent_weights", "guard_imports", "read_exactly", "recv", "send",
           "weights_digest"]

#: the packages a submission may not import (torch, numpy, the standard library and the platform's modules only)
BLOCKED = ("sb3_realm", "stable_baselines3", "sb3_contrib", "gymnasium", "gym")


class Clock:
    """Simulated time, in seconds since the task started."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def perf_counter(self):
        return self.now

    def time(self):
        return 1.7e9 + self.now

    def sleep(self, seconds):
        self.now += max(0.0, float(seconds))

    advance = sleep


class Log:
    """The task's log: ``(level, message)`` lines."""

    def __init__(self):
        self.lines = []

    def _add(self, level, message):
        self.lines.append((level, str(message)))

    def debug(self, message, *args, **kwargs):
        self._add("DEBUG", message)

    def info(self, message, *args, **kwargs):
        self._add("INFO", message)

    def warning(self, message, *args, **kwargs):
        self._add("WARNING", message)

    def error(self, message, *args, **kwargs):
        self._add("ERROR", message)

    def exception(self, message, *args, **kwargs):
        self._add("ERROR", f"{message}\n{traceback.format_exc()}")

    critical = error

    @property
    def errors(self):
        return [message for level, message in self.lines if level == "ERROR"]


class _Block(MetaPathFinder):
    def __init__(self, blocked):
        self.blocked = tuple(blocked)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"{fullname} cannot be imported in a submission (torch + numpy only)")
        return None


def guard_imports(blocked=BLOCKED):
    """From now on, importing one of ``blocked`` in this process raises ``ModuleNotFoundError``."""
    sys.meta_path.insert(0, _Block(blocked))


def read_exactly(stream, n):
    data = stream.read(n)
    if len(data) != n:
        raise EOFError("the checker closed the pipe")
    return data


def recv(stream):
    """One message of the pipe: 4-byte big-endian length + UTF-8 JSON."""
    (n,) = struct.unpack(">I", read_exactly(stream, 4))
    return json.loads(read_exactly(stream, n))


def send(stream, obj):
    data = json.dumps(obj).encode()
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def weights_digest(state):
    """The sha256 of a state dict's tensors (torch's): each key with its tensor's dtype, shape and values, in key
    order. Two state dicts holding the same weights have the same digest, whatever file they were read from."""
    digest = hashlib.sha256()
    for key in sorted(state):
        tensor = state[key].detach().cpu().contiguous()
        digest.update(f"{key}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def agent_weights(agent):
    """The :func:`weights_digest` of the weights an Agent plays with (its ``model``), or None for an Agent without
    one."""
    model = getattr(agent, "model", None)
    return None if model is None or not hasattr(model, "state_dict") else weights_digest(model.state_dict())
