"""Stand-in for ``common_python.utils.common_func``: ``create_cls`` (a record class from field names and defaults;
for the learner's samples the integer values declare each field's length), ``attached`` and ``Frame``."""

__all__ = ["Frame", "attached", "create_cls"]


def create_cls(cls_name, **fields):
    """A class named ``cls_name`` whose instances take the keyword arguments ``fields`` (an unknown field raises,
    as on the platform). Integer defaults are field lengths (``FIELD_DIMS``), used to flatten a sample; the fields
    of an instance start as None."""

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise AttributeError(f"{cls_name} object has no attribute(s) {sorted(unknown)}; fields are {list(fields)}")
        for name, default in fields.items():
            setattr(self, name, kwargs.get(name, None if name in dims else default))

    def __repr__(self):
        return f"{cls_name}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in fields) + ")"

    dims = {k: v for k, v in fields.items() if isinstance(v, int) and not isinstance(v, bool)}
    return type(cls_name, (), {"__init__": __init__, "__repr__": __repr__, "__slots__": tuple(fields),
                               "FIELD_DIMS": dims, "FIELDS": tuple(fields)})


def attached(obj):
    """The platform's registration decorator (the 15.0.1 framework finds the Agent and workflow through the conf)."""
    return obj


class Frame:
    """A frame of play, with whatever fields it is given."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
