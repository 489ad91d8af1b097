"""``check_game``: every registered game and the toy pass it, and a toy spec broken in one part fails the check of
that part with a message naming the value and the fix.

This is where the env contract of every game is tested (SB3's and Gymnasium's env checkers, same-seed determinism,
pickling of the factory and of an env mid-game): the same checks a game's author runs on a new game."""

from __future__ import annotations

import dataclasses
import random
import re
import types

import numpy as np
import pytest
from gymnasium import spaces
from helpers import GORGE_MAPS
from toy_game import TOY_SPEC
from toy_game import features as toy_features
from toy_game.game import BfsPolicy, ToyEnv, env_spaces

from sb3_realm import games
from sb3_realm.games.check import CHECKS, GameCheckError, GameCheckReport, check_game

#: every game registered when the tests are collected, and the toy (registered by no one here)
SPECS = {**{name: games.get(name) for name in games.names()}, TOY_SPEC.name: TOY_SPEC}
#: (game, env arguments): each game's default env, and the env of each of its Gymnasium ids that sets arguments
CASES = [(name, {}) for name in SPECS] + [(name, dict(kwargs)) for name, spec in SPECS.items()
                                          for kwargs in spec.env.ids.values() if kwargs]


@pytest.fixture
def open_maps(monkeypatch):
    """The open Gorge Chase maps' folder in the environment where it is beside the checkout, so that the protocols
    that play them are played too."""
    if GORGE_MAPS.is_dir():
        monkeypatch.setenv("SB3_REALM_GORGE_MAPS", str(GORGE_MAPS))


@pytest.mark.parametrize("name, env_kwargs", CASES, ids=[f"{n}-{'-'.join(map(str, k.values())) or 'default'}"
                                                         for n, k in CASES])
def test_every_game_passes_check_game(name, env_kwargs, open_maps):
    spec = SPECS[name]
    report = check_game(spec, steps=60, env_kwargs=env_kwargs)
    assert isinstance(report, GameCheckReport) and report.game == name and report.checks == CHECKS
    # another seed plays another game (a game that ignored its seed would pass the determinism check alone)
    assert report.notes["determinism"] == ("60 steps; seed 1 gives another game",)
    assert f"{spec.evaluation.yardstick} played" in " ".join(report.notes["yardstick"])
    assert str(report).startswith(f"game {name!r} passes {len(CHECKS)} checks")
    if name in games.GAMES:  # the path worker processes import it by
        assert report.notes["pickling"] == (f"worker processes import it as {games.path_of(name)}",)
    if spec is not TOY_SPEC:  # the shipped games replay one held-out game alone too
        assert not any("alone" in note for note in report.notes["protocols"]), report.notes["protocols"]


def _broken(**parts) -> games.GameSpec:
    """The toy spec with some of its parts' fields replaced: ``env={"spaces": ...}``, ``submission={...}``..."""
    return dataclasses.replace(TOY_SPEC, **{part: dataclasses.replace(getattr(TOY_SPEC, part), **fields)
                                            for part, fields in parts.items()})


def _fails(spec: games.GameSpec, check: str, *fragments: str) -> GameCheckError:
    with pytest.raises(GameCheckError) as caught:
        check_game(spec, steps=40)
    message = str(caught.value)
    assert caught.value.check == check, message
    assert message.startswith(f"Toy Grid (game 'toy') fails the {check} check: "), message
    assert "\n" not in message and "Traceback" not in message
    for fragment in fragments:
        assert fragment in message, message
    return caught.value


def _five_actions():
    observation, _ = env_spaces()
    return observation, spaces.Discrete(5)


def test_a_stated_space_that_is_not_the_envs_fails_the_spaces_check():
    _fails(_broken(env={"spaces": _five_actions}), "spaces", "states the action space Discrete(5)",
           "the env has Discrete(4)", "make spec.env.spaces() return the spaces the env sets")


class NoisyEnv(ToyEnv):
    """The toy with a reward drawn from the global random state from its fifth step, which no seed fixes (a later
    step than Gymnasium's checker plays)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        noise = random.random() if self.game.step_no >= 5 else 0.0
        return obs, reward + noise, terminated, truncated, info


def test_an_env_that_its_seed_does_not_fix_fails_the_determinism_check():
    _fails(_broken(env={"make": NoisyEnv, "entry_point": "test_check_game:NoisyEnv"}), "determinism",
           "two envs reset with seed 0 and given the same actions differ at transition 5: the reward",
           "draw all randomness from self.np_random")


def test_a_factory_that_does_not_pickle_fails_the_pickling_check():
    error = _fails(_broken(env={"make": lambda **kwargs: ToyEnv(**kwargs)}), "pickling", "does not pickle",
                   "not a lambda or a local")
    assert "spawn or forkserver" in str(error)


class PeekingEnv(ToyEnv):
    """The toy whose platform observation draws from the env's generator: reading it changes the games after."""

    def competition_obs(self):
        self.np_random.random()
        return super().competition_obs()


def test_a_game_registered_without_an_import_path_fails_the_pickling_check():
    """A spec no module holds (as one made in a script run as ``__main__``) plays only in the process that registered
    it: no worker process could import it."""
    orphan = dataclasses.replace(TOY_SPEC, name="toy_orphan")
    games.register(orphan)
    try:
        with pytest.raises(GameCheckError, match=r"fails the pickling check: it is registered by object, and no "
                                                 r"importable module holds its GameSpec; a worker process imports a "
                                                 r"game by its path"):
            check_game("toy_orphan", steps=40)
    finally:
        games.unregister("toy_orphan")


def test_a_game_named_by_its_import_path_is_checked_and_registered():
    path = "toy_game.spec:TOY_SPEC"
    registered = TOY_SPEC.name in games.GAMES
    try:
        report = check_game(path, steps=40)
        assert report.game == "toy" and games.GAMES["toy"] is TOY_SPEC
        assert report.notes["pickling"] == (f"worker processes import it as {path}",)
    finally:
        if not registered:
            games.unregister(TOY_SPEC.name)


def test_a_platform_observation_that_changes_the_game_fails_the_protocol_check():
    _fails(_broken(env={"make": PeekingEnv, "entry_point": "test_check_game:PeekingEnv"}), "protocol",
           "reading the platform's observation changes the game", "without changing it")


class OffTheGrid(BfsPolicy):
    """The BFS expert but for a fifth action the toy does not have, from its third step."""

    def act(self, env, obs):
        return 4 if env.unwrapped.game.step_no >= 2 else super().act(env, obs)


class IntoTheWall(BfsPolicy):
    """The BFS expert but for its first step, a move west off the grid (a bump the toy's mask leaves out)."""

    def act(self, env, obs):
        return 2 if env.unwrapped.game.step_no == 0 else super().act(env, obs)


class ToyEnvAtCorner(ToyEnv):
    """The toy whose games start in the corner (0, 0), where a move west is off the grid."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"start": 0, **kwargs})


def _with_expert(expert, **env) -> games.GameSpec:
    """The toy spec whose yardstick ``bfs`` is ``expert`` (and whose env's fields are ``env``)."""
    return dataclasses.replace(TOY_SPEC, experts=games.Experts({"bfs": expert}, TOY_SPEC.experts.options),
                               env=dataclasses.replace(TOY_SPEC.env, **env))


def test_a_yardstick_that_plays_no_action_of_the_game_fails_the_yardstick_check():
    _fails(_with_expert(OffTheGrid), "yardstick", "the expert 'bfs' played 4 at step 2, not an action of the game",
           "return an int in 0..3 that the game allows")


def test_a_yardstick_move_the_mask_leaves_out_is_noted():
    """A move the mask leaves out but the game plays (the hero bumps) is allowed, as imitation keeps such a label
    (Gorge Chase's scripted expert stands still against a wall so)."""
    spec = _with_expert(IntoTheWall, make=ToyEnvAtCorner, entry_point="test_check_game:ToyEnvAtCorner")
    report = check_game(spec, steps=40)
    assert "bfs played 1 action(s) the mask leaves out, at steps [0]" in report.notes["yardstick"]


def test_an_unknown_layout_fails_the_layouts_check():
    _fails(_broken(submission={"layouts": ("toy2030",), "layout_folders": {}}), "layouts",
           "names the layouts ['toy2030']", "which are not among ['gorge15', 'kaiwu2024']",
           "layouts=sb3_realm.export.layouts.names()")
    # a layout the caller knows, but no platform env to check a package on it
    with pytest.raises(GameCheckError, match=r"fails the layouts check: it names the layouts \['toy2030'\] but no "
                                             r"protocol_file and no competition_env"):
        check_game(_broken(submission={"layouts": ("toy2030",), "layout_folders": {}}), steps=40,
                   layouts={"toy2030"})


def test_a_features_version_that_is_no_string_or_another_than_its_note_fails_the_features_check():
    as_int = types.ModuleType(toy_features.__name__)
    as_int.__dict__.update({k: v for k, v in vars(toy_features).items() if not k.startswith("__")},
                           __file__=toy_features.__file__, FEATURE_VERSION=1)
    _fails(_broken(submission={"features": as_int}), "features", "FEATURE_VERSION is 1",
           'FEATURE_VERSION = "1"')
    _fails(_broken(submission={"feature_version_note": "version 7: a newer encoding"}), "features",
           "does not describe FEATURE_VERSION '1'", 'say what version 1 changed, e.g. "version 1: ..."')


def test_features_that_import_the_package_fail_the_features_check(tmp_path):
    source = tmp_path / "leaky_features.py"
    source.write_text("from sb3_realm.games.spec import TermWeights\n", encoding="utf-8")
    leaky = types.ModuleType("leaky_features")
    leaky.__dict__.update({k: v for k, v in vars(toy_features).items() if not k.startswith("__")},
                          __file__=str(source))
    _fails(_broken(submission={"features": leaky}), "features", "leaky_features.py imports sb3_realm.games.spec "
           "(line 1)", "import only numpy, torch and the standard library there")


def _one_more_game(usr_confs):
    args = TOY_SPEC.evaluation.evaluate_args(usr_confs)
    return {**args, "games": args["games"] + 1}


def test_held_out_games_the_evaluate_args_do_not_replay_fail_the_protocols_check():
    _fails(_broken(evaluation={"evaluate_args": _one_more_game}), "protocols", "are not replayed by configs('fixed'",
           "make evaluate_args give the arguments whose protocol makes exactly those games")


def test_the_arguments_are_checked_before_any_game_is_played():
    with pytest.raises(ValueError, match=r"^steps = 1: check_game plays at least 2 steps; pass an integer >= 2"):
        check_game(TOY_SPEC, steps=1)
    with pytest.raises(TypeError, match="check_game\\(\\) takes a GameSpec, or a game's name or import path, "
                                        "got int"):
        check_game(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="game = 'toy2' is not a game of this package"):
        check_game("toy2")


def test_the_report_lists_each_check_with_its_notes():
    report = check_game(TOY_SPEC, steps=40)
    lines = str(report).splitlines()
    assert [re.match(r"  (\w+):", line).group(1) for line in lines[1:]] == list(CHECKS)
    assert report.notes["layouts"] == ("toy_grid",)  # the toy platform's layout, which the toy brings itself
    bare = check_game(_broken(submission={"layouts": (), "layout_folders": {}}), steps=40)
    assert bare.notes["layouts"] == ("names no layout: its models are not built into submissions",)
    # the toy's held-out games are its fixed starts in turn: one alone is the first start's game
    assert report.notes["protocols"] == ("fixed: 4 games, 2 played",
                                         "one held-out game alone is another game: a study cannot prune game by game")
    assert np.isfinite(float(report.notes["yardstick"][-1].rsplit("score ", 1)[1]))
