"""Scripted experts of Gorge Chase: :class:`~.scripted.ScriptedPolicy`, the yardstick reported beside every model
(numpy + standard library only)."""

from .scripted import RADIUS, LocalTables, ScriptedPolicy, local_tables

__all__ = ["ScriptedPolicy", "LocalTables", "local_tables", "RADIUS"]
