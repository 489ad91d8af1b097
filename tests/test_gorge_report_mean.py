"""The Gorge Chase report prints the policy's mean score, and beside the yardstick's in the per-map table's total
row (``sb3-realm eval planner --game gorge`` showed the yardstick's mean but not the policy's)."""

from __future__ import annotations

from sb3_realm import games
from sb3_realm.evaluation import format_report
from sb3_realm.evaluation.reports import EvalReport, GameResult


def _game(index: int, map_name: str, score: float, yardstick: float, caught: bool) -> GameResult:
    info = {"score": score, "steps": 50 if caught else int(score / 1.5), "treasures": index % 3, "flash_used": 1,
            "buff_used": 0, "caught": caught, "caught_after_speedup": caught, "free_neighbours": 2}
    return GameResult.from_summary(info, index=index, game=games.get("gorge"), yardstick_score=yardstick,
                                   yardstick_steps=100, map=map_name)


def _report() -> EvalReport:
    games = [_game(0, "own_6", 1000.0, 1100.0, True), _game(1, "own_6", 1200.0, 1150.0, False),
             _game(2, "own_7", 600.0, 900.0, True), _game(3, "own_7", 800.0, 1250.0, True)]
    return EvalReport(policy="planner", protocol="hidden", map="own_6, own_7", seed=0, games=games, game="gorge")


def test_report_prints_the_policy_mean_first():
    lines = format_report(_report()).splitlines()
    assert lines[1].startswith("score mean 900.00  min 600.00  max 1200.00  | steps"), lines[1]


def test_total_row_puts_the_policy_mean_beside_the_yardstick_mean():
    text = format_report(_report())
    total = next(line for line in text.splitlines() if line.startswith("all maps"))
    games, score, yardstick = total.split()[2:5]
    assert (games, score, yardstick) == ("4", "900.0", "1100.0"), total
    assert "scripted mean 1100.00  gap mean 200.00" in text


def test_one_map_has_no_total_row():
    report = _report()
    report.games = report.games[:2]
    assert "all maps" not in format_report(report)
