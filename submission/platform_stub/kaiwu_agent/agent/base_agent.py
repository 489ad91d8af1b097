"""Stand-in for ``kaiwu_agent.agent.base_agent``: the base class and the five method wrappers.

Without a framework (an Agent used on its own, as ``sb3-realm eval DIR`` does) a wrapped method is called as it is.
Once the stand-in framework (``framework.py``) has given the Agent a handler (``set_framework_handler``, as the
platform does after making it), every call goes through the handler, which does what the platform's server of that
Agent does: on the aisrv, ``predict``/``exploit`` go to an actor, ``learn`` ships the samples to the learner and
returns None, ``save_model`` goes to the learner (which picks the path and the id), ``load_model`` goes to the model
pool; on the learner, ``learn`` receives flat sample arrays to turn back into SampleData first."""

import functools

__all__ = [
    "BaseAgent",
    "exploit_wrapper",
    "learn_wrapper",
    "load_model_wrapper",
    "predict_wrapper",
    "save_model_wrapper",
]


class BaseAgent:
    framework_handler = None  # set by the framework; Agents need not call this class's __init__ (the official don't)

    def __init__(self, agent_type="player", device=None, logger=None, monitor=None):
        self.agent_type = agent_type
        self.device = device
        self.logger = logger
        self.monitor = monitor

    def set_framework_handler(self, framework_handler):
        self.framework_handler = framework_handler


def _wrapper(kind):
    def decorate(func):
        @functools.wraps(func)
        def wrapped(agent, *args, **kwargs):
            handler = agent.framework_handler
            if handler is None:
                return func(agent, *args, **kwargs)
            return handler.call(kind, agent, func, *args, **kwargs)

        return wrapped

    return decorate


predict_wrapper = _wrapper("predict")
exploit_wrapper = _wrapper("exploit")
learn_wrapper = _wrapper("learn")
save_model_wrapper = _wrapper("save_model")
load_model_wrapper = _wrapper("load_model")
