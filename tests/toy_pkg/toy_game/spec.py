"""The toy game as the shared layers see it: its :class:`~sb3_realm.games.GameSpec` (``TOY_SPEC``, name ``toy``).

One protocol, ``fixed``: the hero starts on the cells of :data:`FIXED_STARTS` in turn (``games`` games, default 4),
with the configured treasures and ``max_step``. A training run's held-out games are that protocol's. Success is
reaching the exit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
from .game import (
    REWARD_RANGES,
    TERMS,
    USR_CONF_KEYS,
    BfsPolicy,
    RewardWeights,
    Rules,
    ToyConfig,
    ToyEnv,
    default_map,
    env_spaces,
    load_map,
    same_map,
)

PROTOCOLS = ("fixed",)
#: the toy platform's layout: its name and its folder (layout.toml, the Agent's template, the stand-in harness.py)
LAYOUT_NAME = "toy_grid"
LAYOUT_FOLDER = Path(__file__).resolve().parent / "platform_layout"
#: the start cells of the ``fixed`` protocol's games, as ``z * 5 + x``: (0, 0), (4, 2), (2, 2), (3, 4)
FIXED_STARTS = (0, 14, 12, 23)
DEFAULT_GAMES = len(FIXED_STARTS)


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int | None = None,
                     custom=None, max_step: int | None = None, maps=None) -> list[dict]:
    del seed  # the env seed of each game comes from it; the starts are fixed
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} for the toy game; choose one of {list(PROTOCOLS)}")
    if custom or maps:
        raise ValueError("the toy game's protocol plays fixed starts: drop --sets and --maps")
    n = DEFAULT_GAMES if games is None else games
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"--games {n!r} must be an integer >= 1")
    overrides = {k: v for k, v in (("treasure_count", treasures), ("max_step", max_step)) if v is not None}
    base = ToyConfig.from_usr_conf(overrides)
    return [{**base.to_usr_conf(), "start": FIXED_STARTS[i % len(FIXED_STARTS)]} for i in range(n)]


def describe_protocol(protocol: str, treasures: int | None) -> str:
    return f"the starts {list(FIXED_STARTS)} in turn with {2 if treasures is None else treasures} treasures"


def check_eval_configs(configs: list) -> list[ToyConfig]:
    parsed = []
    for i, c in enumerate(configs):
        if not isinstance(c, dict):
            raise ValueError(f"configs[{i}] = {c!r} is not a usr_conf dict")
        parsed.append(ToyConfig.from_usr_conf(c))
    return parsed


def held_out_configs(usr_conf: dict, games: int, seed: int, maps: Sequence[str]) -> list[dict]:
    if maps:
        raise ValueError(f"eval_maps = {list(maps)!r}: the toy game plays one map; drop eval_maps")
    config = ToyConfig.from_usr_conf(usr_conf)
    return protocol_configs("fixed", seed=seed, games=games, treasures=config.treasure_count,
                            max_step=config.max_step)


def evaluate_args(usr_confs: Sequence[dict]) -> dict:
    return {"protocol": "fixed", "games": len(usr_confs), "treasures": usr_confs[0]["treasure_count"],
            "max_step": usr_confs[0]["max_step"]}


def training_variants(config: ToyConfig, counts: Sequence[int]) -> list[dict]:
    """The training games imitation draws from: the configuration with each treasure count of ``counts`` (none: its
    own)."""
    return [{**config.to_usr_conf(), "treasure_count": int(count)} for count in (counts or [config.treasure_count])]


def random_starts(config: ToyConfig) -> list[dict]:
    del config
    return [{"start": cell} for cell in default_map().free_cells()]


# ------------------------------------------------------------------------------------------------------ figures
def result_details(info: dict) -> dict:
    """A game's own figures (``GameResult.details``): the exit reached, the treasures taken and those left."""
    return {"reached_exit": bool(info["win"]), "treasures": int(info["treasures"]),
            "treasures_left": len(info["treasures_missed"])}


def reached_exit(game) -> bool:
    """A game (a ``GameResult``) reached the exit, and was not cut short before its end."""
    return bool(game.details.get("reached_exit")) and not game.cut


def summarize(games: Sequence) -> dict:
    n = sum(reached_exit(g) for g in games)
    return {"mean_treasures": float(np.mean([g.details["treasures"] for g in games])),
            "reached_exit": int(n), "exit_share": float(n / len(games)),
            "games_with_missed_treasure": int(sum(g.details["treasures_left"] > 0 for g in games))}


def report_lines(summary: dict, yardstick: str) -> list[str]:
    del yardstick
    return [f"reached the exit {summary['reached_exit']}/{summary['games']} "
            f"({100 * summary['exit_share']:.0f}%) | treasure left in {summary['games_with_missed_treasure']}"]


def worst_table(games: Sequence, worst: int, yardstick: str) -> list[str]:
    lines = [f"{'game':>5} {'score':>7} {'steps':>5} {'tr':>3} {yardstick:>7}  end"]
    for g in sorted(games, key=lambda g: (g.score, g.index))[:worst]:
        yard = f"{g.yardstick_score:7.1f}" if g.yardstick_score is not None else f"{'-':>7}"
        lines.append(f"{g.index:>5} {g.score:7.1f} {g.steps:>5} {g.details['treasures']:>3} {yard}  "
                     f"{'exit' if g.details.get('reached_exit') else 'step limit'}")
    return lines


def episode_metrics(info: dict) -> dict[str, float]:
    out = {"score": float(info["score"]), "steps": float(info["steps"]), "treasures": float(info["treasures"]),
           "exit_rate": float(info["win"])}
    out.update({f"reward_terms/{k}": float(v) for k, v in info.get("episode_reward_terms", {}).items()})
    return out


SUCCESS_METRICS = {"exit_rate": lambda info: float(info["win"]), "score": lambda info: float(info["score"])}


def record_step(episode, env) -> None:
    game = env.unwrapped.game
    episode.route.append((float(game.x), float(game.z)))


def plot_route(episode, env, path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    game_map = env.unwrapped.game_map
    fig, ax = plt.subplots(figsize=(3, 3), dpi=60)
    ax.imshow(np.where(game_map.walls, 0.3, 0.9), cmap="gray", vmin=0, vmax=1)
    if episode.route:
        xs, zs = zip(*episode.route, strict=True)
        ax.plot(xs, zs, "r-o", markersize=3)
    ax.set_title(title, fontsize=6)
    path = Path(path)
    try:
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path


def _no_setting(name: str, value, label: str):
    raise ValueError(f"{label} = {value!r}: the toy game's BFS expert has no search settings; remove it")


#: the BFS expert labels for imitation as it plays: one tie rule (the lowest action) and no search settings
EXPERT_OPTIONS = ExpertOptions(
    tie_breaks=("index",),
    settings=(),
    defaults={},
    refined="bfs",
    check_setting=_no_setting,
    configure=lambda policy, tie_break, settings: None,
    start_searches=lambda policy, searches: None,
    new_searches=lambda policy: {},
)

TOY_SPEC = GameSpec(
    name="toy",
    title="Toy Grid",
    maps=Maps(builtin={"default": default_map}, load=load_map, same=same_map, competition_file="toy_map.json"),
    episodes=Episodes(config=ToyConfig, usr_conf_keys=USR_CONF_KEYS, rules=Rules, directions=features.DIRECTIONS,
                      max_treasures=2, random_starts=random_starts, training_variants=training_variants),
    env=Env(ids={"sb3_realm/ToyGrid-v0": {}}, entry_point="toy_game.game:ToyEnv", make=ToyEnv, spaces=env_spaces,
            reward_weights=RewardWeights, reward_terms=TERMS, reward_ranges=REWARD_RANGES,
            episode_metrics=episode_metrics, success_metrics=SUCCESS_METRICS),
    evaluation=Evaluation(protocols=PROTOCOLS, configs=protocol_configs, describe=describe_protocol,
                          check_configs=check_eval_configs, held_out_configs=held_out_configs,
                          held_out_protocol="fixed", evaluate_args=evaluate_args, yardstick="bfs",
                          success=Success(rate="exit_share", count="reached_exit", reached="reached_exit",
                                          verb="reached the exit in", of_game=reached_exit)),
    results=Results(details=result_details, summarize=summarize, report_lines=report_lines, worst_table=worst_table,
                    record_step=record_step, plot_route=plot_route),
    experts=Experts({"bfs": BfsPolicy}, options=EXPERT_OPTIONS),
    # the toy platform's layout, which the game brings itself (its folder and class: toy_game.layout)
    submission=Submission(features=features, feature_version_note="version 1: the toy game's first features",
                          layouts=(LAYOUT_NAME,), layout_folders={LAYOUT_NAME: LAYOUT_FOLDER}),
    config_dir="",
)
