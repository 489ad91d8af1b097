"""Stand-in for ``kaiwudrl.common.monitor.monitor_config_builder``: the monitoring panel's builder, as the official
``conf/monitor_builder.py`` uses it (each call returns the builder; ``build`` returns the configuration)."""

__all__ = ["MonitorConfigBuilder"]


class MonitorConfigBuilder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return self

        return record

    def build(self):
        return {"calls": [(name, list(args), kwargs) for name, args, kwargs in self.calls]}
