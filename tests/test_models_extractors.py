"""Features extractors: sizes, errors, frame order under VecFrameStack, the transformer's exact cached inference, and
a short learn() with every compatible algorithm."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO, RecurrentPPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import PPO
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

from sb3_realm import games
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.models import extractors, observation_space
from sb3_realm.models.extractors import (
    EXTRACTORS,
    Conv3dExtractor,
    FoveaExtractor,
    GorgeExtractor,
    RealmExtractor,
    TransformerExtractor,
    split_frames,
)

T = 4
TINY = {
    "realm": {"features_dim": 32, "cnn_channels": (8, 8), "mlp_hidden": 16},
    "fovea": {"features_dim": 32, "cnn_channels": (8, 8), "mlp_hidden": 16},
    "gorge": {"features_dim": 32, "cnn_channels": (8, 8), "mlp_hidden": 16},
    "conv3d": {"n_frames": T, "features_dim": 32, "cnn_channels": (8, 8), "mlp_hidden": 16},
    "transformer": {"n_frames": T, "d_model": 16, "n_heads": 2, "n_layers": 2, "cnn_channels": (8, 8)},
}


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """One torch thread: on a busy 2-core machine, 2 threads that wait on each other make these tiny nets ~10x
    slower."""
    old = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(old)


def realm_space(n_frames: int = 1, side: int = 51) -> spaces.Dict:
    return spaces.Dict({"maps": spaces.Box(0, 255, (4 * n_frames, side, side), np.uint8),
                        "vector": spaces.Box(-1.0, 1.0, (216 * n_frames,), np.float32)})


def make_env() -> RealmEnv:
    return RealmEnv(map_name="small", max_step=100)


def stacked_venv(n_envs: int = 2, max_step: int = 100) -> VecFrameStack:
    return VecFrameStack(DummyVecEnv([lambda: RealmEnv(map_name="small", max_step=max_step)] * n_envs), n_stack=T)


def policy_input(obs: dict[str, np.ndarray], space: spaces.Dict) -> dict[str, th.Tensor]:
    """What the policy hands its extractor: tensors, uint8 maps divided by 255."""
    return preprocess_obs(obs_as_tensor(obs, th.device("cpu")), space)


class CounterEnv(gym.Env):
    """Realm-shaped observations whose frames tell the step apart: maps all ``10 + step``, vector all ``step / 100``
    (channel c of the maps is ``10 + step + c`` so the channel order is checked too)."""

    observation_space = realm_space()
    action_space = spaces.Discrete(16)

    def _obs(self) -> dict[str, np.ndarray]:
        maps = np.broadcast_to((10 + self.t + np.arange(4, dtype=np.uint8))[:, None, None], (4, 51, 51))
        return {"maps": maps.copy(), "vector": np.full(216, self.t / 100, dtype=np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, False, self.t >= 50, {}


# ------------------------------------------------------------------------------------------ sizes and errors
def test_realm_extractor_default_sizes():
    ext = RealmExtractor(realm_space())
    assert ext.features_dim == 256
    assert ext.n_flatten == 32 * 5 * 5  # 51 -> 16 (k5 s3) -> 7 (k3 s2) -> 5 (k3 s1)
    out = ext({"maps": th.rand(3, 4, 51, 51), "vector": th.rand(3, 216)})
    assert out.shape == (3, 256)


def test_fovea_default_sizes_and_what_it_sees():
    ext = FoveaExtractor(realm_space())
    assert ext.features_dim == 128 and ext.net.crop == 17 and ext.net.offset == 17
    assert ext.n_flatten == 16 * 6 * 6  # 17 -> 8 (k3 s2) -> 6 (k3 s1)
    maps = th.zeros(2, 4, 51, 51)
    maps[1, 0, 25, 25] = 1.0  # the hero's own cell: inside the fovea
    captured = {}
    ext.net.cnn.register_forward_pre_hook(lambda mod, args: captured.update(x=args[0]))
    ext({"maps": maps, "vector": th.zeros(2, 216)})
    x = captured["x"]  # (2, 8, 17, 17): fovea channels 0..3, block averages 4..7
    assert x.shape == (2, 8, 17, 17)
    assert x[1, 0, 8, 8] == 1.0 and x[1, 4, 8, 8] == pytest.approx(1 / 9)  # centre cell, and its 3 x 3 block
    assert x[0].abs().sum() == 0 and x[1].abs().sum() == pytest.approx(1 + 1 / 9)


def test_fovea_sees_far_cells_only_as_block_averages():
    ext = FoveaExtractor(realm_space())
    captured = {}
    ext.net.cnn.register_forward_pre_hook(lambda mod, args: captured.update(x=args[0]))
    maps = th.zeros(1, 4, 51, 51)
    maps[0, 2, 0, 50] = 1.0  # a treasure in the far corner
    ext({"maps": maps, "vector": th.zeros(1, 216)})
    x = captured["x"]
    assert x[0, :4].abs().sum() == 0 and x[0, 6, 0, 16] == pytest.approx(1 / 9)


def test_fovea_cell_offset_gives_the_mlp_the_position_inside_the_cell():
    from sb3_realm.games.realm.maps import CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z
    from sb3_realm.models.nets import cell_offsets

    env = RealmEnv()
    env.reset(seed=0)
    for action in (0, 1, 1, 2, 5):
        env.step(action)
        game = env.game
        vector = th.as_tensor(env._obs()["vector"])[None]
        off = cell_offsets(vector)[0].tolist()
        gx, gz = game.cell
        expect_x = 2 * ((game.x - GRID_ORIGIN_X) / CELL_WIDTH - gx) - 1
        expect_z = 2 * ((game.z - GRID_ORIGIN_Z) / CELL_WIDTH - gz) - 1
        assert off == pytest.approx([expect_x, expect_z], abs=1e-3)
    ext = FoveaExtractor(realm_space(), cell_offset=True)
    assert ext.net.mlp[0].in_features == 216 + 2 and ext.net_kwargs["cell_offset"] is True
    captured = {}
    ext.net.mlp.register_forward_pre_hook(lambda mod, args: captured.update(v=args[0]))
    vector = th.zeros(1, 216)
    vector[0, 0], vector[0, 1] = (5500 + 125) / 64000, (1500 + 400) / 64000  # 3/4 and 3/10 across the cell
    ext({"maps": th.zeros(1, 4, 51, 51), "vector": vector})
    assert captured["v"][0, -2:].tolist() == pytest.approx([0.5, -0.4], abs=1e-3)
    assert FoveaExtractor(realm_space()).net.mlp[0].in_features == 216  # off by default


@pytest.mark.parametrize("cls", [RealmExtractor, FoveaExtractor])
def test_maps_scale_inside_the_net_equals_sb3_normalisation(cls):
    th.manual_seed(0)
    ext = cls(realm_space(), **TINY["realm"])
    scaled = cls(realm_space(), **TINY["realm"], maps_scale=1 / 255)
    scaled.load_state_dict(ext.state_dict())  # the scale is not a weight: same state dict
    maps = th.randint(0, 256, (3, 4, 51, 51)).float()
    vector = th.rand(3, 216)
    with th.no_grad():
        np.testing.assert_allclose(scaled({"maps": maps, "vector": vector}).numpy(),
                                   ext({"maps": maps / 255, "vector": vector}).numpy(), atol=1e-5)


def test_config_scales_the_maps_when_sb3_does_not():
    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import build_model, make_vec_env

    config = load_config("configs/realm/ppo.yaml",
                         ["env.n_envs=1", "env.map_name=small", "algo.hyperparams.batch_size=256"])
    venv = make_vec_env(config.env, 0, game=config.game)
    model = build_model(config, venv)
    assert model.policy.normalize_images is False
    assert isinstance(model.policy.features_extractor, FoveaExtractor)
    assert model.policy.features_extractor.net.maps_scale == pytest.approx(1 / 255)
    venv.close()


def test_fovea_rejects_bad_pool():
    with pytest.raises(ValueError, match="pool = 0"):
        FoveaExtractor(realm_space(), pool=0)


@pytest.mark.parametrize(("kwargs", "n_flatten"), [
    ({"cnn_channels": (16, 32, 32), "kernel_sizes": 3, "strides": 2}, 32 * 5 * 5),  # 51 -> 25 -> 12 -> 5
    ({"cnn_channels": (8,)}, 8 * 16 * 16),  # 51 -> 16
    ({"cnn_channels": (8, 4), "kernel_sizes": (3, 3), "strides": (1, 2)}, 4 * 24 * 24),  # 51 -> 49 -> 24
])
def test_flatten_is_sized_by_a_dummy_pass(kwargs, n_flatten):
    ext = RealmExtractor(realm_space(), features_dim=24, **kwargs)
    assert ext.n_flatten == n_flatten
    assert ext({"maps": th.rand(2, 4, 51, 51), "vector": th.rand(2, 216)}).shape == (2, 24)


def test_temporal_extractor_sizes():
    conv = Conv3dExtractor(realm_space(T), n_frames=T, features_dim=40)
    assert conv.n_flatten == 32 * (T - 2) * 5 * 5  # frames 4 -> 4 -> 3 -> 2
    tr = TransformerExtractor(realm_space(T), n_frames=T)
    assert tr.features_dim == 64 and tr.windows == [2, 3]
    assert TransformerExtractor(realm_space(T), n_frames=T, features_dim=48).features_dim == 48
    obs = {"maps": th.rand(2, 4 * T, 51, 51), "vector": th.rand(2, 216 * T)}
    assert conv(obs).shape == (2, 40) and tr(obs).shape == (2, 64)


@pytest.mark.parametrize("space", [
    spaces.Box(0, 255, (4, 51, 51), np.uint8),
    spaces.Dict({"maps": spaces.Box(0, 255, (4, 51, 51), np.uint8)}),
    spaces.Dict({"maps": spaces.Box(0, 255, (51, 51), np.uint8), "vector": spaces.Box(-1, 1, (216,), np.float32)}),
    spaces.Dict({"maps": spaces.Box(0, 255, (4, 51, 51), np.uint8), "vector": spaces.Discrete(3)}),
])
@pytest.mark.parametrize("name", sorted(EXTRACTORS))
def test_wrong_space_is_rejected_and_printed(space, name):
    with pytest.raises(ValueError, match="RealmEnv") as info:
        EXTRACTORS[name](space)
    assert str(space) in str(info.value)


def test_game_spaces_reads_any_games_space_and_keeps_its_old_name():
    """``game_spaces`` gives the two Boxes of every game's observation space; ``realm_spaces`` is its old name."""
    assert observation_space.realm_spaces is observation_space.game_spaces
    assert {"game_spaces", "realm_spaces"} <= set(observation_space.__all__)
    for spec in games.GAMES.values():
        space = spec.env.spaces()[0]
        assert observation_space.game_spaces(space, "test") == (space["maps"], space["vector"])
    with pytest.raises(ValueError, match=r"test needs the observation space .*; got Discrete\(3\)"):
        observation_space.game_spaces(spaces.Discrete(3), "test")


def test_maps_too_small_for_the_convs():
    space = realm_space(side=6)
    with pytest.raises(ValueError, match="do not fit maps") as info:
        RealmExtractor(space)
    assert str(space) in str(info.value)


@pytest.mark.parametrize("cls", [Conv3dExtractor, TransformerExtractor])
@pytest.mark.parametrize(("stacked", "n_frames"), [(1, 4), (4, 2), (4, 3), (2, 4)])
def test_temporal_extractors_need_matching_frame_stack(cls, stacked, n_frames):
    space = realm_space(stacked)
    with pytest.raises(ValueError, match=rf"VecFrameStack\(venv, n_stack={n_frames}\)") as info:
        cls(space, n_frames=n_frames)
    assert str(space) in str(info.value)


@pytest.mark.parametrize("kwargs", [{"n_frames": 0}, {"d_model": 30, "n_heads": 4}, {"n_layers": 0}])
def test_transformer_bad_sizes(kwargs):
    with pytest.raises(ValueError, match=r"n_frames|n_heads|n_layers"):
        TransformerExtractor(realm_space(T), **{"n_frames": T, **kwargs})


def test_bad_kernel_list():
    with pytest.raises(ValueError, match="kernel_sizes"):
        RealmExtractor(realm_space(), cnn_channels=(8, 8), kernel_sizes=(3, 3, 3))


def test_registry_and_exports():
    assert EXTRACTORS == {"realm": RealmExtractor, "fovea": FoveaExtractor, "gorge": GorgeExtractor,
                          "conv3d": Conv3dExtractor, "transformer": TransformerExtractor}
    assert all(hasattr(extractors, name) for name in extractors.__all__)


# ------------------------------------------------------------------------------------------ inputs and frame order
def test_policy_hands_maps_already_divided_by_255():
    model = PPO("MultiInputPolicy", make_env(), n_steps=16, batch_size=16,
                policy_kwargs={"features_extractor_class": RealmExtractor, "features_extractor_kwargs": TINY["realm"]})
    seen = {}
    model.policy.features_extractor.register_forward_pre_hook(lambda mod, args: seen.update(maps=args[0]["maps"]))
    model.predict(make_env().reset(seed=0)[0], deterministic=True)
    assert seen["maps"].dtype == th.float32
    assert float(seen["maps"].max()) == 1.0  # the uint8 255 of a free cell, divided once (not 1 / 255)


def test_split_frames_follows_vecframestack_order():
    venv = VecFrameStack(DummyVecEnv([CounterEnv]), n_stack=T)
    venv.reset()
    for _ in range(5):
        obs, *_ = venv.step(np.array([0]))  # the env is at step 5: the stack holds steps 2, 3, 4, 5
    maps, vector = split_frames(th.as_tensor(obs["maps"]), th.as_tensor(obs["vector"]), T)
    assert maps.shape == (1, T, 4, 51, 51) and vector.shape == (1, T, 216)
    for k, step in enumerate(range(2, 6)):  # oldest first
        assert maps[0, k, :, 0, 0].tolist() == [10 + step + c for c in range(4)]
        assert th.allclose(vector[0, k], th.full((216,), step / 100))


def test_zero_padding_at_episode_start():
    obs = VecFrameStack(DummyVecEnv([CounterEnv]), n_stack=T).reset()
    maps, vector = split_frames(th.as_tensor(obs["maps"]), th.as_tensor(obs["vector"]), T)
    assert maps[0, :-1].eq(0).all() and vector[0, :-1].eq(0).all() and maps[0, -1, 0, 0, 0] == 10


def test_conv3d_sees_frames_in_time_order():
    th.manual_seed(0)
    env, venv = CounterEnv(), VecFrameStack(DummyVecEnv([CounterEnv]), n_stack=T)
    frames = [env.reset()[0]] + [env.step(0)[0] for _ in range(5)]
    venv.reset()
    for _ in range(5):
        obs, *_ = venv.step(np.array([0]))
    ext = Conv3dExtractor(venv.observation_space, **TINY["conv3d"])
    maps = th.stack([th.as_tensor(f["maps"]).float() / 255 for f in frames[2:]], dim=1)[None]  # (1, 4, T, 51, 51)
    vector = th.cat([th.as_tensor(f["vector"]) for f in frames[2:]])[None]  # (1, 216 T)
    with th.no_grad():
        expected = ext.fuse(th.cat([ext.cnn(maps), ext.mlp(vector)], dim=1))
        got = ext(policy_input(obs, venv.observation_space))
    assert th.allclose(got, expected, atol=1e-6)


# ------------------------------------------------------------------------------------------ cached transformer
def _stream(ext: TransformerExtractor, venv: VecFrameStack, n_steps: int, reverse: bool = False) -> float:
    """Largest |forward(stacked obs) - step(newest frame)| over n_steps, across episode ends."""
    venv.seed(0)
    obs, cache, worst = venv.reset(), None, 0.0
    rng = np.random.default_rng(0)
    for _ in range(n_steps):
        x = policy_input(obs, venv.observation_space)
        with th.no_grad():
            full = ext(x)
            new_maps, new_vector = (x["maps"][:, :4], x["vector"][:, :216]) if reverse else \
                (x["maps"][:, -4:], x["vector"][:, -216:])
            feats, cache = ext.step(new_maps, new_vector, cache)
        worst = max(worst, float((full - feats).abs().max()))
        obs, _, done, _ = venv.step(rng.integers(16, size=1))
        if done[0]:
            cache = None  # a new episode: VecFrameStack zero-pads again, step starts from initial_cache()
    return worst


@pytest.mark.parametrize("n_layers", [1, 2, 3])
def test_transformer_step_equals_full_forward(n_layers):
    th.manual_seed(n_layers)
    venv = stacked_venv(n_envs=1, max_step=12)
    ext = TransformerExtractor(venv.observation_space, n_frames=T, d_model=32, n_heads=4, n_layers=n_layers)
    assert _stream(ext, venv, 30) < 1e-5  # 30 steps: two episode ends, windows with and without zero frames


def test_transformer_step_check_is_order_sensitive():
    th.manual_seed(0)
    venv = stacked_venv(n_envs=1, max_step=12)
    ext = TransformerExtractor(venv.observation_space, n_frames=T, d_model=32, n_heads=4)
    assert _stream(ext, venv, 8, reverse=True) > 1e-3  # feeding the oldest frame instead of the newest differs


def test_transformer_cache_stays_bounded():
    ext = TransformerExtractor(realm_space(T), n_frames=T, d_model=16, n_heads=2, n_layers=2)
    cache = ext.initial_cache(batch_size=2)
    assert [k.shape for k in cache.keys] == [(2, 2, 1, 8), (2, 2, 2, 8)]
    with th.no_grad():
        for _ in range(10):
            feats, cache = ext.step(th.rand(2, 4, 51, 51), th.rand(2, 216), cache)
    assert feats.shape == (2, 16) and cache.n_seen == T - 1 + 10
    assert sum(k.shape[2] for k in cache.keys) == sum(v.shape[2] for v in cache.values) == T - 1


# ------------------------------------------------------------------------------------------ learning smoke runs
def test_action_masks_reach_the_env_through_vecframestack():
    venv = stacked_venv()
    venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (2, 16)
    np.testing.assert_array_equal(masks, np.stack([e.action_masks() for e in venv.venv.envs]))


RUNS = [
    ("realm", PPO, "MultiInputPolicy"),
    ("fovea", PPO, "MultiInputPolicy"),
    ("fovea", MaskablePPO, "MultiInputPolicy"),
    ("fovea", RecurrentPPO, "MultiInputLstmPolicy"),
    ("realm", MaskablePPO, "MultiInputPolicy"),
    ("realm", RecurrentPPO, "MultiInputLstmPolicy"),
    ("conv3d", PPO, "MultiInputPolicy"),
    ("conv3d", MaskablePPO, "MultiInputPolicy"),
    ("transformer", PPO, "MultiInputPolicy"),
    ("transformer", MaskablePPO, "MultiInputPolicy"),
]


@pytest.mark.parametrize(("name", "algo", "policy"), RUNS, ids=[f"{n}-{a.__name__}" for n, a, _ in RUNS])
def test_learns_a_few_hundred_steps(name, algo, policy, tmp_path):
    th.manual_seed(0)
    venv = DummyVecEnv([make_env] * 2) if name in ("realm", "fovea") else stacked_venv()
    policy_kwargs = {"features_extractor_class": EXTRACTORS[name], "features_extractor_kwargs": TINY[name],
                     "net_arch": [16]}
    if algo is RecurrentPPO:
        policy_kwargs["lstm_hidden_size"] = 16
    model = algo(policy, venv, n_steps=64, batch_size=64, n_epochs=2, seed=0, policy_kwargs=policy_kwargs)
    model.learn(256)
    assert model.num_timesteps == 256
    assert isinstance(model.policy.features_extractor, EXTRACTORS[name])
    assert all(th.isfinite(p).all() for p in model.policy.features_extractor.parameters())
    model.save(tmp_path / "model.zip")  # the extractor class and kwargs survive a save / load
    loaded = algo.load(tmp_path / "model.zip")
    obs = venv.reset()
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


class _OldName:
    """Stands for a class in a pickle whose reference is then rewritten to a module name of before the reshape."""


def test_checkpoints_saved_before_the_reshape_still_load(tmp_path):
    """A checkpoint whose ``policy_kwargs`` name ``sb3_realm.extractors.FoveaExtractor`` (the module before the
    package was reshaped into layers) loads with plain ``PPO.load`` in a fresh interpreter, to the same class."""
    import base64
    import json
    import pickle
    import subprocess
    import sys
    import zipfile

    model = PPO("MultiInputPolicy", make_env(), n_steps=16, batch_size=16,
                policy_kwargs={"features_extractor_class": FoveaExtractor,
                               "features_extractor_kwargs": {"features_dim": 32}})
    new = tmp_path / "new.zip"
    model.save(new)
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(new) as src, zipfile.ZipFile(old, "w") as dst:
        for item in src.infolist():
            raw = src.read(item.filename)
            if item.filename == "data":
                data = json.loads(raw)
                kwargs = {**model.policy_kwargs, "features_extractor_class": _OldName}
                text = pickle.dumps(kwargs, protocol=0)  # text pickle: class references are "c<module>\n<name>\n"
                here = f"c{_OldName.__module__}\n_OldName\n".encode()
                assert here in text
                text = text.replace(here, b"csb3_realm.extractors\nFoveaExtractor\n")
                data["policy_kwargs"][":serialized:"] = base64.b64encode(text).decode()
                raw = json.dumps(data).encode()
            dst.writestr(item, raw)
    code = ("import sys; from stable_baselines3 import PPO; m = PPO.load(sys.argv[1]); "
            "import sb3_realm.models.extractors as e; "
            "assert type(m.policy.features_extractor) is e.FoveaExtractor; "
            "assert e.__spec__.name == 'sb3_realm.models.extractors'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code, str(old)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
