"""robot_vacuum (清扫大作战) for sb3_realm: a robot cleans a house map with a battery, chargers and four official
robots. The game registers as ``robot_vacuum`` through the entry point of this package (``pip install -e
games/vacuum``); its :class:`~sb3_realm.games.GameSpec` is :data:`sb3_realm_vacuum.spec.SPEC`."""
