"""robot_vacuum (清扫大作战) as sb3_realm's shared layers see it: its :class:`~sb3_realm.games.GameSpec`
(:data:`SPEC`, name ``robot_vacuum``), registered by this package's entry point."""

from __future__ import annotations

from functools import partial

import numpy as np

from sb3_realm.games import (
    Env,
    Episodes,
    Evaluation,
    ExpertOptions,
    Experts,
    GameSpec,
    Maps,
    Results,
    Submission,
    Success,
)

from . import features
from .env import VacuumEnv, env_spaces
from .experts import CoveragePolicy, ObservedPolicy
from .layout import LAYOUT_FOLDER, LAYOUT_NAME
from .maps import VacuumMap, load_map, shipped_map
from .observation import VacuumCompetitionEnv
from .protocols import (
    PROTOCOLS,
    SHIPPED_MAPS,
    SUCCESS_METRICS,
    check_eval_configs,
    completed,
    describe_protocol,
    episode_metrics,
    evaluate_args,
    held_out_configs,
    protocol_configs,
    random_starts,
    report_lines,
    result_details,
    summarize,
    worst_table,
)
from .render import plot_route, record_step
from .rewards import REWARD_RANGES, TERMS, RewardWeights
from .rules import DIRECTIONS, USR_CONF_KEYS, Rules, VacuumConfig

__all__ = ["ENV_ID", "SPEC", "open_map", "planner_choices", "same_map"]

ENV_ID = "sb3_realm/RobotVacuum-v0"


def same_map(a: VacuumMap, b: VacuumMap) -> bool:
    """Two maps have the same road cells and charger spots (whatever their names)."""
    return bool(np.array_equal(a.walkable, b.walkable)) and tuple(a.chargers) == tuple(b.chargers)


def open_map(name: str) -> bool:
    """A map name the env reads from the folder of the platform's maps (``maps_dir``): ``open_<k>``."""
    return name.startswith("open_") and name[5:].isdigit()


def planner_choices(vectors: np.ndarray) -> np.ndarray:
    """The observation-only planner's choice that the features' vectors ``(N, VECTOR_SIZE)`` carry (the one-hot at
    ``PER_ACTION * a + 4``), -1 where a vector holds none."""
    vectors = np.asarray(vectors)
    per = features.PER_ACTION
    chosen = vectors[:, 4:per * features.N_ACTIONS:per]
    return np.where(chosen.max(axis=1) > 0.5, chosen.argmax(axis=1), -1).astype(np.int64)


def _no_setting(name: str, value, label: str):
    raise ValueError(f"{label} = {value!r}: robot_vacuum's experts have no search settings; remove it")


#: the experts label for imitation as they play: one tie rule (their own) and no search settings
EXPERT_OPTIONS = ExpertOptions(
    tie_breaks=("index",),
    settings=(),
    defaults={},
    refined="planner",
    check_setting=_no_setting,
    configure=lambda policy, tie_break, settings: None,
    start_searches=lambda policy, searches: None,
    new_searches=lambda policy: {},
    suggested_actions=planner_choices,
)

SPEC = GameSpec(
    name="robot_vacuum",
    title="Robot Vacuum",
    maps=Maps(
        builtin={name: partial(shipped_map, SHIPPED_MAPS[0] if name == "default" else name)
                 for name in ("default", *SHIPPED_MAPS)},
        load=load_map,
        same=same_map,
        competition_file="robot_vacuum_map_<k>.json",
        in_folder=open_map,
        folder_variable="SB3_REALM_VACUUM_MAPS",
    ),
    episodes=Episodes(config=VacuumConfig, usr_conf_keys=USR_CONF_KEYS, rules=Rules, directions=DIRECTIONS,
                      max_treasures=0, random_starts=random_starts),
    env=Env(
        ids={ENV_ID: {}},
        entry_point="sb3_realm_vacuum.env:VacuumEnv",
        make=VacuumEnv,
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
        yardstick="coverage",
        # an episode ends at max_step unless the battery runs out or an official robot touches the robot
        success=Success(rate="completed_share", count="completed", reached="completed", verb="completed",
                        of_game=completed),
    ),
    results=Results(details=result_details, summarize=summarize, report_lines=report_lines, worst_table=worst_table,
                    record_step=record_step, plot_route=plot_route),
    experts=Experts({"coverage": CoveragePolicy, "planner": ObservedPolicy}, options=EXPERT_OPTIONS),
    submission=Submission(
        features=features,
        feature_version_note="version 1: the observation-only coverage planner runs inside the features (8 x 33 x 33 "
                             "maps, 52 numbers)",
        # the 13.0.1 code package's layout, which the game brings itself (sb3_realm_vacuum.layout)
        layouts=(LAYOUT_NAME,),
        layout_folders={LAYOUT_NAME: LAYOUT_FOLDER},
        competition_env=VacuumCompetitionEnv,
    ),
    config_dir="games/vacuum/configs",
)
