"""Run a built submission through the platform stand-in (``platform_stub/framework.py``) in a process that cannot
import sb3_realm, SB3 or gymnasium (one torch thread, as on the platform):

    python harness.py train LAYOUT_DIR UPLOAD_DIR TASK_DIR PROTOCOL_PY OPTIONS_JSON
    python harness.py eval-model LAYOUT_DIR MODEL_DIR POOL_DIR PROTOCOL_PY
    python harness.py eval-package LAYOUT_DIR UPLOAD_DIR PROTOCOL_PY

``train`` runs a training task of the upload folder; the environment is the caller's (the requests below), and the
last message is ``{"op": "done", "report": ...}``. ``eval-model`` loads a model the task saved as the platform's model
loader does; ``eval-package`` loads the upload folder's own Agent as the platform's evaluation of a code package
does (the registry's class, ``load_model(eval_model_dir, eval_model_id)``). Both answer first with the loading's
ERROR lines and the digest of the weights the Agent then holds (``{"ready": true, ..., "errors": [...],
"weights_sha256": ...}``, see ``stand_in.weights_digest``), then serve the evaluation loop's
agent half: each request is a competition observation (and ``env_info``, None right after a reset); the answer is
``action_process(agent.exploit([observation_process(obs, env_info)])[0])`` with the two functions taken from
kaiwu_agent's registry, where the platform's own evaluation workflow finds them.

The observation travels in the platform's types: attribute objects, and the four maps as flat ``repeated`` fields of
2601 values (``RepeatedScalars`` of the simulator's self-contained ``protocol.py``, loaded by path from PROTOCOL_PY;
ints for the obstacle, treasure and end maps, floats for the memory map).

Wire format (both ways): 4-byte big-endian length + UTF-8 JSON; a message with ``"maps": true`` is followed by
4-byte length + ``.npy`` bytes (float64 (4, 2601): obstacle, memory, treasure, end maps; no pickle). ``train``'s
requests: ``{"op": "reset", "usr_conf": ...}`` answered by ``{"obs": ...}`` (null: the platform's failed reset);
``{"op": "step", "act": A}`` answered by ``{"frame_no", "obs", "score", "terminated", "truncated", "env_info"}``.
"""

import importlib.util
import io
import json
import os
import struct
import sys
from pathlib import Path
from types import SimpleNamespace

_SPEC = importlib.util.spec_from_file_location("_sb3_realm_stand_in",
                                           Path(__file__).resolve().parent / "stand_in.py")
_STAND_IN = importlib.util.module_from_spec(_SPEC)  # what every layout's stand-in shares (submission/stand_in.py)
_SPEC.loader.exec_module(_STAND_IN)
_read, _recv, _send = _STAND_IN.read_exactly, _STAND_IN.recv, _STAND_IN.send
MAP_KEYS = ("obstacle_map", "memory_map", "treasure_map", "end_map")


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


class _Observations:
    """Observations of the wire, in the platform's types."""

    def __init__(self, protocol_path, stream):
        import numpy as np

        self.np, self.protocol, self.stream = np, _load_protocol(protocol_path), stream

    def read(self, message, obs):
        if obs is None:
            return None
        if message.get("maps"):
            (n,) = struct.unpack(">I", _read(self.stream, 4))
            maps = self.np.load(io.BytesIO(_read(self.stream, n)), allow_pickle=False)
            for key, arr in zip(MAP_KEYS, maps, strict=True):
                values = arr.astype(self.np.float32 if key == "memory_map" else self.np.int32)  # repeated float/int32
                obs["feature"][key] = self.protocol.RepeatedScalars(values)
        return _ns(obs)


class _RemoteEnv:
    """The platform's env interface, served by the caller over the pipe."""

    def __init__(self, observations, out, inp):
        self.observations, self.out, self.inp = observations, out, inp

    def reset(self, usr_conf=None):
        _send(self.out, {"op": "reset", "usr_conf": usr_conf})
        message = _recv(self.inp)
        return self.observations.read(message, message["obs"])

    def step(self, act):
        _send(self.out, {"op": "step", "act": int(act)})
        m = _recv(self.inp)
        obs = self.observations.read(m, m["obs"])
        return (m["frame_no"], obs, _ns(m["score"]), m["terminated"], m["truncated"],
                None if m["env_info"] is None else _ns(m["env_info"]))


def _serve_eval(agent, observations, out, inp, modules, errors):
    from kaiwu_agent.agent.protocol import protocol

    observation_process, action_process = protocol.observation_process, protocol.action_process
    import torch

    _send(out, {"ready": True, "modules": modules(), "torch_threads": torch.get_num_threads(), "errors": errors,
                "weights_sha256": _STAND_IN.agent_weights(agent)})
    while True:
        try:
            req = _recv(inp)
        except EOFError:
            return
        if req.get("quit"):
            return
        env_info = req.get("env_info")
        obs_data = observation_process(observations.read(req, req["obs"]),
                                       None if env_info is None else _ns(env_info))
        _send(out, {"act": int(action_process(agent.exploit([obs_data])[0]))})


def main():
    mode, layout_dir = sys.argv[1], Path(sys.argv[2]).resolve()
    stub = Path(__file__).resolve().parent / "platform_stub"
    first = Path(sys.argv[3]).resolve()
    sys.path[:] = [str(stub)] + [p for p in sys.path[1:] if p]
    _STAND_IN.guard_imports(_STAND_IN.BLOCKED)
    sys.dont_write_bytecode = True  # the upload folder is only read
    import torch

    torch.set_num_threads(1)
    import framework

    out, inp = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # prints of the package must not corrupt the wire

    def modules():
        return sorted({m.split(".")[0] for m in sys.modules})

    try:
        _run(mode, layout_dir, first, framework, torch, out, inp, modules)
    except framework.PlatformError as exc:  # the upload breaks a contract: said in one message, no traceback
        _send(out, {"op": "done", "report": {"platform_error": str(exc)}} if mode == "train" else
              {"error": str(exc)})


def _run(mode, layout_dir, first, framework, torch, out, inp, modules):
    if mode == "train":
        task_dir, protocol_path = Path(sys.argv[4]), sys.argv[5]
        options = json.loads(sys.argv[6])
        upload = framework.Upload(first, layout_dir)
        task = framework.TrainingTask(upload, task_dir, overrides=options.pop("overrides", None))
        env = _RemoteEnv(_Observations(protocol_path, inp), out, inp)
        report = task.run(env, **options)
        report["modules"] = modules()
        report["torch_threads"] = torch.get_num_threads()
        _send(out, {"op": "done", "report": report})
        return
    log = framework.Log()
    if mode == "eval-model":
        pool, protocol_path = Path(sys.argv[4]), sys.argv[5]
        info = json.loads((first / "ckpt" / "kaiwu.json").read_text(encoding="utf-8"))
        package = f"model_{int(info['train_step'])}_pid_{os.getpid()}"
        with framework.imported_package(pool / str(os.getpid()), {package}):
            layout = framework.tomllib.loads((layout_dir / "layout.toml").read_text(encoding="utf-8"))
            agent, _ = framework.load_saved_model(first, pool, log, layout)
            _serve_eval(agent, _Observations(protocol_path, inp), out, inp, modules, log.errors)
    elif mode == "eval-package":
        upload = framework.Upload(first, layout_dir)
        with framework.imported_package(upload.root, {upload.algo, "conf"}):
            agent = framework.load_package_agent(upload, log)
            _serve_eval(agent, _Observations(sys.argv[4], inp), out, inp, modules, log.errors)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    if log.errors:
        print("\n".join(log.errors), file=sys.stderr)

if __name__ == "__main__":
    main()
