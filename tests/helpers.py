"""Helpers shared by several test modules (imported explicitly, not through conftest)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from sb3_realm.games.realm import RealmMap

REPO = Path(__file__).resolve().parents[1]
#: the 10 open Gorge Chase maps (Tencent's data, not in the repository): ``$SB3_REALM_GORGE_MAPS``, else beside the
#: checkout
GORGE_MAPS = Path(os.environ.get("SB3_REALM_GORGE_MAPS") or REPO.parent / "shared" / "data" / "gorge")


def gorge_maps_dir() -> Path:
    """The folder of the 10 open Gorge Chase maps; the calling test skips without them, or fails where
    ``SB3_REALM_REQUIRE_REAL_MAP=1`` (CI on this machine)."""
    if not all((GORGE_MAPS / f"gorge_chase_map_{k}.json").is_file() for k in range(1, 11)):
        message = (f"the 10 open Gorge Chase maps were not found in {GORGE_MAPS}; set SB3_REALM_GORGE_MAPS to the "
                   "folder of gorge_chase_map_<k>.json (it is ../shared/data/gorge beside the checkout)")
        if os.environ.get("SB3_REALM_REQUIRE_REAL_MAP", "") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return GORGE_MAPS


def strip_feature_version(model_zip: str | Path, out: str | Path | None = None) -> Path:
    """Rewrite an SB3 ``.zip`` without its recorded ``feature_version`` (nor the run config, recorded since later), as a
    model saved before versions were recorded (into ``out``, default: in place)."""
    model_zip = Path(model_zip)
    out = Path(out) if out is not None else model_zip
    with zipfile.ZipFile(model_zip) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data.pop("feature_version", None)
    data.pop("sb3_realm_config", None)
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return out


def make_legacy_run(run_dir: str | Path) -> None:
    """Turn a training run into one from before feature versions were recorded: no version in any model ``.zip``,
    null in ``config.yaml``."""
    run_dir = Path(run_dir)
    for model_zip in run_dir.rglob("*.zip"):
        strip_feature_version(model_zip)
    config = run_dir / "config.yaml"
    lines = [("feature_version: null" if line.startswith("feature_version:") else line)
             for line in config.read_text(encoding="utf-8").splitlines()]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def open_map(size: int = 40, walls: list[tuple[slice, slice]] = (), grid_positions=None) -> RealmMap:
    """A square room with a 2-cell wall border, optional wall blocks ``(z_slice, x_slice)`` and 16 positions given
    in grid cells (default: a 4 x 4 lattice far from each other)."""
    walk = np.zeros((size, size), dtype=bool)
    walk[2:-2, 2:-2] = True
    for zs, xs in walls:
        walk[zs, xs] = False
    if grid_positions is None:
        lattice = [4 + 9 * i for i in range(4)]
        grid_positions = [(gx, gz) for gz in lattice for gx in lattice]
    return RealmMap(walkable=walk, positions_world=[RealmMap.grid_to_world(gx, gz) for gx, gz in grid_positions])


def load_tool(name: str) -> ModuleType:
    """The module ``tools/<name>.py`` of the repository (build tools live beside the package, not in it)."""
    key = f"_sb3_realm_tool_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, REPO / "tools" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]



def load_benchmark(name: str, monkeypatch) -> ModuleType:
    """A fresh module of ``benchmarks/<name>.py``, imported as when it runs as a script (``rss.py`` beside it on
    the path, for the test only)."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

# Short training runs of each algorithm on the small map (the ``models`` fixture of conftest.py trains them once)
SMALL_RUN = ["env.map_name=small", "env.n_envs=2", "algo.hyperparams.n_steps=128", "algo.hyperparams.batch_size=256",
             "eval_freq=0", "progress_bar=false", "checkpoint_freq=100000",
             "env.usr_conf={treasure_num: 3, max_step: 150}"]
SMALL_MODELS = {
    "ppo": ("configs/realm/ppo.yaml", []),
    "maskable_ppo": ("configs/realm/maskable_ppo.yaml",
                     ["algo.extractor=realm", "algo.extractor_kwargs={features_dim: 32, cnn_channels: [8, 8]}",
                      "algo.policy_kwargs={}", "env.mask_wall_moves=true"]),
    "recurrent_ppo": ("configs/realm/recurrent_ppo.yaml",
                      ["algo.policy_kwargs={lstm_hidden_size: 32, normalize_images: false}"]),
}


# A code package shaped like the official 2024 one (the same file names, a configure_app.toml of many keys), written
# here from the documented layout: never Tencent's files.
_APP_CONF = '''[app]
# ---- settings the user may change ----
learner_train_by_while_true = true
learner_train_sleep_seconds = 0.0001
replay_buffer_capacity = 4096
preload_ratio = 1
# length of one sample on the learner; it differs per algorithm
sample_dim = 21624
torch_num_threads = 1
predict_batch_size = 1
send_sample_size = 320
train_batch_size = 256
production_consume_ratio = 10
reverb_remover = "reverb.selectors.Fifo"
reverb_sampler = "reverb.selectors.Uniform"
# weights loaded when a training task starts
preload_model = false
preload_model_dir = "/data/ckpt/back_to_the_realm_dqn/"
preload_model_id = 1000
dump_model_freq = 1000
# the model an evaluation loads
eval_model_dir = "/data/ckpt/back_to_the_realm_dqn/"
eval_model_id = 1000

# ---- settings of the framework ----
app = "back_to_the_realm"
self_play = false
set_name = "back_to_the_realm_set1000"
self_play_set_name = "back_to_the_realm_set1000"
selfplay_app_conf = "conf/nature_app_back_to_the_realm.yaml"
noselfplay_app_conf = "conf/nature_app_back_to_the_realm.yaml"
algo_conf = "conf/nature_algo_back_to_the_realm.yaml"
rainbow_env_name = "back_to_the_realm_dev"
run_mode = "train"
algo = "target_dqn"
model_file_sync_per_minutes = 2
model_file_load_per_minutes = 3
use_which_deep_learning_framework = "pytorch"
predict_local_or_remote = "local"
framework_integration_patterns = "standard"
aisrv_framework = "kaiwu_env"
wrapper_type = "remote"
copy_dir = "conf,target_dqn,dqn"
aisrv_connect_to_kaiwu_env_count = 8
modelpool_max_save_model_count = 1
log_dir = "/data/projects/back_to_the_realm/log"
level = "INFO"
tensorflow_log_level = "INFO"
actor_addrs = { train_one = ["127.0.0.1:8888"]}
learner_addrs = {train_one = ["127.0.0.1:9999"]}
'''


# the conf from which the platform's servers build the Agent (policies.train_one.algo), in the official one's shape
_SERVERS_CONF = """back_to_the_realm:
  run_handler: environment.back_to_the_realm_run_handler.BackToTheRealmRunHandler
  rl_helper: kaiwudrl.server.aisrv.kaiwu_rl_helper_standard.KaiWuRLStandardHelper
  policies:
    train_one:
      policy_builder: kaiwudrl.server.aisrv.async_policy.AsyncBuilder
      algo: dqn  # the algorithm whose Agent the servers build
      state: conf.back_to_the_realm_state.BackToTheRealmState
      action: conf.back_to_the_realm_action.BackToTheRealmAction
"""


def _registry_entry(algo: str) -> str:
    return (f"{algo}:\n  actor_model: {algo}.algorithm.agent.Agent\n  learner_model: {algo}.algorithm.agent.Agent\n"
            f"  aisrv_model: {algo}.algorithm.agent.Agent\n"
            "  trainer: kaiwudrl.server.learner.standard_trainer.StandardTrainer\n"
            "  predictor: kaiwudrl.server.actor.standard_predictor.StandardPredictor\n"
            f"  train_workflow: {algo}.train_workflow.workflow\n"
            f"  eval_workflow: kaiwu_agent.back_to_the_realm.{algo}.eval_workflow.workflow\n"
            f"  exam_workflow: kaiwu_agent.back_to_the_realm.{algo}.exam_workflow.workflow\n")


def make_code_package(root: str | Path, *, project: str = "back_to_the_realm", version: str = "10.3.4",
                      registry: tuple[str, ...] = ("dqn", "target_dqn", "diy")) -> Path:
    """Write a small code package with the official one's file names under ``root``; returns ``root``."""
    root = Path(root)
    files = {
        "kaiwu.json": json.dumps({"version": version, "project_code": project}, indent=2) + "\n",
        "train_test.py": "# the client's smoke test: runs a short training of algorithm_name\nalgorithm_name = 'dqn'\n",
        "conf/__init__.py": "",
        "conf/configure_app.toml": _APP_CONF,
        "conf/nature_algo_back_to_the_realm.yaml": "\n".join(_registry_entry(a) for a in registry),
        "conf/nature_app_back_to_the_realm.yaml": _SERVERS_CONF,
        "conf/usr_conf.py": "def usr_conf_check(usr_conf, logger):\n    return bool(usr_conf)\n",
        "conf/back_to_the_realm_state.py": "class BackToTheRealmState:\n    pass\n",
        "conf/back_to_the_realm_action.py": "class BackToTheRealmAction:\n    pass\n",
    }
    for algo in ("dqn", "target_dqn", "diy"):
        for rel in ("__init__.py", "algorithm/__init__.py", "feature/__init__.py", "model/__init__.py"):
            files[f"{algo}/{rel}"] = ""
        files[f"{algo}/config.py"] = "class Config:\n    SAMPLE_DIM = 21624\n"
        files[f"{algo}/algorithm/agent.py"] = "class Agent:\n    pass\n"
        files[f"{algo}/train_workflow.py"] = "def workflow(envs, agents, logger=None, monitor=None):\n    pass\n"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def tree_digest(root: str | Path) -> dict[str, bytes]:
    """Every file of a folder with its bytes (to show that a folder was left unchanged)."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


#: a user's training games in their own agent_diy/conf/train_env_conf.toml (build-submission keeps the file)
GORGE_USER_TRAIN_CONF = """# my training games
[env_conf]
map = [1, 2, 3]
map_random = true
treasure_count = 10
buff_count = 2
buff_cooldown = 200
talent_cooldown = 100
monster_interval = 300
monster_speedup = 500
max_step = 1000
"""


def make_gorge_code_package(root: str | Path, *, version: str = "15.0.1-comp-normal-lite.26comp",
                            project: str = "gorge_chase") -> Path:
    """A 15.0.1 Gorge Chase code package with the layout and settings the platform's docs describe (written here
    from that description, with comments of its own): ``kaiwu.json``, ``conf/`` with the three registration files,
    and ``agent_ppo/`` and ``agent_diy/`` holding placeholder agents, the user's training games and a monitor
    panel."""
    root = Path(root)
    files = {
        "kaiwu.json": json.dumps({"version": version, "project_code": project}, indent=2) + "\n",
        "train_test.py": "# the platform's smoke test (runs only in the Kaiwu client's container)\n",
        "conf/__init__.py": "",
        "conf/.gitignore": "kaiwudrl/\n",
        "conf/algo_conf_gorge_chase.toml": "".join(
            f'[{algo}]\nactor_agent = "agent_{algo}.agent.Agent"\nlearner_agent = "agent_{algo}.agent.Agent"\n'
            f'aisrv_agent = "agent_{algo}.agent.Agent"\n'
            f'train_workflow = "agent_{algo}.workflow.train_workflow.workflow"\n'
            'eval_workflow = "tools.eval.workflow.eval_workflow.workflow"\n'
            'exam_workflow = "tools.eval.workflow.exam_workflow.workflow"\n\n' for algo in ("ppo", "diy")),
        "conf/app_conf_gorge_chase.toml": (
            '[gorge_chase]\nrl_helper = "kaiwudrl.server.aisrv.kaiwu_rl_helper_standard.KaiWuRLStandardHelper"\n\n'
            '[gorge_chase.policies.train_one]\npolicy_builder = "kaiwudrl.server.aisrv.async_policy.AsyncBuilder"\n'
            '# which algorithm folder trains\nalgo = "ppo"\n'),
        "conf/configure_app.toml": (
            "[app]\n\n# sample pool\nreplay_buffer_capacity = 10000\npreload_ratio = 1.0\n"
            'reverb_remover = "reverb.selectors.Fifo"\nreverb_sampler = "reverb.selectors.Uniform"\n'
            'reverb_rate_limiter = "MinSize"\nreverb_samples_per_insert = 5\nreverb_error_buffer = 5\n'
            "train_batch_size = 2048\ndump_model_freq = 100\nmodel_file_sync_per_minutes = 1\n"
            "modelpool_max_save_model_count = 1\n\n# continue from a model of the package\npreload_model = false\n"
            'preload_model_dir = "{agent_name}/ckpt"\npreload_model_id = 1000\n'),
        "agent_diy/conf/train_env_conf.toml": GORGE_USER_TRAIN_CONF,
        "agent_diy/conf/monitor_builder.py": (
            "from kaiwudrl.common.monitor.monitor_config_builder import MonitorConfigBuilder\n\n\n"
            "def build_monitor():\n    return (MonitorConfigBuilder().title('gorge').add_group(group_name='algo')\n"
            "            .add_panel(name='reward', type='line')\n"
            "            .add_metric(metrics_name='reward', expr='avg(reward{})').end_panel()\n"
            "            .end_group().build())\n"),
    }
    for algo in ("ppo", "diy"):
        files[f"agent_{algo}/__init__.py"] = ""
        files[f"agent_{algo}/agent.py"] = (
            "from kaiwudrl.interface.agent import BaseAgent\n\n\nclass Agent(BaseAgent):\n"
            "    pass  # the user's own agent goes here\n")
        files.setdefault(f"agent_{algo}/conf/train_env_conf.toml", "[env_conf]\nmax_step = 1000\n")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# numpy's functions and modules that numpy 1.19 (the oldest the code in a built package supports) lacks: the name
# (as ``np.NAME``, ``np.lib.stride_tricks.NAME`` or ``from numpy... import NAME``) -> the first numpy that has it
NEWER_NUMPY = {
    "sliding_window_view": "1.20", "broadcast_shapes": "1.20", "typing": "1.20", "permuted": "1.20",
    "dtypes": "1.25", "exceptions": "1.25", "isdtype": "2.0", "astype": "2.0", "concat": "2.0", "pow": "2.0",
    "permute_dims": "2.0", "matrix_transpose": "2.0", "vecdot": "2.0", "unique_values": "2.0",
    "unique_counts": "2.0", "unique_inverse": "2.0", "unique_all": "2.0", "cumulative_sum": "2.1",
    "cumulative_prod": "2.1", "trapezoid": "2.0", "bitwise_count": "2.0", "bitwise_left_shift": "2.0",
    "bitwise_right_shift": "2.0", "bitwise_invert": "2.0", "acos": "2.0", "asin": "2.0", "atan": "2.0",
    "acosh": "2.0", "asinh": "2.0", "atanh": "2.0", "atan2": "2.0", "long": "2.0", "ulong": "2.0", "unstack": "2.1",
    "matvec": "2.3", "vecmat": "2.3",
}
# keywords of numpy's functions that numpy 1.19 lacks: function name -> {keyword: first numpy that has it}
NEWER_NUMPY_KEYWORDS: dict[str, dict[str, str]] = {}
for _names, _keywords in (
        (("mean", "std", "var", "all", "any", "nanmean", "nanstd", "nanvar"), {"where": "1.20"}),
        (("argmax", "argmin"), {"keepdims": "1.22"}),
        (("percentile", "quantile", "nanpercentile", "nanquantile"), {"method": "1.22"}),
        (("concatenate",), {"dtype": "1.20", "casting": "1.20"}),
        (("stack", "hstack", "vstack"), {"dtype": "1.24", "casting": "1.24"}),
        (("unique",), {"equal_nan": "1.24"}),
        (("sort", "argsort"), {"stable": "2.0"}),
        (("array", "asarray", "asanyarray", "ascontiguousarray", "zeros", "ones", "full", "empty", "arange",
          "frombuffer", "fromiter", "identity", "eye"), {"like": "1.20"}),
        (("asarray",), {"copy": "2.0"})):
    for _name in _names:
        NEWER_NUMPY_KEYWORDS.setdefault(_name, {}).update(_keywords)


def small_gorge_model(path: Path, algo: str = "maskable", seed: int = 0) -> Path:
    """A Gorge Chase model with a small extractor, trained for 64 steps and saved at ``path`` with the features version
    sb3-realm's runs record: enough to build, check and time a package, not to play well. ``algo``: ``maskable``
    (MaskablePPO) or ``recurrent`` (RecurrentPPO)."""
    from sb3_contrib import MaskablePPO, RecurrentPPO  # lazy: most tests that import helpers need no torch

    from sb3_realm.games.gorge import features
    from sb3_realm.games.gorge.env import GorgeEnv
    from sb3_realm.models.extractors import GorgeExtractor

    small = {"features_extractor_class": GorgeExtractor,
             "features_extractor_kwargs": {"features_dim": 32, "cnn_channels": (8, 8, 8)}}
    if algo == "recurrent":
        model = RecurrentPPO("MultiInputLstmPolicy", GorgeEnv(), n_steps=32, batch_size=32, n_epochs=1, seed=seed,
                             device="cpu", policy_kwargs={**small, "lstm_hidden_size": 16})
    else:
        model = MaskablePPO("MultiInputPolicy", GorgeEnv(), n_steps=64, batch_size=32, n_epochs=1, seed=seed,
                            device="cpu", policy_kwargs=small)
    model.learn(64)
    model.feature_version = features.FEATURE_VERSION  # as sb3-realm's runs record it
    model.save(path)
    return Path(path)


def realm_result(index: int, *, ids: tuple = (3, 5), score: float = 1.0, reached_end: bool = True,
                 missed: tuple = (), steps: int = 99, treasures: int | None = None, flash_used: int = 0,
                 buff_used: int = 0, **extra):
    """A Back to the Realm game's :class:`~sb3_realm.evaluation.GameResult` as evaluation makes it, from the final
    info its env gives (``extra``: the result's other fields, e.g. ``yardstick_score``, ``cut``)."""
    from sb3_realm import games
    from sb3_realm.evaluation import GameResult

    info = {"score": score, "steps": steps, "win": reached_end, "treasure_ids": list(ids),
            "treasures": len(ids) - len(missed) if treasures is None else treasures, "treasures_missed": list(missed),
            "flash_used": flash_used, "buff_used": buff_used}
    return GameResult.from_summary(info, index=index, game=games.get("realm"), **extra)
