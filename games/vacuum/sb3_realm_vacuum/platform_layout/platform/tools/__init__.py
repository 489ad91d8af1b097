"""Stand-in of the Kaiwu platform's ``tools`` for robot_vacuum's 13.0.1 framework: the framework is Gorge Chase
15.0.1's (the rules' code-package section), so the modules are those of sb3_realm's stand-in of it
(``sb3_realm.submission``'s ``gorge15/platform/tools/``), found from here rather than copied.
Its own module here is ``train_env_conf_validate`` (robot_vacuum's keys and ranges); the others (``metrics_utils``)
are Gorge Chase's.

In the stand-in's process, ``harness.py`` adds that folder to this package's ``__path__``; in a process of sb3_realm
(a built package played in-process), this module adds it, beside the imported ``sb3_realm.submission``."""

import os
import sys

_SHIPPED = sys.modules.get("sb3_realm.submission")  # None in the stand-in's process, which never imports sb3_realm
if _SHIPPED is not None and getattr(_SHIPPED, "__file__", None):
    _FOLDER = os.path.join(os.path.dirname(_SHIPPED.__file__), "gorge15", "platform", __name__)
    if os.path.isdir(_FOLDER) and _FOLDER not in __path__:
        __path__.append(_FOLDER)
