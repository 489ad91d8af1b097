"""Back to the Realm (重返秘境, 2024) as the shared layers see it: its :class:`~sb3_realm.games.spec.GameSpec`."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from ..spec import Env, Episodes, Evaluation, ExpertOptions, Experts, GameSpec, Maps, Results, Submission, Success
from . import features, protocol
from .core import DIRECTIONS
from .env import BUILTIN_MAPS, ENV_IDS, RealmEnv, env_spaces
from .experts.adapter import OracleAdapter, configure_expert, new_searches, start_searches
from .experts.expert import TIE_BREAKS
from .experts.refine import REFINE_SETTINGS, RefinedOraclePolicy, check_setting
from .maps import load_map, same_map
from .observation import CompetitionEnv
from .protocols import (
                        PROTOCOLS,
                        SLOTS,
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
                        won,
                        worst_table,
)
from .render import plot_route, record_step
from .rewards import REWARD_RANGES, TERMS, RewardWeights
from .rules import USR_CONF_KEYS, EpisodeConfig, Rules

__all__ = ["SPEC", "training_variants"]


def training_variants(config: EpisodeConfig, counts: Sequence[int]) -> list[dict]:
    """The training games imitation draws from: a fresh game of each treasure count of ``counts``
    (``imitation.treasure_counts``; none: the configuration's own ``treasure_num``), its treasures drawn from the env
    seed."""
    return [config.training_usr_conf(int(count)) for count in (counts or [config.treasure_num])]


SPEC = GameSpec(
    name="realm",
    title="Back to the Realm",
    maps=Maps(
        builtin=BUILTIN_MAPS,
        load=load_map,
        same=same_map,
        competition_file="realm_map_1.json",
    ),
    episodes=Episodes(
        config=EpisodeConfig,
        usr_conf_keys=USR_CONF_KEYS,
        rules=Rules,
        # action k % 8 walks DIRECTIONS[k] (unit vectors in world x, z; +z is action 2), one cell per axis at most
        directions=tuple((round(dx), round(dz)) for dx, dz in DIRECTIONS),
        max_treasures=len(SLOTS),
        random_starts=random_starts,
        treasure_sets=True,
        training_variants=training_variants,
    ),
    env=Env(
        ids=ENV_IDS,
        entry_point="sb3_realm.games.realm.env:RealmEnv",
        make=RealmEnv,
        spaces=env_spaces,
        reward_weights=RewardWeights,
        reward_terms=TERMS,
        reward_ranges=REWARD_RANGES,
        episode_metrics=episode_metrics,
        success_metrics=SUCCESS_METRICS,
        extractor="realm",
        options=frozenset({"mask_wall_moves"}),
    ),
    evaluation=Evaluation(
        protocols=PROTOCOLS,
        configs=protocol_configs,
        describe=describe_protocol,
        check_configs=check_eval_configs,
        held_out_configs=held_out_configs,
        held_out_protocol="leaderboard",
        evaluate_args=evaluate_args,
        yardstick="oracle",
        success=Success(rate="win_rate", count="wins", reached="reached_end", verb="won", of_game=won),
    ),
    results=Results(
        details=result_details,
        summarize=summarize,
        report_lines=report_lines,
        worst_table=worst_table,
        record_step=record_step,
        plot_route=plot_route,
    ),
    experts=Experts(
        {"oracle": partial(OracleAdapter, refined=False), "oracle-refined": partial(OracleAdapter, refined=True)},
        options=ExpertOptions(
            tie_breaks=TIE_BREAKS,
            settings=tuple(REFINE_SETTINGS),
            defaults={name: getattr(RefinedOraclePolicy, name) for name in REFINE_SETTINGS},
            refined="oracle-refined",
            check_setting=check_setting,
            configure=configure_expert,
            start_searches=start_searches,
            new_searches=new_searches,
        ),
        # the oracle may flash and take the buff (sb3-realm eval --no-flash, --no-buff)
        play_options={"use_flash": True, "use_buff": True},
    ),
    submission=Submission(
        features=features,
        feature_version_note="version 2: buff_pos is null while the buff is taken, as on the platform",
        layouts=("kaiwu2024",),
        protocol_file=Path(protocol.__file__),
        competition_env=CompetitionEnv,
        parity_treasure_counts=tuple(range(1, len(SLOTS) + 1)),
    ),
    config_dir="configs/realm",
)
