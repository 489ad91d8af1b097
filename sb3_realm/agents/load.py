"""A policy by name: ``"random"``, ``"oracle"``, the path of an SB3 checkpoint (``.zip`` of PPO, MaskablePPO or
RecurrentPPO) or a submission folder built by ``sb3-realm build-submission``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..envs import RealmEnv
from .base import Policy, RandomPolicy
from .oracle import OracleAdapter
from .sb3 import SB3Policy
from .submission import SubmissionPolicy, read_manifest

__all__ = ["PolicySpec", "load_policy", "run_folder"]


@dataclass(frozen=True)
class PolicySpec:
    """What to play, in a form that crosses process boundaries: ``"random"``, ``"oracle"`` or a checkpoint path.

    :param kind: the policy string given by the user.
    :param seed: seed of the random policy.
    :param use_flash: the oracle may flash.
    :param use_buff: the oracle may take the buff.
    :param trust_pickle: a checkpoint's pickles may run (see :mod:`.checkpoint`); None: as the process says.
    """

    kind: str
    seed: int = 0
    use_flash: bool = True
    use_buff: bool = True
    trust_pickle: bool | None = None

    def build(self, env: RealmEnv) -> Policy:
        return load_policy(self.kind, env, seed=self.seed, use_flash=self.use_flash, use_buff=self.use_buff,
                           trust_pickle=self.trust_pickle)


def load_policy(spec: str, env: RealmEnv, seed: int = 0, use_flash: bool = True, use_buff: bool = True,
                trust_pickle: bool | None = None) -> Policy:
    """Build the policy named by ``spec`` for ``env``; a bad spec raises ``ValueError`` saying what is accepted."""
    if spec == "random":
        return RandomPolicy(seed)
    if spec in ("oracle", "oracle-refined"):
        return OracleAdapter(env, use_flash=use_flash, use_buff=use_buff, refined=spec == "oracle-refined")
    if not str(spec).strip():
        raise ValueError("policy '' is empty; give 'random', 'oracle', 'oracle-refined', an SB3 checkpoint (.zip saved "
                         "by model.save) or a submission folder (built by build-submission)")
    path = Path(spec)
    if path.is_dir():
        run_folder(path)
        return SubmissionPolicy(path)  # a folder built by build-submission (ValueError if it is not one)
    if not path.is_file():
        raise ValueError(f"policy {spec!r} is neither 'random', 'oracle', 'oracle-refined', an existing SB3 "
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
