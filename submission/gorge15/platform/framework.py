"""A stand-in for the 15.0.1 framework of Gorge Chase, written from its documented behaviour, that enforces the
contracts an uploaded code package must meet. It runs one training task and the evaluation loop, in one process,
with the stand-in ``kaiwudrl``, ``common_python`` and ``tools`` modules beside it; nothing of sb3_realm is imported.

What it does as the platform does, and refuses (``PlatformError``) or logs as an ERROR line (which fails a task, as
the official ``train_test.py`` aborts on one) where an upload breaks a contract:

- the registrations: ``kaiwu.json`` is the project ``gorge_chase`` version 15.0.x; ``conf/app_conf_gorge_chase.toml``
  selects the algorithm (``[gorge_chase.policies.train_one] algo``); ``conf/algo_conf_gorge_chase.toml`` has its
  table, naming ``agent_<algo>.agent.Agent`` for the three servers and
  ``agent_<algo>.workflow.train_workflow.workflow``, and the platform's own eval workflow; the folder
  ``agent_<algo>/`` exists;
- the preload route (``conf/configure_app.toml [app]``): with ``preload_model = true``, ``preload_model_dir``
  (``{agent_name}`` is the algorithm folder, the path relative to the package) must hold
  ``model.ckpt-<preload_model_id>.pkl`` with an integer id, else "preload model file failed ... not valid"; the
  learner and the actor load it with ``load_model(path, id)`` and the learner's step count starts at the id;
- the Agent: a subclass of ``kaiwudrl.interface.agent.BaseAgent`` with ``reset``, ``observation_process``,
  ``predict``, ``exploit``, ``action_process``, ``learn``, ``save_model`` and ``load_model``, made as
  ``Agent(agent_type="player", device="cpu", logger=..., monitor=...)``;
- a training task: three Agents, as the platform's servers make them: an actor, a learner and the aisrv's (the
  workflow's). The aisrv's ``predict`` goes to the actor; ``send_sample_data`` (and ``learn``, which on the aisrv
  also sends) flattens each sample by the lengths its ``SampleData`` declares (a field of another length, or a class
  without integer lengths, is an ERROR) into the learner's replay buffer; ``save_model()`` goes to the learner, which
  saves under its own folder with the id set to its step count (a step count of 0 is not saved), at most 2 saves a
  minute and 100 a task (over either: an ERROR line, nothing saved); ``load_model(id="latest")`` makes the actor load
  the model pool's newest model. The learner turns each batch back into ``SampleData`` before its ``learn``, counts
  a step per batch and dumps a model for the pool every ``dump_model_freq`` steps;
- each save becomes a saved model as the platform builds one: the package's code folders and ``ckpt/`` (the save's
  files, ``kaiwu.json`` with the step and the algorithm, ``id_list``);
- the evaluation loop (the platform's own, not in the package): the saved model's Agent, made from its registry
  entry, ``load_model(<model>/ckpt, <id>)`` once, then the preload keys of the saved model's conf played (they and
  their file travel in every save; the 2024 framework's actor plays them after the model to evaluate, and this
  stand-in assumes the 15.0.1 one does too: an Agent must keep the model it was given); per game
  ``env_obs = env.reset(usr_conf)``, ``agent.reset(env_obs)`` once, then ``exploit(env_obs)`` exactly once per step
  with the raw ``env_obs`` (an int 0..15, or a list holding one; anything else stops the evaluation) and
  ``env.step(action)``.

Time is simulated (:class:`Clock`): each ``env.step`` advances it, and the workflow module's ``time`` is the clock
during a task, so timed saves happen without waiting.
"""

import contextlib
import importlib
import importlib.util
import json
import os
import pickle
import random
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np

_SPEC = importlib.util.spec_from_file_location("_sb3_realm_stand_in",
                                           Path(__file__).resolve().parents[2] / "stand_in.py")
_STAND_IN = importlib.util.module_from_spec(_SPEC)  # what every layout's stand-in shares (submission/stand_in.py)
_SPEC.loader.exec_module(_STAND_IN)

__all__ = [
    "AGENT_METHODS",
    "Clock",
    "Log",
    "PlatformError",
    "TrainingTask",
    "Upload",
    "evaluate",
    "imported_package",
    "load_saved_model",
]

AGENT_METHODS = ("reset", "observation_process", "predict", "exploit", "action_process", "learn", "save_model",
                 "load_model")
N_ACTIONS = 16


class PlatformError(Exception):
    """The upload breaks a contract of the platform (the message says which)."""


Clock, Log = _STAND_IN.Clock, _STAND_IN.Log


class Monitor:
    """The platform's monitor: what the workflow puts, and the metrics of the panel that the algorithm folder's
    ``conf/monitor_builder.py`` declares (``add_metric(metrics_name=...)``; None: no panel read). The panel shows
    only its own metrics: a key put that it does not declare is a WARNING line, once."""

    def __init__(self, log=None):
        self.data, self.log, self.panel, self.keys = [], log, None, set()

    def read_panel(self, module_name):
        """The metrics that ``build_monitor()`` of the module ``module_name`` declares (when it exists)."""
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            return
        calls = module.build_monitor().get("calls", [])
        self.panel = sorted({kwargs.get("metrics_name", args[0] if args else None) for name, args, kwargs in calls
                             if name == "add_metric"} - {None})

    def put_data(self, data):
        self.data.append(data)
        for values in data.values():
            for key in values:
                if key not in self.keys and self.panel is not None and key not in self.panel and self.log:
                    self.log.warning(f"monitor: {key!r} is not a metric of the panel (monitor_builder.py declares "
                                     f"{self.panel}); the platform does not show it")
                self.keys.add(key)


def _toml(path, what):
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlatformError(f"{what} {path} is missing") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PlatformError(f"{what} {path} does not parse ({exc}); the platform cannot start") from None


def _table(data, dotted):
    for part in dotted.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


def _integer(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlatformError(f"preload model file failed: {what} = {value!r} is not valid (an integer >= 1, the "
                            "training step in the file name model.ckpt-<id>.pkl)")
    return value


# ---------------------------------------------------------------------------------------------- the upload
class Upload:
    """A code package as the platform reads it (the module docstring lists the checks)."""

    def __init__(self, root, layout_dir):
        self.root = Path(root).resolve()
        self.layout = tomllib.loads((Path(layout_dir) / "layout.toml").read_text(encoding="utf-8"))
        layout = self.layout
        kaiwu_path = self.root / "kaiwu.json"
        try:
            self.kaiwu = json.loads(kaiwu_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PlatformError(f"{kaiwu_path} is missing or does not parse ({exc})") from None
        version = str(self.kaiwu.get("version", ""))
        if self.kaiwu.get("project_code") != layout["project_code"] or not any(
                version.startswith(v) for v in layout["versions"]):
            raise PlatformError(f"kaiwu.json names project {self.kaiwu.get('project_code')!r} version {version!r}; "
                                f"this is the framework of {layout['project_code']} {layout['versions']}")
        policy = _table(_toml(self.root / layout["policy_conf"], "the app conf"), layout["policy_table"])
        if policy is None or not isinstance(policy.get("algo"), str):
            raise PlatformError(f"{layout['policy_conf']} has no [{layout['policy_table']}] table with algo")
        self.algo = policy["algo"]
        self.folder = layout["folder_prefix"] + self.algo
        registry = _toml(self.root / layout["algo_conf"], "the algorithm conf")
        entry = registry.get(self.algo)
        if not isinstance(entry, dict):
            raise PlatformError(f"algo = {self.algo!r} but {layout['algo_conf']} has no [{self.algo}] table (it has "
                                f"{sorted(registry)})")
        self.entry = entry
        for key, value in layout["registration"].items():
            want = value.format(folder=self.folder, algo=self.algo)
            if entry.get(key) != want:
                raise PlatformError(f"[{self.algo}] of {layout['algo_conf']} says {key} = {entry.get(key)!r}; the "
                                    f"platform needs {want!r}")
        if not (self.root / self.folder / "agent.py").is_file():
            raise PlatformError(f"algo = {self.algo!r} but {self.folder}/agent.py is missing")
        self.app = _table(_toml(self.root / layout["app_conf"], "the configuration"), layout["app_table"])
        if self.app is None:
            raise PlatformError(f"{layout['app_conf']} has no [{layout['app_table']}] table")
        self.preload = self.app.get("preload_model", False)
        if not isinstance(self.preload, bool):
            raise PlatformError(f"preload_model = {self.preload!r} must be true or false")
        if self.preload:
            text = str(self.app.get("preload_model_dir", ""))
            self.preload_dir = self.root / text.replace("{agent_name}", self.folder)
            self.preload_id = _integer(self.app.get("preload_model_id"), "preload_model_id")
            if text.startswith("/") or not (self.preload_dir / f"model.ckpt-{self.preload_id}.pkl").is_file():
                raise PlatformError(f"preload model file failed: {text}/model.ckpt-{self.preload_id}.pkl (in "
                                    f"{self.preload_dir}) is not valid: no such file in the code package")


# ---------------------------------------------------------------------------------------------- imports
@contextlib.contextmanager
def imported_package(path_entry, names):
    """Import with ``path_entry`` first on ``sys.path`` (no bytecode written); afterwards the modules of ``names``
    imported meanwhile are dropped from ``sys.modules`` (earlier ones restored)."""
    saved_path, bytecode = list(sys.path), sys.dont_write_bytecode
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in names}
    for key in saved:
        del sys.modules[key]
    sys.path.insert(0, str(path_entry))
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = bytecode
        for key in [k for k in sys.modules if k.split(".")[0] in names]:
            del sys.modules[key]
        sys.modules.update(saved)


@contextlib.contextmanager
def working_folder(path):
    """The platform's processes run in the code package's folder (relative paths, as ``read_usr_conf``'s, start
    there)."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _attribute(dotted):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise PlatformError(f"cannot import {dotted} ({type(exc).__name__}: {exc})") from None


def agent_class(upload, key="actor_agent"):
    """The Agent class of the registry entry, checked (call inside :func:`imported_package`)."""
    from kaiwudrl.interface.agent import BaseAgent

    cls = _attribute(upload.entry[key])
    if not isinstance(cls, type) or not issubclass(cls, BaseAgent):
        raise PlatformError(f"{upload.entry[key]} is not a subclass of kaiwudrl.interface.agent.BaseAgent")
    missing = [m for m in AGENT_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise PlatformError(f"the Agent {upload.entry[key]} lacks {', '.join(missing)}; the platform calls them")
    return cls


# ---------------------------------------------------------------------------------------------- samples
def flatten(sample):
    """One sample -> float32 vector by the lengths its class declares (PlatformError when it breaks them)."""
    dims = getattr(type(sample), "FIELD_DIMS", None)
    if not dims:
        raise PlatformError(f"{type(sample).__name__} declares no field lengths; make SampleData with create_cls and "
                            "integer values (the framework flattens samples by them)")
    parts = []
    for name, size in dims.items():
        value = np.asarray(getattr(sample, name), dtype=np.float32).reshape(-1)
        if value.size != size:
            raise PlatformError(f"{type(sample).__name__}.{name} has {value.size} values; the class declares {size}")
        parts.append(value)
    return type(sample), np.concatenate(parts)


def unflatten(cls, array):
    """The learner's side: a flat vector back into a sample of ``cls`` (float32 arrays of the declared lengths)."""
    fields, start = {}, 0
    for name, size in cls.FIELD_DIMS.items():
        fields[name] = array[start:start + size].copy()
        start += size
    return cls(**fields)


# ---------------------------------------------------------------------------------------------- a training task
class _Stop(Exception):
    """The task is over (the platform stops the workflow's process)."""


class _Env:
    """The task's view of the environment: counts games, advances the clock, stops the task when it is done."""

    def __init__(self, env, task, episodes, saves, max_episodes, step_seconds):
        self.env, self.task = env, task
        self.episodes, self.saves, self.max_episodes, self.step_seconds = episodes, saves, max_episodes, step_seconds
        self.started = self.ended = 0

    def reset(self, usr_conf=None):
        if (self.ended >= self.episodes and len(self.task.saves) >= self.saves) or self.started >= self.max_episodes:
            raise _Stop
        self.started += 1
        return self.env.reset(usr_conf)

    def step(self, act):
        if isinstance(act, bool) or not isinstance(act, (int, np.integer)) or not 0 <= int(act) < N_ACTIONS:
            raise PlatformError(f"env.step got {act!r}; the action is an int 0..{N_ACTIONS - 1}")
        self.task.clock.advance(self.step_seconds)
        env_reward, env_obs = self.env.step(int(act))
        if isinstance(env_obs, dict) and (env_obs.get("terminated") or env_obs.get("truncated")):
            self.ended += 1
        return env_reward, env_obs


class TrainingTask:
    """One training task of the platform on an upload (module docstring).

    :param upload: the :class:`Upload`.
    :param task_dir: a folder of the task's own (the learner's saves, the saved models).
    :param overrides: settings of ``configure_app.toml`` replaced for this task (as ``train_test.py`` does).
    """

    def __init__(self, upload, task_dir, *, overrides=None, seed=0):
        self.upload = upload
        defaults = {"replay_buffer_capacity": 10000, "train_batch_size": 2048, "dump_model_freq": 100}
        self.app = {**defaults, **upload.app, **(overrides or {})}
        self.task_dir = Path(task_dir)
        self.log, self.clock = Log(), Clock()
        self.monitor = Monitor(self.log)
        self.rng = random.Random(seed)
        self.limits = upload.layout["platform"]
        self.saves, self.buffer, self.pending = [], [], 0
        self.samples = self.bad_samples = self.train_count = 0
        self.sample_cls = None
        self.pool = None  # (folder, id) of the model pool's newest model
        self.actor_model = None  # the id the actor loaded last
        self.user_dir = self.task_dir / "user_ckpt" / f"{upload.layout['project_code']}_{upload.algo}"
        self.pool_dir = self.task_dir / "model_pool"

    # the aisrv's Agent: what its calls do on the platform
    def send_sample_data(self, list_sample_data):
        for sample in list_sample_data or []:
            try:
                cls, array = flatten(sample)
            except PlatformError as exc:
                self.bad_samples += 1
                self.log.error(f"send_sample_data: {exc}; the sample is dropped")
                continue
            self.sample_cls = cls
            self.samples += 1
            self.buffer.append(array)
            self.pending += 1
        del self.buffer[:-int(self.app["replay_buffer_capacity"])]
        batch = int(self.app["train_batch_size"])
        while self.pending >= batch and self.buffer:
            self.pending -= batch
            self.learner.learn([unflatten(self.sample_cls, self.rng.choice(self.buffer)) for _ in range(batch)])
            self.train_count += 1
            if self.train_count % int(self.app["dump_model_freq"]) == 0:
                self.learner.save_model(path=str(self.pool_dir), id=self.train_count)
                self.pool = (self.pool_dir, self.train_count)

    def _aisrv_save_model(self, path=None, id=None):
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
        self.learner.save_model(path=str(self.user_dir), id=id)
        self.saves.append({"id": id, "time": self.clock.monotonic(), "model_dir": str(self._saved_model(id))})
        return None

    def _aisrv_load_model(self, path=None, id="latest"):
        if self.pool is not None and self.pool[1] != self.actor_model:
            self.actor.load_model(path=str(self.pool[0]), id=self.pool[1])
            self.actor_model = self.pool[1]

    def _saved_model(self, id):
        """The model the platform builds from a save: the package's code folders and ckpt/."""
        target = self.task_dir / "models" / f"model_{id}"
        files = sorted(self.user_dir.glob(f"model.ckpt-{id}.*"))
        if not files:
            raise PlatformError(f"save_model(path, id) wrote no {self.user_dir}/model.ckpt-{id}.* file")
        if target.exists():  # the same step saved again (no training in between): the newer save replaces it
            shutil.rmtree(target)
        for entry in self.upload.root.iterdir():
            if entry.is_dir() and not entry.name.startswith(".") and entry.name != "ckpt":
                shutil.copytree(entry, target / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
            elif entry.is_file():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(entry, target / entry.name)
        (target / "ckpt").mkdir(parents=True)
        for path in files:
            shutil.copy2(path, target / "ckpt" / path.name)
        (target / "ckpt" / "kaiwu.json").write_text(json.dumps({
            "train_step": id, "algorithm": self.upload.algo, "project_code": self.upload.layout["project_code"],
            "project_version": self.upload.kaiwu.get("version"), "model_file_name": f"model.ckpt-{id}.pkl",
            "model_file_path": [f"ckpt/model.ckpt-{id}.pkl"]}), encoding="utf-8")
        (target / "ckpt" / "id_list").write_text(f"all id list\nmodel.ckpt-{id}\n", encoding="utf-8")
        return target

    def run(self, env, *, episodes=3, saves=2, max_episodes=50, step_seconds=1.0):
        """Run the upload's workflow on ``env`` (the platform's env interface) until ``episodes`` games have ended
        and ``saves`` models were saved, or ``max_episodes`` started; returns a report (plain data)."""
        upload, report = self.upload, {"crashed": None}
        with imported_package(upload.root, {upload.folder, "conf"}), working_folder(upload.root):
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
                       "errors": self.log.errors,
                       "log": [f"{level} {message}" for level, message in self.log.lines[-200:]],
                       "clock_s": self.clock.monotonic(), "actor_synced_to": self.actor_model,
                       "monitor_reports": len(self.monitor.data), "monitor_keys": sorted(self.monitor.keys),
                       "panel_metrics": self.monitor.panel})
        return report

    def _run(self, env, episodes, saves, max_episodes, step_seconds, report):
        upload = self.upload
        cls = {role: agent_class(upload, f"{role}_agent") for role in ("learner", "actor", "aisrv")}
        workflow = _attribute(upload.entry["train_workflow"])
        self.monitor.read_panel(f"{upload.folder}.conf.monitor_builder")
        module = sys.modules[workflow.__module__]
        if hasattr(module, "time"):
            module.time = self.clock
        self.learner, self.actor, self.aisrv = (
            cls[role](agent_type="player", device="cpu", logger=self.log, monitor=self.monitor)
            for role in ("learner", "actor", "aisrv"))
        aisrv = self.aisrv
        aisrv.framework = self
        aisrv.predict = self.actor.predict  # the aisrv asks the actor
        aisrv.learn = self.send_sample_data  # on the aisrv, learn sends the samples
        aisrv.save_model = self._aisrv_save_model
        aisrv.load_model = self._aisrv_load_model
        if upload.preload:
            for agent in (self.learner, self.actor):
                agent.load_model(path=str(upload.preload_dir), id=upload.preload_id)
            self.train_count = upload.preload_id
            self.actor_model = upload.preload_id
        self.env = _Env(env, self, episodes, saves, max_episodes, step_seconds)
        report["workflow_returned"] = repr(workflow(envs=[self.env], agents=[aisrv], logger=self.log,
                                                    monitor=self.monitor))


# ---------------------------------------------------------------------------------------------- evaluation
def load_saved_model(model_dir, layout_dir, log):
    """The Agent of a saved model (its code folders and ``ckpt/``), made from its registry entry and given its
    weights with ``load_model(<model>/ckpt, <id>)``, then the preload keys of its conf played (module docstring);
    returns ``(agent, upload)``. Call inside
    :func:`imported_package` with ``model_dir`` and the upload's folder names."""
    model_dir = Path(model_dir)
    info = json.loads((model_dir / "ckpt" / "kaiwu.json").read_text(encoding="utf-8"))
    upload = Upload(model_dir, layout_dir) if (model_dir / "conf").is_dir() else None
    if upload is None:
        raise PlatformError(f"the saved model {model_dir} holds no conf/ folder")
    if info["algorithm"] != upload.algo:
        raise PlatformError(f"the saved model is of the algorithm {info['algorithm']!r}, its conf selects "
                            f"{upload.algo!r}")
    agent = agent_class(upload)(agent_type="player", device="cpu", logger=log, monitor=None)
    agent.load_model(path=str(model_dir / "ckpt"), id=int(info["train_step"]))
    if upload.preload:  # after the model to evaluate, as the platform's actor plays them
        agent.load_model(path=str(upload.preload_dir), id=upload.preload_id)
    return agent, upload


def action_of(result):
    """What ``exploit`` returned, as the env's action: an int 0..15, or a list or tuple holding one."""
    value = result[0] if isinstance(result, (list, tuple)) and len(result) == 1 else result
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < N_ACTIONS:
        raise PlatformError(f"exploit(env_obs) returned {result!r}; the evaluation needs the action: an int "
                            f"0..{N_ACTIONS - 1} (or a list holding one)")
    return int(value)


def evaluate(agent, env, usr_conf=None, episodes=None):
    """The platform's evaluation loop (module docstring) on ``env`` until ``env.reset`` returns None or ``episodes``
    games are played; returns ``{"games", "steps", "scores"}``."""
    games, steps, scores = 0, 0, []
    while episodes is None or games < episodes:
        env_obs = env.reset(usr_conf)
        if env_obs is None:
            break
        agent.reset(env_obs)
        score, done = 0.0, False
        while not done:
            shown = pickle.dumps(env_obs)
            action = action_of(agent.exploit(env_obs))
            if pickle.dumps(env_obs) != shown:
                raise PlatformError("exploit(env_obs) changed the env_obs it was given; the platform's loop keeps "
                                    "its own observation: copy what you change")
            env_reward, env_obs = env.step(action)
            score += float((env_reward or {}).get("reward") or 0.0)
            steps += 1
            done = bool(env_obs["terminated"] or env_obs["truncated"])
        games += 1
        scores.append(score)
    return {"games": games, "steps": steps, "scores": scores}
