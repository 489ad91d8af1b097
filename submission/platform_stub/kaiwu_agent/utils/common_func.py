"""Stand-in for ``kaiwu_agent.utils.common_func``: ``create_cls`` (a data class from field names and defaults) and
``attached`` (the platform registers decorated functions; here it returns them unchanged)."""

__all__ = ["create_cls", "attached"]


def create_cls(cls_name, **fields):
    """A class named ``cls_name`` whose instances take the keyword arguments ``fields`` (defaults as given)."""

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"{cls_name} has no field(s) {sorted(unknown)}; fields are {list(fields)}")
        for name, default in fields.items():
            setattr(self, name, kwargs.get(name, default))

    def __repr__(self):
        return f"{cls_name}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in fields) + ")"

    return type(cls_name, (), {"__init__": __init__, "__repr__": __repr__, "__slots__": tuple(fields)})


def attached(func):
    return func
