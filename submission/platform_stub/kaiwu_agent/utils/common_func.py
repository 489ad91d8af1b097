"""Stand-in for ``kaiwu_agent.utils.common_func``: ``create_cls`` (a data class from field names and defaults),
``attached`` and ``Frame``. Both ``create_cls`` and ``attached`` register what they make in
``kaiwu_agent.agent.protocol.protocol``, as the platform's do."""

from kaiwu_agent.agent.protocol import protocol

__all__ = ["Frame", "attached", "create_cls"]


def create_cls(cls_name, **fields):
    """A class named ``cls_name`` whose instances take the keyword arguments ``fields`` (defaults as given; an
    unknown field raises, as on the platform), registered in the protocol module."""

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise AttributeError(f"{cls_name} object has no attribute(s) {sorted(unknown)}; fields are {list(fields)}")
        for name, default in fields.items():
            setattr(self, name, kwargs.get(name, default))

    def __repr__(self):
        return f"{cls_name}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in fields) + ")"

    cls = type(cls_name, (), {"__init__": __init__, "__repr__": __repr__, "__slots__": tuple(fields)})
    setattr(protocol, cls_name, cls)
    return cls


def attached(obj):
    """Register a class or function of the algorithm under its name (the platform calls it from there)."""
    setattr(protocol, obj.__name__, obj)
    return obj


class Frame:
    """A frame of play, with whatever fields it is given."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
