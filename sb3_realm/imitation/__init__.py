"""Imitation of an expert: datasets of expert-labelled states, behaviour cloning into SB3 policies, DAgger.

- :mod:`~sb3_realm.imitation.dataset`: :class:`ExpertDataset` (shards on disk, compact in memory);
- :mod:`~sb3_realm.imitation.blocks`: the states in compact form (:class:`Block`, a game's storage layout);
- :mod:`~sb3_realm.imitation.collect`: games played by the expert or the learner, labelled by the expert, in
  worker processes;
- :mod:`~sb3_realm.imitation.bc`: behaviour cloning into PPO / MaskablePPO policies (:func:`fit`) and
  RecurrentPPO's, episode by episode (:func:`fit_sequences`);
- :mod:`~sb3_realm.imitation.config`: the ``imitation`` section and its game selection;
- :mod:`~sb3_realm.imitation.selection`: which games are labelled and which round is kept (pure functions);
- :mod:`~sb3_realm.imitation.expert`: the expert that labels, as one value (:class:`ExpertSpec`);
- :mod:`~sb3_realm.imitation.records`: what a run records (a round, the run's state, the writer);
- :mod:`~sb3_realm.imitation.dagger`: the whole run, :func:`imitate` (``sb3-realm imitate``).
"""

from .bc import BCStats, action_accuracy, fit, fit_sequences
from .collect import Collector, Rollouts
from .config import ImitateConfig, ImitationConfig, SelectionConfig, load_imitate_config
from .dagger import imitate
from .dataset import Block, DatasetError, ExpertDataset
from .expert import ExpertSpec
from .selection import training_games

__all__ = ["BCStats", "Block", "Collector", "DatasetError", "ExpertDataset", "ExpertSpec", "ImitateConfig",
           "ImitationConfig", "Rollouts", "SelectionConfig", "action_accuracy", "fit", "fit_sequences", "imitate",
           "load_imitate_config", "training_games"]
