"""The experts of Gorge Chase: :class:`~.scripted.ScriptedPolicy`, the yardstick reported beside every model (the
planner with the true terrain and monsters), and :class:`~.planner.PlannerPolicy`, the same planner on what the
observation shows (numpy + standard library only)."""

from .planner import PlannerPolicy
from .scripted import RADIUS, LocalTables, ScriptedPolicy, TrueTerrain, local_tables

__all__ = ["RADIUS", "LocalTables", "PlannerPolicy", "ScriptedPolicy", "TrueTerrain", "local_tables"]
