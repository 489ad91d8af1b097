"""What a robot_vacuum agent can know from its observations alone: the cells seen (road or obstacle, dirty or clean),
the cells it cleaned, the official robots last seen and their spawn squares as far as the sightings pin them down,
the chargers, the battery and the episode's clock. numpy and the standard library only (submission-safe: Python 3.8,
numpy 1.19).

:meth:`Memory.update` reads one platform ``env_obs`` dict (or its ``observation`` part) per step, in order
(docs/vacuum/rules.md, the observation protocol): ``map_info`` is the 21 x 21 view ``[row = z, column = x]`` around
the robot with codes 0 obstacle or off the map, 1 clean road, 2 dirty; ``frame_state.npcs`` gives an official robot's
cell while it is within the view (else ``(-1, -1)``, ``is_in_view`` 0; a position given out of view is taken too);
``organs`` are the chargers (centres, always listed). A cell seen dirty stays dirty in the memory until it is seen
clean or the robot cleans it (an official robot out of view may have cleaned it meanwhile).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple  # noqa: UP035

import numpy as np

from .planner import DANGER, Belief
from .rules import NPC_RADIUS, SIZE, VIEW_RADIUS

__all__ = ["Memory"]

Cell = Tuple[int, int]  # noqa: UP006
CODE_ROAD, CODE_DIRTY = 1, 2
SIGHTING_SPREAD = 5  # an official robot whose spawn point is not known is likely within this of its sightings
AREA = NPC_RADIUS + DANGER  # an official robot threatens the cells this far from its spawn point


def _pos(entry: dict) -> Cell:
    pos = entry["pos"]
    return int(pos["x"]), int(pos["z"])


class Memory:
    """Everything the robot remembers of one episode (a step number lower than the last one starts a new episode).

    Attributes after an update: ``step``, ``max_step``, ``x``, ``z``, ``battery``, ``battery_max``, ``walkable``
    (road seen), ``seen`` (cells seen), ``unknown`` (not seen), ``dirty`` (cells believed dirty), ``chargers``
    (centres ``(x, z)``), ``npcs`` (idx -> cell where the observation gives it now: in view), ``npc_last`` (idx ->
    (cell, step) of the last sighting), ``npc_boxes`` (idx -> (min x, max x, min z, max z) of the sightings),
    ``npc_spawns`` (idx -> spawn point, once known: seen at reset, or pinned down by sightings 20 cells apart),
    ``cleaned`` (cells the robot cleaned), ``clean_score``, ``terrain_version`` (grows whenever new cells are seen).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the episode."""
        self.walkable = np.zeros((SIZE, SIZE), dtype=bool)
        self.seen = np.zeros((SIZE, SIZE), dtype=bool)
        self.unknown = np.ones((SIZE, SIZE), dtype=bool)
        self.dirty = np.zeros((SIZE, SIZE), dtype=bool)
        self.step = -1
        self.max_step = 0
        self.x = self.z = 0
        self.battery = self.battery_max = 0
        self.chargers: List[Cell] = []  # noqa: UP006
        self.npcs: Dict[int, Cell] = {}  # noqa: UP006
        self.npc_last: Dict[int, Tuple[Cell, int]] = {}  # noqa: UP006
        self.npc_boxes: Dict[int, Tuple[int, int, int, int]] = {}  # noqa: UP006
        self.npc_spawns: Dict[int, Cell] = {}  # noqa: UP006
        self.cleaned: List[Cell] = []  # noqa: UP006
        self.clean_score = 0
        self.terrain_version = 0
        self._seen_count = 0

    # ------------------------------------------------------------------------------------------------ update
    def update(self, env_obs: dict) -> None:
        """Take one step's observation: the platform's ``env_obs`` or its ``observation`` dict."""
        observation = env_obs.get("observation", env_obs)
        info = observation["env_info"]
        frame = observation["frame_state"]
        step = int(observation.get("step_no", info["step_no"]))
        if step == self.step:
            return  # the same step again: nothing new
        if step < self.step:
            self.reset()
        first = self.step < 0
        self.step = step
        hero = frame["heroes"]
        self.x, self.z = _pos(hero)
        self.battery = int(hero.get("battery", info.get("remaining_charge", 0)))
        self.battery_max = int(hero.get("battery_max", info.get("battery_max", 0)))
        self.max_step = int(info["max_step"])
        self.clean_score = int(info.get("clean_score", hero.get("dirt_cleaned", 0)))
        self.chargers = [_pos(organ) for organ in frame.get("organs", [])]
        self._see(observation["map_info"])
        for cell in info.get("step_cleaned_cells", []) or []:
            c = (int(cell["x"]), int(cell["z"]))
            if 0 <= c[0] < SIZE and 0 <= c[1] < SIZE:
                self.dirty[c[1], c[0]] = False
                self.cleaned.append(c)
        self._npcs(frame.get("npcs", []), first or step == 0)

    def _see(self, map_info) -> None:
        r = VIEW_RADIUS
        view = np.asarray(map_info, dtype=np.int8)
        z0, x0 = self.z - r, self.x - r
        zs, ze = max(z0, 0), min(z0 + view.shape[0], SIZE)
        xs, xe = max(x0, 0), min(x0 + view.shape[1], SIZE)
        part = view[zs - z0:ze - z0, xs - x0:xe - x0]
        self.walkable[zs:ze, xs:xe] = part >= CODE_ROAD
        self.dirty[zs:ze, xs:xe] = part == CODE_DIRTY
        seen = self.seen[zs:ze, xs:xe]
        if not seen.all():
            seen[...] = True
            self.unknown[zs:ze, xs:xe] = False
            self.terrain_version += 1

    def _npcs(self, entries, at_reset: bool) -> None:
        self.npcs = {}
        for k, entry in enumerate(entries):
            idx = int(entry.get("idx", k + 1))
            cell = _pos(entry)
            if cell[0] < 0 or cell[1] < 0:  # out of view: (-1, -1) (a true position is used whatever is_in_view says)
                continue
            self.npcs[idx] = cell
            self.npc_last[idx] = (cell, self.step)
            box = self.npc_boxes.get(idx)
            x, z = cell
            box = (x, x, z, z) if box is None else (min(box[0], x), max(box[1], x), min(box[2], z), max(box[3], z))
            self.npc_boxes[idx] = box
            if at_reset:
                self.npc_spawns[idx] = cell  # at reset an official robot stands on its spawn point
            elif idx not in self.npc_spawns:
                region = self.spawn_region(idx)
                if region is not None and region[0] == region[1] and region[2] == region[3]:
                    self.npc_spawns[idx] = (region[0], region[2])

    # ------------------------------------------------------------------------------------------------ queries
    def spawn_region(self, idx: int) -> Optional[Tuple[int, int, int, int]]:  # noqa: UP006, UP045
        """(min x, max x, min z, max z) of the cells that can be official robot ``idx``'s spawn point (it stays
        within Chebyshev :data:`~.rules.NPC_RADIUS` of it); None before a sighting."""
        if idx in self.npc_spawns:
            x, z = self.npc_spawns[idx]
            return x, x, z, z
        box = self.npc_boxes.get(idx)
        if box is None:
            return None
        return (max(0, box[1] - NPC_RADIUS), min(SIZE - 1, box[0] + NPC_RADIUS),
                max(0, box[3] - NPC_RADIUS), min(SIZE - 1, box[2] + NPC_RADIUS))

    def npc_areas(self) -> List[Tuple[int, int, int, int]]:  # noqa: UP006
        """``(x0, x1, z0, z1)`` (inclusive) where each official robot seen is likely to walk: its square widened by
        :data:`~.planner.DANGER` when its spawn point is known, else the box of its sightings widened by
        :data:`SIGHTING_SPREAD`."""
        out = []
        for idx, box in sorted(self.npc_boxes.items()):
            spawn = self.npc_spawns.get(idx)
            if spawn is not None:
                x, z = spawn
                out.append((x - AREA, x + AREA, z - AREA, z + AREA))
            else:
                out.append((box[0] - SIGHTING_SPREAD, box[1] + SIGHTING_SPREAD, box[2] - SIGHTING_SPREAD,
                            box[3] + SIGHTING_SPREAD))
        return out

    def belief(self) -> Belief:
        """The planner's view of this memory (the arrays are shared, not copied)."""
        return Belief(walkable=self.walkable, dirty=self.dirty, unknown=self.unknown, x=self.x, z=self.z,
                      battery=self.battery, battery_max=self.battery_max, chargers=tuple(self.chargers),
                      npcs=tuple(self.npcs.values()), step=self.step, max_step=self.max_step,
                      terrain_version=self.terrain_version, npc_spawns=tuple(self.npc_spawns.values()),
                      npc_areas=tuple(self.npc_areas()))
