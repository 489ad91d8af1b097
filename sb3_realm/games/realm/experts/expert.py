"""The oracle's expert: the policy that plays the planned tour (numpy + standard library only). It is the
"physical limit" yardstick of the project and the teacher for imitation learning; the tour itself is planned by
:mod:`sb3_realm.games.realm.experts.tour`.

Execution (:class:`OraclePolicy`): at each step the 8 moves (and, on the planned flash leg, the 8 flashes) are
simulated with the real rules (:func:`~sb3_realm.games.realm.core.simulate_move`, the same sub-stepped motion with
wall sliding as ``Game``) and the action with the least cost-to-go is played. The cost-to-go is the distance field
of the next node of the route plus the value of the rest of the route from each of its entries, evaluated at the
exact position (cell value plus the in-cell offset); pickups, a premature end and the buff's speed are accounted for
in the look-ahead, which searches ``cruise_lookahead`` (2) moves deep, ``lookahead`` (3) near the next node and at
corners (no oscillation: repeated states deepen the search, then fall back on the BFS field). The plan is redone
when something unplanned happens: an out-of-order pickup, a failed, foreign or missed flash, the buff taken early,
or the hero being moved elsewhere than predicted and losing ground (the fields are global, so small deviations need
no new plan). Labelling a learner's loop (DAgger) calls for a new plan at almost every step, in states it has seen
before: a plan made in the same exact state earlier in the episode is reused whenever planning again would give it
(:meth:`~.tour.Plan.fits`), and a new plan with the same route and flash leg keeps the route's
values and fields, so the labels are those of planning afresh.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..core import DIRECTIONS, flash_landing, simulate_move
from ..maps import BUFF_ID, CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z, RealmMap
from ..observation import EnvInfo, Observation
from ..rules import EpisodeConfig, Rules
from .paths import INF, PathTables, cell_links, dijkstra, field_at, open_cells, path_tables
from .tour import Plan, buff_steps, plan_from_state

__all__ = ["TIE_BREAKS", "OraclePolicy", "oracle_action"]

#: the values of ``OraclePolicy.tie_break``
TIE_BREAKS = ("index", "heading")


@dataclass
class _State:
    step: int
    x: float
    z: float
    available: set[int]
    buff_available: bool
    buff_remaining: int
    talent: bool


class OraclePolicy:
    """The expert: plans the tour at the first step of an episode and plays it (see the module docstring).

    Attributes: ``plan`` (the current :class:`Plan`), ``planned_steps`` (the predicted steps of the first plan of
    the episode; ``planned_cost`` its unrounded model cost), ``replans`` (plans made after the first),
    ``plan_seconds`` (time spent planning this episode).
    """

    #: extra world units for passing a wall corner diagonally, in the model (set before ``reset``)
    corner_penalty: float = 0.0
    #: moves searched ahead near the next node of the route or at a corner (1 = greedy)
    lookahead: int = 3
    #: moves searched ahead elsewhere
    cruise_lookahead: int = 2
    #: how ties of the cost-to-go (within ``tie_tolerance`` world units; in over half of the states) are broken:
    #: "index" (the lowest action) or "heading" (the move closest to the straight line to the next node of the route,
    #: then the lowest action: labels a policy imitates better, see ``imitation.tie_break``)
    tie_break: str = "index"
    tie_tolerance: float = 1.0

    def __init__(self, game_map: RealmMap, rules: Rules | None = None, *, use_flash: bool = True,
                 use_buff: bool = True) -> None:
        self.map = game_map
        self.rules = rules or Rules()
        self.use_flash = bool(use_flash)
        self.use_buff = bool(use_buff)
        self._config: EpisodeConfig | None = None
        self._tables: PathTables | None = None
        h, w = game_map.walkable.shape
        self._w, self._h = w, h
        self._walk = game_map.walkable.ravel().tolist()
        self._cells = cell_links(self._walk, w, h)
        # cells from which no move at either speed meets a wall (see _landings)
        speeds = (self.rules.move_speed, self.rules.buff_speed)
        self._open = open_cells(game_map.walkable, math.ceil(max(speeds) / CELL_WIDTH))
        # by speed: simulate_move's sub-steps and the 8 directions' sub-step vectors
        self._strides = {v: (n, [(ux * v / n, uz * v / n) for ux, uz in DIRECTIONS])
                         for v in speeds for n in [math.ceil(v / self.rules.substep)]}
        self._pos = [(float(px), float(pz)) for px, pz in game_map.positions_world]
        self._r2 = self.rules.pickup_radius ** 2
        self._clear()

    # ------------------------------------------------------------------------------------ episode state
    def reset(self, config: EpisodeConfig) -> None:
        """Start a new episode of ``config`` (its end id and ``max_step``); forgets the plan."""
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(f"OraclePolicy.tie_break = {self.tie_break!r}; use one of {list(TIE_BREAKS)}")
        self._config = config
        self._tables = path_tables(self.map, self.rules, config.end, self.use_buff, self.corner_penalty)
        self._clear()

    def _clear(self) -> None:
        self.plan: Plan | None = None
        self.planned_steps: int | None = None
        self.planned_cost: float | None = None
        self.replans = 0
        self.plan_seconds = 0.0
        self._route: tuple[int, ...] = ()
        self._leg = 0
        self._flash_leg: int | None = None
        self._pre = False  # the planned flash is still to come
        self._remaining: set[int] = set()
        self._fields: dict[tuple[int, bool], list[float]] = {}
        self._expect: tuple[float, float] | None = None
        self._expect_val = INF
        self._last_flash = False
        self._last_step = -1
        self._last_query: tuple[tuple, int] | None = None
        self._visits: dict[tuple[int, int, int, bool], int] = {}
        self._plans: dict[tuple, Plan] = {}  # this episode's plans by planning state (see _replan)

    def _read(self, obs: Observation, env_info: EnvInfo) -> _State:
        hero = env_info.frame_state.heroes[0]
        organs = env_info.frame_state.organs
        avail = {int(o.config_id) for o in organs if o.sub_type == 1 and o.status == 1}
        buffs = [o for o in organs if o.sub_type == 2]
        return _State(step=int(env_info.game_info.step_no), x=float(hero.pos.x), z=float(hero.pos.z),
                      available=avail, buff_available=bool(buffs) and buffs[0].status == 1,
                      buff_remaining=int(env_info.game_info.buff_remain_time), talent=bool(obs.legal_act[1]))

    def played_other(self) -> None:
        """Tell the policy that the step just played was not its action (another policy plays, the oracle labels,
        as in DAgger): its loop guard counts its own revisits only, so a loop of the other policy does not switch
        its labels to the guard's fallback."""
        self._visits.clear()

    # ------------------------------------------------------------------------------------ acting
    def act(self, obs: Observation, env_info: EnvInfo) -> int:
        """The action (0..15) for the competition-shaped observation. Never a flash while ``legal_act[1] == 0``."""
        if self._config is None:
            raise RuntimeError("OraclePolicy.act() before reset(config): the policy needs the episode's end id")
        st = self._read(obs, env_info)
        query = (st.step, st.x, st.z, frozenset(st.available), st.talent, st.buff_available, st.buff_remaining)
        if self._last_query is not None and self._last_query[0] == query:
            return self._last_query[1]  # the same state asked again
        if st.step == 0 or st.step < self._last_step:
            self._clear()
        x, z, matched = st.x, st.z, False
        if self._expect is not None and math.floor(self._expect[0]) == st.x and math.floor(self._expect[1]) == st.z:
            x, z, matched = self._expect[0], self._expect[1], True
        if self.plan is None or self._stale(st, x, z, matched):
            self._replan(st, x, z)
        action = self._choose(st, x, z)
        self._last_step = st.step
        self._last_query = (query, action)
        return action

    def _stale(self, st: _State, x: float, z: float, matched: bool) -> bool:
        """Advance along the route; ``True`` when the situation calls for a new plan."""
        gone = self._remaining - st.available
        route = self._route
        while self._leg < len(route) - 1:
            node = route[self._leg]
            if node == BUFF_ID and (st.buff_remaining > 0 or not st.buff_available):
                self._leg += 1
            elif node in gone:
                gone.discard(node)
                self._remaining.discard(node)
                self._leg += 1
            else:
                break
        if gone:
            return True  # a treasure picked up out of order
        if BUFF_ID in route[self._leg:-1] and (st.buff_remaining > 0 or not st.buff_available):
            return True
        if self._pre:
            if not st.talent:
                if not (self._last_flash and matched):
                    return True  # the talent was spent otherwise, or the flash failed
                self._pre = False
            elif self._flash_leg is not None and self._leg > self._flash_leg:
                return True  # the planned flash did not happen
        elif self._last_flash and not matched:
            return True
        if not matched and self._expect is not None:
            v = self._value(x, z, self._leg, self._pre)
            if not v <= self._expect_val + self.rules.move_speed:
                return True
        return False

    def _replan(self, st: _State, x: float, z: float) -> None:
        t0 = time.perf_counter()
        if self.plan is not None:
            self.replans += 1
        config, tables = self._config, self._tables
        assert config is not None and tables is not None  # set by reset(); act() refuses to run before it
        left = config.max_step - st.step
        buff_available = st.buff_available and st.buff_remaining == 0
        # A plan is a function of its planning state; the steps left only matter when the whole tour does not fit.
        # A learner's loop (DAgger) revisits the same exact states and calls for a new plan at each of them: the plan
        # made there before is reused whenever it would be planned again (Plan.fits).
        key = (x, z, frozenset(st.available), st.talent, buff_available, st.buff_remaining)
        plan = self._plans.get(key)
        if plan is None or not plan.fits(left):
            plan, _ = plan_from_state(tables, x, z, st.available, use_flash=self.use_flash,
                                      use_buff=self.use_buff, flash_ready=st.talent, buff_available=buff_available,
                                      buff_remaining=st.buff_remaining, steps_left=left)
            self._plans[key] = plan
        flash_leg = plan.flash.leg if plan.flash is not None else None
        # the route values and fields are functions of the route and the flash leg alone: kept when both stay
        same_route = self.plan is not None and plan.route == self._route and flash_leg == self._flash_leg
        self.plan = plan
        if self.planned_steps is None:
            self.planned_steps, self.planned_cost = plan.predicted_steps, plan.cost
        self._route = plan.route
        self._leg = 0
        self._flash_leg = flash_leg
        self._pre = self._flash_leg is not None
        self._remaining = set(plan.order[:-1])
        if not same_route:
            self._fields = {}
            self._chain()
        self.plan_seconds += time.perf_counter() - t0

    def _chain(self) -> None:
        """The value of the rest of the route from each entry of each node (``_post``: no flash left, ``_pre``:
        the planned flash still to come), in world units at ``move_speed`` before the buff, raw distance after."""
        t, route, f = self._tables, self._route, self._flash_leg
        assert t is not None  # set by reset(), before the first plan
        ent = [t.entries[node] for node in route]
        conv = np.vectorize(lambda d: self.rules.move_speed * buff_steps(d, self.rules))
        m = len(route)
        post: list[np.ndarray] = [np.zeros(0)] * m
        pre: list[np.ndarray] = [np.zeros(0)] * m
        post[-1] = pre[-1] = np.zeros(len(ent[-1]))
        for k in range(m - 2, -1, -1):
            sub = np.ix_(ent[k], ent[k + 1])
            post[k] = (t.leg[sub] + post[k + 1]).min(axis=1)
            if f is not None and k + 1 == f:
                pre[k] = (t.leg_flash[sub] + post[k + 1]).min(axis=1)
            elif f is not None and k + 1 < f:
                pre[k] = (t.leg[sub] + pre[k + 1]).min(axis=1)
            else:
                pre[k] = post[k]
            if route[k] == BUFF_ID:
                post[k], pre[k] = conv(post[k]), conv(pre[k])
        self._ent, self._vpost, self._vpre = ent, post, pre

    def _field(self, k: int, pre: bool) -> list[float]:
        """The cost-to-go field (per cell) while heading for ``route[k]``."""
        f = self._flash_leg
        pre = pre and f is not None and k <= f
        key = (k, pre)
        hit = self._fields.get(key)
        if hit is not None:
            return hit
        t, ent = self._tables, self._ent[k]
        assert t is not None  # set by reset(), before the first plan
        if pre and k == f:  # walk, or walk + flash + walk
            post = np.append(np.asarray(self._field(k, False)), INF)
            init = self.rules.move_speed + post[t.land].min(axis=0)
            cells = np.flatnonzero(np.isfinite(init))
            sources = list(zip(init[cells].tolist(), cells.tolist(), strict=True))
            vals = t.entry_offset[ent] + self._vpost[k]
            sources += list(zip(vals.tolist(), t.entry_cell[ent].tolist(), strict=True))
            hit = dijkstra(t.nbrs_for(self._route[k]), sources, self._w * self._h)
        else:
            vals = t.entry_offset[ent] + (self._vpre[k] if pre else self._vpost[k])
            hit = (t.fields[ent].astype(np.float64) + vals[:, None]).min(axis=0).tolist()
        self._fields[key] = hit
        return hit

    def _value(self, x: float, z: float, k: int, pre: bool) -> float:
        return field_at(self._field(k, pre), self._cells, self._w, self._h, x, z, self.corner_penalty)

    def _within(self, pos_id: int, x: float, z: float) -> bool:
        px, pz = self._pos[pos_id]
        return (px - x) ** 2 + (pz - z) ** 2 <= self._r2

    def _eval(self, x: float, z: float, st: _State, pre: bool) -> tuple[float, bool]:
        """Cost-to-go after an action that puts the hero at ``(x, z)``, pickups there included, and whether the
        action reached the next node of the route (or ended the episode)."""
        assert self._config is not None  # set by reset(); act() refuses to run before it
        if self._within(self._config.end, x, z):
            return (0.0 if all(self._within(t, x, z) for t in self._remaining) else INF), True
        if not self.use_buff and st.buff_available and self._within(BUFF_ID, x, z):
            return INF, True
        k, route, crossed = self._leg, self._route, False
        while k < len(route) - 1 and self._within(route[k], x, z):
            if route[k] == BUFF_ID:
                if not st.buff_available:
                    break
                crossed = True
            k += 1
        v = self._value(x, z, k, pre)
        if crossed and v < INF:
            v = self.rules.move_speed * buff_steps(v, self.rules)
        return v, k > self._leg

    def _search(self, x: float, z: float, st: _State, depth: int, speed: float, unit: float, memo: dict) -> float:
        """Least ``unit * moves + cost-to-go`` over move sequences of ``depth`` steps (stopping at a pickup).
        ``memo`` keeps, by exact position, the values of this search (key ``(x, z, depth)``), the cost-to-go of
        :meth:`_eval` (``(x, z)``) and the landings of the 8 moves (``(x, z, -1)``)."""
        key = (x, z, depth)
        hit = memo.get(key)
        if hit is not None:
            return hit
        v, done = self._evaluated(x, z, st, memo)
        if depth == 0 or done or not v < INF:
            memo[key] = v
            return v
        best = INF
        if depth == 1:  # the leaves: their cost-to-go, without a call of this search each
            for qx, qz in self._landings(x, z, speed, memo):
                c = unit + (memo.get((qx, qz)) or self._evaluated(qx, qz, st, memo))[0]
                if c < best:
                    best = c
        else:
            for q in self._landings(x, z, speed, memo):
                best = min(best, unit + self._search(q[0], q[1], st, depth - 1, speed, unit, memo))
        if self._flash_now(st):
            r = self.rules
            for d in range(8):
                landing = flash_landing(x, z, d, r.flash_distance, self._walk, self._w, self._h)
                if landing is not None:
                    best = min(best, unit + self._eval(landing[0], landing[1], st, False)[0])
        memo[key] = best
        return best

    def _evaluated(self, x: float, z: float, st: _State, memo: dict) -> tuple[float, bool]:
        """:meth:`_eval` after a move (the flash still to come as planned), kept in ``memo`` (see :meth:`_search`)."""
        hit = memo.get((x, z))
        if hit is None:
            hit = memo[(x, z)] = self._eval(x, z, st, self._pre)
        return hit

    def _landings(self, x: float, z: float, speed: float, memo: dict) -> list[tuple[float, float]]:
        """Where each of the 8 moves at ``speed`` lands, kept in ``memo`` (see :meth:`_search`)."""
        key = (x, z, -1)
        hit = memo.get(key)
        if hit is not None:
            return hit
        walk, w, h, sub = self._walk, self._w, self._h, self.rules.substep
        cx = int((x - GRID_ORIGIN_X) // CELL_WIDTH)
        cz = int((z - GRID_ORIGIN_Z) // CELL_WIDTH)
        known = self._strides.get(speed)
        if known is not None and 0 <= cx < w and 0 <= cz < h and self._open[cz * w + cx]:
            # no wall within reach: simulate_move's sub-steps all go through, the same additions without its checks
            n, strides = known
            hit = []
            for dx, dz in strides:
                px, pz = x, z
                for _ in range(n):
                    px += dx
                    pz += dz
                hit.append((px, pz))
        else:
            hit = [simulate_move(x, z, d, speed, walk, w, h, sub) for d in range(8)]
        memo[key] = hit
        return hit

    def _flash_now(self, st: _State) -> bool:
        """Whether flashes are considered now: the planned flash leg, talent ready."""
        return self._pre and st.talent and self._leg == self._flash_leg

    def _choose(self, st: _State, x: float, z: float, memos: dict | None = None) -> int:
        """Pick the action: a 1-step look-ahead, ``lookahead`` steps deep when the next node is near or when no
        single step makes progress (a corner).

        :param memos: the look-ahead's values kept across calls (by default each call searches afresh), one memo per
            leg, flash to come, talent, buff availability, speed and step unit: for callers whose other state (the
            plan, the treasures left on each leg) is the same in every call that shares them, as
            :meth:`RefinedOraclePolicy._guide <.refine.RefinedOraclePolicy._guide>`'s within one
            beam search. The search trees of neighbouring states overlap, so this saves most of its work."""
        r = self.rules
        speed = r.buff_speed if st.buff_remaining > 0 else r.move_speed
        unit = speed if st.buff_remaining > 0 and self._raw_units() else r.move_speed
        w, h, walk = self._w, self._h, self._walk
        if memos is None:
            memo: dict = {}
        else:
            memo = memos.setdefault((self._leg, self._pre, st.talent, st.buff_available, speed, unit), {})
        moves = self._landings(x, z, speed, memo)
        cands = [(unit + self._evaluated(q[0], q[1], st, memo)[0], d, q) for d, q in enumerate(moves)]
        if self._flash_now(st):
            for d in range(8):
                q = flash_landing(x, z, d, r.flash_distance, walk, w, h)
                if q is not None:
                    cands.append((unit + self._eval(q[0], q[1], st, False)[0], 8 + d, q))
        best = self._pick(cands, x, z)
        here = self._value(x, z, self._leg, self._pre)
        node = self._route[self._leg]
        px, pz = self._pos[node]
        near = math.hypot(px - x, pz - z) <= r.pickup_radius + self.lookahead * speed
        depth = self.lookahead if near or not best[0] < here + unit - 1.0 else self.cruise_lookahead
        key = (int(x), int(z), self._leg, self._pre)
        visits = self._visits[key] = self._visits.get(key, 0) + 1
        if visits >= 4:  # a loop the look-ahead does not break: step along the 4-neighbour BFS field
            bfs = self.map.distance_fields[node]
            cells = [self.map.world_to_grid(*q) for q in moves]
            best = min((c for c in cands if c[1] < 8 and c[0] < INF),
                       key=lambda c: (int(bfs[cells[c[1]][1], cells[c[1]][0]]), c[0], c[1]), default=best)
            depth = 1
        elif visits >= 2:
            depth = max(depth, self.lookahead + 1)
        if best[0] > 0.0 and depth > 1:
            deep = [(unit + self._search(q[0], q[1], st, depth - 1, speed, unit, memo), d, q)
                    for d, q in enumerate(moves)]
            deep += [c for c in cands if c[1] >= 8]
            best = self._pick(deep, x, z)
            if best[1] < 8:
                best = (cands[best[1]][0], best[1], best[2])
        self._expect, self._expect_val, self._last_flash = best[2], best[0] - unit, best[1] >= 8
        return best[1]

    def _pick(self, costs: list, x: float, z: float):
        """The candidate ``(cost, action, landing)`` of least cost, ties broken as ``tie_break`` says."""
        best = min(costs, key=lambda c: (c[0], c[1]))
        if self.tie_break == "index" or not best[0] < INF:
            return best
        low = best[0]
        px, pz = self._pos[self._route[self._leg]]
        dx, dz = px - x, pz - z

        def key(c):
            if c[0] > low + self.tie_tolerance:
                return (1, c[0], c[1])
            ux, uz = DIRECTIONS[c[1] % 8]
            return (0, -(ux * dx + uz * dz), c[1])

        return min(costs, key=key)

    def _raw_units(self) -> bool:
        """Whether the current leg's values are raw distance (the buff is behind us on the route)."""
        return BUFF_ID not in self._route[self._leg:]


def oracle_action(policy: OraclePolicy, obs: Observation, env_info: EnvInfo) -> int:
    """``policy.act(obs, env_info)``: the oracle's action for a competition-shaped observation."""
    return policy.act(obs, env_info)
