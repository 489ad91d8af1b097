"""Export: a trained SB3 checkpoint -> an upload folder for the competition platform (:mod:`.build`, with the
user's code package read and edited by :mod:`.code_package`), and the proof, through the platform stand-in, that a
training task keeps its weights and the model it saves acts exactly like the SB3 model (:mod:`.check`)."""

from .build import LAYOUTS, WORKFLOWS, ExportedPolicy, ExportError, build_submission, next_steps, read_model
from .check import check_submission, run_platform_task, same_weights

__all__ = ["LAYOUTS", "WORKFLOWS", "ExportError", "ExportedPolicy", "build_submission", "next_steps", "read_model",
           "check_submission", "run_platform_task", "same_weights"]
