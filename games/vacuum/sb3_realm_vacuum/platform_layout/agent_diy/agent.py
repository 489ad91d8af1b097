"""The platform's Agent for a robot_vacuum policy exported by ``sb3-realm build-submission`` (13.0.1 code package).

``exploit(env_obs)`` is what the platform's evaluation calls once per step with the raw ``env_obs``: the features
(``feature/features.py``, the module the policy trained on, copied verbatim with its companion modules) -> the greedy
action, exactly as ``model.predict(obs, deterministic=True)`` chose it in training. ``predict`` samples from the same
distribution (exploration in a training task). The features remember the house seen so far: one Agent plays one game
at a time, and its memory restarts at ``reset(env_obs)`` and at every observation of step 0.

The 13.0.1 contract (the official baseline's signatures): ``reset(env_obs)`` takes the game's first ``env_obs``;
``observation_process(env_obs)`` returns ``(ObsData, {})`` and leaves the step's reward in ``self.last_reward`` (the
cells the robot cleaned since the previous observation, times ``Config.REWARD_SCALE``); actions are the 8 moves
0..7.

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
from agent_diy.model.model import Model
from agent_diy.model.policy import Acting
from agent_diy.model.weights import is_exported, read_state, save_state, weights_file

INTEROP_THREADS = 1  # torch's inter-op threads (set once per process)


def _clean_score(observation):
    """The cells the robot has cleaned so far in this game (``env_info.clean_score``; 0 when the frame lacks it)."""
    info = observation.get("env_info") or {}
    try:
        return int(info.get("clean_score") or 0)
    except (TypeError, ValueError):
        return 0


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
        self.acting = Acting(self.model, self.torch_device)
        self.last_action = -1
        self.last_reward = 0.0  # the reward of the last observation processed (13.0.1: not in remain_info)
        self.cleaned = 0  # the robot's cleaned cells at the last observation processed
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
    def reset(self, env_obs):
        """A new game from its first ``env_obs``: the features' memory, the LSTM state, the last action and the
        reward restart."""
        self.memory.reset()
        self.acting.lstm_state = None
        self.last_action = -1
        self.last_reward = 0.0
        self.cleaned = _clean_score(env_obs["observation"]) if isinstance(env_obs, dict) and isinstance(
            env_obs.get("observation"), dict) else 0

    def observation_process(self, env_obs):
        """Raw ``env_obs`` -> ``(ObsData, {})``: the model input (the features' maps uint8 and vector float32), the
        legal actions (the features' mask of 8) and whether the game starts here. The step's reward goes to
        ``self.last_reward``: the cells the robot cleaned since the previous observation, times
        ``Config.REWARD_SCALE`` (0.0 at a game's start). Call it once per observation, in order (the features
        remember what they saw)."""
        observation = env_obs["observation"]
        start = int(observation["step_no"]) == 0
        if start:
            self.memory.reset()
            self.cleaned = 0
        maps, vector = encode(observation, self.memory)
        obs_data = ObsData(maps=maps, vector=vector, legal_action=action_mask(observation, self.memory),
                           episode_start=start)
        cleaned = _clean_score(observation)
        self.last_reward = Config.REWARD_SCALE * float(max(0, cleaned - self.cleaned))
        self.cleaned = cleaned
        return obs_data, {}

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
        """The evaluation's call, once per step with the raw ``env_obs``: the greedy action (an int 0..7)."""
        obs_data, _ = self.observation_process(env_obs)
        act_data = self.predict([obs_data])[0]
        return self.action_process(act_data, is_stochastic=False)

    def action_process(self, act_data, is_stochastic=True):
        """ActData -> the env's action (0..7, a move): the sampled one, or the greedy one."""
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
