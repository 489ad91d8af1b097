"""The maps a training run trained on: its ``env.map_history`` (:func:`map_history`) and the content of each map
file (:func:`map_digests`), which ``train`` records in the run's config for the training-map guard."""

from __future__ import annotations

from pathlib import Path

from ..evaluation.training_map import env_maps, map_digest, recorded_digests, recorded_env, training_maps
from .config import TrainConfig, config_to_dict

__all__ = ["map_digests", "map_history"]


def _history_entry(name: str) -> str:
    """A map as the history keeps it: a file by its full path (so that it is found from any folder), a name as it
    is."""
    return str(Path(name).resolve()) if Path(name).is_file() else name


def map_history(config: TrainConfig, stored: TrainConfig | None = None) -> list[str]:
    """The maps the run of ``config`` trained on before and no longer names (its ``env.map_history``), the earlier
    ones first, each once: ``stored``'s history and maps (the run's config.yaml, on resume), the history ``config``
    brings, and the maps the model of ``finetune.init_from`` was trained on (a new run from a model); less the maps
    ``config`` names now, which count as training maps anyway. A map trained on is never dropped: it is either in
    the history or among the maps the config names."""
    names: list[str] = []
    if stored is not None:
        names += [*stored.env.map_history, *env_maps(config_to_dict(stored)["env"])]
    names += config.env.map_history
    if stored is None and config.finetune.init_from:
        names += training_maps(config.finetune.init_from, config.game)
    now = {_history_entry(n) for n in env_maps(config_to_dict(config)["env"])}
    return [n for n in dict.fromkeys(_history_entry(n) for n in names) if n not in now]


def map_digests(config: TrainConfig, stored: TrainConfig | None = None) -> dict[str, str]:
    """The content of each map file the run of ``config`` trained on (its full path -> :func:`map_digest`), for the
    training-map guard once a file has moved: the digests ``stored`` (the run's config.yaml, on resume), ``config``
    and the model of ``finetune.init_from`` (a new run from a model) recorded, and those of the map files among
    ``config``'s maps and history that are here now (a file read again replaces its older digest)."""
    digests: dict[str, str] = {}
    if stored is not None:
        digests.update(stored.env.map_digests)
    digests.update(config.env.map_digests)
    if stored is None and config.finetune.init_from:
        digests.update(recorded_digests(recorded_env(str(config.finetune.init_from))))
    for name in (*config.env.map_history, *env_maps(config_to_dict(config)["env"])):
        digest = map_digest(name)
        if digest is not None:
            digests[_history_entry(name)] = digest
    return digests
