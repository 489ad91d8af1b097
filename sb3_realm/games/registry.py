"""The registry of games: every :class:`~sb3_realm.games.spec.GameSpec` the shared layers may name, by its name.

A game comes into the registry three ways, and each records the game's import path (``package.module:ATTR``), the
one string a worker process needs to import the game again:

- by an entry point of the group ``sb3_realm.games`` in its distribution's metadata (``pyproject.toml``'s
  ``[project.entry-points."sb3_realm.games"]``), read once, on the registry's first use. The shipped games register
  this way too; their paths are also kept here (:data:`SHIPPED`), so that a source checkout on ``sys.path`` without
  installed metadata has them;
- by its import path wherever a game's name is accepted (``games.get("mypkg.mygame:SPEC")``, ``game:`` in a config,
  ``--game`` on the command line): the path is imported and the spec registered under its own name;
- by object (:func:`register`): its path is then that of a module that holds the spec, if one does (none for a spec
  made in a script run as ``__main__``: such a game plays only in the process that registered it).

A game's env ids are registered with Gymnasium as the game is.

Processes the package starts (evaluation and collection workers, tuning workers, subprocess envs) are handed the
paths (:func:`reference`, :func:`references`) and call :func:`get` (:func:`adopt`) on them before anything else, under
``fork``, ``forkserver`` and ``spawn`` alike.
"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from collections.abc import Iterable

from .spec import GameSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "GAMES",
    "SHIPPED",
    "GamePluginWarning",
    "adopt",
    "get",
    "path_of",
    "reference",
    "references",
    "register",
    "register_env_ids",
    "unregister",
]

ENTRY_POINT_GROUP = "sb3_realm.games"
#: the shipped games' import paths, as ``pyproject.toml`` declares them in :data:`ENTRY_POINT_GROUP`
SHIPPED = {"realm": "sb3_realm.games.realm.spec:SPEC", "gorge": "sb3_realm.games.gorge.spec:SPEC"}
_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_PATHS: dict[str, str] = {}  # name -> import path, of the games that have one
_BROKEN: dict[str, str] = {}  # entry-point name -> why it did not load


class GamePluginWarning(UserWarning):
    """An entry point of the group ``sb3_realm.games`` that does not give a game; the other games still load."""


class _Registry(dict):
    """The games by name: a dict that reads the entry points the first time anything reads it or writes to it."""

    loaded = False

    def _load(self) -> None:
        if not self.loaded:
            self.loaded = True  # first: a game's module that reads the registry while it loads finds it loading
            _load_entry_points()

    def __getitem__(self, key):
        self._load()
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self._load()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._load()
        super().__delitem__(key)

    def __contains__(self, key):
        self._load()
        return super().__contains__(key)

    def __iter__(self):
        self._load()
        return super().__iter__()

    def __reversed__(self):
        self._load()
        return super().__reversed__()

    def __len__(self):
        self._load()
        return super().__len__()

    def __repr__(self):
        self._load()
        return super().__repr__()

    def keys(self):
        self._load()
        return super().keys()

    def values(self):
        self._load()
        return super().values()

    def items(self):
        self._load()
        return super().items()

    def get(self, key, default=None):
        self._load()
        return super().get(key, default)

    def pop(self, key, *default):
        self._load()
        return super().pop(key, *default)

    def setdefault(self, key, default=None):
        self._load()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        self._load()
        super().update(*args, **kwargs)

    def copy(self):
        self._load()
        return dict(super().items())


#: every registered game by its name, in the order registered: the shipped games first, then the entry points'
#: games by entry-point name, then those registered by path or object
GAMES: dict[str, GameSpec] = _Registry()


def _import(path: str, what: str) -> GameSpec:
    """The GameSpec at import path ``path``; ``what`` says where the path came from, for the error."""
    if not _PATH.fullmatch(path):
        raise ValueError(f"{what} = {path!r} is not an import path: write it as 'package.module:ATTR' (a module "
                         "Python can import, a colon, and the name of its GameSpec), e.g. 'mygame.spec:SPEC'")
    module_name, attr = path.split(":")
    try:
        value = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raised while it ran
        raise ValueError(f"{what} = {path!r}: module {module_name!r} does not import ({type(exc).__name__}: {exc}); "
                         "install the game's package or put its folder on PYTHONPATH, and check the module's "
                         "name") from exc
    for part in attr.split("."):
        if not hasattr(value, part):
            raise ValueError(f"{what} = {path!r}: module {module_name!r} has no attribute {attr!r}; name the "
                             "GameSpec it defines after the colon")
        value = getattr(value, part)
    if not isinstance(value, GameSpec):
        raise ValueError(f"{what} = {path!r} is a {type(value).__name__}, not a GameSpec; name the module's "
                         "GameSpec (sb3_realm.games.GameSpec) after the colon")
    return value


def _add(spec: GameSpec, path: str | None) -> GameSpec:
    """Register ``spec`` (and its import path, where it has one), or refuse a name another game holds."""
    registered = dict.get(GAMES, spec.name)
    if registered is not None and registered is not spec:
        where = _PATHS.get(spec.name)
        raise ValueError(f"game = {spec.name!r}{f' ({path})' if path else ''} is already registered "
                         f"({registered.title}{f', from {where}' if where else ''}); give the new game another name")
    dict.__setitem__(GAMES, spec.name, spec)
    if path is not None:
        _PATHS.setdefault(spec.name, path)
    if registered is None:
        register_env_ids(spec)
    return spec


def register_env_ids(spec: GameSpec) -> None:
    """Register the game's env ids with Gymnasium (``gymnasium.make("sb3_realm/Realm-v0")``), those not taken."""
    from gymnasium.envs.registration import register as register_env
    from gymnasium.envs.registration import registry as env_registry

    for env_id, kwargs in spec.env.ids.items():
        if env_id not in env_registry:
            register_env(id=env_id, entry_point=spec.env.entry_point, kwargs=dict(kwargs))


def _load_entry_points() -> None:
    """Register the shipped games, then every entry point of :data:`ENTRY_POINT_GROUP`; one that does not load is
    left out with a :class:`GamePluginWarning` (and :func:`get` of its name says why)."""
    from importlib.metadata import entry_points

    for name, path in SHIPPED.items():
        _add(_import(path, f"the shipped game {name!r}"), path)
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        if SHIPPED.get(point.name) == point.value:
            continue
        try:
            spec = _import(point.value, f"entry point {point.name!r} of group {ENTRY_POINT_GROUP!r}")
            if spec.name != point.name:
                raise ValueError(f"entry point {point.name!r} of group {ENTRY_POINT_GROUP!r} = {point.value!r} gives "
                                 f"the game {spec.name!r}; name the entry point after the game ({spec.name} = ...)")
            _add(spec, point.value)
        except ValueError as exc:
            _BROKEN[point.name] = str(exc)
            warnings.warn(f"{exc} (this game is left out; the others load)", GamePluginWarning, stacklevel=2)


def _unknown(name: str) -> ValueError:
    why = f" Its entry point did not load: {_BROKEN[name]}" if name in _BROKEN else ""
    return ValueError(f"game = {name!r} is not a game of this package; choose one of {list(GAMES)}, or name a game of "
                      "your own by its import path 'package.module:ATTR' (in a config, with --game or game=), or "
                      f"install a package that declares it under the entry-point group {ENTRY_POINT_GROUP!r}. A "
                      "game registered by object in another process is not known in this one: register it by import "
                      f"path or entry point for worker processes to find it.{why}")


def get(name: str | None) -> GameSpec:
    """The spec of game ``name``: a registered game's name, or an import path ``package.module:ATTR``, imported and
    its spec registered under its own name. A ``ValueError`` lists the games there are, and says how to name one
    when ``name`` is None (there is no default game)."""
    if name is None:
        raise ValueError(f"no game given: name the game to play, one of {list(GAMES)} (game: in a config, --game on "
                         "the command line, game= in Python), or a game of your own by its import path "
                         "'package.module:ATTR'")
    if not isinstance(name, str):
        raise ValueError(f"game = {name!r} is not a game's name; give a name, one of {list(GAMES)}, or an import "
                         "path 'package.module:ATTR'")
    if name in GAMES:
        return GAMES[name]
    if ":" in name:
        return _add(_import(name, "game"), name)
    raise _unknown(name)


def register(spec: GameSpec, path: str | None = None) -> GameSpec:
    """Add a game (a :class:`GameSpec` built in its own folder, anywhere) to the registry, so that configs,
    checkpoints and ``--game`` may name it; ``path``: its import path, for worker processes (default: found among
    the imported modules that hold ``spec`` when a worker needs it). A ``ValueError`` for a name already taken by
    another game."""
    if not isinstance(spec, GameSpec):
        raise TypeError(f"register() takes a GameSpec, got {type(spec).__name__}")
    GAMES.keys()  # the entry points first: a clash with one of their names is found here, not later
    return _add(spec, path)


def unregister(name: str) -> None:
    """Remove game ``name`` from the registry (a game registered by a test or a script); the shipped games stay."""
    if name in SHIPPED:
        raise ValueError(f"game = {name!r} ships with the package and cannot be unregistered")
    GAMES.pop(name, None)
    _PATHS.pop(name, None)


def _held_by(spec: GameSpec) -> str | None:
    """The import path of a module-level name that holds ``spec`` in an imported module (not a script's
    ``__main__``), preferring the package of the game's env, then the shortest module name."""
    top = spec.env.entry_point.split(":")[0].split(".")[0] if isinstance(spec.env.entry_point, str) else ""
    found = []
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name in ("__main__", "__mp_main__") or getattr(module, "__spec__", None) is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is spec and not attr.startswith("_"):
                found.append((module_name.split(".")[0] != top, len(module_name), f"{module_name}:{attr}"))
                break
    return min(found)[2] if found else None


def path_of(name: str) -> str | None:
    """The import path of registered game ``name`` (``package.module:ATTR``), or None for a spec registered by
    object that no imported module holds (one made in a script run as ``__main__``)."""
    spec = get(name)
    path = _PATHS.get(spec.name)
    if path is None:
        path = _held_by(spec)
        if path is not None:
            _PATHS[spec.name] = path
    return path


def reference(name: str) -> str:
    """What a worker process is handed to know game ``name`` (its import path, for :func:`get`); a ``ValueError``
    before any process starts when the game has none."""
    path = path_of(name)
    if path is None:
        title = get(name).title
        raise ValueError(f"game = {name!r} ({title}) was registered by object from a script, so a worker process "
                         "cannot import it: define its GameSpec in a module and register it by import path "
                         "('package.module:ATTR' as the game) or by entry point, or play it in this process "
                         "(workers 1, vec_env: dummy)")
    return path


def references() -> tuple[str, ...]:
    """The import paths of every registered game that has one, for a pool of worker processes that may play any
    (they call :func:`adopt`)."""
    return tuple(path for path in (path_of(name) for name in list(GAMES)) if path is not None)


def adopt(paths: Iterable[str]) -> None:
    """In a worker process: register the games of ``paths`` (:func:`references`), as the parent process had them."""
    for path in paths:
        get(path)
