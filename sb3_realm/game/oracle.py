"""The oracle: an optimal tour planner and the expert policy that plays it (numpy + standard library only).

It is the "physical limit" yardstick of the project and the teacher for imitation learning.

Planning (:func:`plan_tour`) uses the distance tables of :mod:`sb3_realm.game.oracle_paths`: walking distances
(octile, walls, no corner crossing between two walls) between the *entries* of the pickup discs (the cells whose
centre lies within ``pickup_radius`` of a position, outer ring only), plus the same legs with one flash. A Held–Karp
programme over ``(visited set, last node, entry, flash used)`` gives the shortest start -> treasures -> end tour in
world units. The speed buff is inserted at the best place: a forward programme (start -> set S -> buff) and a
backward one (buff -> the rest -> end) meet at each buff entry, and the steps are ``A / move_speed + f(B)`` with
``f`` the time to cover ``B`` when the first ``buff_duration`` steps run at ``buff_speed`` (exact for this model,
since both halves are minimised independently and ``f`` is increasing).

Approximations (all on the model side; the policy always plays the real rules):

- a step covers ``move_speed`` (or ``buff_speed``) of octile path length; positions are snapped to cell centres,
  and a node counts as reached at the centre of a cell inside its disc (the real pickup happens a little earlier,
  on the disc's edge); each leg also ends on a whole step, which the model does not see: ``predicted_steps`` adds
  ``LEG_ROUNDING`` (0.5) step per leg, the expected rounding (``Plan.cost`` is the raw model);
- the flash takes off from a cell centre and its landing is valued at the landing cell's centre; the flash step
  costs ``move_speed`` units even while the buff runs; at most one flash (the cooldown, 600 steps, outlasts an
  episode) and at most one buff pickup (its respawn, 450 steps, too); a talent that is not ready now is treated as
  unavailable for the rest of the episode;
- the end's zone (every cell touching its pickup disc) is avoided before the last leg; with ``use_buff=False`` the
  buff's zone is avoided too, so that comparison measures a tour that never touches the buff;
- when the whole tour does not fit in the steps left, the best-scoring subset of treasures is planned without the
  buff; a treasure with no reachable entry (e.g. inside the end's zone) is left out.

Execution (:class:`OraclePolicy`): at each step the 8 moves (and, on the planned flash leg, the 8 flashes) are
simulated with the real rules (:func:`~sb3_realm.game.oracle_paths.simulate_move`, the same sub-stepped motion with
wall sliding as ``Game``) and the action with the least cost-to-go is played. The cost-to-go is the distance field
of the next node of the route plus the value of the rest of the route from each of its entries, evaluated at the
exact position (cell value plus the in-cell offset); pickups, a premature end and the buff's speed are accounted for
in the look-ahead, which searches ``cruise_lookahead`` (2) moves deep, ``lookahead`` (3) near the next node and at
corners (no oscillation: repeated states deepen the search, then fall back on the BFS field). The plan is redone
when something unplanned happens: an out-of-order pickup, a failed, foreign or missed flash, the buff taken early,
or the hero being moved elsewhere than predicted and losing ground (the fields are global, so small deviations need
no new plan).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .maps import BUFF_ID, RealmMap
from .observation import EnvInfo, Observation
from .oracle_paths import (
    INF,
    PathTables,
    buff_steps,
    dijkstra,
    field_value,
    flash_landing,
    held_karp,
    path_tables,
    point_links,
    simulate_move,
    tour_table,
    tour_trace,
)
from .rules import EpisodeConfig, Rules

__all__ = ["FlashPlan", "Plan", "OraclePolicy", "oracle_action", "plan_tour", "held_karp", "buff_steps",
           "predict_steps", "MAX_TREASURES", "LEG_ROUNDING"]

MAX_TREASURES = 13
LEG_ROUNDING = 0.5  # expected steps lost per leg to whole-step pickups (see predict_steps)


@dataclass(frozen=True)
class FlashPlan:
    """Where the plan flashes. ``leg`` indexes ``Plan.route``: the flash happens on the way to ``route[leg]``.
    ``cell`` / ``landing`` (grid) and ``direction`` (0..7) are the model's take-off; the policy picks the exact
    moment itself."""

    leg: int
    cell: tuple[int, int]
    direction: int
    landing: tuple[int, int]


@dataclass(frozen=True)
class Plan:
    """A tour. ``order``: treasure ids in visiting order, then the end id. ``buff``: whether the buff is picked up,
    ``buff_before``: the index in ``order`` of the node visited right after it. ``predicted_steps``: the model's
    steps from the planning state to the end (``cost`` unrounded)."""

    order: tuple[int, ...]
    flash: FlashPlan | None
    buff: bool
    buff_before: int | None
    predicted_steps: int
    cost: float

    @property
    def route(self) -> tuple[int, ...]:
        """``order`` with the buff (id 0) inserted where it is picked up."""
        if self.buff_before is None:
            return self.order
        return self.order[:self.buff_before] + (BUFF_ID,) + self.order[self.buff_before:]


# ------------------------------------------------------------------------------------------------ planning
@dataclass
class _Problem:
    """The DP inputs of one planning state (entry indices padded with -1 -> the inf row/column)."""

    tables: PathTables
    nodes: list[int]
    idx: np.ndarray  # (n, K)
    leg: np.ndarray  # (N + 1, N + 1) padded
    leg_f: np.ndarray | None
    sv: np.ndarray  # (N + 1,) start -> entry
    sf: np.ndarray | None
    point: np.ndarray | None  # walking field from the start point (for describing a flash from the start)


def _problem(tables: PathTables, x: float, z: float, treasures: list[int], flash: bool) -> _Problem:
    pad = np.full((1, 1), INF)
    n_ent = len(tables.entry_cell)
    leg = np.block([[tables.leg, np.full((n_ent, 1), INF)], [np.full((1, n_ent), INF), pad]])
    sv = np.append(tables.entry_values_at(x, z), INF)
    leg_f = sf = point = None
    if flash:
        leg_f = np.block([[tables.leg_flash, np.full((n_ent, 1), INF)], [np.full((1, n_ent), INF), pad]])
        point = tables.point_field(x, z)
        sf = np.append(tables.flash_values_from(point), INF)
    k = max([len(tables.entries.get(t, ())) for t in treasures] + [1])
    idx = np.full((len(treasures), k), -1, dtype=np.int64)
    for r, t in enumerate(treasures):
        ent = tables.entries.get(t, np.zeros(0, dtype=np.int64))
        idx[r, :len(ent)] = ent
    return _Problem(tables, list(treasures), idx, leg, leg_f, sv, sf, point)


def _describe_flash(pb: _Problem, a: int | None, b: int, leg: int) -> FlashPlan:
    """The model's take-off cell and direction of a flash from entry ``a`` (``None``: the start) to entry ``b``."""
    t = pb.tables
    walk_from = pb.point if a is None else t.fields[a].astype(np.float64)
    tot = walk_from + t.arrive_flash[b]
    y = int(np.argmin(tot))
    padded = np.append(t.fields[b], np.float32(INF))
    k = int(np.argmin(padded[t.land[:, y]]))
    ly = int(t.land[k, y])
    return FlashPlan(leg=leg, cell=(y % t.width, y // t.width), direction=k, landing=(ly % t.width, ly // t.width))


def _pick(gm: np.ndarray, target: np.ndarray, target_f: np.ndarray | None, u: int) -> tuple[int, int, int, bool]:
    """The best last state ``(i, e, flashes in g, flash on the final leg)`` of ``gm`` (n, K, 2) followed by a leg
    into ``target`` (n, K) with ``u`` flashes in all."""
    cands = [(gm[..., u] + target, u, False)]
    if u == 1 and target_f is not None:
        cands.append((gm[..., 0] + target_f, 0, True))
    arr, ug, fl = min(cands, key=lambda c: c[0].min())
    i, e = np.unravel_index(int(np.argmin(arr)), arr.shape)
    return int(i), int(e), ug, fl


def _solve(pb: _Problem, end: int, rules: Rules, buff: bool, buff_remaining: int,
           steps_left: float | None) -> Plan:
    t, idx, n = pb.tables, pb.idx, len(pb.nodes)
    leg, leg_f, sv, sf = pb.leg, pb.leg_f, pb.sv, pb.sf
    flash = leg_f is not None
    none = np.zeros(0, dtype=np.int64)
    end_ent = t.entries.get(end, none)
    buff_ent = t.entries.get(BUFF_ID, none) if buff and buff_remaining <= 0 else none
    v0 = rules.move_speed

    def steps(d: float) -> float:
        return buff_steps(d, rules, buff_remaining) if buff_remaining > 0 else d / v0

    def to_set(rows: np.ndarray, cols: np.ndarray, table: np.ndarray | None) -> np.ndarray | None:
        if table is None:
            return None
        return table[rows][..., cols].min(axis=-1) if len(cols) else np.full(rows.shape, INF)

    f32 = np.float32  # the DP runs in float32 (world units up to ~1e6: 0.1-unit resolution) for speed
    legs = leg[idx[:, :, None, None], idx[None, None, :, :]].astype(f32)  # (n, K, n, K)
    legs_f = leg_f[idx[:, :, None, None], idx[None, None, :, :]].astype(f32) if flash else None
    e_n, ef_n = to_set(idx, end_ent, leg).astype(f32), to_set(idx, end_ent, leg_f)
    ef_n = ef_n.astype(f32) if flash else None
    full = (1 << n) - 1
    g = tour_table(sv[idx].astype(f32), legs, sf[idx].astype(f32) if flash else None, legs_f)
    # cost to the end without the buff for every visited set, with 0 / 1 flash
    m0 = (g[..., 0] + e_n).min(axis=(1, 2), initial=INF)
    m1 = (g[..., 1] + e_n).min(axis=(1, 2), initial=INF)
    if flash:
        m1 = np.minimum(m1, (g[..., 0] + ef_n).min(axis=(1, 2), initial=INF))
    m0[0], m1[0] = sv[end_ent].min(initial=INF), (sf[end_ent].min(initial=INF) if flash else INF)
    best_cost, best = steps(min(m0[full], m1[full])), (full, None, int(m1[full] < m0[full]), 0)
    r = None
    if len(buff_ent):
        fast = rules.buff_speed * rules.buff_duration

        def fb(d: np.ndarray) -> np.ndarray:
            return np.where(d <= fast, d / rules.buff_speed, rules.buff_duration + (d - fast) / v0)

        nb = len(buff_ent)
        a0, a1, b0, b1 = (np.full((full + 1, nb), INF) for _ in range(4))  # b*: indexed by the set left to visit
        r = tour_table(e_n, legs.transpose(2, 3, 0, 1), ef_n, legs_f.transpose(2, 3, 0, 1) if flash else None)
        for i in range(n):
            to_b, from_b = leg[idx[i][:, None], buff_ent], leg[buff_ent[:, None], idx[i]].T  # (K, B) each
            gi, ri = g[:, i], r[:, i]  # (M, K, 2)
            a0 = np.minimum(a0, (gi[:, :, 0, None] + to_b).min(axis=1))
            a1 = np.minimum(a1, (gi[:, :, 1, None] + to_b).min(axis=1))
            b0 = np.minimum(b0, (ri[:, :, 0, None] + from_b).min(axis=1))
            b1 = np.minimum(b1, (ri[:, :, 1, None] + from_b).min(axis=1))
            if flash:
                a1 = np.minimum(a1, (gi[:, :, 0, None] + leg_f[idx[i][:, None], buff_ent]).min(axis=1))
                b1 = np.minimum(b1, (ri[:, :, 0, None] + leg_f[buff_ent[:, None], idx[i]].T).min(axis=1))
        a0[0], b0[0] = sv[buff_ent], to_set(buff_ent, end_ent, leg)
        if flash:
            a1[0], b1[0] = sf[buff_ent], to_set(buff_ent, end_ent, leg_f)
        comp = full ^ np.arange(full + 1)
        t0 = a0 / v0 + fb(np.minimum(b0[comp], b1[comp]))
        t1 = a1 / v0 + fb(b0[comp])
        tot = np.minimum(t0, t1)
        mask, b = np.unravel_index(int(np.argmin(tot)), tot.shape)
        if tot[mask, b] < best_cost:
            ua = int(t1[mask, b] < t0[mask, b])
            ub = 0 if ua else int(b1[full ^ mask, b] < b0[full ^ mask, b])
            best_cost, best = float(tot[mask, b]), (int(mask), int(buff_ent[b]), ua, ub)
    margin = max(2.0, 0.03 * best_cost) + LEG_ROUNDING * (n + 2) if math.isfinite(best_cost) else 0.0
    if not best_cost <= (INF if steps_left is None else steps_left) - margin:
        # the whole tour does not fit: the best-scoring set of treasures (no buff)
        limit = INF if steps_left is None else steps_left
        d = np.minimum(m0, m1).astype(np.float64)
        cost = np.where(d <= rules.buff_speed * buff_remaining, d / rules.buff_speed,
                        buff_remaining + (d - rules.buff_speed * buff_remaining) / v0)
        count = np.array([bin(m).count("1") for m in range(full + 1)])
        played = cost + LEG_ROUNDING * (count + 1)
        score = np.where(played <= limit - np.maximum(2.0, 0.03 * played), 100.0 * count - 0.2 * played, -INF)
        mask = int(np.argmax(score)) if np.isfinite(score).any() else int(np.argmin(played))
        best_cost, best = float(cost[mask]), (mask, None, int(m1[mask] < m0[mask]), 0)
    return _reconstruct(pb, end, g, r, legs, legs_f, e_n, ef_n, end_ent, best, best_cost)


def _reconstruct(pb: _Problem, end: int, g: np.ndarray, r: np.ndarray | None, legs: np.ndarray,
                 legs_f: np.ndarray | None, e_n: np.ndarray, ef_n: np.ndarray | None, end_ent: np.ndarray,
                 best: tuple[int, int | None, int, int], cost: float) -> Plan:
    """Turn the DP's optimum ``(visited set before the buff / the end, buff entry or None, flashes before,
    flashes after)`` back into a route of ``(pos id, entry index or None, flash on the leg into it)``."""
    idx, nodes, leg, leg_f = pb.idx, pb.nodes, pb.leg, pb.leg_f
    mask, bi, ua, ub = best
    route: list[tuple[int, int | None, bool]] = []
    first = (end, None) if bi is None else (BUFF_ID, bi)
    if mask:
        target = e_n if bi is None else leg[idx, bi]
        target_f = ef_n if bi is None else (leg_f[idx, bi] if leg_f is not None else None)
        i, e, ug, fl = _pick(g[mask], target, target_f, ua)
        route += [(nodes[m], int(idx[m, ee]), f) for m, ee, f in tour_trace(g, legs, legs_f, mask, i, e, ug)]
        route.append((*first, fl))
    else:
        route.append((*first, ua == 1))
    if bi is not None:
        left = ((1 << len(nodes)) - 1) ^ mask
        if left:
            j, e, ur, fl = _pick(r[left], leg[bi, idx], leg_f[bi, idx] if leg_f is not None else None, ub)
            legs_t = legs.transpose(2, 3, 0, 1)
            legs_ft = legs_f.transpose(2, 3, 0, 1) if legs_f is not None else None
            rev = tour_trace(r, legs_t, legs_ft, left, j, e, ur)[::-1]  # j first; flag = flash on the leg out of it
            route.append((nodes[rev[0][0]], int(idx[rev[0][0], rev[0][1]]), fl))
            for t in range(1, len(rev)):
                route.append((nodes[rev[t][0]], int(idx[rev[t][0], rev[t][1]]), rev[t - 1][2]))
            route.append((end, None, rev[-1][2]))
        else:
            route.append((end, None, ub == 1))
    return _make_plan(pb, route, cost)


def _make_plan(pb: _Problem, route: list[tuple[int, int | None, bool]], cost: float) -> Plan:
    ids = [pid for pid, _, _ in route]
    order = tuple(p for p in ids if p != BUFF_ID)
    buff_before = ids.index(BUFF_ID) if BUFF_ID in ids else None
    flash = None
    for k, (_, ent, fl) in enumerate(route):
        if fl:
            a = route[k - 1][1] if k else None
            b = ent
            if b is None:  # the end: its best entry from a
                end_ent = pb.tables.entries[ids[-1]]
                src = pb.sf if a is None else pb.leg_f[a]
                b = int(end_ent[int(np.argmin(src[end_ent]))])
            flash = _describe_flash(pb, a, b, k)
            break
    return Plan(order=order, flash=flash, buff=buff_before is not None, buff_before=buff_before,
                predicted_steps=predict_steps(cost, len(route)), cost=float(cost))


def predict_steps(cost: float, legs: int) -> int:
    """Whole steps predicted for a tour of model cost ``cost`` (steps) and ``legs`` pickups: the model's continuous
    length plus ``LEG_ROUNDING`` per leg (a pickup only happens at the end of a whole step), rounded up; -1 when the
    tour is impossible."""
    return int(math.ceil(cost + LEG_ROUNDING * legs - 1e-9)) if math.isfinite(cost) else -1


def _plan_state(tables: PathTables, x: float, z: float, treasures, *, use_flash: bool, use_buff: bool,
                flash_ready: bool, buff_available: bool, buff_remaining: int,
                steps_left: float | None) -> tuple[Plan, _Problem]:
    ts = sorted({int(t) for t in treasures})
    bad = [t for t in ts if not 1 <= t < len(tables.game_map.positions_world) or t == tables.end]
    if bad or len(ts) > MAX_TREASURES:
        raise ValueError(f"treasures {ts} must be at most {MAX_TREASURES} distinct ids in 1..15 other than the end "
                         f"({tables.end}); bad ids: {bad}")
    pb = _problem(tables, x, z, ts, flash=use_flash and flash_ready)
    plan = _solve(pb, tables.end, tables.rules, use_buff and buff_available, int(buff_remaining), steps_left)
    return plan, pb


def plan_tour(game_map: RealmMap, treasures, end: int, start: int | tuple[float, float], rules: Rules | None = None,
              *, use_flash: bool = True, use_buff: bool = True, flash_ready: bool = True,
              buff_available: bool = True, buff_remaining: int = 0, steps_left: float | None = None,
              corner_penalty: float = 0.0) -> Plan:
    """Plan the best tour from a state without playing it.

    :param treasures: the ids still to collect (at most 13).
    :param end: the end id.
    :param start: a position id (the hero stands on it) or the hero's world ``(x, z)``.
    :param flash_ready: the talent can be used now (``legal_act[1]``); ``use_flash=False`` never plans a flash.
    :param buff_available: the buff can be picked up; ``buff_remaining``: steps of buff speed still running.
    :param steps_left: steps before ``max_step``; when the whole tour does not fit, the best-scoring subset is
        planned (``None``: no limit).
    :param corner_penalty: extra world units charged for passing a wall corner diagonally (model tuning).
    """
    rules = rules or Rules()
    if isinstance(start, (int, np.integer)):
        x, z = (float(v) for v in game_map.positions_world[int(start)])
    else:
        x, z = float(start[0]), float(start[1])
    tables = path_tables(game_map, rules, int(end), bool(use_buff), float(corner_penalty))
    return _plan_state(tables, x, z, treasures, use_flash=use_flash, use_buff=use_buff, flash_ready=flash_ready,
                       buff_available=buff_available, buff_remaining=buff_remaining, steps_left=steps_left)[0]


# ------------------------------------------------------------------------------------------------ the policy
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
        self._pos = [(float(px), float(pz)) for px, pz in game_map.positions_world]
        self._r2 = self.rules.pickup_radius ** 2
        self._clear()

    # ------------------------------------------------------------------------------------ episode state
    def reset(self, config: EpisodeConfig) -> None:
        """Start a new episode of ``config`` (its end id and ``max_step``); forgets the plan."""
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

    def _read(self, obs: Observation, env_info: EnvInfo) -> _State:
        hero = env_info.frame_state.heroes[0]
        organs = env_info.frame_state.organs
        avail = {int(o.config_id) for o in organs if o.sub_type == 1 and o.status == 1}
        buffs = [o for o in organs if o.sub_type == 2]
        return _State(step=int(env_info.game_info.step_no), x=float(hero.pos.x), z=float(hero.pos.z),
                      available=avail, buff_available=bool(buffs) and buffs[0].status == 1,
                      buff_remaining=int(env_info.game_info.buff_remain_time), talent=bool(obs.legal_act[1]))

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
        left = self._config.max_step - st.step
        plan, pb = _plan_state(self._tables, x, z, st.available, use_flash=self.use_flash, use_buff=self.use_buff,
                               flash_ready=st.talent, buff_available=st.buff_available and st.buff_remaining == 0,
                               buff_remaining=st.buff_remaining, steps_left=left)
        self.plan = plan
        if self.planned_steps is None:
            self.planned_steps, self.planned_cost = plan.predicted_steps, plan.cost
        self._route = plan.route
        self._leg = 0
        self._flash_leg = plan.flash.leg if plan.flash is not None else None
        self._pre = self._flash_leg is not None
        self._remaining = set(plan.order[:-1])
        self._fields = {}
        self._chain()
        self.plan_seconds += time.perf_counter() - t0

    def _chain(self) -> None:
        """The value of the rest of the route from each entry of each node (``_post``: no flash left, ``_pre``:
        the planned flash still to come), in world units at ``move_speed`` before the buff, raw distance after."""
        t, route, f = self._tables, self._route, self._flash_leg
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
        return field_value(self._field(k, pre), point_links(self._walk, self._w, self._h, x, z, self.corner_penalty))

    def _within(self, pos_id: int, x: float, z: float) -> bool:
        px, pz = self._pos[pos_id]
        return (px - x) ** 2 + (pz - z) ** 2 <= self._r2

    def _eval(self, x: float, z: float, st: _State, pre: bool) -> tuple[float, bool]:
        """Cost-to-go after an action that puts the hero at ``(x, z)``, pickups there included, and whether the
        action reached the next node of the route (or ended the episode)."""
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
        """Least ``unit * moves + cost-to-go`` over move sequences of ``depth`` steps (stopping at a pickup)."""
        key = (x, z, depth)
        if key in memo:
            return memo[key]
        v, done = self._eval(x, z, st, self._pre)
        if depth == 0 or done or not v < INF:
            memo[key] = v
            return v
        r = self.rules
        best = INF
        for d in range(8):
            q = simulate_move(x, z, d, speed, self._walk, self._w, self._h, r.substep)
            best = min(best, unit + self._search(q[0], q[1], st, depth - 1, speed, unit, memo))
        if self._flash_now(st):
            for d in range(8):
                q = flash_landing(x, z, d, r.flash_distance, self._walk, self._w, self._h)
                if q is not None:
                    best = min(best, unit + self._eval(q[0], q[1], st, False)[0])
        memo[key] = best
        return best

    def _flash_now(self, st: _State) -> bool:
        """Whether flashes are considered now: the planned flash leg, talent ready."""
        return self._pre and st.talent and self._leg == self._flash_leg

    def _choose(self, st: _State, x: float, z: float) -> int:
        """Pick the action: a 1-step look-ahead, ``lookahead`` steps deep when the next node is near or when no
        single step makes progress (a corner)."""
        r = self.rules
        speed = r.buff_speed if st.buff_remaining > 0 else r.move_speed
        unit = speed if st.buff_remaining > 0 and self._raw_units() else r.move_speed
        w, h, walk = self._w, self._h, self._walk
        moves = [simulate_move(x, z, d, speed, walk, w, h, r.substep) for d in range(8)]
        cands = []
        for d, q in enumerate(moves):
            v, _ = self._eval(q[0], q[1], st, self._pre)
            cands.append((unit + v, d, q))
        if self._flash_now(st):
            for d in range(8):
                q = flash_landing(x, z, d, r.flash_distance, walk, w, h)
                if q is not None:
                    cands.append((unit + self._eval(q[0], q[1], st, False)[0], 8 + d, q))
        best = min(cands, key=lambda c: (c[0], c[1]))
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
            memo: dict = {}
            deep = [(unit + self._search(q[0], q[1], st, depth - 1, speed, unit, memo), d, q)
                    for d, q in enumerate(moves)]
            deep += [c for c in cands if c[1] >= 8]
            best = min(deep, key=lambda c: (c[0], c[1]))
            if best[1] < 8:
                best = (cands[best[1]][0], best[1], best[2])
        self._expect, self._expect_val, self._last_flash = best[2], best[0] - unit, best[1] >= 8
        return best[1]

    def _raw_units(self) -> bool:
        """Whether the current leg's values are raw distance (the buff is behind us on the route)."""
        return BUFF_ID not in self._route[self._leg:]


def oracle_action(policy: OraclePolicy, obs: Observation, env_info: EnvInfo) -> int:
    """``policy.act(obs, env_info)``: the oracle's action for a competition-shaped observation."""
    return policy.act(obs, env_info)
