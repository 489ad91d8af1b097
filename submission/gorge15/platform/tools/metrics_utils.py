"""Stand-in for ``tools.metrics_utils``."""

__all__ = ["get_training_metrics"]


def get_training_metrics():
    """The platform's training metrics; the stand-in has none (the platform returns None too when it has none)."""
    return None
