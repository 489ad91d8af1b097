"""Run a built robot_vacuum code package through the 13.0.1 stand-in (``platform/framework.py``: Gorge Chase's 15.0.1
stand-in with 8 actions) in a process that cannot import sb3_realm, SB3, gymnasium or this game (one torch thread,
as on the platform):

    python harness.py train LAYOUT_DIR UPLOAD_DIR TASK_DIR OPTIONS_JSON
    python harness.py eval-model LAYOUT_DIR MODEL_DIR

``train`` runs a training task of the package; ``eval-model`` runs the platform's evaluation loop on a model the
task saved (its report holds ``weights_sha256``, the digest of the weights the loading left the Agent to play with).
In both, the environment is the caller's: the process asks for it over its pipes, and the last message is
``{"op": "done", "report": ...}`` (or ``{"op": "done", "platform_error": ...}`` when the package breaks a contract).

The stand-in's shared parts are sb3_realm's own files (``sb3_realm.submission``'s ``stand_in.py`` and
``gorge15/platform/``), found where the import system would find that package, without importing it: this process
never imports sb3_realm.

Wire format (both ways): 4-byte big-endian length + UTF-8 JSON. Requests: ``{"op": "reset", "usr_conf": ...}``
answered by ``{"env_obs": ...}`` (null: the platform's failed reset, or, in ``eval-model``, the end of the
evaluation); ``{"op": "step", "act": A}`` answered by ``{"env_reward": ..., "env_obs": ...}``.
"""

import importlib
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GAME_PACKAGE = "sb3_realm_vacuum"  # this game's own package: the platform does not have it either
STAND_IN_PACKAGES = ("kaiwudrl", "common_python", "tools")  # platform/'s packages, completed from gorge15/platform/


def _shipped_submission():
    """The folder of the installed ``sb3_realm.submission``, found by the finders of ``sys.meta_path`` as an import
    would find it (a wheel's ``sb3_realm/submission/``, an editable install's mapped folder), without running
    ``sb3_realm``'s ``__init__``."""
    top = importlib.util.find_spec("sb3_realm")  # a top-level spec: found, not imported
    if top is None or not top.submodule_search_locations:
        raise SystemExit("sb3_realm is not installed in this Python; the stand-in reads its submission/ files")
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = None if find is None else find("sb3_realm.submission", list(top.submodule_search_locations))
        if spec is not None and spec.origin:
            return Path(spec.origin).resolve().parent
    raise SystemExit("sb3_realm.submission is not found beside sb3_realm; reinstall sb3-realm")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _RemoteEnv:
    """The platform's env interface, served by the caller over the pipe."""

    def __init__(self, out, inp, send, recv):
        self.out, self.inp, self.send, self.recv = out, inp, send, recv

    def reset(self, usr_conf=None):
        self.send(self.out, {"op": "reset", "usr_conf": usr_conf})
        return self.recv(self.inp)["env_obs"]

    def step(self, act):
        self.send(self.out, {"op": "step", "act": int(act)})
        message = self.recv(self.inp)
        return message["env_reward"], message["env_obs"]


def main():
    mode, layout_dir = sys.argv[1], Path(sys.argv[2]).resolve()
    submission = _shipped_submission()
    gorge_platform = submission / "gorge15" / "platform"
    stand_in_shared = _load("_sb3_realm_stand_in", submission / "stand_in.py")  # what every stand-in shares
    send, recv = stand_in_shared.send, stand_in_shared.recv
    stand_in = HERE / "platform"
    sys.path[:] = [str(stand_in)] + [p for p in sys.path if p and Path(p).resolve() != HERE]
    stand_in_shared.guard_imports((*stand_in_shared.BLOCKED, "kaiwu_agent", GAME_PACKAGE))
    sys.dont_write_bytecode = True  # the package is only read
    for name in STAND_IN_PACKAGES:  # this stand-in's packages, completed by Gorge Chase's modules of the same name
        package = importlib.import_module(name)
        package.__path__.append(str(gorge_platform / name))
    import torch

    torch.set_num_threads(1)
    import framework as vacuum_framework

    framework = vacuum_framework.load(gorge_platform, layout_dir)
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # prints of the package must not corrupt the wire

    def modules():
        return sorted({m.split(".")[0] for m in sys.modules})

    env = _RemoteEnv(out, inp, send, recv)
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
                weights = stand_in_shared.agent_weights(agent)  # what the loading left the Agent to play with
                report = framework.evaluate(agent, env)
                report["weights_sha256"] = weights
            report["errors"] = log.errors
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    except framework.PlatformError as exc:  # the package breaks a contract: said in one message, no traceback
        send(out, {"op": "done", "platform_error": str(exc), "modules": modules()})
        return
    report["modules"] = modules()
    report["torch_threads"] = torch.get_num_threads()
    send(out, {"op": "done", "report": report})


if __name__ == "__main__":
    main()
