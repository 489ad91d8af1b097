"""A stand-in for the platform's framework, written from its documented behaviour, that enforces the contracts an
uploaded code package must meet. It runs one training task and loads saved models for evaluation, in one process,
with the stand-in ``kaiwu_agent`` beside it; nothing of sb3_realm is imported.

What it does as the platform does, and refuses (``PlatformError``) or logs as an ERROR line (which fails a task, as
the official ``train_test.py`` aborts on one) where an upload breaks a contract:

- the upload: ``conf/configure_app.toml`` parses, ``algo`` names an algorithm folder the platform registers and
  is the algorithm whose Agent the servers build (``policies.train_one.algo`` of the app conf that
  ``noselfplay_app_conf`` names: the framework builds the aisrv's, actor's and learner's Agent from that one and the
  workflow from ``algo``; a mismatch is refused), its entry in the algorithm registry
  (``conf/nature_algo_<game>.yaml``) names the folder's Agent and workflow,
  ``copy_dir`` holds the folder, the eval lines are the file's last two with an absolute directory, the preload and
  eval ids are integers whose weights exist. An upload without ``conf/`` gets a minimal conf of the stand-in's own
  with the lines of the folder's merge file;
- the algorithm is imported as the platform's servers import it (``<algo>.algorithm.agent.Agent`` and
  ``<algo>.train_workflow.workflow`` from the registry entry); the Agent, the workflow and the five functions the
  platform calls must be registered with ``@attached`` (``create_cls`` for the data classes); the learner reads
  ``Config.SAMPLE_DIM`` from ``<algo>/config.py``;
- three Agents, as the platform's servers make them: an actor (acts), a learner (learns and saves) and the aisrv's
  (the workflow's). The aisrv's ``predict``/``exploit`` go to the actor; its ``learn`` flattens each sample with the
  registered ``SampleData2NumpyData`` (a sample whose length is not ``SAMPLE_DIM`` is an ERROR; a call of more
  samples than the layout's ``max_samples_per_send`` is an ERROR and dropped), ships it to the
  learner's replay buffer and returns None; its ``save_model`` goes to the learner, which saves under its own folder
  with the id set to its step count (a step count of 0 is not saved), at most 2 saves a minute and 100 a task (over
  either: an ERROR line, nothing saved); its ``load_model`` goes to the model pool (the actor loads the pool's newest
  model, when there is one). The learner turns each batch back with ``NumpyData2SampleData`` before its ``learn``,
  counts a step per batch and dumps a model for the pool every ``dump_model_freq`` steps;
- with ``preload_model``, the learner loads ``preload_model_id`` from ``preload_model_dir`` and starts its step count
  there; the actor loads it too. The actor otherwise acts with what its Agent loaded when it was made;
- each user save becomes a saved model as the platform builds it: ``ckpt/`` (the save's files, ``kaiwu.json`` with
  the step and the algorithm, ``id_list``) and the ``copy_dir`` folders, the conf's eval lines pointing at it;
- a saved model is loaded for evaluation as the platform's model loader does (:func:`load_saved_model`): copied
  into a model-pool folder, the wrapper decorators' lines removed from ``agent.py``, the absolute ``from <algo>.``
  imports of every file renamed under the copy's package, ``agent.py`` imported as a standalone file, then
  ``load_model(<copy>/ckpt, train_step)``, then the preload keys of its conf played, in that order, as the platform's
  actor does (a preload file missing from the saved model: two ERROR lines).

Time is simulated (:class:`Clock`): each ``env.step`` advances it, and the workflow module's ``time`` is the clock
during a task, so timed saves happen without waiting.
"""

import contextlib
import importlib
import importlib.util
import json
import os
import random
import re
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
from kaiwu_agent.agent.protocol import protocol

_SPEC = importlib.util.spec_from_file_location("_sb3_realm_stand_in",
                                           Path(__file__).resolve().parents[1] / "stand_in.py")
_STAND_IN = importlib.util.module_from_spec(_SPEC)  # what every layout's stand-in shares (submission/stand_in.py)
_SPEC.loader.exec_module(_STAND_IN)

__all__ = [
    "MERGE_FILE",
    "Clock",
    "Log",
    "PlatformError",
    "TrainingTask",
    "Upload",
    "imported_package",
    "load_package_agent",
    "load_saved_model",
]

MERGE_FILE = "merge_into_configure_app.toml"  # what build-submission writes without a code package
EVAL_KEYS = ("eval_model_dir", "eval_model_id")
EVAL_REGISTERED = ("Agent", "observation_process", "action_process")  # what the platform's evaluation calls
DECORATOR_LINES = ("@predict_wrapper", "@exploit_wrapper", "@load_model_wrapper", "@learn_wrapper",
                   "@save_model_wrapper", "torch.set_num_interop_threads(1)")


class PlatformError(Exception):
    """The upload breaks a contract of the platform (the message says which)."""


Clock, Log = _STAND_IN.Clock, _STAND_IN.Log


# ---------------------------------------------------------------------------------------------- the upload
def read_registry(text):
    """The algorithm registry (``name:`` lines, each followed by indented ``key: value`` lines) as a dict."""
    entries, current = {}, None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped.strip():
            continue
        if not line[0].isspace():
            if not stripped.endswith(":"):
                raise PlatformError(f"algorithm registry line {number}: {line!r} is not 'name:'")
            current = entries.setdefault(stripped[:-1].strip(), {})
        elif current is None or ":" not in stripped:
            raise PlatformError(f"algorithm registry line {number}: {line!r} is not 'key: value' under a name")
        else:
            key, value = stripped.split(":", 1)
            current[key.strip()] = value.strip().strip("'\"")
    return entries


def nested_yaml_value(text, keys):
    """The scalar at ``keys`` of a block-style YAML file of nested mappings (``key:`` lines, deeper ones indented),
    as a string, or None; list items and flow values are not read."""
    stack, found = [], None
    for line in text.splitlines():
        body = line.split(" #", 1)[0].rstrip()
        if not body.strip() or body.lstrip().startswith(("#", "-")) or ":" not in body:
            continue
        indent = len(body) - len(body.lstrip())
        key, _, value = body.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key.strip()))
        if [k for _, k in stack] == list(keys):
            found = value.strip().strip("'\"")
    return found


def _last_setting_lines(text):
    """The keys of the file's last two settings (comments and blank lines aside)."""
    keys = [line.split("=", 1)[0].strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#") and "=" in line]
    return keys[-2:]


def _integer(value, what):
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise PlatformError(f"{what} = {value!r} is not an integer (the platform reads it with int())") from None
    if isinstance(value, float) or number < 1:
        raise PlatformError(f"{what} = {value!r} must be an integer >= 1 (a step count of 0 is never saved)")
    return number


class Upload:
    """An upload folder as the platform reads it (the module docstring lists the checks)."""

    def __init__(self, root, layout_dir):
        self.root = Path(root).resolve()
        self.layout = tomllib.loads((Path(layout_dir) / "layout.toml").read_text(encoding="utf-8"))
        self.kaiwu = None
        if (self.root / "kaiwu.json").is_file():
            self.kaiwu = json.loads((self.root / "kaiwu.json").read_text(encoding="utf-8"))
        conf_path = self.root / self.layout["app_conf"]
        self.own_conf = not conf_path.is_file()
        if self.own_conf:
            self.app, self.registry = self._minimal_conf()
        else:
            text = conf_path.read_text(encoding="utf-8")
            try:
                self.app = tomllib.loads(text)[self.layout["app_table"]]
            except (tomllib.TOMLDecodeError, KeyError) as exc:
                raise PlatformError(f"{conf_path} does not parse or has no [{self.layout['app_table']}] table "
                                    f"({exc}); the platform cannot start") from None
            if _last_setting_lines(text) != list(EVAL_KEYS):
                raise PlatformError(f"{conf_path}: the last two settings must be {' and '.join(EVAL_KEYS)}; they are "
                                    f"{_last_setting_lines(text)}")
            registry_path = self.root / self.layout["algo_conf"]
            if not registry_path.is_file():
                raise PlatformError(f"the algorithm registry {registry_path} is missing")
            self.registry = read_registry(registry_path.read_text(encoding="utf-8"))
        self.algo = str(self.app.get("algo", ""))
        self._check()

    def _servers_algo(self):
        """The algorithm whose Agent the servers (aisrv, actor, learner) build: ``policies.train_one.algo`` of the
        app conf that ``noselfplay_app_conf`` (``selfplay_app_conf`` with ``self_play``) names."""
        if "servers_conf" not in self.layout:
            return self.algo
        key = "selfplay_app_conf" if self.app.get("self_play") is True else "noselfplay_app_conf"
        rel = str(self.app.get(key) or self.layout["servers_conf"])
        path = self.root / rel
        if not path.is_file():
            raise PlatformError(f"{key} = {rel!r}: {path} is missing; the servers cannot build an Agent")
        keys = [self.layout["project_code"], *self.layout["servers_key"]]
        algo = nested_yaml_value(path.read_text(encoding="utf-8"), keys)
        if not algo:
            raise PlatformError(f"{path} has no {'.'.join(keys)}; the servers cannot build an Agent")
        if algo != str(self.app.get("algo", "")):
            raise PlatformError(f"{path} says {'.'.join(keys)}: {algo}, so the servers (aisrv, actor, learner) build "
                                f"the {algo} Agent, while {self.layout['app_conf']} says algo = "
                                f"{self.app.get('algo')!r}, whose workflow would drive it: set both to the same "
                                "algorithm (the platform's task dialog sets both to the one picked)")
        return algo

    def _minimal_conf(self):
        merge = self.root / MERGE_FILE
        if not merge.is_file():
            raise PlatformError(f"{self.root} has neither {self.layout['app_conf']} nor {MERGE_FILE}")
        lines = tomllib.loads(merge.read_text(encoding="utf-8"))
        app = {"app": self.layout["project_code"], "run_mode": "train", "train_batch_size": 256,
               "replay_buffer_capacity": 4096, "dump_model_freq": 1000, "preload_model": False,
               "copy_dir": f"conf,{lines.get('algo', '')}", **lines}
        entry = {key: value.format(algo=app.get("algo", "")) for key, value in self.layout["registration"].items()}
        return app, {app.get("algo", ""): entry}

    def _check(self):
        algo, layout = self.algo, self.layout
        if algo not in layout["algo_dirs"]:
            raise PlatformError(f"algo = {algo!r}: the platform registers the algorithm folders "
                                f"{layout['algo_dirs']} only")
        self.servers_algo = algo if self.own_conf else self._servers_algo()
        if not (self.root / algo / "algorithm" / "agent.py").is_file():
            raise PlatformError(f"algo = {algo!r} but {self.root / algo / 'algorithm' / 'agent.py'} is missing")
        entry = self.registry.get(algo)
        if entry is None:
            raise PlatformError(f"the algorithm registry has no entry for {algo!r} (it has {sorted(self.registry)})")
        for key in ("actor_model", "learner_model", "aisrv_model", "train_workflow"):
            want = layout["registration"][key].format(algo=algo)
            if entry.get(key) != want:
                raise PlatformError(f"the registry entry of {algo!r} says {key}: {entry.get(key)!r}; the folder "
                                    f"provides {want!r}")
        if algo not in [part.strip() for part in str(self.app.get("copy_dir", "")).split(",")]:
            raise PlatformError(f"copy_dir = {self.app.get('copy_dir')!r} lacks {algo!r}: a saved model would not "
                                "hold the algorithm folder")
        self.eval_dir = self.local(self.app.get("eval_model_dir"), "eval_model_dir")
        self.eval_id = _integer(self.app.get("eval_model_id"), "eval_model_id")
        self._weights(self.eval_dir, self.eval_id, "eval_model")
        if self.preload:
            self.preload_dir = self.local(self.app.get("preload_model_dir"), "preload_model_dir")
            self.preload_id = _integer(self.app.get("preload_model_id"), "preload_model_id")
            self._weights(self.preload_dir, self.preload_id, "preload_model")

    @property
    def preload(self):
        return bool(self.app.get("preload_model", False))

    def _weights(self, folder, id, what):
        if not list(folder.glob(f"model.ckpt-{id}.*")):
            raise PlatformError(f"{what}_dir / {what}_id name {folder}/model.ckpt-{id}.*, which does not exist")

    def local(self, platform_path, what):
        """Where a path of the platform (under its project root) is in this folder."""
        root = self.layout["project_root"].rstrip("/")
        text = str(platform_path or "")
        if not text.startswith("/"):
            raise PlatformError(f"{what} = {platform_path!r} must be absolute on the platform (e.g. {root}/ckpt)")
        if text.rstrip("/") != root and not text.startswith(root + "/"):
            raise PlatformError(f"{what} = {platform_path!r} is outside the code package's folder {root} on the "
                                "platform")
        return self.root / text[len(root):].strip("/")


# ---------------------------------------------------------------------------------------------- imports
@contextlib.contextmanager
def imported_package(path_entry, names):
    """Import with ``path_entry`` first on ``sys.path`` (no bytecode written); afterwards the modules of ``names``
    imported meanwhile are dropped from ``sys.modules`` (earlier ones restored) and the registry is cleared, so that
    another package of the same name can be imported in this process. What was imported keeps working."""
    saved_path, bytecode = list(sys.path), sys.dont_write_bytecode
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in names}
    for key in saved:
        del sys.modules[key]
    protocol.clear()
    sys.path.insert(0, str(path_entry))
    sys.dont_write_bytecode = True  # the folder is only read
    try:
        yield
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = bytecode
        for key in [k for k in sys.modules if k.split(".")[0] in names]:
            del sys.modules[key]
        sys.modules.update(saved)
        protocol.clear()


def _attribute(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _check_registered(names=protocol.REQUIRED):
    missing = [name for name in protocol.missing() if name in names]
    if missing:
        raise PlatformError(f"not registered with @attached (or create_cls): {', '.join(missing)}; the platform calls "
                            "them through kaiwu_agent's registry")


def load_package_agent(upload, log):
    """An Agent of the upload's algorithm as the platform's evaluation of a code package makes it: the registry's
    class, ``load_model(eval_model_dir, eval_model_id)``. Call inside :func:`imported_package`."""
    agent_cls = _attribute(upload.registry[upload.algo]["actor_model"])
    _attribute(upload.registry[upload.algo]["train_workflow"])  # imported by the platform too
    _check_registered()
    if protocol.registered("Agent") is not agent_cls:
        raise PlatformError("the Agent class is not registered with @attached")
    agent = agent_cls(agent_type="player", device="cpu", logger=log, monitor=None)
    agent.load_model(path=str(upload.eval_dir), id=upload.eval_id)
    return agent


def _rewrite_imports(root, algo, package):
    pattern = re.compile(rf"^(from\s+{algo}\.|import\s+{algo}\.)")
    for path in Path(root).rglob("*.py"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        changed = False
        for i, line in enumerate(lines):
            if pattern.match(line):
                parts = line.strip().split()
                module = parts[1].replace(f"{algo}.", "")
                if parts[0] == "import":
                    lines[i] = f"import {package}.{algo}.{module}\n"
                else:
                    lines[i] = f"from {package}.{algo}.{module} import {' '.join(parts[3:])}\n"
                changed = True
        if changed:
            path.write_text("".join(lines), encoding="utf-8")


def _evaluation_preload(agent, target, layout, log):
    """What an evaluation does with the preload keys of a saved model's conf (they travel in it): with
    ``preload_model``, the Agent loads ``preload_model_id`` from ``preload_model_dir`` (a path under the project's
    root on the platform, here the saved model's folder), and a missing file is two ERROR lines. It runs after the
    model to evaluate was loaded, as the platform's actor runs it: an Agent must keep that model's weights."""
    conf = target / layout["app_conf"]
    if not conf.is_file():
        return
    app = tomllib.loads(conf.read_text(encoding="utf-8")).get(layout["app_table"], {})
    if not app.get("preload_model", False):
        return
    root, folder, id = layout["project_root"].rstrip("/"), str(app.get("preload_model_dir", "")), \
        app.get("preload_model_id")
    local = target / folder[len(root):].strip("/") if folder.startswith(root + "/") else None
    if local is None or not list(local.glob(f"model.ckpt-{id}.*")):
        log.error(f"preload model file failed: {folder}/model.ckpt-{id}.pkl does not exist in the saved model")
        log.error(f"load_model_common_object preload_model_dir {folder} preload_model_id {id} failed")
        return
    agent.load_model(str(local), id)


def load_saved_model(model_dir, pool_dir, log, layout=None):
    """The Agent of a saved model, loaded as the platform's model loader does (module docstring); returns
    ``(agent, train_step)``. Call inside :func:`imported_package` with ``pool_dir / str(os.getpid())``. With the
    ``layout`` (its ``layout.toml``), the preload keys of the saved model's conf are played after the model is
    loaded, as the platform's actor plays them (:func:`_evaluation_preload`)."""
    model_dir, pid = Path(model_dir), os.getpid()
    info = json.loads((model_dir / "ckpt" / "kaiwu.json").read_text(encoding="utf-8"))
    algo, step = info["algorithm"], int(info["train_step"])
    package = f"model_{step}_pid_{pid}"
    home = Path(pool_dir) / str(pid)
    target = home / package
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns("__pycache__"))
    for init in (home / "__init__.py", target / "__init__.py"):
        init.touch()
    agent_py = target / algo / "algorithm" / "agent.py"
    lines = agent_py.read_text(encoding="utf-8").splitlines(keepends=True)
    agent_py.write_text("".join(line for line in lines if not any(d in line for d in DECORATOR_LINES)),
                        encoding="utf-8")
    _rewrite_imports(target, algo, package)
    spec = importlib.util.spec_from_file_location(f"agent_module_train_one_{step}", agent_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _check_registered(EVAL_REGISTERED)
    agent = module.Agent(agent_type="player", device="cpu", logger=log, monitor=None)
    agent.load_model(str(target / "ckpt"), step)
    if layout is not None:
        _evaluation_preload(agent, target, layout, log)
    return agent, step


# ---------------------------------------------------------------------------------------------- a training task
class _Stop(Exception):
    """The task is over (the platform stops the workflow's process)."""


class Handler:
    """What one server of the platform does with the calls of its Agent (see the module docstring)."""

    def __init__(self, task, role):
        self.task, self.role = task, role

    def call(self, kind, agent, func, *args, **kwargs):
        return getattr(self, f"_{self.role}_{kind}", self._direct)(agent, func, *args, **kwargs)

    @staticmethod
    def _direct(agent, func, *args, **kwargs):
        return func(agent, *args, **kwargs)

    @staticmethod
    def _obs(args, kwargs):
        return args[0] if args else kwargs["list_obs_data"]

    def _aisrv_predict(self, agent, func, *args, **kwargs):
        return self.task.actor.predict(self._obs(args, kwargs))

    def _aisrv_exploit(self, agent, func, *args, **kwargs):
        return self.task.actor.exploit(self._obs(args, kwargs))

    def _aisrv_learn(self, agent, func, *args, **kwargs):
        g_data = args[0] if args else kwargs.get("list_sample_data")
        if g_data is not None:
            limit = int(self.task.limits["max_samples_per_send"])
            self.task.largest_send = max(self.task.largest_send, len(g_data))
            if len(g_data) > limit:
                self.task.log.error(f"learn: {len(g_data)} samples in one call; the stand-in takes at most {limit} "
                                    "(the official workflows send every 256 frames): the call is dropped")
                return None
            self.task.ship(g_data)
        return None

    def _aisrv_save_model(self, agent, func, *args, **kwargs):
        self.task.learner.save_model()
        return None

    def _aisrv_load_model(self, agent, func, *args, **kwargs):
        self.task.sync_actor()
        return None

    def _learner_learn(self, agent, func, *args, **kwargs):
        g_data = args[0] if args else kwargs["list_sample_data"]
        return func(agent, [protocol.NumpyData2SampleData(data) for data in g_data[0]])

    def _learner_save_model(self, agent, func, *args, source="user", **kwargs):
        return self.task.save(agent, func, source, kwargs.get("path"), kwargs.get("id"))

    def _actor_learn(self, agent, func, *args, **kwargs):
        return None

    _actor_save_model = _actor_learn


class _Env:
    """The task's view of the environment: counts episodes, advances the clock, stops the task when it is done."""

    def __init__(self, env, task, episodes, saves, max_episodes, step_seconds):
        self.env, self.task = env, task
        self.episodes, self.saves, self.max_episodes, self.step_seconds = episodes, saves, max_episodes, step_seconds
        self.started = self.ended = 0

    def reset(self, usr_conf=None):
        if (self.ended >= self.episodes and len(self.task.saves) >= self.saves) or self.started >= self.max_episodes:
            raise _Stop
        self.started += 1
        return self.env.reset(usr_conf=usr_conf)

    def step(self, act):
        self.task.clock.advance(self.step_seconds)
        out = self.env.step(act)
        if out[3] or out[4]:
            self.ended += 1
        return out


class TrainingTask:
    """One training task of the platform on an upload (module docstring).

    :param upload: the :class:`Upload`.
    :param task_dir: a folder of the task's own (the learner's save folders, the saved models, the model pool).
    :param overrides: settings of ``configure_app.toml`` replaced for this task (as ``train_test.py`` does), e.g. a
        small ``train_batch_size`` and ``dump_model_freq``.
    """

    def __init__(self, upload, task_dir, *, overrides=None, seed=0):
        self.upload = upload
        self.app = {**upload.app, **(overrides or {})}
        self.task_dir = Path(task_dir)
        self.log, self.clock = Log(), Clock()
        self.rng = random.Random(seed)
        self.limits = upload.layout["platform"]
        self.saves, self.buffer, self.pending = [], [], 0
        self.samples = self.bad_samples = self.train_count = self.largest_send = 0
        self.pool = None  # (folder, id) of the model pool's newest model
        self.actor_model = None  # the id the actor loaded last
        name = f"{self.app['app']}_{upload.algo}"
        self.user_dir = self.task_dir / "user_ckpt" / name
        self.restore_dir = self.task_dir / "ckpt" / name

    # the learner's side
    def ship(self, g_data):
        for sample in g_data:
            array = np.asarray(protocol.SampleData2NumpyData(sample))
            if array.ndim != 1 or array.size != self.sample_dim:
                self.bad_samples += 1
                self.log.error(f"a sample of shape {array.shape} reached the learner, whose samples have "
                               f"SAMPLE_DIM = {self.sample_dim} values; it is dropped")
                continue
            self.samples += 1
            self.buffer.append(array)
            self.pending += 1
        del self.buffer[:-int(self.app["replay_buffer_capacity"])]
        batch = int(self.app["train_batch_size"])
        while self.pending >= batch:
            self.pending -= batch
            self.learner.learn([[self.rng.choice(self.buffer) for _ in range(batch)]])
            self.train_count += 1
            if self.train_count % int(self.app["dump_model_freq"]) == 0:
                self.learner.save_model(path=str(self.restore_dir), id=self.train_count, source="framework")
                self.pool = (self.restore_dir, self.train_count)

    def save(self, agent, func, source, path, id):
        if source == "framework":
            return func(agent, path=path, id=id)
        id = self.train_count
        if not id:
            self.log.info("train_step is 0, so not save_model")
            return None
        recent = [s for s in self.saves if self.clock.monotonic() - s["time"] < 60]
        if len(recent) >= self.limits["user_save_model_max_frequency_per_min"]:
            self.log.error(f"save_model: {len(recent) + 1} saves within a minute; the platform allows "
                           f"{self.limits['user_save_model_max_frequency_per_min']}: not saved")
            return None
        if len(self.saves) >= self.limits["user_save_mode_max_count"]:
            self.log.error(f"save_model: save {len(self.saves) + 1} of a task that allows "
                           f"{self.limits['user_save_mode_max_count']}: not saved")
            return None
        func(agent, path=str(self.user_dir), id=id)
        self.saves.append({"id": id, "time": self.clock.monotonic(), "model_dir": str(self._saved_model(id))})
        return None

    def _saved_model(self, id):
        """The model the platform builds from a save: ckpt/ and the copy_dir folders, the eval lines set."""
        target = self.task_dir / "models" / f"model_{id}"
        files = sorted(self.user_dir.glob(f"model.ckpt-{id}.*"))
        if not files:
            raise PlatformError(f"save_model(path, id) wrote no {self.user_dir}/model.ckpt-{id}.* file")
        if target.exists():  # the same step saved again (no training in between): the newer save replaces it
            shutil.rmtree(target)
        (target / "ckpt").mkdir(parents=True)
        for path in files:
            shutil.copy2(path, target / "ckpt" / path.name)
        kaiwu = self.upload.kaiwu or {}
        (target / "ckpt" / "kaiwu.json").write_text(json.dumps({
            "train_step": id, "algorithm": self.upload.algo, "project_code": self.app["app"],
            "project_version": kaiwu.get("version")}), encoding="utf-8")
        (target / "ckpt" / "id_list").write_text(f"all id list\nmodel.ckpt-{id}\n", encoding="utf-8")
        for name in [part.strip() for part in str(self.app.get("copy_dir", "")).split(",") if part.strip()]:
            if (self.upload.root / name).is_dir():
                shutil.copytree(self.upload.root / name, target / name,
                                ignore=shutil.ignore_patterns("__pycache__"))
        if (self.upload.root / "kaiwu.json").is_file():
            shutil.copy2(self.upload.root / "kaiwu.json", target / "kaiwu.json")
        conf = target / self.upload.layout["app_conf"]
        if conf.is_file():
            kept = [line for line in conf.read_text(encoding="utf-8").splitlines()
                    if line.split("=", 1)[0].strip() not in EVAL_KEYS]
            root = self.upload.layout["project_root"]
            kept += [f'eval_model_dir = "{root}/ckpt"', f"eval_model_id = {id}"]
            conf.write_text("\n".join(kept) + "\n", encoding="utf-8")
        return target

    # the actor's side
    def sync_actor(self):
        if self.pool is not None and self.pool[1] != self.actor_model:
            self.actor.load_model(path=str(self.pool[0]), id=self.pool[1])
            self.actor_model = self.pool[1]

    def run(self, env, *, episodes=3, saves=2, max_episodes=50, step_seconds=1.0):
        """Run the upload's workflow on ``env`` (the platform's env interface) until ``episodes`` episodes have ended
        and ``saves`` models were saved, or ``max_episodes`` started; returns a report (plain data)."""
        upload, report = self.upload, {"crashed": None}
        with imported_package(upload.root, {upload.algo, "conf"}):
            try:
                self._run(env, episodes, saves, max_episodes, step_seconds, report)
            except _Stop:
                pass
            except PlatformError:
                raise
            except Exception as exc:  # the platform logs whatever the workflow raises
                report["crashed"] = f"{type(exc).__name__}: {exc}"
                self.log.exception(f"the workflow raised {type(exc).__name__}: {exc}")
        report.update({"episodes": self.env.ended if hasattr(self, "env") else 0, "saves": self.saves,
                       "train_count": self.train_count, "samples": self.samples, "bad_samples": self.bad_samples,
                       "largest_send": self.largest_send,
                       "sample_dim": getattr(self, "sample_dim", None), "errors": self.log.errors,
                       "log": [f"{level} {message}" for level, message in self.log.lines[-200:]],
                       "clock_s": self.clock.monotonic(), "actor_synced_to": self.actor_model})
        return report

    def _run(self, env, episodes, saves, max_episodes, step_seconds, report):
        entry = self.upload.registry[self.upload.algo]
        servers = self.upload.registry[self.upload.servers_algo]  # the servers' Agent; the workflow: entry's
        config = importlib.import_module(f"{self.upload.algo}.config").Config
        self.sample_dim = int(getattr(config, "SAMPLE_DIM", self.app.get("sample_dim", 0)))
        report["config_sample_dim"] = getattr(config, "SAMPLE_DIM", None)
        agent_cls = _attribute(servers["learner_model"])
        workflow = _attribute(entry["train_workflow"])
        _check_registered()
        if protocol.registered("Agent") is not agent_cls or protocol.registered("workflow") is not workflow:
            raise PlatformError("the Agent class and the workflow must be the ones registered with @attached")
        module = sys.modules[workflow.__module__]
        if hasattr(module, "time"):
            module.time = self.clock
        agents = {}
        for role in ("learner", "actor", "aisrv"):
            agents[role] = agent_cls(agent_type="player", device="cpu", logger=self.log, monitor=None)
            agents[role].set_framework_handler(Handler(self, role))
        self.learner, self.actor, self.aisrv = agents["learner"], agents["actor"], agents["aisrv"]
        if self.upload.preload:
            self.learner.load_model(path=str(self.upload.preload_dir), id=self.upload.preload_id)
            self.train_count = self.upload.preload_id
            self.actor.load_model(path=str(self.upload.preload_dir), id=self.upload.preload_id)
            self.actor_model = self.upload.preload_id
        self.env = _Env(env, self, episodes, saves, max_episodes, step_seconds)
        report["workflow_returned"] = repr(workflow(envs=[self.env], agents=[self.aisrv], logger=self.log,
                                                    monitor=None))
