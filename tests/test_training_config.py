"""Config validation: unknown keys, types, overrides, policy_kwargs as data."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml

from sb3_realm import games
from sb3_realm.imitation.config import SelectionConfig, load_imitate_config
from sb3_realm.training.config import (
    RENAMED_CONFIGS,
    EnvConfig,
    TrainConfig,
    apply_overrides,
    config_to_dict,
    load_config,
    save_config,
)


def write(tmp_path, data) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("name", ["ppo", "maskable_ppo", "recurrent_ppo", "tiny"])
def test_shipped_configs_load(name):
    config = load_config(f"configs/realm/{name}.yaml")
    assert config.algo.name in ("ppo", "maskable_ppo", "recurrent_ppo")


# What each RL recipe resolves to (its base: chain merged): every value that differs from the dataclasses' defaults,
# as it was when the recipes were full files. An overlay that loses a key its recipe needs, or a base that gains one
# that reaches an overlay unasked, changes this.
PPO_HYPERPARAMS = {"learning_rate": 0.0003, "n_steps": 256, "batch_size": 1024, "n_epochs": 3, "gamma": 0.995,
                   "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.01}
REALM_ENV = {"usr_conf": {"treasure_num": 9, "max_step": 2000}}
REALM_PPO = {"total_timesteps": 2_000_000, "env": REALM_ENV,
             "algo": {"hyperparams": PPO_HYPERPARAMS, "extractor": "fovea", "extractor_kwargs": {"features_dim": 128},
                      "net_arch": {"pi": [64], "vf": [64]}, "policy_kwargs": {"normalize_images": False}}}
GORGE_ENV = {"map_names": ["own_1", "own_2", "own_3", "own_4"], "usr_conf": {"max_step": 1000}}
RESOLVED_RL_RECIPES = {
    "realm/ppo": REALM_PPO,
    "realm/maskable_ppo": {**REALM_PPO, "out": "runs/maskable_ppo", "algo": {**REALM_PPO["algo"],
                                                                            "name": "maskable_ppo"}},
    "realm/recurrent_ppo": {**REALM_PPO, "out": "runs/recurrent_ppo", "algo": {
        **REALM_PPO["algo"], "name": "recurrent_ppo",
        "policy_kwargs": {"lstm_hidden_size": 128, "n_lstm_layers": 1, "normalize_images": False}}},
    "realm/tiny": {
        "total_timesteps": 4096, "out": "runs/tiny", "checkpoint_freq": 1024, "keep_checkpoints": 2,
        "eval_freq": 2048, "eval_games": 3, "progress_bar": False,
        "env": {"map_name": "small", "usr_conf": {"treasure_num": 3, "max_step": 300}, "n_envs": 4},
        "algo": {"extractor": "realm", "hyperparams": {"n_steps": 128, "batch_size": 256, "n_epochs": 2},
                 "extractor_kwargs": {"features_dim": 64}, "net_arch": {"pi": [32], "vf": [32]}}},
    "realm/finetune": {
        "total_timesteps": 400_000, "torch_threads": 2, "out": "runs/finetune", "keep_checkpoints": 2,
        "eval_games": 1000, "eval_route_every": 0,
        "env": {**REALM_ENV, "reward_weights": {
            "treasure": 1.0, "end": 5.5, "step": -0.002, "bump": 0.0, "flash": 0.0, "flash_fail": 0.0, "buff": 0.0,
            "progress": 0.0, "revisit": 0.0, "missed_treasure": 0.0, "timeout": -9.0}},
        "algo": {"hyperparams": {**PPO_HYPERPARAMS, "learning_rate": 0.00001, "n_steps": 512, "n_epochs": 4,
                                 "gamma": 0.999, "clip_range": 0.1, "ent_coef": 0.0},
                 "extractor": "fovea", "extractor_kwargs": {"features_dim": 256, "cell_offset": True},
                 "net_arch": {"pi": [256, 256], "vf": [64]}, "policy_kwargs": {"normalize_images": False}},
        "finetune": {"init_from": "model.zip", "warm_start_games": 32, "anchor_coef": 1.0}},
    "gorge/maskable_ppo": {
        "game": "gorge", "total_timesteps": 2_000_000, "out": "runs/gorge", "checkpoint_freq": 100_000,
        "keep_checkpoints": 2, "eval_maps": ["own_5"], "env": GORGE_ENV,
        "algo": {"name": "maskable_ppo", "hyperparams": {**PPO_HYPERPARAMS, "batch_size": 512, "n_epochs": 4},
                 "extractor": "gorge", "extractor_kwargs": {"features_dim": 256},
                 "net_arch": {"pi": [128], "vf": [128]}}},
    "gorge/finetune": {
        "game": "gorge", "out": "runs/gorge-finetune", "keep_checkpoints": 2, "eval_freq": 50_000, "eval_games": 20,
        "eval_maps": ["own_5"], "eval_route_every": 0,
        "env": {**GORGE_ENV, "reward_weights": {"survive": 0.015, "treasure": 1.0, "monster_distance": 0.0,
                                                "buff": 0.0, "flash": 0.0, "flash_waste": 0.0, "caught": 0.0}},
        "algo": {"name": "maskable_ppo", "hyperparams": {**PPO_HYPERPARAMS, "learning_rate": 0.00002, "n_steps": 512,
                                                         "n_epochs": 4, "clip_range": 0.1, "ent_coef": 0.0},
                 "extractor": "gorge", "extractor_kwargs": {"features_dim": 256},
                 "net_arch": {"pi": [256, 256], "vf": [128]}},
        "finetune": {"init_from": "model.zip", "warm_start_games": 16, "anchor_coef": 1.0}},
}
#: the base each recipe names (None: it names none and lists what differs from the defaults)
RL_RECIPE_BASES = {"realm/ppo": None, "realm/maskable_ppo": "ppo.yaml", "realm/recurrent_ppo": "ppo.yaml",
                   "realm/tiny": None, "realm/finetune": "ppo.yaml", "gorge/maskable_ppo": None,
                   "gorge/finetune": "maskable_ppo.yaml"}


def leaves(data: dict, prefix: str = "") -> dict:
    """``data`` as ``{"a.b.c": value}``: one entry per value that is not a non-empty mapping."""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def differs_from_defaults(config: TrainConfig) -> dict:
    """The leaves of ``config`` whose value is not the dataclasses' default at the same place."""
    default, mine = leaves(config_to_dict(TrainConfig())), leaves(config_to_dict(config))
    missing = object()
    return {key: value for key, value in mine.items() if default.get(key, missing) != value}


@pytest.mark.parametrize("name", sorted(RESOLVED_RL_RECIPES))
def test_an_rl_recipe_resolves_to_the_config_it_always_was(name):
    path = Path(f"configs/{name}.yaml")
    # a finetune recipe refuses to load without the model it starts from (--init-from); the file is never read
    config = load_config(path, ["finetune.init_from=model.zip"] if path.stem == "finetune" else [])
    # every recipe names its game (there is no default one)
    assert differs_from_defaults(config) == {"game": path.parent.name, **leaves(RESOLVED_RL_RECIPES[name])}
    assert yaml.safe_load(path.read_text(encoding="utf-8")).get("base") == RL_RECIPE_BASES[name]
    assert config.game == path.parent.name


def test_dropping_a_key_of_an_overlay_changes_what_it_resolves_to(tmp_path):
    # the comparison above catches an overlay that loses a key: maskable_ppo.yaml without its algo.name is PPO
    for name in ("ppo", "maskable_ppo"):
        (tmp_path / f"{name}.yaml").write_text(Path(f"configs/realm/{name}.yaml").read_text(encoding="utf-8"),
                                               encoding="utf-8")
    overlay = yaml.safe_load((tmp_path / "maskable_ppo.yaml").read_text(encoding="utf-8"))
    del overlay["algo"]["name"]
    (tmp_path / "maskable_ppo.yaml").write_text(yaml.safe_dump(overlay), encoding="utf-8")
    resolved = differs_from_defaults(load_config(tmp_path / "maskable_ppo.yaml"))
    assert resolved != leaves(RESOLVED_RL_RECIPES["realm/maskable_ppo"])
    assert "algo.name" not in resolved and resolved["out"] == "runs/maskable_ppo"


MAP = ["env.map_path=../shared/data/realm_map_1.json"]  # never read here: the competition recipes only need a path


def recipe(name: str, overrides: list[str] | None = None):
    return load_imitate_config(f"configs/realm/imitate/{name}.yaml", overrides)


def test_the_map_recipes_are_the_base_recipe_with_the_sweep():
    base, real = recipe("base"), recipe("competition_fifteen_minutes", MAP)
    default = recipe("fifteen_minutes")
    assert real.imitation.selection == SelectionConfig(games="sweep", other_sets=20, label=["unfinished"],
                                                       keep="fewest_lost")
    assert base.imitation.selection == SelectionConfig() and real.imitation.rounds == 5
    assert real.imitation.tie_break == base.imitation.tie_break == "index"
    assert not real.imitation.dagger_takeover and not base.imitation.dagger_takeover
    # the default map's: the real map's with 7 rounds, the oracle's ties broken toward its next node, and the oracle
    # taking over the DAgger games the learner overruns
    assert default.imitation == replace(real.imitation, rounds=7, tie_break="heading", dagger_takeover=True)
    assert real.algo == base.algo == default.algo and base.env == default.env
    assert real.env == replace(base.env, map_name="competition", map_path=MAP[0].split("=")[1])


def test_the_quick_recipe_is_the_readme_main_job():
    quick = recipe("quick")
    assert quick.env.map_name == "default" and quick.env.map_path is None and quick.out == "runs/quick"
    assert (quick.algo, quick.env) == (recipe("base").algo, recipe("base").env)


@pytest.mark.parametrize("fast, every, more", [
    ("competition_fifteen_minutes", "competition_all_sets", {"rounds": 8}),
    ("fifteen_minutes", "all_sets", {"rounds": 10, "label_left": True})])
def test_the_all_sets_recipes_are_the_map_recipes_sweeping_every_set(fast, every, more):
    fast, every = recipe(fast, MAP), recipe(every, MAP)
    assert fast.imitation.selection.games == "sweep"
    # every treasure set swept, no screening (its games are all in the sweep), 8 or 10 rounds; on the default map
    # the games that end with a treasure left are labelled too
    label = ["unfinished", "treasure_left"] if more.pop("label_left", False) else ["unfinished"]
    assert every.imitation == replace(fast.imitation, screen_games=0, **more, selection=replace(
        fast.imitation.selection, games="all_sets", label=label))
    assert sorted(set(every.imitation.treasure_counts)) == list(range(14))  # so the sweep holds all 8,192 sets
    assert (every.algo, every.env) == (fast.algo, fast.env)


@pytest.mark.parametrize("fast, slow", [("competition_fifteen_minutes", "competition_oracle_level"),
                                        ("fifteen_minutes", "past_the_oracle")])
def test_the_slow_recipes_are_the_map_recipes_labelling_slow_games(fast, slow):
    fast, slow = recipe(fast, MAP), recipe(slow, MAP)
    # 16 rounds; up to 60 won sweep games a round that are a step or more slower than the oracle's; the best round by
    # the lost leaderboard-count sets
    assert slow.imitation == replace(fast.imitation, rounds=16, selection=replace(
        fast.imitation.selection, label=["unfinished", "slow"], slow_games=60, slow_margin=1,
        keep="fewest_lost_leaderboard"))
    assert (slow.algo, slow.env, slow.seed) == (fast.algo, fast.env, fast.seed)


def test_the_refined_recipe_is_the_slow_recipe_with_the_step_exact_teacher():
    slow = recipe("competition_oracle_level", MAP)
    refined = recipe("competition_past_the_oracle", MAP)
    assert refined.imitation == replace(slow.imitation, expert="oracle-refined", rounds=12)
    # the refined oracle's default beam, as measured
    assert refined.imitation.changed_refine_settings(refined.spec) == {}
    assert (refined.algo, refined.env, refined.seed) == (slow.algo, slow.env, slow.seed)


@pytest.mark.parametrize("name", ["competition_fifteen_minutes", "competition_all_sets", "competition_oracle_level",
                                  "competition_past_the_oracle"])
def test_the_competition_recipes_refuse_to_run_without_the_map(name):
    with pytest.raises(ValueError, match=r"competition's map, which the package does not ship; pass it with --map"):
        recipe(name)


def test_a_config_lists_only_what_differs_from_its_base(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"seed": 3, "env": {"n_envs": 2, "usr_conf": {"treasure_num": 5}},
                                                     "imitation": {"treasure_counts": [1, 2, 3], "rounds": 2}}))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text(yaml.safe_dump({"base": "../a.yaml", "env": {"n_envs": 4},
                                                             "imitation": {"treasure_counts": [9]}}))
    config = load_imitate_config(tmp_path / "sub" / "b.yaml", ["imitation.rounds=6"])
    # mappings merge at any depth; lists and scalars are replaced; --set applies last; the base's path is the file's
    assert (config.seed, config.env.n_envs, config.env.usr_conf) == (3, 4, {"treasure_num": 5})
    assert (config.imitation.treasure_counts, config.imitation.rounds) == ([9], 6)
    # what a run records is the whole config: it loads with the base file gone
    save_config(config, tmp_path / "run.yaml")
    (tmp_path / "a.yaml").unlink()
    assert "base" not in yaml.safe_load((tmp_path / "run.yaml").read_text())
    assert load_imitate_config(tmp_path / "run.yaml") == config


@pytest.mark.parametrize("base, match", [
    ("missing.yaml", r"c.yaml': base = 'missing.yaml' is not a file \(.*missing.yaml\); name the config it extends "
                     r"by its path relative to this file's folder"),
    ("", r"base = ''; it must name the config file this one extends"),
    (3, r"base = 3; it must name"),
    ("c.yaml", r"makes a loop \(c.yaml -> c.yaml\); a base must not extend the file that names it: point one of "
               r"these base: lines at a config that does not lead back to this file, or delete that line"),
])
def test_a_bad_base_is_one_line(tmp_path, base, match):
    path = write(tmp_path, {"base": base, "seed": 1})
    with pytest.raises(ValueError, match=match):
        load_config(path)


def test_a_base_loop_through_two_files_is_refused(tmp_path):
    (tmp_path / "a.yaml").write_text("base: b.yaml\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"b.yaml': base = 'a.yaml' makes a loop \(a.yaml -> b.yaml -> a.yaml\)"):
        load_config(tmp_path / "a.yaml")


def test_a_base_that_names_a_moved_recipe_names_its_new_path(tmp_path):
    # an overlay written against the recipes' old place, configs/ppo.yaml
    (tmp_path / "configs" / "mine").mkdir(parents=True)
    (tmp_path / "configs" / "mine" / "long.yaml").write_text("base: ../ppo.yaml\ntotal_timesteps: 5000000\n",
                                                             encoding="utf-8")
    with pytest.raises(ValueError, match=r"base = '../ppo.yaml' is not a file \(.*\) \(that recipe is now "
                                         r"configs/realm/ppo.yaml\); name the config it extends"):
        load_config(tmp_path / "configs" / "mine" / "long.yaml")


def test_an_overlay_of_a_shipped_recipe_outside_configs_resolves(tmp_path):
    # a competitor's own recipe in a folder of theirs: the base path is relative to the overlay's folder
    overlay = tmp_path / "long.yaml"
    base = os.path.relpath(Path("configs/realm/ppo.yaml").resolve(), tmp_path)
    overlay.write_text(f"base: {base}\ntotal_timesteps: 5000000\nalgo:\n"
                       "  hyperparams: {n_steps: 512}\n", encoding="utf-8")
    config, ppo = load_config(overlay), load_config("configs/realm/ppo.yaml")
    assert (config.total_timesteps, config.algo.hyperparams["n_steps"]) == (5_000_000, 512)
    assert {**config.algo.hyperparams, "n_steps": 256} == ppo.algo.hyperparams and config.env == ppo.env


@pytest.mark.parametrize("old, new", sorted(RENAMED_CONFIGS.items()))
def test_a_removed_recipe_name_names_its_new_one(old, new):
    assert (Path("configs") / new).is_file()
    with pytest.raises(ValueError, match=rf"that recipe is now configs/{new} .*pass --config configs/{new}$"):
        load_config(f"configs/{old}")


@pytest.mark.parametrize(
    "data, match",
    [
        ({"total_steps": 5}, r"unknown config keys \['total_steps'\]; valid keys are .*total_timesteps"),
        ({"env": {"n_env": 2}}, r"unknown config keys \['env.n_env'\]; valid keys of env are .*n_envs"),
        ({"algo": {"hyperparams": {"n_step": 64}}}, r"unknown keys \['n_step'\] for ppo; valid keys are .*n_steps"),
        ({"seed": "zero"}, r"seed = 'zero' has the wrong type; expected int"),
        ({"env": {"n_envs": 2.5}}, r"env.n_envs = 2.5 has the wrong type"),
        ({"env": {"mask_wall_moves": "yes"}}, r"mask_wall_moves = 'yes' has the wrong type; expected bool"),
        ({"algo": {"name": "sac"}}, r"algo.name = 'sac'; choose one of"),
        ({"algo": {"activation": "nn.ReLU"}}, r"algo.activation = 'nn.ReLU'"),
        ({"algo": {"policy_kwargs": {"activation_fn": "torch.nn.ReLU"}}}, r"set it with algo.extractor"),
        ({"algo": {"hyperparams": {"learning_rate": "__import__('os')"}}}, r"a number or 'lin_<number>'"),
        ({"algo": {"hyperparams": {"batch_size": "64"}}}, r"batch_size = '64' must be a number"),
        ({"env": {"usr_conf": {"treasure_num": 20}}}, r"'treasure_num'\] = 20 is out of range"),
        ({"env": {"reward_weights": {"treasures": 1}}}, r"unknown reward weight keys \['treasures'\]"),
        ({"env": {"vec_env": "rey"}}, r"env.vec_env = 'rey' is not a vec env; choose one of \['dummy', 'subproc'"),
        ({"env": "small"}, r"env must be a mapping"),
        ({"total_timesteps": 0}, r"total_timesteps = 0 must be >= 1"),
        ({"algo": {"hyperparams": {"gamma": 1.5}}}, r"gamma = 1.5 is out of range: it must be a number in \[0, 1\]"),
        ({"algo": {"hyperparams": {"gae_lambda": -0.1}}}, r"gae_lambda = -0.1 is out of range"),
        ({"algo": {"hyperparams": {"clip_range": 0}}}, r"clip_range = 0 is out of range: it must be a number > 0"),
        ({"algo": {"hyperparams": {"clip_range": "lin_-0.2"}}}, r"clip_range = 'lin_-0.2' is out of range"),
        ({"algo": {"hyperparams": {"learning_rate": 0.0}}}, r"learning_rate = 0.0 is out of range"),
        ({"algo": {"hyperparams": {"ent_coef": -0.01}}}, r"ent_coef = -0.01 is out of range: it must be a number >= 0"),
        ({"algo": {"hyperparams": {"n_epochs": 0}}}, r"n_epochs = 0 is out of range: it must be an integer >= 1"),
        ({"algo": {"hyperparams": {"n_steps": 0}}}, r"n_steps = 0 is out of range"),
        ({"algo": {"hyperparams": {"n_steps": 64.5}}}, r"n_steps = 64.5 is out of range: it must be an integer"),
        ({"algo": {"hyperparams": {"batch_size": 1}}}, r"batch_size = 1 is out of range: it must be an integer >= 2"),
        ({"algo": {"hyperparams": {"max_grad_norm": -1}}}, r"max_grad_norm = -1 is out of range"),
        ({"env": {"n_envs": 2}, "algo": {"hyperparams": {"n_steps": 16, "batch_size": 64}}},
         r"batch_size = 64 is larger than a rollout \(n_steps 16 x env.n_envs 2 = 32\); set batch_size <= 32"),
        ({"env": {"n_envs": 1}, "algo": {"hyperparams": {"n_steps": 1, "batch_size": 2}}}, r"holds one step"),
        ({"device": "gpu0"}, r"device = 'gpu0' is not a torch device"),
    ],
)
def test_invalid_configs(tmp_path, data, match):
    with pytest.raises(ValueError, match=match):
        load_config(write(tmp_path, data))


def test_overrides_are_parsed_as_data(tmp_path):
    config = load_config("configs/realm/tiny.yaml", ["algo.hyperparams.n_steps=64", "env.usr_conf.max_step=50",
                                               "env.reward_weights={step: -0.01}", "seed=3", "algo.hyperparams."
                                               "learning_rate=lin_0.001"])
    assert config.algo.hyperparams["n_steps"] == 64 and config.env.usr_conf["max_step"] == 50
    assert config.env.reward_weights == {"step": -0.01} and config.seed == 3
    with pytest.raises(ValueError, match="expected key=value"):
        apply_overrides({}, ["seed"])
    with pytest.raises(ValueError, match="is not a section"):
        apply_overrides({"seed": 1}, ["seed.x=2"])


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_config(bad)


def test_saved_config_round_trips(tmp_path):
    config = load_config("configs/realm/ppo.yaml", ["total_timesteps=1e6"])
    assert config.total_timesteps == 1_000_000
    path = save_config(config, tmp_path / "run" / "config.yaml")
    assert load_config(path) == config
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["config.yaml"]


def test_null_clip_range_vf_and_target_kl_are_valid(tmp_path):
    config = load_config(write(tmp_path, {"algo": {"hyperparams": {"clip_range_vf": None, "target_kl": None}}}))
    assert config.algo.hyperparams["target_kl"] is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_cuda_device_without_cuda_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"device = 'cuda', but this machine has no CUDA GPU.*set device: cpu"):
        load_config(write(tmp_path, {"device": "cuda"}))


# ---------------------------------------------------------------------------------------------- the game's env options
def test_the_env_section_takes_the_options_the_games_spec_lists():
    """Which env options a config may set is the spec's list (``env_options``), not the game's name: the Realm with
    map lists in its list takes them; Gorge Chase without them refuses them, naming itself."""
    realm, gorge = games.get("realm"), games.get("gorge")
    EnvConfig(map_names=["own_1"]).validate(
        replace(realm, env=replace(realm.env, options=realm.env.options | {"map_names"})))
    with pytest.raises(ValueError, match=r"env.map_names = \['own_1'\]: Back to the Realm plays one map"):
        EnvConfig(map_names=["own_1"]).validate(realm)
    with pytest.raises(ValueError, match=r"env.maps_dir = 'maps': Gorge Chase plays one map .*remove env.maps_dir"):
        EnvConfig(maps_dir="maps").validate(replace(gorge, env=replace(gorge.env, options=frozenset())))


def test_the_maps_folder_goes_to_the_env_for_a_map_name_the_game_reads_from_it(monkeypatch, tmp_path):
    """``env_kwargs`` passes the maps folder for ``map_name`` exactly when the game says it reads that name from one
    (``maps.in_folder``), from the folder its variable names (``maps.folder_variable``); without a game, when any
    game does."""
    monkeypatch.setenv("SB3_REALM_GORGE_MAPS", str(tmp_path))
    realm, gorge = games.get("realm"), games.get("gorge")
    assert EnvConfig(map_name="open_5").env_kwargs(game=gorge)["maps_dir"] == str(tmp_path)
    assert "maps_dir" not in EnvConfig(map_name="default").env_kwargs(game=gorge)
    assert "maps_dir" not in EnvConfig(map_name="open_5").env_kwargs(game=realm)
    assert EnvConfig(map_name="open_5").env_kwargs()["maps_dir"] == str(tmp_path)  # Gorge Chase reads it
    reader = replace(realm, maps=replace(realm.maps, in_folder=lambda name: name == "vault",
                                         folder_variable="SB3_REALM_GORGE_MAPS"))
    assert EnvConfig(map_name="vault").env_kwargs(game=reader)["maps_dir"] == str(tmp_path)
    assert "maps_dir" not in EnvConfig(map_name="vault").env_kwargs(game=gorge)
    monkeypatch.delenv("SB3_REALM_GORGE_MAPS")
    assert "maps_dir" not in EnvConfig(map_name="vault").env_kwargs(game=reader)  # no folder to give
