"""The platform's Agent for a policy exported by ``sb3-realm build-submission``.

``exploit`` plays greedily, exactly as ``model.predict(obs, deterministic=True)`` did in training; ``predict``
samples from the same distribution (exploration); ``learn`` is a minimal policy-gradient step (REINFORCE on the
discounted returns of ``sample_process``) so the platform's training loop runs; ``save_model`` / ``load_model``
write and read plain CPU state dicts, and ``load_model`` checks the weights' sha256 first.

RecurrentPPO: the LSTM state is carried from step to step and restarts at every episode start (told by the
observation, see ``feature/definition.py``). One state per Agent: games served one after another are fine; games
interleaved step by step on one Agent instance would share it (give each concurrent game its own Agent).
"""

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from kaiwu_agent.agent.base_agent import (
    BaseAgent,
    exploit_wrapper,
    learn_wrapper,
    load_model_wrapper,
    predict_wrapper,
    save_model_wrapper,
)

from ..config import SPEC, Config
from ..feature.definition import ActData
from ..model.model import Model, Trunk


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Agent(BaseAgent):
    def __init__(self, agent_type="player", device=None, logger=None, monitor=None):
        super().__init__(agent_type, device, logger, monitor)
        self.torch_device = torch.device(device if isinstance(device, (str, torch.device)) else "cpu")
        self.model = Model(SPEC).to(self.torch_device)
        self.model.eval()
        self.lstm_state = None
        self.loaded = False
        self.optimizer = None
        self.traced = None  # torch.jit.trace of the stateless trunk, for batch-1 inference
        self.generator = torch.Generator().manual_seed(Config.SEED)
        self.logger = logger

    # ------------------------------------------------------------------------------------------ acting
    def _batch(self, list_obs_data):
        if not self.loaded:
            raise RuntimeError("Agent: call load_model(path, id) before predict/exploit (no weights loaded yet)")
        if self.model.lstm is not None and len(list_obs_data) != 1:
            raise ValueError(f"a recurrent policy acts on one observation at a time (its LSTM state is per game); "
                             f"got {len(list_obs_data)}")
        if len(list_obs_data) == 1:  # the platform's case: no stacking, views of the arrays
            o = list_obs_data[0]
            maps, vector, mask = (torch.from_numpy(np.ascontiguousarray(a)[None])
                                  for a in (o.maps, o.vector, o.legal_action))
        else:
            maps, vector, mask = (torch.from_numpy(np.stack([getattr(o, k) for o in list_obs_data]))
                                  for k in ("maps", "vector", "legal_action"))
        if self.torch_device.type != "cpu":
            maps, vector, mask = maps.to(self.torch_device), vector.to(self.torch_device), mask.to(self.torch_device)
        start = bool(list_obs_data[0].episode_start)
        with torch.no_grad():
            if len(list_obs_data) == 1 and self.torch_device.type == "cpu":
                args = (maps, vector)
                if self.model.lstm is not None:  # the state restarts from zeros at an episode start
                    args += self.model.initial_state(1) if self.lstm_state is None or start else self.lstm_state
                if self.traced is None:
                    self.traced = self._trace(args)
                out = self.traced(*args)
                if self.model.lstm is None:
                    logits = out
                else:
                    logits, self.lstm_state = out[0], (out[1], out[2])
            else:
                logits, self.lstm_state = self.model(maps, vector, self.lstm_state, start)
            probs = self.model.probs(logits, mask)
        return probs

    def _trace(self, example):
        """The batch-1 model traced by TorchScript (same kernels as eager, without the Python overhead); the eager
        module where tracing is missing or fails (it is deprecated in recent torch)."""
        trunk = Trunk(self.model)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", torch.jit.TracerWarning)  # nn.LSTM's shape checks: batch 1 only
                return torch.jit.trace(trunk, example, check_trace=False)
        except Exception:  # noqa: BLE001 - any tracing failure: run eagerly
            return trunk

    @predict_wrapper
    def predict(self, list_obs_data):
        """Sampled actions (exploration), one ActData per observation."""
        probs = self._batch(list_obs_data).cpu()
        acts = torch.multinomial(probs, 1, generator=self.generator)[:, 0].tolist()
        return [ActData(act=a, prob=p) for a, p in zip(acts, probs.numpy(), strict=True)]

    @exploit_wrapper
    def exploit(self, list_obs_data):
        """Greedy actions (evaluation), one ActData per observation."""
        probs = self._batch(list_obs_data).cpu()
        acts = torch.argmax(probs, dim=1).tolist()  # SB3's Categorical.mode: argmax of the probabilities
        return [ActData(act=a, prob=p) for a, p in zip(acts, probs.numpy(), strict=True)]

    # ------------------------------------------------------------------------------------------ learning
    @learn_wrapper
    def learn(self, list_sample_data):
        """One REINFORCE step on samples in play order (returns normalised); returns the loss."""
        if not list_sample_data:
            return None
        if self.optimizer is None:
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=Config.LEARNING_RATE)
        dev = self.torch_device
        maps = torch.as_tensor(np.stack([s.maps for s in list_sample_data]), device=dev)
        vector = torch.as_tensor(np.stack([s.vector for s in list_sample_data]), device=dev)
        mask = torch.as_tensor(np.stack([s.legal_action for s in list_sample_data]), device=dev)
        starts = [bool(s.episode_start) for s in list_sample_data]
        acts = torch.as_tensor([int(s.act) for s in list_sample_data], device=dev)
        ret = torch.as_tensor([float(s.ret) for s in list_sample_data], dtype=torch.float32, device=dev)
        advantage = (ret - ret.mean()) / (ret.std() + 1e-8) if len(list_sample_data) > 1 else ret
        self.model.train()
        log_probs = self.model.log_probs(self.model.sequence_logits(maps, vector, starts), mask)
        loss = -(log_probs.gather(1, acts[:, None])[:, 0] * advantage).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.model.eval()
        self.lstm_state = None
        return float(loss.detach())

    # ------------------------------------------------------------------------------------------ weights
    @staticmethod
    def _file(path, id):
        return Path(path if path is not None else Config.CKPT_DIR) / f"model.ckpt-{id}.pkl"

    @save_model_wrapper
    def save_model(self, path=None, id="1"):
        """Write ``<path>/model.ckpt-<id>.pkl`` (CPU state dict) and its ``.sha256``, each atomically."""
        target = self._file(path, id)
        target.parent.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
        os.close(fd)
        try:
            torch.save(state, tmp)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        side = target.with_name(target.name + ".sha256")
        side_tmp = side.with_name(side.name + ".tmp")
        side_tmp.write_text(_sha256(target) + "\n", encoding="utf-8")
        os.replace(side_tmp, side)
        return str(target)

    def _expected_sha256(self, target):
        if Config.MANIFEST.is_file():
            weights = json.loads(Config.MANIFEST.read_text(encoding="utf-8"))["weights"]
            if Path(weights["file"]).name == target.name:
                return weights["sha256"]
        side = target.with_name(target.name + ".sha256")
        if side.is_file():
            return side.read_text(encoding="utf-8").strip()
        raise RuntimeError(f"load_model: no checksum for {target} (neither in {Config.MANIFEST.name} nor in "
                           f"{side.name}); refusing to load unverified weights")

    @load_model_wrapper
    def load_model(self, path=None, id="1"):
        """Load ``<path>/model.ckpt-<id>.pkl`` after checking its sha256 (fails loudly on a mismatch)."""
        target = self._file(path, id)
        if not target.is_file():
            found = sorted(p.name for p in target.parent.glob("model.ckpt-*.pkl")) if target.parent.is_dir() else []
            raise FileNotFoundError(f"load_model: no weights file {target}; found {found or 'none'} there")
        expected, actual = self._expected_sha256(target), _sha256(target)
        if actual != expected:
            raise RuntimeError(f"load_model: checksum mismatch for {target}: sha256 {actual} but expected {expected}; "
                               "the weights file is corrupt or not the one this package was built with")
        state = torch.load(target, map_location=self.torch_device, weights_only=True)
        self.model.load_state_dict(state, strict=True)
        self.model.eval()
        self.lstm_state = None
        self.loaded = True
