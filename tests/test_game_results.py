"""A game's results in its own terms: the shared result is score, steps, success and the game's details; the Realm's
fields live in its details and stay readable under their old names and in reports, and a report written before reads
back; imitation draws its training games from the game's own variants."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import realm_result
from toy_game import TOY_SPEC

from sb3_realm import games
from sb3_realm.evaluation import EvalReport, GameResult, format_report
from sb3_realm.evaluation.reports import LEGACY_DETAILS
from sb3_realm.games.gorge.rules import GorgeConfig
from sb3_realm.games.realm.rules import EpisodeConfig
from sb3_realm.imitation.config import load_imitate_config
from sb3_realm.imitation.selection import training_games

REPO = Path(__file__).resolve().parents[1]

#: one game of a Back to the Realm report as reports wrote it before results were game-neutral (and before the
#: yardstick's rename): the end reached with treasure 5 left
OLD_REALM_GAME = {"index": 3, "treasure_ids": [3, 5, 7], "score": 412.0, "reached_end": True, "treasures": 2,
                  "missed": [5], "steps": 301, "flash_used": 1, "buff_used": 0, "seed": None, "cut": False,
                  "expert_steps": None, "taken_over": 0, "oracle_score": 530.0, "oracle_steps": 280,
                  "planned_steps": None, "won": False, "gap": 118.0}
#: one game of a Gorge Chase report as written before: caught, its own figures under ``details``
OLD_GORGE_GAME = {"index": 0, "treasure_ids": [], "score": 610.5, "reached_end": False, "treasures": 3, "missed": [],
                  "steps": 402, "flash_used": 2, "buff_used": 1, "seed": 12, "cut": False, "expert_steps": None,
                  "taken_over": 0, "yardstick_score": 700.0, "yardstick_steps": 500, "planned_steps": None,
                  "map": "own_2", "details": {"survived": False, "caught_after_speedup": True, "caught_step": 402,
                                              "free_neighbours": 1}, "won": False, "gap": 89.5}


def test_the_realms_fields_are_its_details_under_their_old_names():
    result = realm_result(0, ids=(3, 5, 7), missed=(5,), score=412.0, steps=301, flash_used=1)
    assert set(result.details) == set(LEGACY_DETAILS)
    assert result.treasure_ids == (3, 5, 7) and result.missed == (5,) and result.treasures == 2
    assert result.reached_end and not result.won and not result.success  # a treasure left: no clean win
    assert (result.flash_used, result.buff_used) == (1, 0)
    clean = realm_result(1, ids=(3, 5), steps=200)
    assert clean.won and clean.success


def test_a_realm_report_keeps_its_shape_and_gains_success():
    result = realm_result(3, ids=(3, 5, 7), missed=(5,), score=412.0, steps=301, flash_used=1,
                          yardstick_score=530.0, yardstick_steps=280)
    data = json.loads(json.dumps(result.to_dict()))
    old = {key.replace("oracle", "yardstick"): value for key, value in OLD_REALM_GAME.items()}
    assert list(data) == [*[k for k in old if k not in ("gap",)], "success", "gap"]  # the order of before
    assert data == {**old, "success": False}
    assert "details" not in data  # the Realm has no figures beyond the fields reports always had


@pytest.mark.parametrize(("old", "game"), [(OLD_REALM_GAME, "realm"), (OLD_GORGE_GAME, "gorge")])
def test_a_game_written_before_reads_back_unchanged(old, game):
    result = GameResult.from_dict(old, game)
    assert result.success is (old["won"] if game == "realm" else old["details"]["survived"])
    written = json.loads(json.dumps(result.to_dict()))
    assert written == {**{k.replace("oracle", "yardstick"): v for k, v in old.items()}, "success": result.success}
    assert GameResult.from_dict(json.loads(json.dumps(written)), game) == result


def test_a_game_of_a_report_that_names_no_game_reads_as_the_realms():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = GameResult.from_dict({**OLD_REALM_GAME, "missed": [], "treasures": 3})
    assert result.success and result.won and result.yardstick_score == 530.0
    assert any(issubclass(w.category, games.LegacyGameNote) for w in caught)


def test_gorge_chase_success_is_survival_and_its_report_keeps_its_lines():
    gorge = games.get("gorge")
    survived = GameResult.from_summary({"score": 900.0, "steps": 1000, "treasures": 2, "flash_used": 1,
                                        "buff_used": 0, "caught": False, "caught_after_speedup": False},
                                       index=0, game=gorge, map="own_2", yardstick_score=800.0)
    caught = GameResult.from_dict(OLD_GORGE_GAME, gorge)
    assert survived.success and not caught.success and not survived.won  # the Realm's win means nothing here
    report = EvalReport("scripted", "maps", "own_2", 0, [survived, caught], game="gorge")
    summary = report.summary()
    assert summary["survived"] == 1 and summary["mean_treasures"] == 2.5
    assert (summary["flash_games"], summary["buff_games"]) == (2, 1)
    assert "survived 1/2 (50%)" in format_report(report)


def test_the_toys_result_is_in_its_own_terms(toy_registered):
    info = {"score": 172.0, "steps": 8, "treasures": 1, "win": True, "treasures_missed": [1]}
    result = GameResult.from_summary(info, index=0, game=TOY_SPEC)
    assert result.success and result.details == {"reached_exit": True, "treasures": 1, "treasures_left": 1}
    assert not result.reached_end and not result.missed  # the Realm's names read empty for a game without them
    short = GameResult.from_summary({**info, "win": False}, index=1, game=TOY_SPEC, cut=True)
    assert not short.success
    data = result.to_dict()
    assert data["success"] and data["details"] == {"reached_exit": True, "treasures_left": 1}
    assert "won" not in data and "reached_end" not in data
    assert GameResult.from_dict(data, "toy") == result


@pytest.fixture
def toy_registered():
    registered = TOY_SPEC.name in games.GAMES
    if not registered:
        games.register(TOY_SPEC)
    yield TOY_SPEC
    if not registered:
        games.unregister(TOY_SPEC.name)


# ---------------------------------------------------------------------------------------------- training variants
def _as_before(config, round_no: int, n: int, base, counts) -> list:
    """The training games as imitation drew them when it asked every game for a treasure count."""
    from sb3_realm.evaluation import game_seed

    held_out = {game_seed(config.eval_seed, i) for i in range(config.eval_games)}
    rng = np.random.default_rng([config.seed, round_no, 1])
    drawn: list = []
    while len(drawn) < n:
        seed = int(rng.integers(2**20, 2**31))
        if seed not in held_out:
            drawn.append((seed, base.training_usr_conf(int(rng.choice(counts)))))
    return drawn


@pytest.mark.parametrize(("recipe", "overrides"), [
    ("configs/realm/imitate/quick.yaml", []),
    ("configs/realm/imitate/quick.yaml", ["imitation.treasure_counts=[1, 5, 9, 9]"]),
    ("configs/gorge/imitate.yaml", []),
    ("configs/gorge/imitate.yaml", ["imitation.treasure_counts=[3, 10]"]),
])
def test_training_games_are_the_games_variants_drawn_as_before(recipe, overrides):
    config = load_imitate_config(REPO / recipe, overrides)
    base = config.spec.episodes.config.from_usr_conf(config.env.usr_conf)
    counts = config.imitation.treasure_counts or [base.treasure_num]
    assert training_games(config, 2, 12) == _as_before(config, 2, 12, base, counts)


def test_each_game_gives_its_training_variants():
    realm = games.get("realm").episodes.training_variants
    nine = EpisodeConfig.from_usr_conf({"treasure_num": 9})
    assert realm(nine, []) == [nine.training_usr_conf(9)]
    assert [conf["treasure_num"] for conf in realm(nine, [2, 13])] == [2, 13]
    gorge = games.get("gorge").episodes.training_variants
    assert [conf["treasure_count"] for conf in gorge(GorgeConfig(), [0, 10])] == [0, 10]
    assert gorge(GorgeConfig(), []) == [GorgeConfig().to_usr_conf()]
    toy = TOY_SPEC.episodes.training_variants
    base = TOY_SPEC.episodes.config.from_usr_conf({"max_step": 20})
    assert toy(base, [1]) == [{"start": -1, "treasure_count": 1, "max_step": 20}]
    assert toy(base, []) == [base.to_usr_conf()]


# ---------------------------------------------------------------------------------------------- expert options
def test_each_game_names_the_options_its_experts_take(toy_registered):
    realm = games.get("realm")
    assert realm.experts.play_options == games.get("gorge").experts.play_options == {"use_flash": True,
                                                                                      "use_buff": True}
    assert realm.check_expert_options({"use_flash": False}) == {"use_flash": False}
    assert realm.check_expert_options(None) == {}
    with pytest.raises(ValueError, match=r"'use_teleport' is not an option of Back to the Realm's experts, which "
                                         r"take the options \['use_buff', 'use_flash'\]; drop 'use_teleport'"):
        realm.check_expert_options({"use_teleport": True})
    with pytest.raises(ValueError, match=r"use_flash = 'no' must be a bool like its default True, e.g. "
                                         r"use_flash=true"):
        realm.check_expert_options({"use_flash": "no"}, "--expert-option")
    with pytest.raises(ValueError, match=r"--expert-option: 'use_flash' is not an option of Toy Grid's experts, "
                                         r"which take no options"):
        TOY_SPEC.check_expert_options({"use_flash": False}, "--expert-option")


def test_eval_passes_the_named_options_to_the_games_expert():
    """The options reach the oracle unread by the shared layers: without the flash it walks and takes the buff."""
    from sb3_realm.evaluation import evaluate

    default = evaluate("oracle", "fixed", game="realm", yardstick=False).games[0]
    walking = evaluate("oracle", "fixed", game="realm", yardstick=False, expert_options={"use_flash": False}).games[0]
    assert default.flash_used == 1 and walking.flash_used == 0 and walking.score < default.score


def test_the_command_lines_expert_options(toy_registered, capsys):
    from sb3_realm import cli

    args = cli.build_parser().parse_args(["eval", "oracle", "--expert-option", "use_flash=false", "--no-buff"])
    assert cli._expert_options(args) == {"use_flash": False, "use_buff": False}
    args = cli.build_parser().parse_args(["eval", "oracle", "--no-flash"])
    assert cli._expert_options(args) == {"use_flash": False}
    assert cli._expert_options(cli.build_parser().parse_args(["eval", "oracle"])) is None
    assert cli.main(["eval", "bfs", "--game", "toy", "--no-flash"]) != 0  # refused before any game is played
    assert "'use_flash' is not an option of Toy Grid's experts" in capsys.readouterr().err
