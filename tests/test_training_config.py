"""Config validation: unknown keys, types, overrides, policy_kwargs as data."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import yaml

from sb3_realm.training.config import apply_overrides, load_config, save_config


def write(tmp_path, data) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("name", ["ppo", "maskable_ppo", "recurrent_ppo", "tiny"])
def test_shipped_configs_load(name):
    config = load_config(f"configs/{name}.yaml")
    assert config.algo.name in ("ppo", "maskable_ppo", "recurrent_ppo")


def test_the_map_recipes_are_the_imitate_recipe_with_the_sweep():
    base, real = load_config("configs/imitate.yaml"), load_config("configs/imitate_real_map.yaml")
    default = load_config("configs/imitate_default_map.yaml")
    assert real.imitation.sweep and not base.imitation.sweep and real.imitation.rounds == 5
    assert real.imitation.tie_break == base.imitation.tie_break == "index"
    assert not real.imitation.dagger_takeover and not base.imitation.dagger_takeover
    # the default map's: the real map's with 7 rounds, the oracle's ties broken toward its next node, and the oracle
    # taking over the DAgger games the learner overruns
    assert default.imitation == replace(real.imitation, rounds=7, tie_break="heading", dagger_takeover=True)
    for section in ("algo", "env"):
        assert getattr(real, section) == getattr(base, section) == getattr(default, section)


@pytest.mark.parametrize("name, more", [("real_map", {"rounds": 8}),
                                        ("default_map", {"rounds": 10, "sweep_label_left": True})])
def test_the_all_sets_recipes_are_the_map_recipes_sweeping_every_set(name, more):
    fast, every = load_config(f"configs/imitate_{name}.yaml"), load_config(f"configs/imitate_{name}_all_sets.yaml")
    assert not fast.imitation.sweep_all and not fast.imitation.sweep_label_left
    # every treasure set swept, no screening (its games are all in the sweep), 8 or 10 rounds; on the default map
    # the games that end with a treasure left are labelled too
    assert every.imitation == replace(fast.imitation, sweep_all=True, screen_games=0, **more)
    assert sorted(set(every.imitation.treasure_counts)) == list(range(14))  # so the sweep holds all 8,192 sets
    assert (every.algo, every.env) == (fast.algo, fast.env)


@pytest.mark.parametrize("name", ["real_map", "default_map"])
def test_the_slow_recipes_are_the_map_recipes_labelling_slow_games(name):
    fast, slow = load_config(f"configs/imitate_{name}.yaml"), load_config(f"configs/imitate_{name}_slow.yaml")
    # 16 rounds; up to 60 won sweep games a round that are a step or more slower than the oracle's; the best round by
    # the lost leaderboard-count sets
    assert slow.imitation == replace(fast.imitation, rounds=16, sweep_label_slow=60, sweep_slow_margin=1,
                                     select_lost="main")
    assert (slow.algo, slow.env, slow.seed) == (fast.algo, fast.env, fast.seed)


def test_the_refined_recipe_is_the_slow_recipe_with_the_step_exact_teacher():
    slow = load_config("configs/imitate_real_map_slow.yaml")
    refined = load_config("configs/imitate_real_map_refined.yaml")
    assert refined.imitation == replace(slow.imitation, expert="oracle-refined", rounds=12)
    assert refined.imitation.changed_refine_settings() == {}  # the refined oracle's default beam, as measured
    assert (refined.algo, refined.env, refined.seed) == (slow.algo, slow.env, slow.seed)


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
        ({"env": {"vec_env": "ray"}}, r"env.vec_env = 'ray'"),
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
    config = load_config("configs/tiny.yaml", ["algo.hyperparams.n_steps=64", "env.usr_conf.max_step=50",
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
    config = load_config("configs/ppo.yaml", ["total_timesteps=1e6"])
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
