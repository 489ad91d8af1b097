"""Gorge Chase's named settings (``default``, ``final``: the final round's) everywhere: ``sb3-realm eval --settings``
plays every game of a protocol (the policy's and the yardstick's) under them and records them, the Realm refuses them,
a bad name is refused before any game; a config's ``env.settings`` (one name or a mix) reaches the env and the
held-out games, a bad one is refused; the benchmarks play the settings they are given."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import load_benchmark

from sb3_realm import games
from sb3_realm.cli import main
from sb3_realm.evaluation import evaluate
from sb3_realm.evaluation import protocols as eval_protocols
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.rules import SETTINGS
from sb3_realm.imitation.config import load_imitate_config
from sb3_realm.training.config import load_config
from sb3_realm.tuning import script as script_module

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "configs" / "gorge" / "maskable_ppo.yaml"
FINAL = SETTINGS["final"]


def _record_games(monkeypatch) -> list[tuple[str, object]]:
    """Record ``(policy name, the game's configuration)`` of every game evaluation plays."""
    played: list[tuple[str, object]] = []
    original = eval_protocols.play_episode

    def recording(env, policy, seed, options=None, observe=None):
        info = original(env, policy, seed, options, observe)
        played.append((policy.name, env.game.config))
        return info

    monkeypatch.setattr(eval_protocols, "play_episode", recording)
    return played


def _no_game(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(eval_protocols, "play_episode", refuse)


def test_eval_settings_final_plays_every_game_under_them_and_records_them(tmp_path, monkeypatch, capsys):
    played = _record_games(monkeypatch)
    path = tmp_path / "report.json"
    assert main(["eval", "random", "--game", "gorge", "--protocol", "maps", "--maps", "own_5", "--games", "1",
                 "--settings", "final", "--json", str(path)]) == 0
    assert {name for name, _ in played} == {"random", "scripted"}  # the yardstick plays the same games
    for _, config in played:
        assert {key: getattr(config, key) for key in FINAL} == FINAL
    summary = json.loads(path.read_text(encoding="utf-8"))["summary"]
    assert summary["settings"] == "final" and summary["settings_values"] == FINAL
    assert "settings final talent_cooldown=200" in capsys.readouterr().out


def test_eval_default_settings_play_the_game_as_shipped(monkeypatch):
    played = _record_games(monkeypatch)
    report = evaluate("random", "maps", game="gorge", maps=["own_5"], games=1, yardstick=False)
    (_, config), = played
    assert (config.talent_cooldown, config.monster_interval, config.monster_speedup) == (100, 300, 500)
    assert report.summary()["settings"] == "default" and report.summary()["settings_values"] == {}


def test_eval_max_step_wins_over_the_settings(monkeypatch):
    played = _record_games(monkeypatch)
    report = evaluate("random", "maps", game="gorge", maps=["own_5"], games=1, yardstick=False, max_step=30,
                      settings="final")
    (_, config), = played
    assert config.max_step == 30 and config.talent_cooldown == 200 and config.monster_interval == 200
    assert report.summary()["settings_values"] == {k: v for k, v in FINAL.items() if k != "max_step"}


def test_the_realm_refuses_settings_in_one_line_before_any_game(monkeypatch, capsys):
    _no_game(monkeypatch)
    assert main(["eval", "random", "--game", "realm", "--settings", "final", "--games", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sb3-realm eval: error: --settings 'final' is a Gorge Chase option"), err
    assert games.get("realm").check_settings("default", "--settings") == ("default",)  # the Realm's own


def test_a_bad_settings_name_is_refused_before_any_game(monkeypatch, capsys):
    _no_game(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "random", "--game", "gorge", "--settings", "finale"])
    assert exit_info.value.code == 2 and "invalid choice: 'finale'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"--settings = 'finale': 'finale' is not a setting of Gorge Chase; choose "
                                         r"one of \['default', 'final'\]"):
        evaluate("random", "maps", game="gorge", maps=["own_5"], games=1, settings="finale")


def test_env_settings_reach_the_env_and_the_held_out_games():
    config = load_config(RECIPE, ["env.settings=final", "env.usr_conf={max_step: 60}", "eval_games=1"])
    kwargs = config.env.env_kwargs()
    assert kwargs["settings"] == ["final"]
    env = games.get("gorge").env.make(**kwargs)
    _, info = env.reset(seed=0)
    assert info["settings"] == "final"
    assert {k: info["usr_conf"][k] for k in FINAL} == {**FINAL, "max_step": 60}  # env.usr_conf's own key wins
    assert "settings" not in config.env.env_kwargs(usr_conf=False)  # evaluations bring their own games
    (held_out,) = config.held_out_configs()
    assert {k: held_out[k] for k in FINAL} == {**FINAL, "max_step": 60}


def test_a_mix_of_settings_plays_both_and_holds_out_games_under_each():
    config = load_config(RECIPE, ["env.settings=[default, final]", "env.usr_conf={max_step: 60}", "eval_games=1"])
    env = games.get("gorge").env.make(**config.env.env_kwargs())
    seen = {}
    for seed in range(12):
        _, info = env.reset(seed=seed)
        seen[info["settings"]] = info["usr_conf"]["talent_cooldown"]
    assert seen == {"default": 100, "final": 200}
    default, final = config.held_out_configs()
    assert default["talent_cooldown"] == 100 and final["talent_cooldown"] == 200
    assert default["map_name"] == final["map_name"]


def test_a_config_without_settings_is_unchanged():
    config = load_config(RECIPE, ["eval_games=1"])
    assert config.env.settings == "default" and "settings" not in config.env.env_kwargs()
    spec = games.get("gorge")
    assert config.held_out_configs() == spec.evaluation.held_out_configs(config.env.usr_conf, 1, config.eval_seed,
                                                              config.eval_maps)
    _, info = GorgeEnv().reset(seed=0)
    assert info["settings"] == "default" and info["usr_conf"]["talent_cooldown"] == 100


@pytest.mark.parametrize("value, message", [
    ("finale", r"env.settings = 'finale': 'finale' is not a setting of Gorge Chase; choose one of "
               r"\['default', 'final'\]"),
    ("[]", r"env.settings = \[\] names no settings"),
    ("[final, final]", r"names a setting twice"),
])
def test_a_bad_env_settings_is_refused(value, message):
    with pytest.raises(ValueError, match=message):
        load_config(RECIPE, [f"env.settings={value}"])


def test_the_realm_refuses_env_settings():
    with pytest.raises(ValueError, match=r"env.settings 'final' is a Gorge Chase option; Back to the Realm has the "
                                         r"settings \['default'\] only"):
        load_config(REPO / "configs" / "realm" / "tiny.yaml", ["env.settings=final"])
    with pytest.raises(ValueError, match=r"env.settings 'final' is a Gorge Chase option"):
        load_imitate_config(REPO / "configs" / "realm" / "imitate" / "quick.yaml", ["env.settings=final"])


def test_imitation_plays_each_settings_in_turn():
    from sb3_realm.imitation.selection import training_games

    recipe = REPO / "configs" / "gorge" / "imitate.yaml"
    mixed = load_imitate_config(recipe, ["env.settings=[default, final]"])
    games = training_games(mixed, 1, 4)
    assert [conf["talent_cooldown"] for _, conf in games] == [100, 200, 100, 200]
    assert [conf["monster_interval"] for _, conf in games] == [300, 200, 300, 200]
    assert all(conf["max_step"] == 1000 for _, conf in games)
    final = training_games(load_imitate_config(recipe, ["env.settings=final", "env.usr_conf.max_step=600"]), 1, 2)
    assert [(conf["buff_cooldown"], conf["monster_speedup"], conf["max_step"]) for _, conf in final] == [
        (200, 300, 600)] * 2  # the user's own key wins over the settings'
    plain = training_games(load_imitate_config(recipe, []), 1, 4)
    assert [seed for seed, _ in plain] == [seed for seed, _ in games]  # the same games, the settings over them
    assert plain[1][1]["talent_cooldown"] != 200
    held_out = mixed.held_out_configs()
    assert len(held_out) == 2 * mixed.eval_games
    assert {conf["monster_interval"] for conf in held_out} == {300, 200}
    with pytest.raises(ValueError, match="settings = 'x'"):
        GorgeEnv(settings="x")


def test_the_yardstick_benchmark_plays_each_settings(monkeypatch, capsys):
    module = load_benchmark("gorge_yardstick", monkeypatch)
    monkeypatch.setattr(module, "local_tables", lambda game_map: None)

    def play(env, games, policy):
        _, info = env.reset(seed=0)
        return {"settings": info["settings"], "talent_cooldown": info["usr_conf"]["talent_cooldown"]}

    monkeypatch.setattr(module, "play", play)
    monkeypatch.setattr(sys, "argv", ["gorge_yardstick.py", "--maps", "own_6", "--settings", "default", "final"])
    module.main()
    out = json.loads(capsys.readouterr().out)["settings"]
    assert list(out) == ["default", "final"]
    assert out["final"]["env_conf"]["monster_interval"] == 200 and out["default"]["env_conf"]["monster_interval"] == 300
    assert out["final"]["maps"]["own_6"]["scripted"] == {"settings": "final", "talent_cooldown": 200}
    assert out["default"]["maps"]["own_6"]["random"] == {"settings": "default", "talent_cooldown": 100}


def test_the_recipe_benchmark_plays_the_test_games_under_each_settings(monkeypatch, capsys):
    module = load_benchmark("gorge_recipe", monkeypatch)
    played: list[dict] = []
    monkeypatch.setattr(module, "SB3Policy", lambda path: SimpleNamespace(model=SimpleNamespace(policy=None),
                                                                          masked=False))

    def batched(policy, configs, **kwargs):
        played.extend(configs)
        return SimpleNamespace(summary=lambda: {"mean_score": float(configs[0]["talent_cooldown"])})

    monkeypatch.setattr(module, "evaluate_batched", batched)
    monkeypatch.setattr(module, "_figures", lambda summary: dict(summary))
    point = module.evaluate_point(Path("model.zip"), ["own_6"], 2, None, ["default", "final"],
                                  {"default": {"mean_score": 1.0}, "final": {"mean_score": 2.0}})
    assert [c["talent_cooldown"] for c in played] == [100, 100, 200, 200]
    assert point["settings"] == "default" and point["mean_score"] == 100.0  # the curve's: the first settings
    assert point["by_settings"]["final"] == {"mean_score": 200.0, "yardstick_mean_score": 2.0}
    yardstick: list[str] = []
    monkeypatch.setattr(module, "evaluate", lambda *a, **kw: yardstick.append(kw["settings"])
                        or SimpleNamespace(summary=dict))
    module.evaluate_yardstick(["own_6"], 1, None, "final")
    assert yardstick == ["final"]
    # a setting named twice: one line, exit code 2, before any game
    monkeypatch.setattr(sys, "argv", ["gorge_recipe.py", "--settings", "final", "final"])
    with pytest.raises(SystemExit) as exit_info:
        script_module.run_script(module.main, "gorge_recipe.py")
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and err == ["gorge_recipe.py: error: --settings final final names a setting "
                                                 "twice; name each once"]
    assert yardstick == ["final"]
