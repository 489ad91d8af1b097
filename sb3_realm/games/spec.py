"""What the shared layers know of a game: a frozen :class:`GameSpec` of data and a few functions.

A game lives in a folder of its own under ``sb3_realm/games/`` (core, protocol, features, env, experts, render) and
hands the shared layers one ``GameSpec`` (its ``spec.py``), as :mod:`sb3_realm.models.algorithms` hands them an
algorithm. Models, agents, evaluation, training, imitation, export, tuning and the CLI reach a game only through it:
``games.get(config.game)``. This module imports no game.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, Self

import numpy as np

__all__ = [
    "Env",
    "Episodes",
    "Evaluation",
    "ExpertOptions",
    "Experts",
    "GameEnv",
    "GameSpec",
    "Maps",
    "Results",
    "Submission",
    "Success",
    "TermWeights",
]


class GameEnv(Protocol):
    """What the shared layers use of a game's env beyond a Gymnasium env's own methods: the map and the game's state
    that replays, collection and the parity check read, the action mask, the competition's observation, the
    episode's figures (:attr:`Results.details` reads them), and the episode configuration and reward weights a
    curriculum and a reward study set on a running env (through ``env_method``), and the platform's observation
    for a submission's check."""

    game_map: Any  # the map played (``name``, walls, positions)
    game: Any  # the game's state (``step_no``, ``events``, the hero's position ``x``, ``z``, ``config.max_step``)
    rules: Any
    base_config: Any  # the episode configuration (``Episodes.config``) the next reset plays
    metadata: dict[str, Any]
    observation_space: Any
    action_space: Any
    np_random: np.random.Generator

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]: ...

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]: ...

    def render(self) -> Any: ...

    def close(self) -> None: ...

    def action_masks(self, mask_walls: bool | None = None) -> np.ndarray: ...

    def competition_obs(self) -> tuple[Any, Any]: ...

    def episode_summary(self) -> dict[str, Any]: ...

    def set_config(self, **usr_conf: Any) -> None: ...

    def set_reward_weights(self, weights: Any) -> None: ...

    def platform_obs(self) -> dict[str, Any]:
        """The current state as the platform hands it to a submission whose layout's Agent reads the platform's own
        observation (Gorge Chase's ``env_obs`` dict). A game none of whose layouts does (Back to the Realm) need not
        have it."""
        ...


@dataclass(frozen=True)
class TermWeights:
    """Base of a game's reward weights: a frozen dataclass whose fields, in order, are the game's reward terms and
    hold their weights. The game's class adds the fields with their defaults and units."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise ValueError(f"{type(self).__name__}.{f.name} must be a finite number, got {v!r}")

    @classmethod
    def terms(cls) -> tuple[str, ...]:
        """The reward terms, in the order of the fields."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Self:
        """Build from a dict; unknown keys raise ``ValueError`` listing the valid ones."""
        data = dict(data or {})
        unknown = sorted(set(data) - set(cls.terms()))
        if unknown:
            raise ValueError(f"unknown reward weight keys {unknown}; valid keys are {list(cls.terms())}")
        return cls(**data)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    def as_list(self) -> list[float]:
        """The weights in the order of the terms."""
        return [float(getattr(self, t)) for t in self.terms()]


@dataclass(frozen=True)
class ExpertOptions:
    """How imitation sets up a game's shipped experts (the tie rule and the search settings of the planner).

    :param tie_breaks: the expert's rules for exact ties of its cost-to-go; the first is the default.
    :param settings: names of the search settings the ``refined`` expert takes (``imitation.refine_<name>``).
    :param defaults: ``{name: default value}`` of those settings.
    :param refined: the name of the expert that takes them (``imitation.expert``).
    :param check_setting: ``(name, value, label) -> value``: the value as its type, or ``ValueError``.
    :param configure: ``(policy, tie_break, settings) -> None``: sets up a built expert for labelling.
    :param start_searches: ``(policy, searches) -> None``: the first searches a built expert starts a job with.
    :param new_searches: ``(policy) -> dict``: the first searches it made since :attr:`start_searches`.
    :param suggested_actions: ``(vectors (N, size) float32) -> (N,) int``: the action the game's features hand the
        network as their own suggestion in each state (Gorge Chase: the planner's choice), -1 where they suggest none;
        None: the features suggest no action. Imitation weights up the states whose label differs from it
        (``imitation.disagree_weight``).
    """

    tie_breaks: tuple[str, ...]
    settings: tuple[str, ...]
    defaults: Mapping[str, Any]
    refined: str
    check_setting: Callable[..., Any]
    configure: Callable[..., None]
    start_searches: Callable[[Any, Any], None]
    new_searches: Callable[[Any], dict]
    suggested_actions: Callable[[np.ndarray], np.ndarray] | None = None

    def changed(self, settings) -> dict:
        """Of ``(name, value)`` pairs, those whose value differs from the default (what names an expert)."""
        return {name: value for name, value in settings if value != self.defaults[name]}


@dataclass(frozen=True)
class Success:
    """What a game counts as a successful game, and how the shared layers name it in summaries, logs and lines.

    :param rate: the key of the share of successful games in an evaluation's summary (``eval.json``); a training run
        logs it as ``eval/<rate>``, a tuning trial records it as its ``win_rate``.
    :param count: the key of the number of successful games in that summary.
    :param reached: the key of the number of games that reached the game's end, successful or not (a game whose end
        is its success names :attr:`count` again).
    :param verb: the word a line writes before that number, as in ``won 2/3 games``.
    :param of_game: ``(GameResult) -> bool``: one played game (of a report, or an imitation rollout, which may be cut
        short) was a success.
    """

    rate: str
    count: str
    reached: str
    verb: str
    of_game: Callable[[Any], bool]


def one_training_game(config: Any, counts: Sequence[int]) -> list[dict]:
    """The :attr:`Episodes.training_variants` of a game with no variants of its own: its episode configuration."""
    del counts
    return [config.to_usr_conf()]


def no_maps_folder(name: str) -> bool:
    """The :attr:`Maps.in_folder` of a game that reads no map from a maps folder."""
    del name
    return False


@dataclass(frozen=True)
class Maps:
    """A game's maps.

    :param builtin: shipped map name -> loader.
    :param load: map file -> map; ``ValueError`` for a file that is not one.
    :param same: ``(a, b) -> bool``: two maps have the same walls and positions.
    :param competition_file: the file name of the competition's own map (which is not shipped), for messages.
    :param in_folder: ``(map name) -> bool``: the env reads the map of this name from the maps folder (``maps_dir``),
        as Gorge Chase reads its open maps ``open_<k>``; never for a game without ``maps_dir`` in
        :attr:`Env.options`.
    :param folder_variable: the environment variable that may name that maps folder when no ``maps_dir`` is given
        (None: the game reads no map from a folder).
    """

    builtin: Mapping[str, Callable[[], Any]]
    load: Callable[[Any], Any]
    same: Callable[[Any, Any], bool]
    competition_file: str
    in_folder: Callable[[str], bool] = no_maps_folder
    folder_variable: str | None = None

    def folder_from_environment(self) -> str | None:
        """The maps folder :attr:`folder_variable` names (None when it is unset or empty, or the game has none)."""
        return (os.environ.get(self.folder_variable) or None) if self.folder_variable else None


@dataclass(frozen=True)
class Episodes:
    """A game's rules and what one episode may be set to.

    :param config: the class of the competition's episode configuration (``usr_conf``): ``from_usr_conf(dict,
        base=None)`` and ``to_usr_conf()``; a game of :attr:`treasure_sets` also ``treasure_num``,
        ``treasure_pool()`` and ``draw_treasures(rng)``.
    :param usr_conf_keys: the keys of a ``usr_conf``.
    :param rules: the rule overrides' class (``from_dict``).
    :param directions: action ``k % 8`` -> ``(dx, dz)`` in cells of the game's own axes.
    :param max_treasures: the most treasures an episode can hold (``imitation.treasure_counts`` range).
    :param random_starts: ``(episode_config) -> [set_config kwargs]``: where a curriculum's random start may put
        the hero, each as the env's ``set_config`` arguments.
    :param treasure_sets: a game is its treasure set: a ``usr_conf``'s ``treasure_id`` (with its start, end and
        ``max_step``) fixes the game whatever the env seed, and ``treasure_num`` sets how many treasures it holds,
        the fewer the easier. Only then can a study replay the held-out games one by one (``--pruner wilcoxon``)
        and sample an easier first phase by treasure count (``--curriculum``), and imitation sweep every treasure
        set (``imitation.selection.games``).
    :param training_variants: ``(episode config, counts) -> [usr_conf]``: the games imitation's fresh training games
        are drawn from, uniformly (a variant listed twice weighs twice), each played from its own env seed.
        ``counts`` is ``imitation.treasure_counts`` (empty: none given): the Realm and Gorge Chase give a fresh game
        of each treasure count (the configuration's own without counts); the default gives the episode
        configuration itself.
    """

    config: Any
    usr_conf_keys: tuple[str, ...]
    rules: Any
    directions: tuple[tuple[int, int], ...]
    max_treasures: int
    random_starts: Callable[[Any], list[dict]]
    treasure_sets: bool = False
    training_variants: Callable[[Any, Sequence[int]], list[dict]] = one_training_game


@dataclass(frozen=True)
class Env:
    """A game's Gymnasium env, its rewards and what a training run logs of it.

    :param ids: Gymnasium id -> keyword arguments, registered on import of ``sb3_realm``.
    :param entry_point: ``"module:Class"`` of the env, for Gymnasium's registry.
    :param make: builds the env from keyword arguments (``map_path``, ``map_name``, ``rules``, ``reward_weights``,
        ``render_mode``, the ``usr_conf`` keys, ...).
    :param spaces: ``() -> (observation space, action space)`` of the env on any map.
    :param reward_weights: the reward weights' class (``from_dict``, ``to_dict``).
    :param reward_terms: the names of the reward terms.
    :param reward_ranges: term -> ``(low, high, log)``: the range a reward tuning study samples its weight from.
    :param episode_metrics: ``(final info) -> {name: value}``: what a training run logs of each finished episode
        (``train_episodes/<name>``, averaged).
    :param success_metrics: a curriculum's success metrics: name -> ``(final info) -> value``, the first the
        default.
    :param extractor: the features extractor (a name of :data:`sb3_realm.models.extractors.EXTRACTORS`, or
        ``default``: SB3's own) of a config that names none (``algo.extractor``): one that reads this observation.
    :param options: the optional arguments the env takes beyond the map, ``rules``, ``reward_weights``,
        ``render_mode`` and the ``usr_conf`` keys, among those the shared layers pass: ``mask_wall_moves`` (the
        action mask also forbids moves into an adjacent wall), ``map_names`` (each episode plays one of several
        maps) and ``maps_dir`` (the folder a map name is read from). The shared layers learn here, never from the
        env's signature, which of them a game takes: a config's ``env.map_names`` or ``env.maps_dir``, and
        ``eval``'s ``--mask-wall-moves`` or ``--maps-dir``, are refused for a game without them.
    """

    ids: Mapping[str, Mapping[str, Any]]
    entry_point: str
    make: Callable[..., Any]
    spaces: Callable[[], tuple[Any, Any]]
    reward_weights: Any
    reward_terms: tuple[str, ...]
    reward_ranges: Mapping[str, tuple[float, float, bool]]
    episode_metrics: Callable[[dict], dict[str, float]]
    success_metrics: Mapping[str, Callable[[dict], float]]
    extractor: str = "default"
    options: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Evaluation:
    """How a game's policies are evaluated, what counts as a success and who the yardstick is.

    :param protocols: the evaluation protocols, the first the default.
    :param configs: ``(protocol, seed=, treasures=, games=, custom=, max_step=, maps=) -> [usr_conf]``: the fixed
        games of a protocol (None: the game's default for any of them); ``ValueError`` naming the fix for a bad
        argument. A game's ``usr_conf`` may name its map under ``map_name``; the env then plays that map for it.
    :param describe: ``(protocol, treasures) -> str``: what a protocol plays, for the CLI.
    :param check_configs: ``(usr_confs) -> parsed``: games a training evaluation may play (``ValueError``).
    :param held_out_configs: ``(usr_conf, games, seed, maps) -> [usr_conf]``: a training run's (and a study's)
        held-out games from its episode configuration, ``eval_games``, ``eval_seed`` and ``eval_maps``.
    :param held_out_protocol: the protocol whose games :attr:`held_out_configs` draws (the Realm's ``leaderboard``,
        Gorge Chase's ``maps``), named in the reports of a run's held-out games.
    :param evaluate_args: ``(usr_confs) -> {name: value}``: the arguments of
        :func:`~sb3_realm.evaluation.evaluate` (``protocol`` and that protocol's own, e.g. ``custom``, ``maps``,
        ``games``, ``max_step``) that play exactly these games (held-out games from :attr:`held_out_configs`), in
        order.
    :param yardstick: the expert whose score every evaluation reports beside a policy's.
    :param success: what counts as a successful game (the Realm's win, Gorge Chase's survival to ``max_step``).
    """

    protocols: tuple[str, ...]
    configs: Callable[..., list[dict]]
    describe: Callable[[str, int | None], str]
    check_configs: Callable[[list], list]
    held_out_configs: Callable[..., list[dict]]
    held_out_protocol: str
    evaluate_args: Callable[[Sequence[dict]], dict[str, Any]]
    yardstick: str
    success: Success


@dataclass(frozen=True)
class Results:
    """What a game reports and draws of its played games.

    :param details: ``(final info) -> dict``: a game's own per-game figures (``GameResult.details``).
    :param summarize: ``(results) -> dict``: the game's own figures of an evaluation's games.
    :param report_lines: ``(summary, yardstick) -> [str]``: the lines of a readable report between its first line
        and the yardstick's.
    :param worst_table: ``(results, worst, yardstick) -> [str]``: the table of the worst games, its header first.
    :param record_step: ``(episode, env) -> None``: what a replay records of the game after a reset and each step
        (the hero's route, flashes, buffs, and whatever :attr:`plot_route` draws).
    :param plot_route: ``(episode, env, path, title) -> Path``: the PNG of a replayed episode's route.
    """

    details: Callable[[dict], dict]
    summarize: Callable[[Any], dict]
    report_lines: Callable[[dict, str], list[str]]
    worst_table: Callable[[Any, int, str], list[str]]
    record_step: Callable[[Any, Any], None]
    plot_route: Callable[..., Path]


class Experts(dict):
    """A game's shipped experts: expert name -> ``(env, **play_options) -> policy``, with :attr:`options`, how
    imitation sets them up (None: the game's experts do not label games for imitation), and :attr:`play_options`,
    the keyword options every expert of the game takes, with their defaults (Back to the Realm's and Gorge Chase's
    ``use_flash`` and ``use_buff``; none: the experts take the env alone). The shared layers pass the options a user
    names (``sb3-realm eval --expert-option``, :func:`~sb3_realm.evaluation.evaluate`'s ``expert_options``) to the
    expert unread, after :meth:`GameSpec.check_expert_options`."""

    def __init__(self, policies: Mapping[str, Callable[..., Any]], options: ExpertOptions | None = None,
                 play_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(policies)
        self.options = options
        self.play_options = dict(play_options or {})

    def __repr__(self) -> str:
        return f"Experts({dict(self)!r}, options={self.options!r}, play_options={self.play_options!r})"


@dataclass(frozen=True)
class Submission:
    """What a game's submission carries and how its check plays the platform.

    :param features: the numpy-only feature module copied verbatim into submissions (``FEATURE_VERSION``,
        ``MAP_SHAPE``, ``VECTOR_SIZE``, ``N_ACTIONS``, and ``BINARY_LAYERS``, the map channels imitation's datasets
        store as bits).
    :param feature_version_note: what the current ``FEATURE_VERSION`` changed, for the message to a model of another.
    :param layouts: the platform layouts (:mod:`sb3_realm.export.layouts`) a submission of this game can take, the
        first the default (none: the package cannot build its submission).
    :param layout_folders: the layouts the game brings itself, found through the game rather than a shared list:
        name -> its folder (a ``layout.toml`` whose ``class`` names its :class:`~sb3_realm.export.layouts.Layout`
        subclass by import path ``package.module:Class``, the algorithm folder's templates and the ``harness.py`` of
        its platform stand-in). Each name is also one of :attr:`layouts`; a shipped layout's name is refused.
    :param protocol_file: the path of the game's platform protocol module, loaded by file by the parity harness
        (None: no submission).
    :param competition_env: ``(map, rules, seed=, fault_rate=, fault_seed=)`` -> the platform's env as the submission
        sees it (observation and ``env_info`` frames), for the parity check (None: no submission).
    :param parity_treasure_counts: treasure counts the extra games of a submission's parity check cycle through
        (empty: the check plays more games of its protocol's maps).
    :param search: the numpy-only search module a package built with ``--search`` carries beside the features, and
        whose ``ObservationSearch`` its Agent runs around the network's action (None: the game has no search).
    :param searched: ``(policy, settings) -> policy``: a package's policy with the search around it, as a package
        built with ``--search`` plays (the parity check's reference); ``settings`` are the package's recorded ones.
    """

    features: ModuleType
    feature_version_note: str
    layouts: tuple[str, ...] = ()
    layout_folders: Mapping[str, Path] = field(default_factory=dict)
    protocol_file: Path | None = None
    competition_env: Callable[..., Any] | None = None
    parity_treasure_counts: tuple[int, ...] = ()
    search: ModuleType | None = None
    searched: Callable[[Any, dict], Any] | None = None


@dataclass(frozen=True)
class GameSpec:
    """One game as the shared layers see it: its name, its recipes and settings, and six parts.

    :param name: the registry key and a config's ``game:`` value.
    :param title: the game's name for people (messages, ``--help``).
    :param maps: its maps (:class:`Maps`).
    :param episodes: its rules and what an episode may be set to (:class:`Episodes`).
    :param env: its Gymnasium env and rewards (:class:`Env`).
    :param evaluation: its protocols, success and yardstick (:class:`Evaluation`).
    :param results: what it reports and draws of played games (:class:`Results`).
    :param experts: its shipped experts and how they label for imitation (:class:`Experts`).
    :param submission: what its submission carries (:class:`Submission`).
    :param config_dir: the folder of the game's recipes, relative to the repository.
    :param config_runs: ``sb3-realm train`` runs this game from a config.
    :param settings: named episode settings: name -> the ``usr_conf`` keys it sets, played over a game's own
        ``usr_conf`` (``sb3-realm eval --settings``, a config's ``env.settings``); ``default`` (the game as shipped,
        setting nothing) is always one. A game with more takes ``make_env(settings=[names])``: each episode plays
        one of them (drawn from the env's seed when there are several) under the keys its ``usr_conf`` gives.
    """

    name: str
    title: str
    maps: Maps
    episodes: Episodes
    env: Env
    evaluation: Evaluation
    results: Results
    experts: Experts
    submission: Submission
    config_dir: str = ""
    config_runs: bool = True
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"default": {}})

    def check_settings(self, value: Any, label: str, others: Iterable[GameSpec] = ()) -> tuple[str, ...]:
        """The names of ``value``: one name of :attr:`settings`, or a non-empty list of them (a run that mixes
        them). A ``ValueError`` names the value, the allowed names and, for a name that is another game's option (of
        ``others``), that game.

        :param label: how the user gave it, e.g. ``--settings`` or ``env.settings``.
        """
        names = value if isinstance(value, list | tuple) else [value]
        allowed = list(self.settings)
        if not names:
            raise ValueError(f"{label} = {value!r} names no settings; give one of {allowed} or a list of them, e.g. "
                             f"{allowed}")
        for name in names:
            if isinstance(name, str) and name in self.settings:
                continue
            owners = [g.title for g in others if g.name != self.name and isinstance(name, str) and name in g.settings]
            if owners:
                raise ValueError(f"{label} {name!r} is a {' and '.join(owners)} option; {self.title} has the "
                                 f"settings {allowed} only: drop {label}, or play {' or '.join(owners)}")
            raise ValueError(f"{label} = {value!r}: {name!r} is not a setting of {self.title}; choose one of "
                             f"{allowed}" + (" or a list of them" if len(allowed) > 1 else ""))
        if len(set(names)) < len(names):
            raise ValueError(f"{label} = {value!r} names a setting twice; name each once, e.g. {allowed}")
        return tuple(names)

    def apply_settings(self, name: str, usr_conf: Mapping[str, Any], keep: Iterable[str] = ()) -> dict:
        """``usr_conf`` with the keys of settings ``name`` played over it, except the keys of ``keep`` (those the user
        gave himself, which win)."""
        kept = set(keep)
        return {**usr_conf, **{k: v for k, v in self.settings[name].items() if k not in kept}}

    def check_expert_options(self, given: Mapping[str, Any] | None, label: str = "expert_options") -> dict[str, Any]:
        """``given`` (option name -> value) as the game's experts take them (:attr:`Experts.play_options`), or a
        ``ValueError`` naming an option they do not take, or a value of another type than the option's default."""
        options = self.experts.play_options
        out: dict[str, Any] = {}
        for name, value in dict(given or {}).items():
            if name not in options:
                takes = f"the options {sorted(options)}" if options else "no options"
                raise ValueError(f"{label}: {name!r} is not an option of {self.title}'s experts, which take {takes}; "
                                 f"drop {name!r}")
            default = options[name]
            if default is not None and type(value) is not type(default) and not (
                    isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool)):
                raise ValueError(f"{label}: {name} = {value!r} must be a {type(default).__name__} like its default "
                                 f"{default!r}, e.g. {name}={json.dumps(default)}")
            out[name] = value
        return out

    def expert_setup(self) -> ExpertOptions:
        """The experts' :attr:`Experts.options`, or a ``ValueError`` for a game whose experts do not label for
        imitation."""
        if self.experts.options is None:
            raise ValueError(f"{self.title}'s experts ({', '.join(self.experts)}) do not label games for imitation")
        return self.experts.options
