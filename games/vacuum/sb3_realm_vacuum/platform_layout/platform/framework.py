"""The stand-in of robot_vacuum's 13.0.1 framework: Gorge Chase's 15.0.1 stand-in (``sb3_realm.submission``'s
``gorge15/platform/framework.py``, loaded from its file), since the rules' code-package section finds the two
frameworks the same: the registrations, the preload route, the Agent's methods, a training task's three Agents,
its samples, saves and save limits, the saved models, and the evaluation loop (per game ``agent.reset(env_obs)`` once,
then ``exploit(env_obs)`` exactly once per step).

What differs is data: the project, version, conf names, registration entries and save limits (2 a minute, 200 a
task) are this layout's ``layout.toml``, which that framework reads; and the action: an int 0..7 (``n_actions`` of
``layout.toml``; Gorge Chase's env takes 0..15), which :func:`load` sets. The platform's ``env_conf`` keys are
``tools.train_env_conf_validate`` beside this file."""

import importlib.util
import tomllib
from pathlib import Path

__all__ = ["load"]


def load(gorge_platform, layout_dir):
    """Gorge Chase's framework module from the folder ``gorge_platform``, taking the actions of the layout in
    ``layout_dir`` (its ``layout.toml``'s ``n_actions``)."""
    n_actions = tomllib.loads((Path(layout_dir) / "layout.toml").read_text(encoding="utf-8"))["n_actions"]
    spec = importlib.util.spec_from_file_location("_sb3_realm_gorge15_framework",
                                                  Path(gorge_platform) / "framework.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.N_ACTIONS = int(n_actions)  # read by its env.step and exploit checks when they run
    return module
