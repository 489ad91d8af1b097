"""The expert that labels an imitation run's states, as one value that crosses process boundaries."""

from __future__ import annotations

from dataclasses import dataclass

from .. import games
from ..agents import PolicySpec
from ..agents.base import Policy
from ..games import GameEnv

__all__ = ["ExpertSpec"]


@dataclass(frozen=True)
class ExpertSpec(PolicySpec):
    """:class:`~sb3_realm.agents.PolicySpec` of the policy that labels states (``kind``: an expert of the game, the
    Realm's ``oracle`` or ``oracle-refined``, or an SB3 checkpoint path), with how it labels.

    :param tie_break: the expert's rule for exact ties of its cost-to-go (the Realm's ``OraclePolicy.tie_break``).
    :param refine: ``(name, value)`` pairs set on the game's refined expert (its beam search's settings:
        :attr:`~sb3_realm.games.ExpertOptions.settings`); other experts ignore them.
    :param searches: ``(SearchKey, packed sequence)`` pairs the refined expert starts with: first searches made
        before, replayed with the same moves instead of searched again; other experts ignore them.
    """

    tie_break: str = "index"
    refine: tuple = ()
    searches: tuple = ()

    def build(self, env: GameEnv) -> Policy:
        policy = super().build(env)
        games.get(self.game).expert_setup().configure(policy, self.tie_break, self.refine)
        return policy

    def changed_refine(self) -> dict:
        """The ``refine`` settings that differ from the refined expert's defaults."""
        return games.get(self.game).expert_setup().changed(self.refine)

    @property
    def label(self) -> str:
        """The expert as a dataset records it: ``kind``, with the refine settings that differ from the defaults and a
        tie rule other than ``index`` (e.g. ``oracle-refined (beam_width 30, max_refines 8)``)."""
        extra = [f"{k} {v}" for k, v in self.changed_refine().items()]
        if self.tie_break != "index" and self.kind in games.get(self.game).experts:
            extra.append(f"tie_break {self.tie_break}")
        return f"{self.kind} ({', '.join(extra)})" if extra else self.kind

    def reference_key(self) -> list:
        """What names the expert's own games of a set: ``[kind, tie_break]`` and the changed refine settings where
        there are any (the key a run's checkpoints keep them under)."""
        changed = self.changed_refine()
        return [self.kind, self.tie_break, *([changed] if changed else [])]
