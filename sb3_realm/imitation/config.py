"""The configuration of ``sb3-realm imitate``: the ``imitation`` section (:class:`ImitationConfig`) with its game
selection (:class:`SelectionConfig`), on top of a training config (:class:`ImitateConfig`).

A run written before ``imitation.selection`` existed recorded seven flags instead (``sweep``, ``sweep_other``,
``sweep_all``, ``sweep_label_left``, ``sweep_label_slow``, ``sweep_slow_margin``, ``select_lost``):
:func:`convert_legacy_selection` turns them into the section, so such a run resumes; a config file a user passes with
them gets one line with the section to write instead.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from .. import games
from ..executors import check_executor
from ..training.config import TrainConfig, config_from_dict, load_config
from ..training.config_files import apply_overrides, read_config_file

__all__ = [
    "KEEPS",
    "LABELS",
    "LEGACY_SELECTION_KEYS",
    "SWEEPS",
    "ImitateConfig",
    "ImitationConfig",
    "SelectionConfig",
    "check_run_config",
    "convert_legacy_selection",
    "imitate_config_from_dict",
    "load_imitate_config",
    "read_run_config",
]

#: ``selection.games``: no sweep (the held-out games choose the round), the sweep (every set of the leaderboard's
#: count and a sample of each other count), or every set of every count
SWEEPS = ("held_out", "sweep", "all_sets")
#: ``selection.label``: the sweep games labelled first next round: those the learner never finishes, those that
#: reach the end with a treasure left, and won ones slower than the expert's own game of the set
LABELS = ("unfinished", "treasure_left", "slow")
#: ``selection.keep``: the round with the fewest lost sweep games of every count, or of the leaderboard's count only
KEEPS = ("fewest_lost", "fewest_lost_leaderboard")
#: the flags that ``selection`` replaced
LEGACY_SELECTION_KEYS = ("sweep", "sweep_other", "sweep_all", "sweep_label_left", "sweep_label_slow",
                         "sweep_slow_margin", "select_lost")


@dataclass
class SelectionConfig:
    """Which games DAgger labels first and which round is kept (:mod:`sb3_realm.imitation.selection`).

    :param games: ``held_out``: no sweep; the round with the best mean score over the held-out games is kept.
        ``sweep``: after every round the deterministic learner also plays every treasure set of ``env.usr_conf``'s
        count (C(13, 9) = 715 for the leaderboard's nine) and, for each other count in ``imitation.treasure_counts``,
        its fixed set and ``other_sets`` random sets (from ``eval_seed``). A game is a function of its treasure set
        alone (the env seed draws only the set), so these are the competition's own games. ``all_sets``: every set
        of every count of ``treasure_counts`` (with counts 0..13, all 8,192 sets of the 13 slots); when more sweep
        games are lost than a round labels, those of ``env.usr_conf``'s count come first and the rest are drawn at
        random from the other lost ones.
    :param other_sets: with ``games: sweep``, random sets per other treasure count.
    :param label: with a sweep, the sweep games labelled first next round, in this order (before screened or fresh
        games, within ``dagger_games``): ``unfinished`` (the learner never reaches the end: its loops),
        ``treasure_left`` (the end reached with a treasure left), ``slow`` (won, but at least ``slow_margin`` steps
        slower than the expert's own game of the set, the slowest first, at most ``slow_games``; only sets of
        ``env.usr_conf``'s count). For ``slow`` the expert plays the sweep's sets once per run (on the competition
        map with 2 workers, about 3 min for ``oracle`` and about 6 min for ``oracle-refined``); the checkpoints keep
        its games.
    :param slow_games: with ``slow`` labelled, at most this many slow games a round.
    :param slow_margin: steps over the expert's game from which a won sweep game counts as slow.
    :param keep: with a sweep, the round kept: ``fewest_lost`` (the fewest sweep games lost, of every count) or
        ``fewest_lost_leaderboard`` (of ``env.usr_conf``'s count only); ties go to the best mean score over the sets
        of ``env.usr_conf``'s count, then to the later round. A game counts as lost unless it is won with every
        treasure. Without a sweep, label and keep stay at their defaults (nothing to label or count).
    """

    games: str = "held_out"
    other_sets: int = 20
    label: list = field(default_factory=lambda: ["unfinished"])
    slow_games: int = 60
    slow_margin: int = 1
    keep: str = "fewest_lost"

    @property
    def swept(self) -> bool:
        """Whether the learner plays a sweep after every round."""
        return self.games != "held_out"

    def validate(self) -> None:
        if self.games not in SWEEPS:
            raise ValueError(f"imitation.selection.games = {self.games!r}; use one of {list(SWEEPS)}")
        for name in ("other_sets", "slow_games"):
            if isinstance(getattr(self, name), bool) or getattr(self, name) < 0:
                raise ValueError(f"imitation.selection.{name} = {getattr(self, name)} must be >= 0")
        if self.slow_margin < 1:
            raise ValueError(f"imitation.selection.slow_margin = {self.slow_margin} must be >= 1 (steps over the "
                             "expert's own game)")
        unknown = [kind for kind in self.label if kind not in LABELS]
        if unknown or len(set(self.label)) != len(self.label):
            raise ValueError(f"imitation.selection.label = {self.label!r}; list each of {list(LABELS)} at most once, "
                             "in the order they are labelled")
        if self.keep not in KEEPS:
            raise ValueError(f"imitation.selection.keep = {self.keep!r}; use one of {list(KEEPS)}")
        if not self.swept:
            default = SelectionConfig()
            for name in ("label", "keep"):
                if getattr(self, name) != getattr(default, name):
                    raise ValueError(f"imitation.selection.{name} = {getattr(self, name)!r} acts on the sweep, but "
                                     "imitation.selection.games = 'held_out' plays none; set games: sweep (or "
                                     f"all_sets), or drop {name}")


@dataclass
class ImitationConfig:
    """Imitation of an expert (``sb3-realm imitate``): expert games, behaviour cloning, then DAgger rounds. The
    model, its network and the envs come from the rest of the config; ``train`` ignores this section.

    :param expert: the policy that labels every state: ``oracle`` (the planner), ``oracle-refined`` (its tour played
        step-exactly by a beam search, :mod:`sb3_realm.games.realm.experts.refine`: a few steps a game shorter, slower
        to label) or an SB3 checkpoint path.
    :param expert_games: games the expert plays alone for the first dataset.
    :param rounds: DAgger rounds after the first fit: the learner plays ``dagger_games`` games, the expert labels
        every state it visits, the dataset grows and the policy is fitted again.
    :param dagger_games: games per DAgger round.
    :param screen_games: 0, or games the deterministic learner plays first in each DAgger round (batched, fast): the
        ones it never finishes are among the round's ``dagger_games`` (all of them if they fit), the rest drawn at
        random. The sweep games that ``selection.label`` names come before them, and a round they fill skips the
        screening.
    :param selection: which games DAgger labels first and which round is kept (:class:`SelectionConfig`).
    :param dagger_max_steps: a DAgger game stops after this many steps (0: at max_step): once the learner loops, more
        of the same states teach nothing and cost labelling time.
    :param dagger_overrun: a DAgger game also stops once it runs this many steps past the oracle's own plan for it
        (0: only ``dagger_max_steps`` stops it).
    :param dagger_takeover: a DAgger game that reaches ``dagger_max_steps`` or its ``dagger_overrun`` is not cut:
        the expert takes over and plays it to the end, labelled (HG-DAgger's expert intervention), so the dataset
        holds the way out of a learner's loop.
    :param beta_rampdown: rounds over which ``beta``, the probability that a step plays the expert's action rather
        than the learner's, falls linearly from 1: ``beta = max(0, 1 - round / beta_rampdown)`` (round 1 is the first
        DAgger round; 0 = the learner plays every step from round 1).
    :param epochs: passes over the data in the first fit.
    :param dagger_epochs: passes over the whole dataset in each refit after a round.
    :param batch_size: states per gradient step.
    :param learning_rate: Adam's learning rate at the start of each fit (cosine decay to ``final_lr`` times it).
    :param dagger_learning_rate: the same for the refits after DAgger rounds (smaller: a refit corrects the policy
        where the learner went astray without unlearning the rest).
    :param final_lr: the learning rate at the end of a fit, as a fraction of its starting rate.
    :param ent_weight: weight of the entropy bonus in the loss.
    :param disagree_weight: the weight in the loss of a state whose expert label differs from the action the game's
        features suggest to the network (Gorge Chase: the planner's choice, which its features carry), against 1 for
        the other states; 1 (the default) weighs every state alike. A search that departs from the planner on a
        few states a game, where it matters, is learnt from those states: expert iteration sets it higher.
    :param l2_weight: Adam's weight decay.
    :param treasure_counts: treasure counts the training games draw from, uniformly (repeat a count to weigh it);
        empty: the count of ``env.usr_conf``. Treasure sets are random; ``max_step`` and the rest are env.usr_conf's.
    :param window: RecurrentPPO: states per training window (episodes are cloned in order, the LSTM state carried
        from one window to the next); ``batch_size // window`` episodes go side by side in a gradient step.
    :param tie_break: how the oracle expert breaks exact ties of its cost-to-go, which it meets in over half of its
        states: ``index`` (the lowest action, as the oracle plays by default) or ``heading`` (the move closest to the
        straight line to the next node of its route): the labels the policy must reproduce then follow a rule it can
        read from its own observation (the target's direction), and it imitates them better.
    :param refine_beam_width: with ``expert: oracle-refined``, the states its beam search keeps per step (wider finds
        shorter games and labels slower; docs/benchmarks.md).
    :param refine_max_refines: with ``expert: oracle-refined``, how many times a game it searches again from the exact
        state (the first step and each time a learner's move leaves its sequence); after that it labels the oracle's
        own actions.
    :param refine_departure_cost: with ``expert: oracle-refined``, the steps its beam charges for each move unlike
        the guide's (the oracle's, or with ``refine_guided: false`` the greedy one): the higher, the closer its games
        stay to the oracle's.
    :param refine_guided: with ``expert: oracle-refined``, whether departures are counted from the oracle's own move
        (slower, fewer moves unlike the oracle's) or from the greedy move of its cost-to-go.
    :param workers: processes that play the games (collection and held-out evaluation); Ray workers with
        ``executor: ray``.
    :param executor: where the games run: ``processes`` (worker processes of this machine) or ``ray`` (a Ray cluster,
        joined by ``--ray-address`` or ``$RAY_ADDRESS``, else started on this machine: :mod:`sb3_realm.executors`);
        the labels and results are the same with either.
    """

    expert: str = "oracle"
    expert_games: int = 200
    rounds: int = 4
    dagger_games: int = 60
    screen_games: int = 0
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    dagger_max_steps: int = 800
    dagger_overrun: int = 0
    dagger_takeover: bool = False
    beta_rampdown: int = 1
    epochs: int = 8
    dagger_epochs: int = 3
    batch_size: int = 256
    learning_rate: float = 1e-3
    dagger_learning_rate: float = 3e-4
    final_lr: float = 0.05
    ent_weight: float = 0.0
    disagree_weight: float = 1.0
    l2_weight: float = 0.0
    treasure_counts: list = field(default_factory=list)
    window: int = 64
    tie_break: str = "index"
    # the refined oracle's own defaults (a test holds them equal to the Realm's ExpertOptions.defaults)
    refine_beam_width: int = 10
    refine_max_refines: int = 4
    refine_departure_cost: float = 0.2
    refine_guided: bool = True
    workers: int = 2
    executor: str = "processes"

    def refine_settings(self, game: games.GameSpec) -> tuple:
        """The refined expert's settings (``refine_*``) as ``(name, value)`` pairs, in the order of ``game``'s
        :attr:`~sb3_realm.games.ExpertOptions.settings`."""
        return tuple((name, getattr(self, f"refine_{name}")) for name in game.expert_setup().settings)

    def changed_refine_settings(self, game: games.GameSpec) -> dict:
        """The ``refine_*`` settings that differ from the refined expert's defaults (what names a run's expert)."""
        return game.expert_setup().changed(self.refine_settings(game))

    def validate(self, game: games.GameSpec) -> None:
        """Check the section for ``game``."""
        for name in ("expert_games", "dagger_games", "epochs", "dagger_epochs", "batch_size", "window", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be >= 1")
        check_executor(self.executor, option="imitation.executor")
        for name in ("rounds", "beta_rampdown", "dagger_max_steps", "dagger_overrun", "screen_games"):
            if getattr(self, name) < 0:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be >= 0")
        for name in ("learning_rate", "dagger_learning_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be > 0")
        if not 0 <= self.final_lr <= 1:
            raise ValueError(f"imitation.final_lr = {self.final_lr} must be in [0, 1] (a fraction of learning_rate)")
        for name in ("ent_weight", "l2_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be >= 0")
        if isinstance(self.disagree_weight, bool) or not isinstance(self.disagree_weight, (int, float)) or not (
                self.disagree_weight >= 1 and self.disagree_weight < float("inf")):
            raise ValueError(f"imitation.disagree_weight = {self.disagree_weight!r} must be a number >= 1 (1: every "
                             "state weighs alike; e.g. 20 weighs the states where the expert departs from the "
                             "features' suggested action 20 times)")
        if self.disagree_weight != 1 and game.expert_setup().suggested_actions is None:
            raise ValueError(f"imitation.disagree_weight = {self.disagree_weight!r}: {game.title}'s features suggest "
                             "no action to disagree with; drop disagree_weight (or set it to 1)")
        most = game.episodes.max_treasures
        for count in self.treasure_counts:
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= most:
                raise ValueError(f"imitation.treasure_counts holds {count!r}; each count must be an integer in "
                                 f"0..{most}")
        self._check_expert(game)
        self.selection.validate()
        if self.selection.swept and not game.episodes.treasure_sets:
            raise ValueError(f"imitation.selection.games = {self.selection.games!r} sweeps treasure sets, which "
                             f"{game.title} has not (its games differ by map and env seed); use games: held_out")

    def _check_expert(self, game: games.GameSpec) -> None:
        """The expert, its tie rule and its refine settings."""
        either = ", ".join(repr(name) for name in game.experts)
        if not isinstance(self.expert, str) or not self.expert:
            raise ValueError(f"imitation.expert = {self.expert!r}; use {either} or the path of an SB3 checkpoint")
        builtin = self.expert in game.experts
        if not builtin and not (Path(self.expert).is_file() and self.expert.endswith(".zip")):
            raise ValueError(f"imitation.expert = {self.expert!r} is neither {either} nor an existing SB3 checkpoint "
                             f"(.zip); the {game.evaluation.yardstick} planner is the expert the package ships")
        options = game.expert_setup()
        if self.tie_break not in options.tie_breaks:
            raise ValueError(f"imitation.tie_break = {self.tie_break!r}; use one of {list(options.tie_breaks)}")
        for name, value in self.refine_settings(game):
            options.check_setting(name, value, label=f"imitation.refine_{name}")
        for f in fields(self):
            name = f.name.removeprefix("refine_")
            if f.name.startswith("refine_") and name not in options.settings and getattr(self, f.name) != f.default:
                # the refined experts (ExpertOptions.refined) that take this setting, of the games registered
                owners = " and ".join(f"{other.title}'s {other.experts.options.refined!r} expert"
                                      for other in games.GAMES.values()
                                      if other.experts.options is not None and name in other.experts.options.settings)
                raise ValueError(f"imitation.{f.name} = {getattr(self, f.name)!r} sets a search of "
                                 f"{owners or 'the refined expert of another game'}; {game.title}'s expert "
                                 f"({self.expert}) takes no such setting: drop {f.name}")
        changed = self.changed_refine_settings(game)
        if changed and self.expert != options.refined:
            name = next(iter(changed))
            raise ValueError(f"imitation.refine_{name} = {changed[name]!r} sets the beam search of the "
                             f"{options.refined!r} expert, but imitation.expert = {self.expert!r}; set "
                             f"imitation.expert: {options.refined}, or drop refine_{name}")

    def beta(self, round_no: int) -> float:
        """The expert's share of the played actions in DAgger round ``round_no`` (1, 2, ...)."""
        if self.beta_rampdown == 0:
            return 0.0
        return max(0.0, 1.0 - round_no / self.beta_rampdown)



@dataclass
class ImitateConfig(TrainConfig):
    """A training config whose ``imitation`` section is read and checked (:class:`ImitationConfig`): what
    ``sb3-realm imitate`` runs on."""

    imitation: ImitationConfig = field(default_factory=ImitationConfig)  # type: ignore[assignment]

    def validate(self) -> ImitateConfig:
        super().validate()
        self.imitation.validate(self.spec)
        return self


def convert_legacy_selection(section: dict) -> dict:
    """The ``imitation`` section ``section`` with the seven flags that ``selection`` replaced turned into the
    ``selection`` mapping that plays the same games and keeps the same round (a copy; a section without them is
    returned as it is)."""
    legacy = {k: section[k] for k in LEGACY_SELECTION_KEYS if k in section}
    if not legacy:
        return section
    if "selection" in section:
        raise ValueError(f"imitation holds both selection and the flags it replaced ({', '.join(legacy)}); keep "
                         "selection only")
    out = {k: copy.deepcopy(v) for k, v in section.items() if k not in legacy}
    if not legacy.get("sweep", False):
        out["selection"] = {"games": "held_out"}
        return out
    label = ["unfinished"] + (["treasure_left"] if legacy.get("sweep_label_left") else [])
    slow = legacy.get("sweep_label_slow", 0)
    selection: dict = {"games": "all_sets" if legacy.get("sweep_all") else "sweep"}
    if "sweep_other" in legacy:
        selection["other_sets"] = legacy["sweep_other"]
    selection["label"] = label + (["slow"] if slow else [])
    if slow:
        selection["slow_games"] = slow
    if "sweep_slow_margin" in legacy:
        selection["slow_margin"] = legacy["sweep_slow_margin"]
    selection["keep"] = "fewest_lost_leaderboard" if legacy.get("select_lost") == "main" else "fewest_lost"
    out["selection"] = selection
    return out


def _flow(mapping: dict) -> str:
    """``mapping`` as one line of YAML flow style, as a user would write it."""
    def item(v):
        if isinstance(v, list):
            return "[" + ", ".join(str(x) for x in v) + "]"
        return "true" if v is True else "false" if v is False else str(v)
    return "{" + ", ".join(f"{k}: {item(v)}" for k, v in mapping.items()) + "}"


def _refuse_legacy(data: dict, where: str) -> None:
    section = data.get("imitation")
    if not isinstance(section, dict):
        return
    legacy = [k for k in LEGACY_SELECTION_KEYS if k in section]
    if legacy:
        new = convert_legacy_selection(section)["selection"]
        raise ValueError(f"{where}: imitation.{', imitation.'.join(legacy)} were replaced by one section, "
                         f"imitation.selection; write instead: imitation: {{selection: {_flow(new)}}} "
                         "(the same games and the same kept round)")


def load_imitate_config(path: str | os.PathLike | None = None,
                        overrides: list[str] | None = None) -> ImitateConfig:
    """:func:`~sb3_realm.training.load_config` for ``sb3-realm imitate`` (its ``base:`` chain and ``--set``
    overrides); a config or override with the flags that ``selection`` replaced is refused with the section to
    write."""
    data = read_config_file(path) if path is not None else {}
    _refuse_legacy(data, f"config file {str(path)!r}" if path is not None else "config")
    _refuse_legacy(apply_overrides(data, overrides or []), f"--set {' '.join(overrides or [])!r}")
    config = load_config(path, overrides, cls=ImitateConfig)
    assert isinstance(config, ImitateConfig)
    return config


def imitate_config_from_dict(data: dict, overrides: list[str] | None = None) -> ImitateConfig:
    """The config a run recorded (its ``config.yaml`` or a checkpoint's), with ``overrides``: a run written with
    the flags that ``selection`` replaced is converted (:func:`convert_legacy_selection`), so it resumes."""
    data = copy.deepcopy(data)
    if isinstance(data.get("imitation"), dict):
        data["imitation"] = convert_legacy_selection(data["imitation"])
    _refuse_legacy(apply_overrides(data, overrides or []), f"--set {' '.join(overrides or [])!r}")
    config = config_from_dict(data, overrides, cls=ImitateConfig)
    assert isinstance(config, ImitateConfig)
    return config


def _names_base(path: Path) -> object:
    """The ``base`` a config file names at its top (None when it names none, or when it is not readable YAML:
    :func:`read_config_file` then says what is wrong with it)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return data.get("base") if isinstance(data, dict) else None


def read_run_config(run_dir: str | os.PathLike, overrides: list[str] | None = None) -> ImitateConfig:
    """The config an imitation run in ``run_dir`` was started with (``config.yaml``), converted where it is older
    (:func:`imitate_config_from_dict`), with ``overrides`` such as more rounds. A run's ``config.yaml`` is written
    whole (no ``base:``); one naming a base, a file elsewhere, is refused without reading that file."""
    return imitate_config_from_dict(read_config_file(check_run_config(run_dir)), overrides)


def check_run_config(run_dir: str | os.PathLike) -> Path:
    """The path of the ``config.yaml`` of the run in ``run_dir``, once it is there and names no ``base:`` (a run's
    config is written whole; a base would be a file elsewhere, never read); a ``ValueError`` otherwise."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ValueError(f"--resume {str(run_dir)!r}: no config.yaml there; is it a run directory made by imitate?")
    base = _names_base(path)
    if base is not None:
        raise ValueError(f"--resume {str(run_dir)!r}: {str(path)!r} names a base ({base!r}), which a run's config "
                         "never does (it is written whole): it was edited or is not this package's; remove the base "
                         "line (merge what it held into the file), or start the run again with --out")
    return path
