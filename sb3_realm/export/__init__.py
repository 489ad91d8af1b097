"""Export: a trained SB3 checkpoint -> the competition's agent package (:mod:`.build`), and the parity proof that
the package acts exactly like the model (:mod:`.check`)."""

from .build import LAYOUTS, ExportedPolicy, ExportError, build_submission, read_model
from .check import check_submission

__all__ = ["LAYOUTS", "ExportError", "ExportedPolicy", "build_submission", "read_model", "check_submission"]
