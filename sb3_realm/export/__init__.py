"""Export: a trained SB3 checkpoint -> an upload folder for the competition platform (:mod:`.build`, with the
user's code package read and edited by :mod:`.code_package`, each platform layout's own part in :mod:`.layouts`), and
the proof, through a stand-in of the platform, that a training task keeps its weights and the model it saves acts
exactly like the SB3 model (:mod:`.check`, run as the layout says by :func:`check_submission`)."""

from .build import WORKFLOWS, ExportedPolicy, ExportError, build_submission, check_submission, next_steps, read_model
from .check import run_platform_task, same_weights

__all__ = [
    "WORKFLOWS",
    "ExportError",
    "ExportedPolicy",
    "build_submission",
    "check_submission",
    "next_steps",
    "read_model",
    "run_platform_task",
    "same_weights",
]
