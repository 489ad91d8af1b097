"""`sb3-realm train` without a progress bar says how the run is doing: one line per held-out evaluation on stderr."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from unittest import mock

import pytest

from sb3_realm import games
from sb3_realm.cli import main
from sb3_realm.training.callbacks import eval_line
from sb3_realm.training.config import load_config
from sb3_realm.training.run import train

TINY = ["--config", "configs/realm/tiny.yaml", "--set", "eval_games=2", "--set", "checkpoint_freq=512"]
LINE = re.compile(r"eval (\d+) at ([\d,]+)/([\d,]+) steps: held-out score (-?[\d.]+), won (\d+)/2 games, "
                  r"best (-?[\d.]+)( \(new best\))?, \d+(\.\d)? (s|min) in all")


def _lines(text: str) -> list[re.Match]:
    found = [LINE.fullmatch(line) for line in text.splitlines() if line.startswith("eval ")]
    assert all(found), text
    return found


def test_train_without_a_terminal_prints_a_line_per_evaluation_and_so_does_no_progress_on_resume(tmp_path, capsys):
    run = tmp_path / "run"
    # the config asks for the bar, but stderr is no terminal here: the run talks instead
    assert main(["train", *TINY, "--set", "progress_bar=true", "--set", "eval_freq=512", "--out", str(run),
                 "--total-steps", "1024"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["num_timesteps"] == 1024  # stdout keeps the JSON alone
    history = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    lines = _lines(err)
    assert [(int(m[1]), int(m[2].replace(",", "")), int(m[3].replace(",", ""))) for m in lines] == \
        [(1, 512, 1024), (2, 1024, 1024)]
    for match, entry in zip(lines, history, strict=True):
        assert float(match[4]) == round(entry["mean_score"], 1)
        assert int(match[5]) == entry["wins"]
        assert float(match[6]) == round(entry["best_score"], 1)
        assert bool(match[7]) == entry["new_best"]
    assert "progress_bar: true" in (run / "config.yaml").read_text(encoding="utf-8")

    # --no-progress is this command's choice: the run's config.yaml keeps its own, and the resumed run talks too
    assert main(["train", "--resume", str(run), "--total-steps", "1536", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["num_timesteps"] == 1536
    assert [(int(m[1]), m[2], m[3]) for m in _lines(err)] == [(3, "1,536", "1,536")]
    assert "progress_bar: true" in (run / "config.yaml").read_text(encoding="utf-8")


def test_the_python_api_talks_only_when_given_a_stream_and_no_bar_shows(tmp_path):
    config = load_config("configs/realm/tiny.yaml", [f"out={tmp_path / 'run'}", "total_timesteps=512",
                                                     "checkpoint_freq=512", "eval_freq=512", "eval_games=2",
                                                     "progress_bar=false"])
    talk = io.StringIO()
    train(config, talk=talk)
    assert [int(m[1]) for m in _lines(talk.getvalue())] == [1]


def test_eval_line_names_the_games_own_measure():
    gorge = {"evaluation": 4, "timesteps": 200_000, "games": 10, "mean_score": 812.345, "survived": 7,
             "survival_share": 0.7, "best_score": 900.0, "new_best": False, "wall_s": 754.0}
    assert eval_line(gorge, 1_000_000, "gorge") == ("eval 4 at 200,000/1,000,000 steps: held-out score 812.3, "
                                                    "survived 7/10 games, best 900.0, 12.6 min in all")
    realm = {"evaluation": 1, "timesteps": 2048, "games": 3, "mean_score": 150.0, "wins": 2, "win_rate": 2 / 3,
             "best_score": 150.0, "new_best": True, "wall_s": 9.4}
    assert eval_line(realm, game="realm") == ("eval 1 at 2,048 steps: held-out score 150.0, won 2/3 games, best 150.0 "
                                              "(new best), 9 s in all")
    with pytest.raises(ValueError, match=r"^no game given"):
        eval_line(realm)  # there is no default game


def test_eval_line_counts_what_the_games_spec_calls_a_success():
    """The line reads the count the spec names and says it in the spec's words, whatever the game's name."""
    entry = {"evaluation": 2, "timesteps": 4096, "games": 5, "mean_score": 10.0, "goals": 3, "wins": 1,
             "best_score": 10.0, "new_best": False, "wall_s": 3.0}
    realm = games.get("realm")
    toy = dataclasses.replace(realm, name="toy", evaluation=dataclasses.replace(
        realm.evaluation, success=dataclasses.replace(realm.evaluation.success, count="goals", verb="scored")))
    with mock.patch.dict(games.GAMES, {"toy": toy}):
        assert ", scored 3/5 games," in eval_line(entry, game="toy")
    assert ", won 1/5 games," in eval_line(entry, game="realm")
