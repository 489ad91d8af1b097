"""The platform's Agent for a Gorge Chase policy exported by ``sb3-realm build-submission``.

``exploit(env_obs)`` is what the platform's evaluation calls once per step with the raw ``env_obs``: the features
(``feature/features.py``, the module the policy trained on, copied verbatim) -> the greedy action, exactly as
``model.predict(obs, deterministic=True)`` chose it in training. ``predict`` samples from the same distribution
(exploration in a training task). The features remember the map seen so far: one Agent plays one game at a time, and
its memory restarts at ``reset(env_obs)`` and at every observation of step 0.

The exported weights (``ckpt/model.ckpt-<CKPT_ID>.pkl`` in this folder, the preload folder ``{agent_name}/ckpt``)
are loaded when the Agent is made; ``load_model(path, id)`` loads any saved id (``"latest"``: the highest there).
``learn`` keeps the weights unless the package was built for fine-tuning (``algorithm/algorithm.py``).
``save_model`` writes a plain CPU state dict whose bytes depend on the weights only, and its ``.sha256``;
``load_model`` checks a file against its ``.sha256``, or against the manifest for the exported file itself.

The preload never replaces a model being evaluated. The conf's preload keys travel in every saved model, and so does
their file (the exported weights, in this folder's ``ckpt/``): where the platform plays them after loading the model
to evaluate, the exported weights would replace the save's. So once a ``load_model`` call has given this Agent
weights (a save's: fine-tuned ones, or the exported ones again), a later ``load_model`` of the preload's file
(``model.ckpt-<CKPT_ID>.pkl`` with the manifest's checksum) is skipped, with a log line. The preload of a training
task, the first call, loads it as always.

A package built with ``--search STEPS`` records the search's settings in ``model/spec.json`` and carries
``feature/search.py``: ``exploit()`` then runs that rollout search around the network's action (each call plays at
most STEPS world steps of rollouts; the same observations give the same actions). ``predict`` stays the network's.

Threads: one intra-op and one inter-op torch thread, as the official agents set them (the platform runs many
processes on a machine's cores). Torch takes the inter-op setting once per process (a second call raises, and on
torch < 2.1 aborts the process), so it is set only where it differs: a second Agent keeps it.
"""

import sys

import torch
from kaiwudrl.interface.agent import BaseAgent

from agent_diy.algorithm.algorithm import Algorithm
from agent_diy.conf.conf import SPEC, Config
from agent_diy.feature.definition import ActData, ObsData
from agent_diy.feature.features import FeatureState, action_mask, encode

try:  # only a package built with --search carries the search (imported with the package, as its other modules)
    from agent_diy.feature.search import ObservationSearch
except ImportError:
    ObservationSearch = None
from agent_diy.model.model import Model
from agent_diy.model.policy import Acting
from agent_diy.model.weights import is_exported, read_state, save_state, weights_file

INTEROP_THREADS = 1  # torch's inter-op threads (set once per process)


class Agent(BaseAgent):
    def __init__(self, agent_type="player", device=None, logger=None, monitor=None):
        # one torch thread of each kind, as the official agents set them: the platform runs many processes on a
        # machine's cores
        torch.set_num_threads(1)
        if torch.get_num_interop_threads() != INTEROP_THREADS:  # a second call aborts the process on torch < 2.1
            try:
                torch.set_num_interop_threads(INTEROP_THREADS)
            except RuntimeError:  # set once per process (or parallel work began): the setting in force stays
                pass
        self.logger = logger
        self.monitor = monitor
        self.torch_device = torch.device(device if isinstance(device, (str, torch.device)) else "cpu")
        self.model = Model(SPEC).to(self.torch_device)
        self.model.eval()
        self.algorithm = Algorithm(self.model, self.torch_device, logger)
        self.memory = FeatureState()  # what the features remember of this game
        self.search = None  # the rollout search around the network's action, where the package carries one
        if SPEC.get("search"):
            if ObservationSearch is None:
                raise RuntimeError("Agent: model/spec.json asks for the search, but feature/search.py is missing; "
                                   "build the package again with build-submission --search STEPS")
            self.search = ObservationSearch(agent=self.memory.planner, **SPEC["search"])
        self.acting = Acting(self.model, self.torch_device)
        self.last_action = -1
        self.loaded = None  # the file of the weights in use
        self.own_weights = None  # the file whose weights a load_model call gave (a save's)
        self.generator = torch.Generator().manual_seed(Config.SEED)
        super().__init__(agent_type, device, logger, monitor)
        exported = weights_file(Config.CKPT_DIR, Config.CKPT_ID)
        if exported.is_file():
            self._load_file(exported)
        else:
            self._log("info", f"Agent: no exported weights at {exported}; waiting for load_model")

    def _log(self, level, message):
        if self.logger is not None:
            getattr(self.logger, level)(message)
        elif level in ("warning", "error"):
            print(f"{level.upper()} {message}", file=sys.stderr)

    # ------------------------------------------------------------------------------------------ an episode
    def reset(self, env_obs=None):
        """A new game: the features' memory, the LSTM state and the last action restart."""
        self.memory.reset()
        self.acting.lstm_state = None
        self.last_action = -1

    def observation_process(self, env_obs):
        """Raw ``env_obs`` -> ``(ObsData, remain_info)``: the model input (maps uint8 (9, 33, 33), vector float32
        (202,)), the legal actions (the features' mask) and whether the game starts here; ``remain_info`` holds the
        step number. Call it once per observation, in order (the features remember what they saw)."""
        observation = env_obs["observation"]
        start = int(observation["step_no"]) == 0
        if start:
            self.memory.reset()
        maps, vector = encode(observation, self.memory)
        obs_data = ObsData(maps=maps, vector=vector, legal_action=action_mask(observation, self.memory),
                           episode_start=start)
        return obs_data, {"step_no": int(observation["step_no"])}

    # ------------------------------------------------------------------------------------------ acting
    @property
    def lstm_state(self):
        """The LSTM state carried between the steps of one game (None: a fresh one)."""
        return self.acting.lstm_state

    def _probs(self, list_obs_data):
        if self.loaded is None:
            raise RuntimeError(f"Agent: no weights loaded: ckpt/model.ckpt-{Config.CKPT_ID}.pkl is not in the "
                               "algorithm folder and load_model(path, id) was not called")
        return self.acting.probs(list_obs_data).cpu()

    def predict(self, list_obs_data):
        """One ActData per observation: ``action`` sampled (exploration), ``d_action`` greedy, ``prob``."""
        probs = self._probs(list_obs_data)
        sampled = torch.multinomial(probs, 1, generator=self.generator)[:, 0].tolist()
        greedy = torch.argmax(probs, dim=1).tolist()  # SB3's Categorical.mode: argmax of the probabilities
        return [ActData(action=[a], d_action=[g], prob=p.tolist(), value=[0.0])
                for a, g, p in zip(sampled, greedy, probs.numpy())]  # noqa: B905 (Python 3.8)

    def exploit(self, env_obs):
        """The evaluation's call, once per step with the raw ``env_obs``: the greedy action (an int 0..15)."""
        obs_data, _ = self.observation_process(env_obs)
        act_data = self.predict([obs_data])[0]
        action = self.action_process(act_data, is_stochastic=False)
        if self.search is not None:
            action = self.search.decide(env_obs["observation"], proposal=action)
            self.last_action = action
        return action

    def action_process(self, act_data, is_stochastic=True):
        """ActData -> the env's action (0..7 move, 8..15 flash): the sampled one, or the greedy one."""
        action = int((act_data.action if is_stochastic else act_data.d_action)[0])
        if not 0 <= action < Config.N_ACTIONS:
            raise ValueError(f"action {action} is not an action 0..{Config.N_ACTIONS - 1}")
        self.last_action = action
        return action

    # ------------------------------------------------------------------------------------------ learning
    def learn(self, list_sample_data):
        """Keep the weights (the default), or, built for fine-tuning, one REINFORCE step (algorithm/algorithm.py)."""
        loss = self.algorithm.learn(list_sample_data)
        if loss is not None:
            self.acting.forget()
        return loss

    # ------------------------------------------------------------------------------------------ weights
    def save_model(self, path=None, id="1"):
        """Write ``<path>/model.ckpt-<id>.pkl`` (CPU state dict) and its ``.sha256``, each atomically."""
        target = save_state(self.model, weights_file(path if path is not None else Config.CKPT_DIR, id))
        self._log("info", f"save model {target} successfully")
        return target

    def _load_file(self, target):
        state = read_state(target, Config.CKPT_DIR, Config.MANIFEST, self.torch_device, self._log)
        self.model.load_state_dict(state, strict=True)
        self.model.eval()
        self.acting.forget()
        self.loaded = str(target)
        self._log("info", f"load model {target} successfully")

    def load_model(self, path=None, id="1"):
        """Load ``<path>/model.ckpt-<id>.pkl`` after checking its sha256 (fails loudly on a mismatch); ``id`` may
        be ``"latest"``: the highest id there. The exported weights never replace other weights that an earlier call
        loaded (the preload after the model being evaluated: module docstring)."""
        target = weights_file(path if path is not None else Config.CKPT_DIR, id)
        if self.own_weights is not None and is_exported(target, Config.MANIFEST):
            self._log("info", f"load_model: {target} holds the exported weights (the preload's); this Agent keeps "
                              f"the weights of {self.own_weights}, the model it was given to play")
            return
        self._load_file(target)
        self.own_weights = str(target)
