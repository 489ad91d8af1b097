"""Run a built Gorge Chase code package through the 15.0.1 stand-in (``platform/framework.py``) in a process that
cannot import sb3_realm, SB3 or gymnasium (one torch thread, as on the platform):

    python harness.py train LAYOUT_DIR UPLOAD_DIR TASK_DIR OPTIONS_JSON
    python harness.py eval-model LAYOUT_DIR MODEL_DIR

``train`` runs a training task of the package; ``eval-model`` runs the platform's evaluation loop on a model the
task saved (its report holds ``weights_sha256``, the digest of the weights the loading left the Agent to play with:
``stand_in.weights_digest``). In both, the environment is the caller's: the process asks for it over its pipes, and
the last message is ``{"op": "done", "report": ...}`` (or ``{"op": "done", "platform_error": ...}`` when the package
breaks a contract).

Wire format (both ways): 4-byte big-endian length + UTF-8 JSON. Requests: ``{"op": "reset", "usr_conf": ...}``
answered by ``{"env_obs": ...}`` (null: the platform's failed reset, or, in ``eval-model``, the end of the
evaluation); ``{"op": "step", "act": A}`` answered by ``{"env_reward": ..., "env_obs": ...}``.
"""

import importlib.util
import json
import sys
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location("_sb3_realm_stand_in",
                                           Path(__file__).resolve().parent.parent / "stand_in.py")
_STAND_IN = importlib.util.module_from_spec(_SPEC)  # what every layout's stand-in shares (submission/stand_in.py)
_SPEC.loader.exec_module(_STAND_IN)
_read, _recv, _send = _STAND_IN.read_exactly, _STAND_IN.recv, _STAND_IN.send


class _RemoteEnv:
    """The platform's env interface, served by the caller over the pipe."""

    def __init__(self, out, inp):
        self.out, self.inp = out, inp

    def reset(self, usr_conf=None):
        _send(self.out, {"op": "reset", "usr_conf": usr_conf})
        return _recv(self.inp)["env_obs"]

    def step(self, act):
        _send(self.out, {"op": "step", "act": int(act)})
        message = _recv(self.inp)
        return message["env_reward"], message["env_obs"]


def main():
    mode, layout_dir = sys.argv[1], Path(sys.argv[2]).resolve()
    stand_in = Path(__file__).resolve().parent / "platform"
    sys.path[:] = [str(stand_in)] + [p for p in sys.path[1:] if p]
    _STAND_IN.guard_imports((*_STAND_IN.BLOCKED, "kaiwu_agent"))
    sys.dont_write_bytecode = True  # the package is only read
    import torch

    torch.set_num_threads(1)
    import framework

    out, inp = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # prints of the package must not corrupt the wire

    def modules():
        return sorted({m.split(".")[0] for m in sys.modules})

    env = _RemoteEnv(out, inp)
    try:
        if mode == "train":
            upload = framework.Upload(Path(sys.argv[3]).resolve(), layout_dir)
            options = json.loads(sys.argv[5])
            task = framework.TrainingTask(upload, Path(sys.argv[4]), overrides=options.pop("overrides", None))
            report = task.run(env, **options)
        elif mode == "eval-model":
            model_dir = Path(sys.argv[3]).resolve()
            log = framework.Log()
            names = {p.name for p in model_dir.iterdir() if p.is_dir()}
            with framework.imported_package(model_dir, names):
                agent, _ = framework.load_saved_model(model_dir, layout_dir, log)
                weights = _STAND_IN.agent_weights(agent)  # what the loading left the Agent to play with
                report = framework.evaluate(agent, env)
                report["weights_sha256"] = weights
            report["errors"] = log.errors
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    except framework.PlatformError as exc:  # the package breaks a contract: said in one message, no traceback
        _send(out, {"op": "done", "platform_error": str(exc), "modules": modules()})
        return
    report["modules"] = modules()
    report["torch_threads"] = torch.get_num_threads()
    _send(out, {"op": "done", "report": report})


if __name__ == "__main__":
    main()
