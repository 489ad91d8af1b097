"""The trained policy's inference path in plain torch: features network (the package's nets module, copied
verbatim) -> [LSTM] -> policy MLP -> action logits, with the action mask and the greedy choice exactly as
Stable-Baselines3 / sb3-contrib compute them. Weights: a plain CPU ``state_dict`` (``torch.load(weights_only=True)``).
"""

import torch
from torch import nn

from diy.model.nets import NETS, activation_class

HUGE_NEG = -1e8  # sb3-contrib's MaskableCategorical fills masked logits with it


class Model(nn.Module):
    """Built from ``model/spec.json``; ``forward`` gives the logits (B, n_actions) and the LSTM state."""

    def __init__(self, spec):
        super().__init__()
        self.normalize_images = bool(spec["normalize_images"])
        self.masked = bool(spec["masked"])
        self.net = NETS[spec["net"]](spec["maps_shape"], spec["vector_size"], **spec["net_kwargs"])
        width = self.net.features_dim
        self.lstm = None
        if spec.get("lstm"):
            lstm = spec["lstm"]
            self.lstm = nn.LSTM(width, lstm["hidden_size"], num_layers=lstm["num_layers"])
            width = lstm["hidden_size"]
        act = activation_class(spec["activation"])
        layers = []
        for size in spec["pi_layers"]:
            layers += [nn.Linear(width, size), act()]
            width = size
        self.policy_net = nn.Sequential(*layers)
        self.action_net = nn.Linear(width, spec["n_actions"])

    def initial_state(self, batch_size=1):
        """Zero LSTM state (h, c), each (num_layers, B, hidden)."""
        shape = (self.lstm.num_layers, batch_size, self.lstm.hidden_size)
        return torch.zeros(shape), torch.zeros(shape)

    def features(self, maps, vector):
        """(B, C, H, W) uint8 maps, (B, N) float32 vector -> (B, features_dim), as SB3's preprocess_obs + extractor."""
        maps = maps.float()
        if self.normalize_images:
            maps = maps / 255.0
        return self.net(maps, vector.float())

    def forward(self, maps, vector, state=None, episode_start=True):
        """Logits (B, n_actions) and the new LSTM state (None without an LSTM); the state restarts from zeros at an
        episode start."""
        return self.head(self.features(maps, vector), state, episode_start)

    def head(self, x, state=None, episode_start=True):
        """Features -> [LSTM] -> policy MLP -> logits; returns (logits, LSTM state or None)."""
        if self.lstm is not None:
            if state is None or episode_start:
                state = self.initial_state(x.shape[0])
            out, state = self.lstm(x.unsqueeze(0), state)  # (1, B, hidden)
            x = out.squeeze(0)
        return self.action_net(self.policy_net(x)), state


    def sequence_logits(self, maps, vector, episode_starts):
        """Logits (T, n_actions) of one stream of T consecutive steps (several episodes in order), for learning:
        the LSTM state is carried along and restarts at every episode start."""
        x = self.features(maps, vector)
        if self.lstm is None:
            return self.action_net(self.policy_net(x))
        outs, state = [], None
        for t in range(x.shape[0]):
            if state is None or bool(episode_starts[t]):
                state = self.initial_state(1)
            out, state = self.lstm(x[t:t + 1].unsqueeze(0), state)
            outs.append(out[0])
        return self.action_net(self.policy_net(torch.cat(outs)))

    def log_probs(self, logits, mask=None):
        """Normalised log-probabilities, masked as MaskablePPO trained (plain PPO trained without a mask)."""
        logits = logits - logits.logsumexp(dim=-1, keepdim=True)  # torch Categorical(logits=...)
        if self.masked and mask is not None:
            logits = torch.where(mask, logits, torch.tensor(HUGE_NEG, dtype=logits.dtype))
            logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        return logits

    def probs(self, logits, mask=None):
        return torch.softmax(self.log_probs(logits, mask), dim=-1)

    def greedy(self, logits, mask=None):
        """The deterministic action: argmax of the probabilities (SB3's ``Categorical.mode``)."""
        return torch.argmax(self.probs(logits, mask), dim=1)


class Trunk(nn.Module):
    """:class:`Model`'s batch-1 inference as one module for ``torch.jit.trace`` (no Python overhead): the logits of
    a feed-forward policy from ``(maps, vector)``; ``(logits, h, c)`` of a recurrent one from
    ``(maps, vector, h, c)``."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, maps, vector, h=None, c=None):
        x = self.model.features(maps, vector)
        if self.model.lstm is None:
            return self.model.head(x)[0]
        out, (h, c) = self.model.lstm(x.unsqueeze(0), (h, c))  # (1, B, hidden)
        return self.model.action_net(self.model.policy_net(out.squeeze(0))), h, c
