"""Stand-in for ``kaiwu_agent.agent.base_agent``: the base class and the method wrappers (pass-through here; the
platform's versions add logging and monitoring around the same calls)."""

import functools

__all__ = ["BaseAgent", "predict_wrapper", "exploit_wrapper", "learn_wrapper", "save_model_wrapper",
           "load_model_wrapper"]


class BaseAgent:
    def __init__(self, agent_type="player", device=None, logger=None, monitor=None):
        self.agent_type = agent_type
        self.device = device
        self.logger = logger
        self.monitor = monitor


def _wrapper(func):
    @functools.wraps(func)
    def wrapped(self, *args, **kwargs):
        return func(self, *args, **kwargs)

    return wrapped


predict_wrapper = exploit_wrapper = learn_wrapper = save_model_wrapper = load_model_wrapper = _wrapper
