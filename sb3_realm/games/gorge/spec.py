"""Gorge Chase (峡谷追猎, 2026) as the shared layers see it: its :class:`~sb3_realm.games.spec.GameSpec`."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np

from ..spec import Env, Episodes, Evaluation, ExpertOptions, Experts, GameSpec, Maps, Results, Submission, Success
from . import features, protocol, search
from .env import GorgeEnv, env_spaces, shipped_map
from .experts.planner import PlannerPolicy
from .experts.scripted import ScriptedPolicy
from .experts.search import CeilingPolicy, SearchedPolicy, SearchPolicy
from .maps import GorgeMap, load_map
from .observation import GorgeCompetitionEnv
from .protocols import (
    PROTOCOLS,
    SHIPPED_MAPS,
    SUCCESS_METRICS,
    check_eval_configs,
    describe_protocol,
    episode_metrics,
    evaluate_args,
    held_out_configs,
    protocol_configs,
    random_starts,
    report_lines,
    result_details,
    summarize,
    survived,
    worst_table,
)
from .render import plot_route, record_step
from .rewards import REWARD_RANGES, TERMS, RewardWeights
from .rules import DIRECTIONS, SETTINGS, USR_CONF_KEYS, GorgeConfig, Rules

__all__ = ["SPEC", "open_map", "same_map", "training_variants"]


def training_variants(config: GorgeConfig, counts: Sequence[int]) -> list[dict]:
    """The training games imitation draws from: the configuration with each treasure count of ``counts``
    (``imitation.treasure_counts``; none: its own ``treasure_count``), the treasures placed from the env seed."""
    return [config.training_usr_conf(int(count)) for count in (counts or [config.treasure_count])]



def same_map(a: GorgeMap, b: GorgeMap) -> bool:
    """Two maps have the same road cells (whatever their names)."""
    return a.walkable.shape == b.walkable.shape and bool(np.array_equal(a.walkable, b.walkable))


def open_map(name: str) -> bool:
    """A map name the env reads from the folder of the open maps (``maps_dir``): ``open_<k>``, the platform's map
    ``k`` (``gorge_chase_map_<k>.json``)."""
    return name.startswith("open_") and name[5:].isdigit()


def _no_setting(name: str, value, label: str):
    raise ValueError(f"{label} = {value!r}: Gorge Chase's scripted expert has no search settings; remove it")


def planner_choices(vectors: np.ndarray) -> np.ndarray:
    """The planner's choice that the features' vectors ``(N, VECTOR_SIZE)`` carry (the one-hot at
    ``PER_ACTION * a + 9``), -1 where a vector holds none."""
    vectors = np.asarray(vectors)
    per_action = features.PER_ACTION
    chosen = vectors[:, 9:per_action * features.N_ACTIONS:per_action]  # (N, N_ACTIONS)
    return np.where(chosen.max(axis=1) > 0.5, chosen.argmax(axis=1), -1).astype(np.int64)


#: the scripted expert labels for imitation as it plays: one tie rule (its own) and no search settings
EXPERT_OPTIONS = ExpertOptions(
    tie_breaks=("index",),
    settings=(),
    defaults={},
    refined="scripted",
    check_setting=_no_setting,
    configure=lambda policy, tie_break, settings: None,
    start_searches=lambda policy, searches: None,
    new_searches=lambda policy: {},
    suggested_actions=planner_choices,
)

SPEC = GameSpec(
    name="gorge",
    title="Gorge Chase",
    maps=Maps(
        builtin={name: partial(shipped_map, name) for name in ("default", *SHIPPED_MAPS)},
        load=load_map,
        same=same_map,
        competition_file="gorge_chase_map_<k>.json",
        in_folder=open_map,
        folder_variable="SB3_REALM_GORGE_MAPS",
    ),
    episodes=Episodes(
        config=GorgeConfig,
        usr_conf_keys=USR_CONF_KEYS,
        rules=Rules,
        directions=DIRECTIONS,
        max_treasures=10,
        random_starts=random_starts,
        training_variants=training_variants,
    ),
    env=Env(
        ids={"sb3_realm/GorgeChase-v0": {}},
        entry_point="sb3_realm.games.gorge.env:GorgeEnv",
        make=GorgeEnv,
        spaces=env_spaces,
        reward_weights=RewardWeights,
        reward_terms=TERMS,
        reward_ranges=REWARD_RANGES,
        episode_metrics=episode_metrics,
        success_metrics=SUCCESS_METRICS,
        extractor="gorge",
        options=frozenset({"map_names", "maps_dir"}),
    ),
    evaluation=Evaluation(
        protocols=PROTOCOLS,
        configs=protocol_configs,
        describe=describe_protocol,
        check_configs=check_eval_configs,
        held_out_configs=held_out_configs,
        held_out_protocol="maps",
        evaluate_args=evaluate_args,
        yardstick="scripted",
        # a game ends at max_step unless the monsters catch the hero: surviving is reaching its end
        success=Success(rate="survival_share", count="survived", reached="survived", verb="survived", of_game=survived),
    ),
    results=Results(
        details=result_details,
        summarize=summarize,
        report_lines=report_lines,
        worst_table=worst_table,
        record_step=record_step,
        plot_route=plot_route,
    ),
    experts=Experts({"scripted": ScriptedPolicy, "planner": PlannerPolicy, "search": SearchPolicy,
                     "ceiling": CeilingPolicy}, options=EXPERT_OPTIONS,
                    # the experts may flash and take the buff (sb3-realm eval --no-flash, --no-buff)
                    play_options={"use_flash": True, "use_buff": True}),
    submission=Submission(
        features=features,
        feature_version_note="version 2: the observation-only planner runs inside the features (9 x 33 x 33 maps, "
                             "202 numbers)",
        layouts=("gorge15",),
        protocol_file=Path(protocol.__file__),
        competition_env=GorgeCompetitionEnv,
        parity_treasure_counts=(),
        search=search,
        searched=SearchedPolicy,
    ),
    config_dir="configs/gorge",
    settings=SETTINGS,
)
