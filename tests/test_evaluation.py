"""Evaluation protocols, hand-computed scores, errors, parallel determinism, replays."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from helpers import open_map, realm_result
from PIL import Image

from sb3_realm.evaluation import evaluate, format_report, plot_scores, protocol_configs, replay, write_json_atomic


def test_protocols_draw_the_documented_sets():
    board = protocol_configs("leaderboard", seed=5)
    assert len(board) == 30
    for c in board:
        assert c["start"] == 2 and c["end"] == 1 and c["max_step"] == 2000 and c["treasure_random"] == 0
        assert len(c["treasure_id"]) == 9 and set(c["treasure_id"]) <= set(range(3, 16))
    assert board == protocol_configs("leaderboard", seed=5)
    assert board != protocol_configs("leaderboard", seed=6)
    full = protocol_configs("exhaustive")
    assert len(full) == math.comb(13, 9) == 715
    assert {tuple(c["treasure_id"]) for c in full} == set(itertools.combinations(range(3, 16), 9))
    assert len(protocol_configs("exhaustive", treasures=2)) == math.comb(13, 2)
    assert protocol_configs("fixed", treasures=4)[0]["treasure_id"] == [3, 4, 5, 6]
    assert [c["treasure_id"] for c in protocol_configs("custom", custom=[[5, 4], [9]])] == [[4, 5], [9]]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"protocol": "ladder"}, "unknown protocol 'ladder'"),
        ({"protocol": "exhaustive", "treasures": 14}, "--treasures 14 is out of range"),
        ({"protocol": "custom"}, "needs treasure sets"),
        ({"protocol": "custom", "custom": [[1, 3]]}, "treasure_id"),
        ({"protocol": "leaderboard", "games": 0}, "--games 0"),
        ({"protocol": "fixed", "max_step": 0}, "max_step"),
    ],
)
def test_bad_protocol_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        protocol_configs(**kwargs)


def test_bad_policy_arguments(tmp_path):
    with pytest.raises(ValueError, match="neither 'random', 'oracle', 'oracle-refined', an existing"):
        evaluate(str(tmp_path / "missing.zip"), "fixed", yardstick=False, game="realm")
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a Stable-Baselines3 checkpoint"):
        evaluate(str(junk), "fixed", yardstick=False, game="realm")
    with pytest.raises(ValueError, match="--workers 0"):
        evaluate("random", "fixed", workers=0, yardstick=False, game="realm")


class EastPolicy:
    """Always walks east: the scripted episode of the hand-computed scores."""

    name = "east"

    def reset(self, env):
        pass

    def act(self, env, obs):
        return 0


def line_map_file(tmp_path):
    # start (2) at (10, 10); treasures 3 and 4 east of it at (13, 10) and (16, 10); the end (1) at (22, 10)
    pos = [(4 + 5 * (i % 7), 28 + 3 * (i // 7)) for i in range(16)]
    pos[2], pos[3], pos[4], pos[1] = (10, 10), (13, 10), (16, 10), (22, 10)
    path = tmp_path / "line.json"
    path.write_text(json.dumps(open_map(40, grid_positions=pos).to_dict()))
    return path


def test_scores_equal_hand_computed_values(tmp_path):
    report = evaluate(EastPolicy(), "custom", custom=[[3, 4], [3], [5]], map_path=line_map_file(tmp_path),
                      yardstick=False, game="realm")
    # 6000 units to the end, reached within 1000: ceil(5000 / 700) = 8 steps; the line passes 3 and 4
    steps = 8
    assert [r.steps for r in report.games] == [steps] * 3
    assert [r.score for r in report.games] == pytest.approx([
        150 + 100 * 2 + 0.2 * (2000 - steps),
        150 + 100 * 1 + 0.2 * (2000 - steps),
        150 + 0.2 * (2000 - steps),  # treasure 5 is off the line: missed
    ])
    assert report.games[2].missed == (5,) and report.games[0].missed == ()
    s = report.summary()
    assert s["reached_end"] == 3 and s["games_with_missed_treasure"] == 1 and s["missed_by_id"] == {5: 1}
    # the game that reached the end without treasure 5 is not won (the competition's clean win)
    assert s["wins"] == 2 and s["win_rate"] == pytest.approx(2 / 3)
    assert [r.won for r in report.games] == [True, True, False] and all(r.reached_end for r in report.games)
    text = format_report(report)
    assert "missed by id: {5: 1}" in text and "[5] / [5]" in text
    assert "wins 2/3 with every treasure, 3 reached the end" in text
    # the table says which games it shows
    assert "all 3 games, lowest score first:" in text
    two = format_report(report, worst=2)
    assert "the 2 lowest-scoring of 3 games (--worst N shows more):" in two


@pytest.mark.processes
def test_parallel_results_equal_serial_results():
    kw = {"protocol": "leaderboard", "games": 6, "max_step": 150, "seed": 3, "yardstick": False}
    serial = evaluate("random", workers=1, **kw, game="realm")
    parallel = evaluate("random", workers=2, **kw, game="realm")
    assert [(r.score, r.steps, r.treasures, r.missed) for r in serial.games] == \
        [(r.score, r.steps, r.treasures, r.missed) for r in parallel.games]


def test_report_files(tmp_path):
    report = evaluate("random", "leaderboard", games=3, max_step=100, yardstick=False, game="realm")
    data = json.loads(write_json_atomic(report.to_dict(), tmp_path / "r" / "eval.json").read_text())
    assert data["summary"]["games"] == 3 and len(data["games"]) == 3
    assert list((tmp_path / "r").iterdir()) == [tmp_path / "r" / "eval.json"]  # no temporary file left
    with Image.open(plot_scores(report, tmp_path / "scores.png")) as img:
        assert img.format == "PNG" and img.size[0] > 100


def test_replay_writes_gif_and_route_png(tmp_path):
    out = replay("random", tmp_path / "ep.gif", usr_conf={"max_step": 60, "treasure_num": 2}, seed=1, game="realm")
    assert out["steps"] == 60 and not out["win"]
    with Image.open(out["gif"]) as gif:
        # the reset frame and every 2nd step; Pillow merges identical consecutive frames
        assert gif.format == "GIF" and 2 <= gif.n_frames <= 31
    with Image.open(out["png"]) as png:
        assert png.format == "PNG"
        assert len(np.unique(np.asarray(png.convert("RGB")).reshape(-1, 3), axis=0)) > 20


@pytest.mark.parametrize("protocol", ["leaderboard", "exhaustive", "fixed"])
def test_treasure_sets_without_the_custom_protocol_are_refused(protocol):
    with pytest.raises(ValueError, match=rf"only by the custom protocol, not by '{protocol}': add --protocol custom"):
        protocol_configs(protocol, custom=[[3, 4]])


@pytest.mark.parametrize("worst", ["0", "-3", "ten"])
def test_eval_worst_below_one_is_refused(worst, capsys):
    from sb3_realm.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "random", "--game", "realm", "--worst", worst])
    err = capsys.readouterr().err
    assert "give a count of games >= 1" in err and worst.lstrip("-") in err
    assert build_parser().parse_args(["eval", "random", "--game", "realm", "--worst", "30"]).worst == 30


def test_the_yardstick_keys_and_a_report_written_before_their_rename():
    """A report writes the yardstick's score under ``yardstick_*`` keys; one written before the rename (``oracle_*``
    keys) reads back under the new names (``with_yardstick_keys``), and ``GameResult.oracle_score`` still reads."""
    from sb3_realm.evaluation import EvalReport
    from sb3_realm.evaluation.reports import OLD_YARDSTICK_KEYS, with_yardstick_keys

    games = [realm_result(i, ids=(3,), score=score, steps=10, yardstick_score=310.0, yardstick_steps=9)
             for i, score in enumerate([300.0, 290.0])]
    report = EvalReport("random", "custom", "default", 0, games, game="realm")
    data = json.loads(json.dumps(report.to_dict()))
    s, game = data["summary"], data["games"][0]
    assert (s["yardstick_mean_score"], s["mean_gap_to_yardstick"], s["max_gap_to_yardstick"]) == (310.0, 15.0, 20.0)
    assert (game["yardstick_score"], game["yardstick_steps"], game["gap"]) == (310.0, 9, 10.0)
    assert not [key for key in [*s, *game] if "oracle" in key]
    assert report.games[0].oracle_score == 310.0 and report.games[0].oracle_steps == 9  # the old names, read-only
    assert "oracle mean 310.00  gap mean 15.00  max 20.00" in format_report(report)  # the Realm's yardstick
    old_name = {new: old for old, new in OLD_YARDSTICK_KEYS.items()}
    for written in (s, game):
        old = {old_name.get(key, key): value for key, value in written.items()}
        assert any(key in OLD_YARDSTICK_KEYS for key in old)
        assert with_yardstick_keys(old) == written
