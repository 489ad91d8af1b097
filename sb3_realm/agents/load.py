"""A policy by name: ``"random"``, an expert the game ships (the Realm's ``"oracle"``), the path of an SB3 checkpoint
(``.zip`` of PPO, MaskablePPO or RecurrentPPO) or a submission folder built by ``sb3-realm build-submission``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import games
from ..games import GameEnv
from ..models.saved import check_checkpoint_file, checkpoint_algorithm, checkpoint_data, run_config, run_game
from .base import Policy, RandomPolicy
from .sb3 import SB3Policy
from .submission import SubmissionPolicy, manifest_game, read_manifest

__all__ = ["PolicySpec", "load_policy", "policy_game", "run_folder"]


@dataclass(frozen=True)
class PolicySpec:
    """What to play, in a form that crosses process boundaries: ``"random"``, an expert of the game (``"oracle"``) or
    a checkpoint path.

    :param kind: the policy string given by the user.
    :param seed: seed of the random policy.
    :param expert_options: ``(name, value)`` pairs of the options an expert of the game takes
        (:attr:`~sb3_realm.games.Experts.play_options`, e.g. the Realm's ``use_flash``); other policies ignore them.
    :param trust_pickle: a checkpoint's pickles may run (see :mod:`.checkpoint`); None: as the process says.
    :param game: the game whose experts the names stand for (None: the one game whose expert ``kind`` is, which
        it then holds).
    """

    kind: str
    seed: int = 0
    expert_options: tuple = ()
    trust_pickle: bool | None = None
    game: str | None = None

    def __post_init__(self) -> None:
        if self.game is None:  # an expert's name says its game
            owners = _expert_owners(self.kind)
            if len(owners) == 1:
                object.__setattr__(self, "game", owners[0].name)

    def build(self, env: GameEnv) -> Policy:
        return load_policy(self.kind, env, seed=self.seed, expert_options=dict(self.expert_options),
                           trust_pickle=self.trust_pickle, game=self.game)


def load_policy(spec: str, env: GameEnv, seed: int = 0, expert_options: Mapping[str, Any] | None = None,
                trust_pickle: bool | None = None, game: str | None = None) -> Policy:
    """Build the policy named by ``spec`` for ``env`` (an env of ``game``; None: the game whose expert ``spec`` names,
    if it names one); a bad spec raises ``ValueError`` saying what is accepted. An expert gets ``expert_options``
    (the options its game's experts take, :attr:`~sb3_realm.games.Experts.play_options`; a ``ValueError`` names one
    they do not take)."""
    if game is None and _expert_owners(spec):
        game = _expert_game(spec, None).name
    experts = games.get(game).experts if game is not None else {}
    if spec == "random":
        return RandomPolicy(seed)
    if spec in experts:
        return experts[spec](env, **games.get(game).check_expert_options(expert_options))
    names = ", ".join(repr(name) for name in _expert_names(game))
    if not str(spec).strip():
        raise ValueError(f"policy '' is empty; give 'random', {names}, an SB3 checkpoint (.zip saved "
                         "by model.save) or a submission folder (built by build-submission)")
    path = Path(spec)
    if path.is_dir():
        run_folder(path)
        return SubmissionPolicy(path)  # a folder built by build-submission (ValueError if it is not one)
    if not path.is_file():
        raise ValueError(f"policy {spec!r} is neither 'random', {names}, an existing SB3 "
                         "checkpoint file (.zip saved by model.save) nor a submission folder (built by "
                         "build-submission)")
    return SB3Policy(path, trust_pickle=trust_pickle)


def run_folder(path: Path) -> None:
    """A ``ValueError`` pointing at the models of a training or imitation run folder (which is not a policy itself);
    nothing for any other folder."""
    try:
        read_manifest(path)
        return  # a built submission
    except ValueError:
        pass
    found = [(path / name, what) for name, what in (("final_model.zip", "the model at the end of the run"),
                                                    ("best_model.zip", "the best by held-out score"))
             if (path / name).is_file()]
    if not found:
        steps = sorted(path.glob("checkpoints/step_*/model.zip"))
        found = [(steps[-1], "its latest checkpoint")] if steps else []
    kind = "a training run"
    if not found and (path / "model.zip").is_file():  # a checkpoint's own folder (checkpoints/step_*)
        kind, found = "a checkpoint", [(path / "model.zip", "its model")]
    if found:
        models = " or ".join(f"{str(model)!r} ({what})" for model, what in found)
        raise ValueError(f"{str(path)!r} is the folder of {kind}, not a policy; pass "
                         f"{'one of its models' if len(found) > 1 else 'its model'}: {models}")


def _expert_owners(name: str) -> list[games.GameSpec]:
    """The registered games that ship an expert named ``name``."""
    return [spec for spec in games.GAMES.values() if name in spec.experts]


def _expert_names(game: str | None) -> list[str]:
    """The names of ``game``'s experts (None: of every registered game's), for messages."""
    specs = [games.get(game)] if game is not None else list(games.GAMES.values())
    return list(dict.fromkeys(name for spec in specs for name in spec.experts))


def _expert_game(name: str, game: str | None) -> games.GameSpec:
    """The game the policy name ``name`` (``random`` or an expert's name) is played in: ``game``, else the one game
    whose expert it is. A ``ValueError`` when the expert is another game's than ``game`` says which game it is of and
    the ``--game`` to pass, and one for ``random`` (or an expert of several games) without ``game`` asks for it."""
    owners = _expert_owners(name)
    if game is None:
        if len(owners) == 1:
            return owners[0]
        which = "the random policy plays any game" if name == "random" else f"{name!r} is an expert of several games"
        raise ValueError(f"policy {name!r}: {which}; say which with --game ({', '.join(games.GAMES)}), or game= "
                         "in Python")
    spec = games.get(game)
    if name == "random" or name in spec.experts:
        return spec
    offered = ", ".join(repr(expert) for expert in ("random", *_expert_names(game)))
    where = f"--game {game}"
    hint = " or ".join(f"pass --game {other.name} to play {other.title}" for other in owners)
    raise ValueError(f"policy {name!r} is an expert of {' and '.join(o.title for o in owners)}, not of {spec.title} "
                     f"({where}); {hint}, or give a policy of {spec.title}: {offered}, an SB3 checkpoint or a "
                     "submission folder")


def _refuse_other_game(path: Path, recorded: games.GameSpec, why: str, game: str | None) -> None:
    """A ``ValueError`` when the policy at ``path``, of the game ``recorded`` (``why`` says how that is known), is
    asked to play ``game`` (None: no game asked, any is played): a network of one game cannot read another's
    observations."""
    if game is None or recorded.name == game:
        return
    asked = games.get(game)
    where = f"--game {game}"
    fix = f"pass --game {recorded.name} (or leave --game out: a model plays the game it records)"
    raise ValueError(f"{str(path)!r} is a model of {recorded.title} ({why}), not of {asked.title} ({where}), whose "
                     f"observations its network cannot read; {fix}")


def _game_of_spaces(path: Path) -> games.GameSpec | None:
    """The one game whose observation space a checkpoint's JSON shows (as SB3 wrote it); None when no game's or
    several games' match (a frame-stacked model, a space written by another gymnasium version), or the file is not
    a checkpoint (its loading says so)."""
    try:
        shown = (checkpoint_data(path).get("observation_space") or {}).get("spaces")
    except (ValueError, AttributeError):
        return None
    found = []
    for spec in games.GAMES.values():
        parts = getattr(spec.env.spaces()[0], "spaces", None)
        if isinstance(parts, dict) and shown == repr(dict(parts)):
            found.append(spec)
    return found[0] if len(found) == 1 else None


def policy_game(policy, game: str | None = None) -> games.GameSpec:
    """The game ``policy`` plays: ``game`` when given (a model that records another game is refused), else the one
    an SB3 checkpoint's run config or a submission folder's manifest records (or, recording none, its observation
    space shows; else :data:`~sb3_realm.games.LEGACY_GAME`'s, with a one-line note), the one game whose expert the
    name is, or the ``game`` a policy object holds. ``random`` without ``game`` plays no game in particular: a
    ``ValueError`` asks for it.

    A policy named by a string is checked here, before anything is played, with one ``ValueError`` naming what is
    wrong: an expert of another game, a path that does not exist, a checkpoint file that is empty, truncated or not
    a zip archive, a training run's folder, a folder that is not a built submission, a run config beside a
    checkpoint that does not read, and a model of another game than ``game``."""
    if game is not None:
        games.get(game)  # an unknown game is named first
    if not isinstance(policy, (str, Path)):
        return games.get(game if game is not None else getattr(policy, "game", None))
    text = str(policy)
    if isinstance(policy, str) and (text == "random" or _expert_owners(text)):
        return _expert_game(text, game)
    if not text.strip():
        return games.get(game or games.LEGACY_GAME)  # load_policy says what a policy is
    path = Path(policy)
    if path.is_dir():
        run_folder(path)
        recorded = manifest_game(read_manifest(path))  # a ValueError for a folder that is not a built submission
        if game is not None:
            _refuse_other_game(path, recorded, f"its manifest records game: {recorded.name}", game)
        return recorded
    if not path.exists() and not path.is_symlink():
        names = ", ".join(repr(expert) for expert in ("random", *_expert_names(game)))
        raise ValueError(f"policy {text!r} does not exist: it is neither {names}, an existing SB3 checkpoint file "
                         "(.zip saved by model.save) nor a submission folder (built by build-submission); check the "
                         "path")
    check_checkpoint_file(path)
    data = checkpoint_data(path)  # another zip (an upload archive, ...) is named as such
    recorded_name = (run_config(path, data) or {}).get("game")
    if game is None and recorded_name is not None:
        run_game(path)  # a game not registered here is named before its model's spaces are read as another game's
    checkpoint_algorithm(path, data)  # as is a model of another algorithm or environment
    if recorded_name is None:  # a model saved outside sb3-realm: its observation space may still say its game
        by_space = _game_of_spaces(path)
        if by_space is not None:
            _refuse_other_game(path, by_space, f"its observation space is {by_space.title}'s", game)
            return by_space
        return games.get(game) if game is not None else games.recorded(None, f"checkpoint {text!r}")
    if game is not None and (not isinstance(recorded_name, str) or recorded_name not in games.GAMES):
        return games.get(game)  # a game unknown here: --game decides
    recorded = run_game(path)  # a ValueError naming a game unknown here
    if game is not None:
        _refuse_other_game(path, recorded, f"its run config records game: {recorded.name}", game)
    return recorded
