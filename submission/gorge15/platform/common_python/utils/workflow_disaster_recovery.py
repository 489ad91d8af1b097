"""Stand-in for ``common_python.utils.workflow_disaster_recovery``."""

__all__ = ["handle_disaster_recovery"]


def handle_disaster_recovery(env_obs, logger=None):
    """True (and a log line) when ``env_obs`` is abnormal: None, not a dict, or carrying an error result code; the
    workflow then skips or abandons the game."""
    if isinstance(env_obs, dict):
        code = (env_obs.get("extra_info") or {}).get("result_code", 0)
        if "observation" in env_obs and not code:
            return False
        reason = f"result_code {code}" if code else "no observation"
    else:
        reason = f"env_obs is {type(env_obs).__name__}"
    if logger is not None:
        logger.warning(f"disaster recovery: abnormal env_obs ({reason}); the game is skipped")
    return True
