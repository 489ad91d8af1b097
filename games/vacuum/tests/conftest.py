"""robot_vacuum's tests. The game registers by its package's entry point once installed (``pip install -e
games/vacuum``, as .ci/run does); the README's test command does not install it, so the tests register it by its
import path (pytest's pythonpath makes it importable), as ``--game sb3_realm_vacuum.spec:SPEC`` would. The fixture
folder holds a stand-in of the official code package (its train_test.py is the platform's script, not a test
module)."""

from sb3_realm.games import registry

registry.get("sb3_realm_vacuum.spec:SPEC")

collect_ignore = ["fixtures"]
