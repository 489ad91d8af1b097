"""The oracle: an optimal planner on the competition observation (numpy + standard library only), the project's
"physical limit" yardstick and the teacher for imitation learning.

- :mod:`.paths`: distance fields (walking and one-flash legs between the entries of the pickup discs);
- :mod:`.tour`: the tour, Held–Karp with the flash and the speed buff (:func:`plan_tour`);
- :mod:`.expert`: the expert that plays the tour step by step with look-ahead (:class:`OraclePolicy`).
"""

from .expert import TIE_BREAKS, OraclePolicy, oracle_action
from .tour import LEG_ROUNDING, FlashPlan, Plan, buff_steps, held_karp, plan_tour, predict_steps

__all__ = [
    "LEG_ROUNDING",
    "TIE_BREAKS",
    "FlashPlan",
    "OraclePolicy",
    "Plan",
    "buff_steps",
    "held_karp",
    "oracle_action",
    "plan_tour",
    "predict_steps",
]
