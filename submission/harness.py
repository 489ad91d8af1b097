"""Play a built submission the way the platform does, in a process that cannot import sb3_realm, SB3 or gymnasium.

    python harness.py SUBMISSION_DIR PLATFORM_STUB_DIR PROTOCOL_PY

Reads ``conf/configure_app.toml`` (algo, eval_model_dir, eval_model_id), imports ``<algo>.algorithm.agent`` and
``<algo>.feature.definition`` with the submission folder and the ``kaiwu_agent`` stand-in on the import path,
``Agent()`` then ``load_model(eval_model_dir, eval_model_id)``, one torch thread. Then serves the evaluation loop's
agent half over stdin/stdout: each request is a competition observation (and ``env_info``, None right after a
reset); the answer is ``action_process(agent.exploit([observation_process(obs, env_info)])[0])``. The observation
is handed over in the platform's types: attribute objects, and the four maps as flat ``repeated`` fields of 2601 values
(``RepeatedScalars`` of the simulator's self-contained ``protocol.py``, loaded by path from PROTOCOL_PY; ints for the
obstacle, treasure and end maps, floats for the memory map).

Wire format (both ways): 4-byte big-endian length + UTF-8 JSON; a request with ``"maps": true`` is followed by
4-byte length + ``.npy`` bytes (float64 (4, 2601): obstacle, memory, treasure, end maps; no pickle).
"""

import io
import json
import struct
import sys
import tomllib
from importlib.abc import MetaPathFinder
from pathlib import Path
from types import SimpleNamespace

BLOCKED = ("sb3_realm", "stable_baselines3", "sb3_contrib", "gymnasium", "gym")
MAP_KEYS = ("obstacle_map", "memory_map", "treasure_map", "end_map")


class _Block(MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"{fullname} cannot be imported in a submission (torch + numpy only)")
        return None


def _read(stream, n):
    data = stream.read(n)
    if len(data) != n:
        raise EOFError("the checker closed the pipe")
    return data


def _recv(stream):
    (n,) = struct.unpack(">I", _read(stream, 4))
    return json.loads(_read(stream, n))


def _send(stream, obj):
    data = json.dumps(obj).encode()
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _ns(value):
    """Dicts -> attribute objects, like the platform's observation objects."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_ns(v) for v in value]
    return value


def _load_protocol(path):
    """The simulator's protocol types, from their self-contained file (not through the blocked sb3_realm package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("realm_protocol", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def main():
    root, stub = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    sys.path[:] = [str(root), str(stub)] + [p for p in sys.path[1:] if p]
    sys.meta_path.insert(0, _Block())
    import importlib

    protocol = _load_protocol(Path(sys.argv[3]).resolve())

    import numpy as np
    import torch

    torch.set_num_threads(1)
    app = tomllib.loads((root / "conf" / "configure_app.toml").read_text(encoding="utf-8"))["app"]
    algo = app["algo"]
    agent_mod = importlib.import_module(f"{algo}.algorithm.agent")
    definition = importlib.import_module(f"{algo}.feature.definition")
    model_dir = Path(app["eval_model_dir"])
    agent = agent_mod.Agent(agent_type="player", device="cpu")
    agent.load_model(path=str(model_dir if model_dir.is_absolute() else root / model_dir),
                     id=str(app["eval_model_id"]))
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    loaded = sorted({m.split(".")[0] for m in sys.modules})
    _send(out, {"ready": True, "modules": loaded, "torch_threads": torch.get_num_threads()})
    while True:
        try:
            req = _recv(inp)
        except EOFError:
            return
        if req.get("quit"):
            return
        obs = req["obs"]
        if req.get("maps"):
            (n,) = struct.unpack(">I", _read(inp, 4))
            maps = np.load(io.BytesIO(_read(inp, n)), allow_pickle=False)
            for key, arr in zip(MAP_KEYS, maps, strict=True):
                values = arr.astype(np.float32 if key == "memory_map" else np.int32)  # repeated float / int32
                obs["feature"][key] = protocol.RepeatedScalars(values)
        env_info = req.get("env_info")
        obs_data = definition.observation_process(_ns(obs), None if env_info is None else _ns(env_info))
        act = definition.action_process(agent.exploit([obs_data])[0])
        _send(out, {"act": int(act)})


if __name__ == "__main__":
    main()
