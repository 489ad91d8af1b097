"""``check_game(spec)``: the contract of a game, checked on its :class:`~sb3_realm.games.spec.GameSpec` alone, as
SB3's ``check_env`` checks an env.

A game's author calls it on a new spec before registering it; the test suite calls it on every registered game. Each
check plays a few short games of the env the spec makes and reads the spec's parts the shared layers read:

- ``spaces``: the spaces the spec states are those of the env it makes (and of the env of each Gymnasium id), an
  observation lies in them, the action space is ``Discrete`` and the env's ``action_masks()`` allows some action;
- ``env_checker``: SB3's ``check_env`` and Gymnasium's checker pass (their warnings become notes);
- ``determinism``: two envs reset with the same seed and given the same actions give the same observations, rewards,
  ends and infos, across an episode's end (a note says whether another seed gives another game);
- ``pickling``: the env factory pickles and loads back as itself, as a worker process started by ``spawn`` or
  ``forkserver`` needs, an env pickled mid-game plays on as the original, and a registered game has the import path
  a worker process imports it by (a note for a spec not registered);
- ``protocol``: the platform's observation (``competition_obs()``, and ``platform_obs()`` where the env has one) reads
  after a reset and each step without changing the game, and crosses to another process (pickled; ``platform_obs()``
  as JSON); the platform protocol module, where the spec names one, is a file that imports nothing of sb3_realm;
- ``yardstick``: the yardstick expert plays a short game, each action an int the env's mask allows, and the game's
  end gives the figures the shared layers read (``score``, ``steps``, the spec's details and metrics);
- ``features``: the features module declares ``FEATURE_VERSION`` (a string, as runs and packages record it), its note
  names that version, its sizes are the spaces', and it imports nothing of sb3_realm (a submission carries it alone);
- ``protocols``: each evaluation protocol builds its games (a protocol that needs arguments says which), the game
  accepts them and plays the first two (a map read from a maps folder only where the folder's variable is set), and
  a run's held-out games are replayed exactly by the arguments the spec gives (one alone too where the game's games
  are its treasure sets, a note elsewhere);
- ``layouts``: each platform layout the game names exists, and a game that names one gives what a package's check
  needs (its platform env and protocol file).

A failed check raises :class:`GameCheckError`, a ``ValueError`` whose one paragraph names the check, the value and
the fix; when all pass, :func:`check_game` returns a :class:`GameCheckReport` of the checks run and their notes.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import pickle
import re
import tomllib
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from ..submission import LAYOUTS, layout_spec
from . import registry
from .spec import GameSpec

__all__ = ["CHECKS", "GameCheckError", "GameCheckReport", "check_game"]

#: the checks :func:`check_game` runs, in order
CHECKS = ("spaces", "env_checker", "determinism", "pickling", "protocol", "yardstick", "features", "protocols",
          "layouts")
#: the games of each protocol that :func:`check_game` plays
PROTOCOL_GAMES = 2


class GameCheckError(ValueError):
    """A game fails one of :func:`check_game`'s checks: :attr:`check` names it, the message says what was found and
    what to fix."""

    def __init__(self, spec: GameSpec, check: str, found: str, fix: str) -> None:
        self.check = check
        super().__init__(f"{spec.title} (game {spec.name!r}) fails the {check} check: {found}; {fix}")


@dataclass(frozen=True)
class GameCheckReport:
    """What :func:`check_game` found of a game that passes: each check run, in order, with its notes (what was
    played, the env checkers' warnings, what was skipped and why)."""

    game: str
    notes: Mapping[str, tuple[str, ...]]

    @property
    def checks(self) -> tuple[str, ...]:
        """The checks run, in order."""
        return tuple(self.notes)

    def __str__(self) -> str:
        lines = [f"game {self.game!r} passes {len(self.notes)} checks"]
        for check, notes in self.notes.items():
            lines.append(f"  {check}: " + ("; ".join(notes) if notes else "ok"))
        return "\n".join(lines)


def check_game(spec: GameSpec | str, *, seed: int = 0, steps: int = 100, env_kwargs: Mapping[str, Any] | None = None,
               layouts: Collection[str] | None = None) -> GameCheckReport:
    """Check the game ``spec`` as the shared layers will use it (the checks of the module docstring) and return what
    was found; a :class:`GameCheckError` for the first check that fails.

    :param spec: the game's spec, or a registered game's name or import path ``package.module:ATTR`` (then imported
        and registered, as ``game:`` in a config is).
    :param seed: the seed of the games played (the determinism check also plays ``seed + 1``).
    :param steps: how many steps the determinism check plays, and the most the yardstick's game lasts (its
        ``max_step`` where the game's ``usr_conf`` has one).
    :param env_kwargs: the arguments of the env checked (``spec.env.make(**env_kwargs)``; none: the game's default
        env, as an evaluation without ``--map`` plays it).
    :param layouts: the platform layouts a package can be built into (None: the shipped ones); the layouts the game
        brings itself (``Submission.layout_folders``) are known either way.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps = {steps!r}: check_game plays at least 2 steps; pass an integer >= 2, e.g. 100")
    if isinstance(spec, str):
        spec = registry.get(spec)
    if not isinstance(spec, GameSpec):
        raise TypeError(f"check_game() takes a GameSpec, or a game's name or import path, got {type(spec).__name__}")
    checker = _Checker(spec, seed, steps, dict(env_kwargs or {}), set(LAYOUTS if layouts is None else layouts)
                       | set(spec.submission.layout_folders))
    notes: dict[str, tuple[str, ...]] = {}
    for check in CHECKS:
        checker.notes = []
        getattr(checker, check)()
        notes[check] = tuple(checker.notes)
    return GameCheckReport(spec.name, notes)


# ------------------------------------------------------------------------------------------------------ helpers
def _difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where ``a`` and ``b`` differ (``where`` and the path into them, with both values), None when they are the
    same: dicts key by key, sequences item by item, arrays by shape, dtype and value (NaN equal to NaN)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            return f"{where} has keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
        for key in a:
            found = _difference(a[key], b[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        nan = x.dtype.kind in "fc" and y.dtype.kind in "fc"
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"{where} is a {x.dtype} array of shape {x.shape} vs {y.dtype} {y.shape}"
        if not np.array_equal(x, y, equal_nan=nan):
            first = tuple(int(i) for i in np.argwhere(~((x == y) | (np.isnan(x) & np.isnan(y)) if nan else x == y))[0])
            return f"{where}{list(first)} is {x[first].tolist()!r} vs {y[first].tolist()!r}"
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where} has {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    try:
        same = bool(a == b)
    except (TypeError, ValueError):  # a value whose == gives no single truth
        same = a is b
    return None if same else f"{where} is {_short(a)} vs {_short(b)}"


def _short(value: Any) -> str:
    """``repr(value)`` on one line, cut to 80 characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _legal(env: Any, spec: GameSpec, check: str) -> np.ndarray:
    """The actions the env's mask allows, or a :class:`GameCheckError`."""
    try:
        mask = np.asarray(env.action_masks())
    except Exception as exc:
        raise GameCheckError(spec, check, f"env.action_masks() raised {type(exc).__name__}: {exc}",
                             "give the env an action_masks() -> (n_actions,) bool array of the legal actions, as "
                             "MaskablePPO and the experts read it") from exc
    n = getattr(env.action_space, "n", None)
    if mask.dtype != bool or mask.shape != (n,):
        raise GameCheckError(spec, check, f"env.action_masks() gave a {mask.dtype} array of shape {mask.shape}",
                             f"return a bool array of shape ({n},), one entry per action")
    legal = np.flatnonzero(mask)
    if legal.size == 0:
        raise GameCheckError(spec, check, f"env.action_masks() allows no action at step {_step_no(env)}",
                             "allow at least one action in every state of a game that is not over")
    return legal


def _step_no(env: Any) -> Any:
    return getattr(getattr(env, "game", None), "step_no", "?")


def _observation(obs: Any) -> Any:
    """An observation as plain arrays, copied (an env may hand out views it later writes into)."""
    if isinstance(obs, Mapping):
        return {key: np.array(value) for key, value in obs.items()}
    return np.array(obs)


def _imports_of(path: Path) -> Iterator[tuple[int, int, str]]:
    """``(line, level, module)`` of each import statement of a source file (level 0: absolute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.level, node.module or ""


@contextmanager
def _collected(into: list[str], prefix: str) -> Iterator[None]:
    """Warnings raised in the block, each once, as notes ``prefix: message``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for message in dict.fromkeys(str(w.message).split("\n")[0] for w in caught):
        into.append(f"{prefix} warns: {message}")


class _Checker:
    """The checks of :func:`check_game`, one method each, on one spec; :attr:`notes` collects the current check's."""

    def __init__(self, spec: GameSpec, seed: int, steps: int, env_kwargs: dict, layouts: set[str]) -> None:
        self.spec, self.seed, self.steps, self.env_kwargs = spec, seed, steps, env_kwargs
        self.known_layouts = layouts
        self.notes: list[str] = []

    # -------------------------------------------------------------------------------------------------- parts
    def fail(self, check: str, found: str, fix: str) -> GameCheckError:
        return GameCheckError(self.spec, check, found, fix)

    def make(self, check: str, **extra: Any) -> Any:
        kwargs = {**self.env_kwargs, **extra}
        try:
            return self.spec.env.make(**kwargs)
        except Exception as exc:
            raise self.fail(check, f"spec.env.make(**{kwargs!r}) raised {type(exc).__name__}: {exc}",
                            "make the env factory build the game's env from these arguments (every one optional)") \
                from exc

    def reset(self, env: Any, check: str, seed: int | None, options: dict | None = None) -> Any:
        try:
            obs, info = env.reset(seed=seed, options=options)
        except Exception as exc:
            raise self.fail(check, f"env.reset(seed={seed!r}, options={options!r}) raised {type(exc).__name__}: "
                            f"{exc}", "make reset(*, seed=None, options=None) start a game from these "
                            "arguments") from exc
        if not isinstance(info, dict):
            raise self.fail(check, f"env.reset() returned info {_short(info)}", "return (observation, dict)")
        return obs

    def rollout(self, seed: int, read_platform: bool = False) -> list[tuple]:
        """``(observation, reward, terminated, truncated, info)`` of :attr:`steps` random legal actions (drawn from
        ``seed``) after a reset with ``seed``, a reset without one after each end; ``read_platform``: the platform's
        observations are read after the reset and each step, as the parity check reads them."""
        env = self.make("determinism")
        rng = np.random.default_rng(seed)
        obs = self.reset(env, "determinism", seed)
        trace: list[tuple] = [(_observation(obs), 0.0, False, False, {})]
        for _ in range(self.steps):
            if read_platform:
                self.read_platform(env)
            action = int(rng.choice(_legal(env, self.spec, "determinism")))
            obs, reward, terminated, truncated, info = env.step(action)
            trace.append((_observation(obs), reward, terminated, truncated, info))
            if terminated or truncated:
                obs = self.reset(env, "determinism", None)
                trace.append((_observation(obs), 0.0, False, False, {}))
        env.close()
        return trace

    def read_platform(self, env: Any) -> None:
        """Read the platform's observations the env offers (:meth:`protocol` checks them)."""
        if hasattr(env, "competition_obs"):
            env.competition_obs()
        if hasattr(env, "platform_obs"):
            env.platform_obs()

    # -------------------------------------------------------------------------------------------------- checks
    def spaces(self) -> None:
        spec = self.spec
        try:
            observation, action = spec.env.spaces()
        except Exception as exc:
            raise self.fail("spaces", f"spec.env.spaces() raised {type(exc).__name__}: {exc}",
                            "give Env(spaces=...) a function () -> (observation space, action space)") from exc
        if not isinstance(action, spaces.Discrete):
            raise self.fail("spaces", f"the action space is {action!r}",
                            "the shared layers play Discrete actions with a mask: state a gymnasium.spaces.Discrete")
        env = self.make("spaces")
        for what, stated, made in (("observation", observation, env.observation_space),
                                   ("action", action, env.action_space)):
            if stated != made:
                raise self.fail("spaces", f"spec.env.spaces() states the {what} space {_short(stated)}, the env has "
                                f"{_short(made)}", "make spec.env.spaces() return the spaces the env sets")
        obs = self.reset(env, "spaces", self.seed)
        if not observation.contains(obs):
            raise self.fail("spaces", f"the observation after reset(seed={self.seed}) is not in the stated space "
                            f"{_short(observation)}", "fix the observation's shapes, dtypes or bounds, or the space")
        legal = _legal(env, self.spec, "spaces")
        self.notes.append(f"{action.n} actions, {legal.size} legal at the start")
        for env_id, kwargs in spec.env.ids.items():
            other = self.make("spaces", **kwargs)
            if (other.observation_space, other.action_space) != (observation, action):
                raise self.fail("spaces", f"the env of Gymnasium id {env_id!r} ({dict(kwargs)!r}) has other spaces",
                                "an id's arguments may change the map and the rules, never the spaces")
        try:
            module, _, name = spec.env.entry_point.partition(":")
            entry = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise self.fail("spaces", f"Env(entry_point={spec.env.entry_point!r}) does not import ({exc})",
                            "give the env class as 'module:Class', importable where the game is installed") from exc
        if not isinstance(env, entry):
            raise self.fail("spaces", f"the env is a {type(env).__name__}, not the entry point's {entry!r}",
                            "point Env(entry_point=...) at the class spec.env.make builds")
        env.close()

    def env_checker(self) -> None:
        # here, not at the top: SB3 loads torch, and the registry that re-exports check_game must import fast
        from stable_baselines3.common.env_checker import check_env as sb3_check_env

        for name, run in (("SB3's check_env", lambda env: sb3_check_env(env, warn=True)),
                          ("Gymnasium's check_env", lambda env: gymnasium_check_env(env, skip_render_check=True))):
            env = self.make("env_checker")
            try:
                with _collected(self.notes, name):
                    run(env)
            except Exception as exc:
                raise self.fail("env_checker", f"{name} failed: {type(exc).__name__}: {exc}",
                                "fix the env as the checker says") from exc
            env.close()

    def determinism(self) -> None:
        first, again = self.rollout(self.seed), self.rollout(self.seed)
        for i, (a, b) in enumerate(zip(first, again, strict=False)):
            found = _difference(a, b, "")
            if found:
                part = ("observation", "reward", "terminated", "truncated", "info")[int(found[1])] if found[:1] == "[" \
                    else "trace"
                raise self.fail("determinism", f"two envs reset with seed {self.seed} and given the same actions "
                                f"differ at transition {i}: the {part}{found[3:]}",
                                "draw all randomness from self.np_random (seeded by super().reset(seed=seed)), never "
                                "from the global numpy or random state, the clock or a set's order")
        other = self.rollout(self.seed + 1)
        same = len(first) == len(other) and all(_difference(a, b) is None for a, b in zip(first, other, strict=True))
        self.notes.append(f"{self.steps} steps; seed {self.seed + 1} gives "
                          + (f"the same game as seed {self.seed}" if same else "another game"))

    def pickling(self) -> None:
        make = self.spec.env.make
        if getattr(make, "__module__", None) == "__main__":
            raise self.fail("pickling", f"the env factory {make!r} is defined in __main__",
                            "a worker process cannot import a script's __main__: define it in the game's package")
        try:
            loaded = pickle.loads(pickle.dumps(make))
        except Exception as exc:
            raise self.fail("pickling", f"the env factory {make!r} does not pickle ({type(exc).__name__}: {exc})",
                            "a worker process started by spawn or forkserver gets the factory pickled: give "
                            "Env(make=...) a class or a module-level function, not a lambda or a local") from exc
        if loaded is not make and loaded != make:
            raise self.fail("pickling", f"the env factory {make!r} loads back as another object {loaded!r}",
                            "give Env(make=...) a class or a module-level function of the game's package")
        env = self.make("pickling")
        rng = np.random.default_rng(self.seed)
        self.reset(env, "pickling", self.seed)
        for _ in range(3):
            self._step(env, int(rng.choice(_legal(env, self.spec, "pickling"))), "pickling")
        try:
            clone = pickle.loads(pickle.dumps(env))
        except Exception as exc:
            raise self.fail("pickling", f"an env mid-game does not pickle ({type(exc).__name__}: {exc})",
                            "keep the env's state in picklable attributes (no open files, lambdas or generators)") \
                from exc
        for step in range(min(self.steps, 30)):
            action = int(rng.choice(_legal(env, self.spec, "pickling")))
            a, b = env.step(action), clone.step(action)
            found = _difference((_observation(a[0]), *a[1:]), (_observation(b[0]), *b[1:]))
            if found:
                raise self.fail("pickling", f"an env pickled mid-game and its original differ {step + 1} steps later "
                                f"at {found}", "pickle every part of the game's state, its random generator included")
            if a[2] or a[3]:
                break
        self._import_path()

    def _import_path(self) -> None:
        """A registered game has the import path worker processes get it by, and the path gives this very spec."""
        name = self.spec.name
        if registry.GAMES.get(name) is not self.spec:
            self.notes.append("not registered: worker processes find a game by its import path or entry point")
            return
        path = registry.path_of(name)
        if path is None:
            raise self.fail("pickling", "it is registered by object, and no importable module holds its GameSpec",
                            "a worker process imports a game by its path: define the GameSpec in a module of the "
                            "game's package and register it by import path ('package.module:ATTR') or entry point")
        module, _, attr = path.partition(":")
        try:
            value: Any = importlib.import_module(module)
        except Exception as exc:  # ImportError, or whatever the module raised while it ran
            raise self.fail("pickling", f"its import path {path!r} does not import ({type(exc).__name__}: {exc})",
                            "install the game's package or put its folder on PYTHONPATH") from exc
        for part in attr.split("."):
            value = getattr(value, part, None)
        if value is not self.spec:
            raise self.fail("pickling", f"its import path {path!r} gives {_short(value)}, not its GameSpec",
                            "register the game by the path of the module-level name that holds its GameSpec")
        self.notes.append(f"worker processes import it as {path}")

    def _step(self, env: Any, action: int, check: str) -> tuple:
        try:
            return env.step(action)
        except Exception as exc:
            raise self.fail(check, f"env.step({action}) at step {_step_no(env)} raised {type(exc).__name__}: {exc}",
                            "make step() play any action its mask allows") from exc

    def protocol(self) -> None:
        spec = self.spec
        own = spec.submission.layout_folders
        needs = {layout: ("platform_obs" if (_own_layout_data(own[layout]) if layout in own else layout_spec(layout)
                                             if layout in LAYOUTS else {}).get("stand_in")
                          else "competition_obs") for layout in spec.submission.layouts}
        env = self.make("protocol")
        offers = [name for name in ("competition_obs", "platform_obs") if callable(getattr(env, name, None))]
        for layout, method in needs.items():
            if method not in offers:
                raise self.fail("protocol", f"its layout {layout!r} hands the submission env.{method}(), which the "
                                f"env does not have", f"give the env a {method}() method, the platform's observation "
                                "of the current state")
        if not offers:
            raise self.fail("protocol", "the env has neither competition_obs() nor platform_obs()",
                            "give the env competition_obs() -> (obs, env_info), the platform's observation of the "
                            "current state (or platform_obs() -> env_obs dict for a layout whose platform hands "
                            "the Agent env_obs)")
        # reading the platform's observation every step changes nothing: the game is the one played without reading
        read, unread = self.rollout(self.seed, read_platform=True), self.rollout(self.seed)
        found = next((f for a, b in zip(read, unread, strict=False) if (f := _difference(a, b))), None)
        if found:
            raise self.fail("protocol", f"reading the platform's observation changes the game ({found})",
                            "build the observation from the state without changing it (the parity check reads it "
                            "between steps)")
        rng = np.random.default_rng(self.seed)
        self.reset(env, "protocol", self.seed)
        for step in range(min(self.steps, 20) + 1):
            if "competition_obs" in offers:
                pair = env.competition_obs()
                if not isinstance(pair, tuple) or len(pair) != 2:
                    raise self.fail("protocol", f"env.competition_obs() returned {_short(pair)}",
                                    "return the pair (obs, env_info)")
                self._crosses(pickle.dumps, pair, "env.competition_obs()", "pickle")
            if "platform_obs" in offers:
                env_obs = env.platform_obs()
                if not isinstance(env_obs, dict):
                    raise self.fail("protocol", f"env.platform_obs() returned a {type(env_obs).__name__}",
                                    "return the platform's env_obs dict")
                self._crosses(lambda value: json.dumps(value, default=_plain_json), env_obs, "env.platform_obs()",
                              "write as JSON")
            if step < min(self.steps, 20):
                _, _, terminated, truncated, _ = self._step(env, int(rng.choice(_legal(env, spec, "protocol"))),
                                                            "protocol")
                if terminated or truncated:
                    break
        self.notes.append(f"reads {' and '.join(f'{name}()' for name in offers)}")
        path = spec.submission.protocol_file
        if path is not None:
            path = Path(path)
            if not path.is_file():
                raise self.fail("protocol", f"Submission(protocol_file={str(path)!r}) is not a file",
                                "name the game's platform protocol module by its path (Path(protocol.__file__))")
            self._imports_nothing_of_the_package(path, (), "protocol", "the guarded process of a package's check "
                                                 "loads it by path, where sb3_realm cannot be imported")

    def _crosses(self, write: Callable[[Any], Any], value: Any, what: str, how: str) -> None:
        try:
            write(value)
        except Exception as exc:
            raise self.fail("protocol", f"{what} does not {how} ({type(exc).__name__}: {exc})",
                            "build it of plain data (numbers, strings, lists, dicts, numpy arrays): a package's check "
                            "sends it to another process") from exc

    def _imports_nothing_of_the_package(self, path: Path, companions: tuple[str, ...], check: str, why: str) -> None:
        for line, level, module in _imports_of(path):
            if level == 0 and module.split(".")[0] == "sb3_realm":
                raise self.fail(check, f"{path.name} imports {module} (line {line})",
                                f"import only numpy, torch and the standard library there: {why}")
            if level > 0 and f"{module.split('.')[0]}.py" not in companions:
                raise self.fail(check, f"{path.name} imports .{module} (line {line}), which does not travel with it",
                                f"import only numpy, torch, the standard library and the files of COMPANION_FILES "
                                f"there: {why}")

    def yardstick(self) -> None:
        spec = self.spec
        name = spec.evaluation.yardstick
        if name not in spec.experts:
            raise self.fail("yardstick", f"the yardstick {name!r} is not one of its experts {list(spec.experts)}",
                            "name one of the spec's experts as Evaluation(yardstick=...)")
        short = {"max_step": self.steps} if "max_step" in spec.episodes.usr_conf_keys else {}
        env = self.make("yardstick", **short)
        try:
            expert = spec.experts[name](env)
        except Exception as exc:
            raise self.fail("yardstick", f"the expert {name!r} does not build on the env ({type(exc).__name__}: "
                            f"{exc})", "make the expert factory take the env (its other arguments optional)") from exc
        obs = self.reset(env, "yardstick", self.seed)
        expert.reset(env)
        info: dict = {}
        outside: list[int] = []
        n = env.action_space.n
        for _ in range(self.steps):
            mask = np.asarray(env.action_masks())
            action = expert.act(env, obs)
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) \
                    or not 0 <= action < n:
                raise self.fail("yardstick", f"the expert {name!r} played {action!r} at step {_step_no(env)}, not "
                                f"an action of the game", f"make act(env, obs) return an int in 0..{n - 1} that the "
                                "game allows (env.action_masks())")
            if not mask[int(action)]:
                outside.append(int(_step_no(env)))
            obs, _, terminated, truncated, info = self._step(env, int(action), "yardstick")
            if terminated or truncated:
                break
        else:
            self.notes.append(f"the game lasts more than {self.steps} steps: its end was not played")
            return
        if outside:  # the game allowed them: imitation keeps such labels and widens the mask for them
            self.notes.append(f"{name} played {len(outside)} action(s) the mask leaves out, at steps {outside[:5]}")
        for key in ("score", "steps"):
            if not isinstance(info.get(key), (int, float, np.integer, np.floating)):
                raise self.fail("yardstick", f"the info of the game's last step has {key} = {info.get(key)!r}",
                                f"put the game's {key} in the info of its last step (env.episode_summary())")
        for what, call in (("results.details", lambda: spec.results.details(info)),
                           ("env.episode_metrics", lambda: spec.env.episode_metrics(info)),
                           *((f"env.success_metrics[{k!r}]", lambda k=k, f=f: {k: f(info)})
                             for k, f in spec.env.success_metrics.items())):
            try:
                value = call()
            except Exception as exc:
                raise self.fail("yardstick", f"spec.{what} raised {type(exc).__name__}: {exc} on the info of the "
                                "game's last step", "read only keys the env's last info holds") from exc
            if not isinstance(value, dict):
                raise self.fail("yardstick", f"spec.{what} returned {_short(value)}", "return a dict")
        self.notes.append(f"{name} played {info['steps']} steps, score {info['score']}")

    def features(self) -> None:
        module: ModuleType = self.spec.submission.features
        version = getattr(module, "FEATURE_VERSION", None)
        if not isinstance(version, str) or not version:
            raise self.fail("features", f"{module.__name__}.FEATURE_VERSION is {version!r}",
                            "declare the features' version as a string, e.g. FEATURE_VERSION = \"1\" (runs, models "
                            "and packages record it and refuse a model of another)")
        note = self.spec.submission.feature_version_note
        named = re.match(r"\s*version\s+(\S+?)[:;,\s]", note or "")
        if not note or (named and named.group(1) != version):
            raise self.fail("features", f"feature_version_note = {note!r} does not describe FEATURE_VERSION "
                            f"{version!r}", f"say what version {version} changed, e.g. \"version {version}: ...\"")
        observation, action = self.spec.env.spaces()
        sizes: list[tuple[str, Any, Any]] = [("N_ACTIONS", getattr(module, "N_ACTIONS", None), action.n)]
        if isinstance(observation, spaces.Dict) and {"maps", "vector"} <= set(observation.spaces):
            maps: tuple[int, ...] = tuple(observation["maps"].shape or ())
            vector: tuple[int, ...] = tuple(observation["vector"].shape or ())
            sizes += [("MAP_SHAPE", tuple(getattr(module, "MAP_SHAPE", ()) or ()), maps),
                      ("VECTOR_SIZE", getattr(module, "VECTOR_SIZE", None), vector[0])]
            layers = getattr(module, "BINARY_LAYERS", ())
            if not all(isinstance(k, int) and 0 <= k < maps[0] for k in layers):
                raise self.fail("features", f"{module.__name__}.BINARY_LAYERS = {layers!r} are not all channels of "
                                f"the maps {maps}", "list the map channels that hold only 0 or 255")
        for name, declared, space in sizes:
            if declared != space:
                raise self.fail("features", f"{module.__name__}.{name} = {declared!r}, the spaces say {space!r}",
                                f"make {name} what the env's spaces hold")
        path = Path(module.__file__ or "")
        companions = tuple(getattr(module, "COMPANION_FILES", ()))
        for file in (path, *(path.parent / name for name in companions)):
            if not file.is_file():
                raise self.fail("features", f"{file} (of {module.__name__}) is not a file",
                                "list in COMPANION_FILES only files beside the features module")
            self._imports_nothing_of_the_package(file, companions, "features", "a submission carries the features "
                                                 "module and its companions without sb3_realm")
        self.notes.append(f"version {version}")

    def protocols(self) -> None:
        spec, evaluation = self.spec, self.spec.evaluation
        if not evaluation.protocols or evaluation.held_out_protocol not in evaluation.protocols:
            raise self.fail("protocols", f"held_out_protocol {evaluation.held_out_protocol!r} is not one of the "
                            f"protocols {list(evaluation.protocols)}", "name the protocol whose games "
                            "held_out_configs draws, and list it in Evaluation(protocols=...)")
        folder = spec.maps.folder_from_environment()
        with_folder = {"maps_dir": folder} if folder and "maps_dir" in spec.env.options else {}
        env = self.make("protocols", **with_folder)
        for index, protocol in enumerate(evaluation.protocols):
            if not isinstance(evaluation.describe(protocol, None), str):
                raise self.fail("protocols", f"describe({protocol!r}, None) is not a string",
                                "return what the protocol plays, for the command line")
            try:
                configs = evaluation.configs(protocol, seed=self.seed)
            except ValueError as exc:
                if index == 0:
                    raise self.fail("protocols", f"the default protocol {protocol!r} needs arguments ({exc})",
                                    "list first a protocol that plays its games with no argument") from exc
                self.notes.append(f"{protocol}: needs arguments ({exc})")
                continue
            if not isinstance(configs, list) or not configs or not all(isinstance(c, dict) for c in configs):
                raise self.fail("protocols", f"configs({protocol!r}) gave {_short(configs)}",
                                "return a non-empty list of usr_conf dicts, one per game")
            try:
                evaluation.check_configs(configs)
            except ValueError as exc:
                raise self.fail("protocols", f"check_configs refuses the games of protocol {protocol!r} ({exc})",
                                "make check_configs accept every game its protocols make") from exc
            unplayed = [c["map_name"] for c in configs[:PROTOCOL_GAMES] if not with_folder
                        and isinstance(c.get("map_name"), str) and spec.maps.in_folder(c["map_name"])]
            if unplayed:
                self.notes.append(f"{protocol}: {len(configs)} games, none played (map {unplayed[0]!r} is read from "
                                  f"a maps folder: set {spec.maps.folder_variable} to play it)")
                continue
            for game, conf in enumerate(configs[:PROTOCOL_GAMES]):
                self.reset(env, "protocols", self.seed + game, dict(conf))
            self.notes.append(f"{protocol}: {len(configs)} games, {min(len(configs), PROTOCOL_GAMES)} played")
        # a run's held-out games are replayed exactly, and one of them alone too, as a study's Wilcoxon pruner plays
        # them (a study refuses that pruner for a game whose games are not its treasure sets: a note there)
        held_out = evaluation.held_out_configs({}, PROTOCOL_GAMES + 1, self.seed, ())
        for games in (held_out, held_out[1:2]):
            args = dict(evaluation.evaluate_args(games))
            protocol = args.pop("protocol", None)
            if protocol not in evaluation.protocols:
                raise self.fail("protocols", f"evaluate_args names the protocol {protocol!r}",
                                f"name one of {list(evaluation.protocols)}")
            again = evaluation.configs(protocol, seed=self.seed, **args)
            if again == games:
                continue
            if len(games) == 1 and not spec.episodes.treasure_sets:
                self.notes.append("one held-out game alone is another game: a study cannot prune game by game")
                continue
            raise self.fail("protocols", f"the held-out games {_short(games)} are not replayed by configs("
                            f"{protocol!r}, seed={self.seed}, **{args!r}), which gives {_short(again)}",
                            "make evaluate_args give the arguments whose protocol makes exactly those games, in "
                            "order")

    def layouts(self) -> None:
        submission = self.spec.submission
        unknown = [name for name in submission.layouts if name not in self.known_layouts]
        if unknown:
            raise self.fail("layouts", f"it names the layouts {unknown}, which are not among "
                            f"{sorted(self.known_layouts)}",
                            "name a layout there is (Submission(layouts=...)), bring the game's own "
                            "(Submission(layout_folders=...)), or, for one registered in sb3_realm.export.layouts, "
                            "pass check_game(..., layouts=sb3_realm.export.layouts.names())")
        if not submission.layouts:
            self.notes.append("names no layout: its models are not built into submissions")
            return
        for name, folder in submission.layout_folders.items():
            if name in LAYOUTS or name not in submission.layouts or not (Path(folder) / "layout.toml").is_file():
                raise self.fail("layouts", f"it brings the layout {name!r} in {str(folder)!r}, which is a shipped "
                                "layout's name, not among Submission.layouts, or a folder without layout.toml",
                                "give the layout a name of its own, list it in Submission(layouts=...) and point "
                                "layout_folders at the folder of its layout.toml")
        shared = [name for name in submission.layouts if name not in submission.layout_folders]
        missing = [name for name in ("protocol_file", "competition_env") if getattr(submission, name) is None]
        if missing and shared:
            raise self.fail("layouts", f"it names the layouts {shared} but no "
                            f"{' and no '.join(missing)}",
                            "a package's check plays the platform through them: give Submission(protocol_file=..., "
                            "competition_env=...)")
        self.notes.append(", ".join(submission.layouts))


def _own_layout_data(folder: Any) -> dict:
    """The ``layout.toml`` of a layout a game brings (empty where the folder has none: the layouts check says so)."""
    path = Path(folder) / "layout.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _plain_json(value: Any) -> Any:
    """numpy scalars and arrays -> Python data (``json.dumps``'s ``default``, as a package's check writes them)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON data")
