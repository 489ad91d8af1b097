"""A minimal stand-in for the platform's ``kaiwu_agent`` package, for local checks only.

sb3-realm's parity check and ``sb3-realm eval <submission folder>`` put this folder on the import path; it is
never copied into a submission (the platform brings its own ``kaiwu_agent``). Only what the 2024 agent interface
uses is here: ``agent.base_agent`` (BaseAgent and the five method wrappers) and ``utils.common_func``
(``create_cls``, ``attached``).
"""
