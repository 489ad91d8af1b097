"""Stand-in for ``kaiwu_agent.agent.protocol.protocol``: the registry of the algorithm's classes and functions.

``@attached`` and ``create_cls`` (``kaiwu_agent.utils.common_func``) set them here by name; the platform's sample
transport (``SampleData2NumpyData``, ``NumpyData2SampleData``) and its evaluation workflow (``observation_process``,
``action_process``) call them from here, so a function of the algorithm that is not registered is never called."""

REQUIRED = ("Agent", "workflow", "observation_process", "action_process", "sample_process", "SampleData2NumpyData",
            "NumpyData2SampleData")


def registered(name):
    """What ``@attached`` or ``create_cls`` registered under ``name``, or None."""
    return globals().get(name)


def missing():
    """The names the platform calls that nothing registered."""
    return [name for name in REQUIRED if registered(name) is None]


def clear():
    """Forget every registration (one algorithm package after another in one process)."""
    for name in [n for n in globals() if not n.startswith("_") and n not in _OWN]:
        del globals()[name]


_OWN = {"REQUIRED", "registered", "missing", "clear"}
