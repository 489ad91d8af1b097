"""The toy platform's stand-in: it reads a built code package as the toy platform's framework would and runs its
evaluation loop, in a process where sb3_realm, SB3, gymnasium and the toy game's own package cannot be imported:

    python harness.py eval-package LAYOUT_DIR PACKAGE_DIR

The package's ``conf/app.toml`` names the algorithm (``[app] algo``, its folder ``agent_<algo>/``) and the preloaded
weights (``preload_model``, ``preload_model_id``: ``agent_<algo>/ckpt/model.ckpt-<id>.pkl``); the loop builds that
folder's ``Agent``, loads the weights and asks ``exploit(env_obs)`` for every step's action. The environment is the
caller's, asked for over the pipes: ``{"op": "reset"}`` answered by ``{"env_obs": ...}`` (null: the evaluation is
over), ``{"op": "step", "act": A}`` by ``{"env_reward": ..., "env_obs": ...}`` (``env_obs["done"]``: the game is
over). The last message is ``{"op": "done", "report": ...}``, or ``{"op": "done", "platform_error": ...}`` when the
package breaks the platform's contract. Wire format (both ways): 4-byte big-endian length + UTF-8 JSON.
"""

import importlib
import importlib.abc
import json
import struct
import sys
import tomllib
from pathlib import Path

BLOCKED = ("sb3_realm", "stable_baselines3", "sb3_contrib", "gymnasium", "gym", "toy_game")


class PlatformError(Exception):
    """The package breaks the platform's contract."""


class _Blocked(importlib.abc.MetaPathFinder):
    """What the platform does not have: an import of it fails, as it would there."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (the platform has torch, numpy and the standard library)")
        return None


def _recv(inp):
    head = inp.read(4)
    if len(head) != 4:
        raise SystemExit(0)  # the caller is gone
    (n,) = struct.unpack(">I", head)
    return json.loads(inp.read(n))


def _send(out, message):
    data = json.dumps(message).encode()
    out.write(struct.pack(">I", len(data)) + data)
    out.flush()


def _agent(package):
    """The package's Agent with its preloaded weights, found as the platform finds them."""
    try:
        app = tomllib.loads((package / "conf" / "app.toml").read_text(encoding="utf-8"))["app"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise PlatformError(f"conf/app.toml with an [app] table is not readable ({exc})") from None
    algo = app.get("algo")
    folder = package / f"agent_{algo}"
    if not isinstance(algo, str) or not (folder / "agent.py").is_file():
        raise PlatformError(f"conf/app.toml selects algo = {algo!r}, and the package has no {folder.name}/agent.py")
    if app.get("preload_model") is not True:
        raise PlatformError("conf/app.toml does not preload a model (preload_model = true)")
    agent = importlib.import_module(f"{folder.name}.agent").Agent()
    weights = folder / "ckpt"
    if not (weights / f"model.ckpt-{int(app.get('preload_model_id', -1))}.pkl").is_file():
        raise PlatformError(f"the preloaded weights model.ckpt-{app.get('preload_model_id')}.pkl are not in "
                            f"{folder.name}/ckpt/")
    agent.load_model(str(weights), int(app["preload_model_id"]))
    return agent, algo


def main():
    mode, package = sys.argv[1], Path(sys.argv[3]).resolve()
    if mode != "eval-package":
        raise SystemExit(f"unknown mode {mode!r}")
    sys.path[:] = [str(package)] + [p for p in sys.path[1:] if p]  # the package, never this layout's templates
    sys.meta_path.insert(0, _Blocked())
    sys.dont_write_bytecode = True  # the package is only read
    import torch

    torch.set_num_threads(1)
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # prints of the package must not corrupt the wire

    def modules():
        return sorted({m.split(".")[0] for m in sys.modules})

    try:
        agent, algo = _agent(package)
        games, steps = 0, 0
        _send(out, {"op": "reset"})
        env_obs = _recv(inp)["env_obs"]
        while env_obs is not None:
            _send(out, {"op": "step", "act": int(agent.exploit(env_obs))})
            env_obs = _recv(inp)["env_obs"]
            steps += 1
            if env_obs["done"]:
                games += 1
                _send(out, {"op": "reset"})
                env_obs = _recv(inp)["env_obs"]
    except PlatformError as exc:
        _send(out, {"op": "done", "platform_error": str(exc), "modules": modules()})
        return
    except Exception as exc:  # the package's own failure, as the platform's log would show it
        _send(out, {"op": "done", "platform_error": f"{type(exc).__name__}: {exc}", "modules": modules()})
        return
    _send(out, {"op": "done", "report": {"algo": algo, "games": games, "steps": steps, "errors": [],
                                         "modules": modules()}})


if __name__ == "__main__":
    main()
