"""The experts of Gorge Chase: :class:`~.scripted.ScriptedPolicy`, the yardstick reported beside every model (the
planner with the true terrain and monsters), and :class:`~.planner.PlannerPolicy`, the same planner on what the
observation shows (numpy + standard library only); :class:`~.search.SearchPolicy`, the rollout search on what the
observation shows, and :class:`~.search.CeilingPolicy`, the same search on the true game (the ceiling yardstick)."""

from .planner import PlannerPolicy
from .scripted import RADIUS, LocalTables, ScriptedPolicy, TrueTerrain, local_tables
from .search import CeilingPolicy, SearchPolicy

__all__ = ["RADIUS", "CeilingPolicy", "LocalTables", "PlannerPolicy", "ScriptedPolicy", "SearchPolicy", "TrueTerrain",
           "local_tables"]
