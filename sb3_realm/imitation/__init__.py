"""Imitation of an expert: datasets of expert-labelled states, behaviour cloning into SB3 policies, DAgger.

- :mod:`~sb3_realm.imitation.dataset`: :class:`ExpertDataset` (shards on disk, compact in memory);
- :mod:`~sb3_realm.imitation.collect`: games played by the expert or the learner, labelled by the expert, in
  worker processes;
- :mod:`~sb3_realm.imitation.bc`: behaviour cloning into PPO / MaskablePPO policies (:func:`fit`) and
  RecurrentPPO's, episode by episode (:func:`fit_sequences`);
- :mod:`~sb3_realm.imitation.dagger`: the whole run, :func:`imitate` (``sb3-realm imitate``).
"""

from .bc import BCStats, action_accuracy, fit, fit_sequences
from .collect import Collector, Rollouts
from .dagger import imitate, training_games
from .dataset import Block, DatasetError, ExpertDataset

__all__ = ["BCStats", "Block", "Collector", "DatasetError", "ExpertDataset", "Rollouts", "action_accuracy", "fit",
           "fit_sequences", "imitate", "training_games"]
