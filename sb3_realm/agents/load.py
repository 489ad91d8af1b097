"""A policy by name: ``"random"``, an expert the game ships (the Realm's ``"oracle"``), the path of an SB3 checkpoint
(``.zip`` of PPO, MaskablePPO or RecurrentPPO) or a submission folder built by ``sb3-realm build-submission``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import games
from ..games import GameEnv
from ..models.saved import run_game
from .base import Policy, RandomPolicy
from .sb3 import SB3Policy
from .submission import SubmissionPolicy, folder_game, read_manifest

__all__ = ["PolicySpec", "load_policy", "run_folder", "policy_game"]


@dataclass(frozen=True)
class PolicySpec:
    """What to play, in a form that crosses process boundaries: ``"random"``, an expert of the game (``"oracle"``) or
    a checkpoint path.

    :param kind: the policy string given by the user.
    :param seed: seed of the random policy.
    :param use_flash: the oracle may flash.
    :param use_buff: the oracle may take the buff.
    :param trust_pickle: a checkpoint's pickles may run (see :mod:`.checkpoint`); None: as the process says.
    :param game: the game whose experts the names stand for (None: the default game).
    """

    kind: str
    seed: int = 0
    use_flash: bool = True
    use_buff: bool = True
    trust_pickle: bool | None = None
    game: str | None = None

    def build(self, env: GameEnv) -> Policy:
        return load_policy(self.kind, env, seed=self.seed, use_flash=self.use_flash, use_buff=self.use_buff,
                           trust_pickle=self.trust_pickle, game=self.game)


def load_policy(spec: str, env: GameEnv, seed: int = 0, use_flash: bool = True, use_buff: bool = True,
                trust_pickle: bool | None = None, game: str | None = None) -> Policy:
    """Build the policy named by ``spec`` for ``env`` (an env of ``game``, None: the default game); a bad spec raises
    ``ValueError`` saying what is accepted."""
    experts = games.get(game).experts
    if spec == "random":
        return RandomPolicy(seed)
    if spec in experts:
        return experts[spec](env, use_flash=use_flash, use_buff=use_buff)
    names = ", ".join(repr(name) for name in experts)
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
    if found:
        models = " or ".join(f"{str(model)!r} ({what})" for model, what in found)
        raise ValueError(f"{str(path)!r} is the folder of a training run, not a policy; pass one of its models: "
                         f"{models}")


def policy_game(policy, game: str | None = None) -> games.GameSpec:
    """The game ``policy`` plays: ``game`` when given, else the one an SB3 checkpoint's run config or a submission
    folder's manifest records, else the default game (``random``, an expert, a policy object)."""
    if game is not None:
        return games.get(game)
    path = Path(policy) if isinstance(policy, (str, Path)) else None
    if path is not None and path.is_file():
        return run_game(path)  # the default game for a file that records none
    if path is not None and path.is_dir():
        return folder_game(path)
    return games.get()
