"""RayVecEnv (``env.vec_env: ray``) on a real local Ray instance: the same observations, rewards, dones, infos and
reset infos as DummyVecEnv for the same seeds and actions, across auto-resets; the envs' methods and attributes by
index; PPO, MaskablePPO and RecurrentPPO train on it to exactly the parameters they reach on DummyVecEnv; VecNormalize
on top; and the config's checks of ``env.vec_env`` / ``env.envs_per_actor``.

The small Realm map with short episodes, 5 envs in 2 actors (3 + 2): the whole module runs in well under a minute."""

from __future__ import annotations

import os
import sys

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecNormalize

from sb3_realm.executors import RayNotInstalledError
from sb3_realm.training.config import config_to_dict, load_config, save_config
from sb3_realm.training.run import build_model, make_vec_env

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("one_torch_thread")]

TINY = "configs/realm/tiny.yaml"
#: 5 envs in actors of 3: two actors, the last with fewer envs; episodes of 12 steps, so that 30 steps span resets
SMALL = ["env.n_envs=5", "env.envs_per_actor=3", "env.usr_conf.max_step=12"]


@pytest.fixture(scope="module")
def ray_instance():
    """A Ray instance started on this machine for this module (``RAY_ADDRESS`` unset meanwhile), stopped after it.
    Without Ray installed the tests skip, except where ``SB3_REALM_REQUIRE_RAY=1`` (``.ci/run``): there they fail."""
    try:
        import ray
    except ImportError:
        message = "Ray is not installed (pip install -e '.[ray]')"
        if os.environ.get("SB3_REALM_REQUIRE_RAY", "") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from sb3_realm.executors import connect_ray, disconnect_ray

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)
        if ray.is_initialized():  # another module's instance: this module starts its own
            disconnect_ray()
        try:
            assert connect_ray(cpus=4) is True
            yield ray
        finally:
            disconnect_ray()


@pytest.fixture(scope="module")
def pair(ray_instance):
    """(RayVecEnv, DummyVecEnv) of the same 5 envs, built by make_vec_env from the tiny config with ``SMALL``; the
    module's tests step both alike, so they stay in the same state."""
    ray_config = load_config(TINY, [*SMALL, "env.vec_env=ray"])
    dummy_config = load_config(TINY, [*SMALL, "env.vec_env=dummy"])
    ray_env = make_vec_env(ray_config.env, 3, game=ray_config.game)
    dummy = make_vec_env(dummy_config.env, 3, game=dummy_config.game)
    try:
        yield ray_env, dummy
    finally:
        ray_env.close()
        dummy.close()
    assert ray_env.n_actors == 0 and ray_instance.is_initialized()  # joined a running Ray: leaves it running


def _same(a, b) -> bool:
    """Deep equality of observations and infos (arrays by value and dtype), but for the wall-clock time of an episode
    that Monitor records in its info (``episode["t"]``)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if "episode" in a and "episode" in b:
            a, b = ({**x, "episode": {k: v for k, v in x["episode"].items() if k != "t"}} for x in (a, b))
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


# -------------------------------------------------------------------------------------------- the config's checks
def test_the_config_checks_vec_env_and_envs_per_actor():
    with pytest.raises(ValueError, match=r"env.vec_env = 'rey' is not a vec env; choose one of "
                                         r"\['dummy', 'subproc', 'ray'\]"):
        load_config(TINY, ["env.vec_env=rey"])
    with pytest.raises(ValueError, match=r"env.envs_per_actor = 0 must be an integer >= 1"):
        load_config(TINY, ["env.vec_env=ray", "env.envs_per_actor=0"])
    with pytest.raises(ValueError, match=r"env.envs_per_actor = True has the wrong type"):
        load_config(TINY, ["env.envs_per_actor=true"])


def test_ray_missing_is_reported_by_the_config_before_any_work(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if it were not installed
    with pytest.raises(RayNotInstalledError, match=r"env.vec_env = 'ray' needs Ray.*pip install -e '\.\[ray\]'"):
        load_config(TINY, ["env.vec_env=ray"])
    assert load_config(TINY, ["env.vec_env=subproc"]).env.vec_env == "subproc"  # the others need no Ray


def test_a_config_with_the_new_key_round_trips(tmp_path):
    old = load_config(TINY)  # a config without the key: the default
    assert old.env.envs_per_actor == 8 and old.env.vec_env == "dummy"
    config = load_config(TINY, ["env.vec_env=ray", "env.envs_per_actor=3"])
    save_config(config, tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert config_to_dict(again) == config_to_dict(config)
    assert (again.env.vec_env, again.env.envs_per_actor) == ("ray", 3)


# -------------------------------------------------------------------------------------------- with a real Ray
def test_steps_and_resets_are_those_of_dummy_vec_env(pair):
    from sb3_realm.training.ray_vec_env import RayVecEnv

    ray_env, dummy = pair
    assert isinstance(ray_env, RayVecEnv) and ray_env.n_actors == 2 and ray_env.bounds == [(0, 3), (3, 5)]
    assert ray_env.num_envs == 5
    assert ray_env.observation_space == dummy.observation_space and ray_env.action_space == dummy.action_space
    for seed in (None, 11):  # make_vec_env seeded 3; then seed(11) and reset again
        if seed is not None:
            assert ray_env.seed(seed) == dummy.seed(seed) == [11, 12, 13, 14, 15]
        assert _same(ray_env.reset(), dummy.reset())
        assert _same(ray_env.reset_infos, dummy.reset_infos)
        assert ray_env._seeds == [None] * 5  # seeds are used once
    actions = np.random.default_rng(0).integers(ray_env.action_space.n, size=(30, 5))
    ended = set()
    for step in actions:
        got, want = ray_env.step(step), dummy.step(step)
        for a, b in zip(got, want, strict=True):
            assert _same(a, b)
        assert _same(ray_env.reset_infos, dummy.reset_infos)
        for i, info in enumerate(got[3]):
            if "terminal_observation" in info:
                ended.add(i)
                assert all(x.flags.writeable for x in info["terminal_observation"].values())
    assert ended == set(range(5))  # every env ended an episode: the auto-resets were compared too
    assert _same(ray_env.reset(), dummy.reset())  # a reset without a new seed, after the episodes ran


def test_methods_and_attributes_by_index(pair):
    ray_env, dummy = pair
    ray_env.reset()
    dummy.reset()
    assert ray_env.get_attr("render_mode", indices=[4, 0, 3]) == [None, None, None]
    assert ray_env.get_attr("render_mode", indices=2) == [None]
    ray_env.set_attr("marker", 0)
    ray_env.set_attr("marker", 7, indices=[1, 3])
    assert ray_env.get_attr("marker") == [0, 7, 0, 7, 0]
    assert ray_env.get_attr("marker", indices=[3, 0, 1]) == [7, 0, 7]
    assert ray_env.has_attr("marker") and ray_env.has_attr("action_masks") and not ray_env.has_attr("nothing")
    with pytest.raises(AttributeError):
        ray_env.get_attr("nothing")
    assert _same(ray_env.env_method("action_masks", indices=[4, 2]), dummy.env_method("action_masks", indices=[4, 2]))
    assert _same(ray_env.env_method("action_masks"), dummy.env_method("action_masks"))
    assert ray_env.env_is_wrapped(Monitor) == [True] * 5
    assert ray_env.env_is_wrapped(gym.wrappers.RecordEpisodeStatistics, indices=[0]) == [False]
    with pytest.warns(UserWarning, match="render mode is None"):
        assert ray_env.get_images() == [None] * 5  # as SubprocVecEnv, without rgb_array
    rss = ray_env.actor_peak_rss_mib()
    assert len(rss) == 2 and all(r is not None and r > 0 for r in rss)


def test_vec_normalize_on_top(pair):
    ray_env, dummy = pair  # the wrappers are not closed: that would close the module's envs
    ray_norm = VecNormalize(ray_env, norm_obs=True, norm_obs_keys=["vector"], norm_reward=True)
    dummy_norm = VecNormalize(dummy, norm_obs=True, norm_obs_keys=["vector"], norm_reward=True)
    assert _same(ray_norm.reset(), dummy_norm.reset())
    for step in np.random.default_rng(1).integers(ray_env.action_space.n, size=(15, 5)):  # an episode ends
        for a, b in zip(ray_norm.step(step), dummy_norm.step(step), strict=True):
            assert _same(a, b)
    assert np.array_equal(ray_norm.obs_rms["vector"].mean, dummy_norm.obs_rms["vector"].mean)
    assert np.array_equal(ray_norm.ret_rms.var, dummy_norm.ret_rms.var)


def test_an_env_that_started_ray_stops_it_when_closed(ray_instance, monkeypatch):
    from sb3_realm.training import ray_vec_env

    stopped = []
    monkeypatch.setattr(ray_vec_env, "connect_ray", lambda address=None, cpus=None: True)  # as if it started Ray
    monkeypatch.setattr(ray_vec_env, "disconnect_ray", lambda: stopped.append(True))
    config = load_config(TINY, [*SMALL, "env.vec_env=ray", "env.n_envs=2"])
    venv = make_vec_env(config.env, 0, game=config.game)
    assert venv.n_actors == 1
    venv.close()
    venv.close()  # a second close does nothing
    assert stopped == [True]


@pytest.mark.parametrize("algo", ["ppo", "maskable_ppo", "recurrent_ppo"])
def test_a_model_trained_on_ray_is_the_one_trained_on_dummy_vec_env(pair, algo):
    """Same seed, same steps: the same parameters, to the bit (MaskablePPO's masks come by env_method)."""
    import torch

    n_steps = 32 if algo == "ppo" else 16  # rollouts of 5 envs: 320 steps of PPO, 160 of the others
    config = load_config(TINY, [*SMALL, f"algo.name={algo}", f"algo.hyperparams.n_steps={n_steps}",
                                "algo.hyperparams.batch_size=40", "seed=5"])
    params = []
    for venv in pair:  # the model seeds the envs and resets them: both start alike
        model = build_model(config, venv)
        model.learn(total_timesteps=2 * n_steps * 5)
        assert model.num_timesteps == 2 * n_steps * 5
        params.append(model.policy.state_dict())
    assert params[0].keys() == params[1].keys()
    assert all(torch.equal(params[0][k], params[1][k]) for k in params[0])
