"""The platform's Agent for a policy exported by ``sb3-realm build-submission``.

``exploit`` plays greedily, exactly as ``model.predict(obs, deterministic=True)`` did in training; ``predict``
samples from the same distribution (exploration). The exported weights (``ckpt/model.ckpt-<CKPT_ID>.pkl`` beside
this folder) are loaded when the Agent is made, so that an actor can act before the platform's first model sync;
``load_model(path, id)`` loads any saved id (the preload and evaluation directories, the model pool's files).

``learn`` keeps the weights as they are unless the package was built for fine-tuning (``Config.FINETUNE``: a
REINFORCE step on the discounted returns of ``sample_process``). ``save_model`` writes a plain CPU state dict whose
bytes depend on the weights only (the same weights saved twice give the same file) and its ``.sha256``;
``load_model`` checks a file against its ``.sha256``, or against the manifest for the exported file itself.

The preload never replaces a model being evaluated. The platform's actor loads the model to evaluate first and plays
the conf's preload keys after it, and the preload's file (the exported weights, in this folder's ``ckpt/``) travels in
every saved model: so once a ``load_model`` call has given this Agent weights (a save's: fine-tuned ones, or the
exported ones again), a later ``load_model`` of the preload's file (``model.ckpt-<CKPT_ID>.pkl`` with the manifest's
checksum) is skipped, with a log line. The preload of a training task, the first call, loads it as always.

RecurrentPPO: the LSTM state is carried from step to step and restarts at every episode start (told by the
observation, see ``feature/definition.py``). One state per Agent: games served one after another are fine; several
games batched into one ``predict`` call cannot each keep a state, so such a batch acts from a fresh state for every
game, with one log line saying so (``predict_batch_size = 1`` in ``conf/configure_app.toml`` avoids it).
"""

import sys

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
from diy.model.model import Model
from diy.model.policy import Acting, reinforce_step
from diy.model.weights import is_exported, read_state, save_state, weights_file


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
        self.acting = Acting(self.model, self.torch_device)
        self.loaded = None  # the file of the weights in use
        self.own_weights = None  # the file whose weights a load_model call gave (a save's)
        self.optimizer = None
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
    @property
    def lstm_state(self):
        """The LSTM state carried between the steps of one game (None: a fresh one)."""
        return self.acting.lstm_state

    def _batch(self, list_obs_data):
        if self.loaded is None:
            raise RuntimeError(f"Agent: no weights loaded: {Config.CKPT_DIR}/model.ckpt-{Config.CKPT_ID}.pkl is "
                               "missing and load_model(path, id) was not called")
        if len(list_obs_data) != 1 and self.model.lstm is not None and not self.warned_batch:
            self.warned_batch = True
            self._log("warning", f"Agent: a recurrent policy got {len(list_obs_data)} observations in one call; their "
                                 "LSTM states cannot be told apart, so each acts from a fresh state (set "
                                 "predict_batch_size = 1 in conf/configure_app.toml)")
        return self.acting.probs(list_obs_data)

    @predict_wrapper
    def predict(self, list_obs_data):
        """Sampled actions (exploration), one ActData per observation."""
        probs = self._batch(list_obs_data).cpu()
        acts = torch.multinomial(probs, 1, generator=self.generator)[:, 0].tolist()
        return [ActData(act=a, prob=p) for a, p in zip(acts, probs.numpy())]  # noqa: B905 (Python 3.8)

    @exploit_wrapper
    def exploit(self, list_obs_data):
        """Greedy actions (evaluation), one ActData per observation."""
        probs = self._batch(list_obs_data).cpu()
        acts = torch.argmax(probs, dim=1).tolist()  # SB3's Categorical.mode: argmax of the probabilities
        return [ActData(act=a, prob=p) for a, p in zip(acts, probs.numpy())]  # noqa: B905 (Python 3.8)

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
        loss = reinforce_step(self.model, self.optimizer, maps, vector, mask, starts, acts, ret)
        self.acting.forget()
        return loss

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
        self.acting.forget()
        self.loaded = str(target)
        self._log("info", f"load model {target} successfully")

    @load_model_wrapper
    def load_model(self, path=None, id="1"):
        """Load ``<path>/model.ckpt-<id>.pkl`` after checking its sha256 (fails loudly on a mismatch); ``id`` may
        be ``"latest"``: the highest id there. The exported weights never replace other weights that an earlier call
        loaded (the preload after the model being evaluated: module docstring)."""
        target = self._file(path, id)
        if self.own_weights is not None and is_exported(target, Config.MANIFEST):
            self._log("info", f"load_model: {target} holds the exported weights (the preload's); this Agent keeps "
                              f"the weights of {self.own_weights}, the model it was given to play")
            return
        self._load_file(target)
        self.own_weights = str(target)
