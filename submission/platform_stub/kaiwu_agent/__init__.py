"""A stand-in for the platform's ``kaiwu_agent`` package, for local checks only.

sb3-realm's checks and ``sb3-realm eval <submission folder>`` put this folder on the import path; it is never copied
into a submission (the platform brings its own ``kaiwu_agent``). Only what the 2024 agent interface uses is here:
``agent.base_agent`` (BaseAgent and the five method wrappers, which route each call the way the platform's servers
do once ``framework.py`` has given the Agent a role), ``agent.protocol.protocol`` (the registry that ``@attached``
and ``create_cls`` fill, where the platform's own workflows find the algorithm's functions) and
``utils.common_func`` (``create_cls``, ``attached``, ``Frame``).
"""
