"""The platform's Agent for a policy exported by ``sb3-realm build-submission``.

``exploit`` plays greedily, exactly as ``model.predict(obs, deterministic=True)`` did in training; ``predict``
samples from the same distribution (exploration). The exported weights (``ckpt/model.ckpt-<CKPT_ID>.pkl`` beside
this folder) are loaded when the Agent is made, so that an actor can act before the platform's first model sync;
``load_model(path, id)`` loads any saved id (the preload and evaluation directories, the model pool's files).

``learn`` keeps the weights as they are unless the package was built for fine-tuning (``Config.FINETUNE``: a
REINFORCE step on the discounted returns of ``sample_process``). ``save_model`` writes a plain CPU state dict whose
bytes depend on the weights only (the same weights saved twice give the same file) and its ``.sha256``;
``load_model`` checks a file against its ``.sha256``, or against the manifest for the exported file itself.

RecurrentPPO: the LSTM state is carried from step to step and restarts at every episode start (told by the
observation, see ``feature/definition.py``). One state per Agent: games served one after another are fine; several
games batched into one ``predict`` call cannot each keep a state, so such a batch acts from a fresh state for every
game, with one log line saying so (``predict_batch_size = 1`` in ``conf/configure_app.toml`` avoids it).
"""

import sys
import warnings

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
from kaiwu_agent.utils.common_func import attached

from diy.config import SPEC, Config
from diy.feature.definition import ActData
from diy.model.model import Model, Trunk
from diy.model.weights import read_state, save_state, weights_file


@attached
class Agent(BaseAgent):
    def __init__(self, agent_type="player", device=None, logger=None, monitor=None):
        # the platform's base classes differ between its servers; like the official agents, set what is needed here
        self.agent_type = agent_type
        self.device = device
        self.logger = logger
        self.monitor = monitor
        self.torch_device = torch.device(device if isinstance(device, (str, torch.device)) else "cpu")
        self.model = Model(SPEC).to(self.torch_device)
        self.model.eval()
        self.lstm_state = None
        self.loaded = None  # the file of the weights in use
        self.optimizer = None
        self.traced = None  # torch.jit.trace of the stateless trunk, for batch-1 inference
        self.generator = torch.Generator().manual_seed(Config.SEED)
        self.warned_batch = False
        exported = self._file(Config.CKPT_DIR, Config.CKPT_ID)
        if exported.is_file():
            self._load_file(exported)
        else:
            self._log("info", f"Agent: no exported weights at {exported}; waiting for load_model")

    def _log(self, level, message):
        if self.logger is not None:
            getattr(self.logger, level)(message)
        elif level in ("warning", "error"):
            print(f"{level.upper()} {message}", file=sys.stderr)

    # ------------------------------------------------------------------------------------------ acting
    def _batch(self, list_obs_data):
        if self.loaded is None:
            raise RuntimeError(f"Agent: no weights loaded: ckpt/model.ckpt-{Config.CKPT_ID}.pkl is not beside the "
                               "algorithm folder and load_model(path, id) was not called")
        batched = len(list_obs_data) != 1
        if batched and self.model.lstm is not None and not self.warned_batch:
            self.warned_batch = True
            self._log("warning", f"Agent: a recurrent policy got {len(list_obs_data)} observations in one call; their "
                                 "LSTM states cannot be told apart, so each acts from a fresh state (set "
                                 "predict_batch_size = 1 in conf/configure_app.toml)")
        if not batched:  # the platform's case: no stacking, views of the arrays
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
            if batched:  # a fresh LSTM state for each game; the carried state is left as it is
                logits, _ = self.model(maps, vector, None, True)
            elif self.torch_device.type == "cpu":
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
        """Keep the weights (the default), or, built for fine-tuning, one REINFORCE step on the samples (returns
        normalised); returns the loss, or None when nothing was learnt."""
        if not Config.FINETUNE or not list_sample_data:
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
        self.traced = None
        return float(loss.detach())

    # ------------------------------------------------------------------------------------------ weights
    @staticmethod
    def _file(path, id):
        return weights_file(path if path is not None else Config.CKPT_DIR, id)

    @save_model_wrapper
    def save_model(self, path=None, id="1"):
        """Write ``<path>/model.ckpt-<id>.pkl`` (CPU state dict) and its ``.sha256``, each atomically."""
        target = save_state(self.model, self._file(path, id))
        self._log("info", f"save model {target} successfully")
        return target

    def _load_file(self, target):
        state = read_state(target, Config.CKPT_DIR, Config.MANIFEST, self.torch_device, self._log)
        self.model.load_state_dict(state, strict=True)
        self.model.eval()
        self.lstm_state = None
        self.traced = None
        self.loaded = str(target)
        self._log("info", f"load model {target} successfully")

    @load_model_wrapper
    def load_model(self, path=None, id="1"):
        """Load ``<path>/model.ckpt-<id>.pkl`` after checking its sha256 (fails loudly on a mismatch); ``id`` may
        be ``"latest"``: the highest id there."""
        self._load_file(self._file(path, id))
