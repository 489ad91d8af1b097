"""Stand-in for ``kaiwudrl.interface.agent``: the Agent's base class.

On its own (an Agent used outside a framework) ``send_sample_data`` refuses, as there is no learner to send to. The
stand-in framework (``framework.py``) gives each Agent it makes a role, as the platform's servers do: the aisrv's
Agent (the one the workflow gets) sends its samples to the learner through it."""

__all__ = ["BaseAgent"]


class BaseAgent:
    framework = None  # set by the stand-in framework on the Agents it makes

    def __init__(self, agent_type="player", device=None, logger=None, monitor=None):
        self.agent_type = agent_type
        self.device = device
        self.logger = logger
        self.monitor = monitor

    def send_sample_data(self, list_sample_data):
        """Hand the samples of a game to the learner (the aisrv's Agent only)."""
        if self.framework is None:
            raise RuntimeError("send_sample_data: this Agent runs outside a training task (no learner to send to)")
        return self.framework.send_sample_data(list_sample_data)
