"""The oracle's tour: Held–Karp over the distance tables of :mod:`.paths`, with one flash and the
speed buff (numpy + standard library only).

Planning (:func:`plan_tour`) uses the distance tables of :mod:`.paths`: walking distances
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..maps import BUFF_ID, RealmMap
from ..rules import Rules
from .paths import INF, PathTables, path_tables

__all__ = [
    "LEG_ROUNDING",
    "MAX_TREASURES",
    "FlashPlan",
    "Plan",
    "buff_steps",
    "held_karp",
    "plan_from_state",
    "plan_tour",
    "predict_steps",
    "tour_table",
    "tour_trace",
]

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
    #: ``(cost, margin)`` of the whole tour when it was planned because it fits (``cost <= steps_left - margin``):
    #: the planning state then gives this same plan for every ``steps_left`` that passes that test. ``None`` when the
    #: tour was cut down to a subset that fits.
    fit: tuple[float, float] | None = field(default=None, compare=False, repr=False)

    def fits(self, steps_left: float | None) -> bool:
        """Whether planning from the same state with ``steps_left`` gives this plan again (see ``fit``)."""
        return self.fit is not None and self.fit[0] <= (INF if steps_left is None else steps_left) - self.fit[1]

    @property
    def route(self) -> tuple[int, ...]:
        """``order`` with the buff (id 0) inserted where it is picked up."""
        if self.buff_before is None:
            return self.order
        return (*self.order[:self.buff_before], BUFF_ID, *self.order[self.buff_before:])


# ------------------------------------------------------------------------------------------------ planning
@dataclass
class _Problem:
    """The DP inputs of one planning state (entry indices padded with -1 -> the inf row/column)."""

    tables: PathTables
    nodes: list[int]
    idx: np.ndarray  # (n, K)
    leg: np.ndarray  # (N + 1, N + 1) padded
    leg_f: np.ndarray | None
    start_walk: np.ndarray  # (N + 1,) start -> entry
    start_flash: np.ndarray | None
    point: np.ndarray | None  # walking field from the start point (for describing a flash from the start)


def _problem(tables: PathTables, x: float, z: float, treasures: list[int], flash: bool) -> _Problem:
    pad = np.full((1, 1), INF)
    n_ent = len(tables.entry_cell)
    leg = np.block([[tables.leg, np.full((n_ent, 1), INF)], [np.full((1, n_ent), INF), pad]])
    start_walk = np.append(tables.entry_values_at(x, z), INF)
    leg_f = start_flash = point = None
    if flash:
        leg_f = np.block([[tables.leg_flash, np.full((n_ent, 1), INF)], [np.full((1, n_ent), INF), pad]])
        point = tables.point_field(x, z)
        start_flash = np.append(tables.flash_values_from(point), INF)
    k = max([len(tables.entries.get(t, ())) for t in treasures] + [1])
    idx = np.full((len(treasures), k), -1, dtype=np.int64)
    for r, t in enumerate(treasures):
        ent = tables.entries.get(t, np.zeros(0, dtype=np.int64))
        idx[r, :len(ent)] = ent
    return _Problem(tables, list(treasures), idx, leg, leg_f, start_walk, start_flash, point)


def _describe_flash(problem: _Problem, a: int | None, b: int, leg: int) -> FlashPlan:
    """The model's take-off cell and direction of a flash from entry ``a`` (``None``: the start) to entry ``b``."""
    t = problem.tables
    walk_from = problem.point if a is None else t.fields[a].astype(np.float64)
    tot = walk_from + t.arrive_flash[b]
    y = int(np.argmin(tot))
    padded = np.append(t.fields[b], np.float32(INF))
    k = int(np.argmin(padded[t.land[:, y]]))
    ly = int(t.land[k, y])
    return FlashPlan(leg=leg, cell=(y % t.width, y // t.width), direction=k, landing=(ly % t.width, ly // t.width))


def _pick(set_costs: np.ndarray, target: np.ndarray, target_f: np.ndarray | None, u: int) -> tuple[int, int, int, bool]:
    """The best last state ``(i, e, flashes in g, flash on the final leg)`` of ``set_costs`` (n, K, 2) followed by a leg
    into ``target`` (n, K) with ``u`` flashes in all."""
    cands = [(set_costs[..., u] + target, u, False)]
    if u == 1 and target_f is not None:
        cands.append((set_costs[..., 0] + target_f, 0, True))
    arr, flashes_used, flash_last = min(cands, key=lambda c: c[0].min())
    i, e = np.unravel_index(int(np.argmin(arr)), arr.shape)
    return int(i), int(e), flashes_used, flash_last


def _solve(problem: _Problem, end: int, rules: Rules, buff: bool, buff_remaining: int,
           steps_left: float | None) -> Plan:
    t, idx, n = problem.tables, problem.idx, len(problem.nodes)
    leg, leg_f, start_walk, start_flash = problem.leg, problem.leg_f, problem.start_walk, problem.start_flash
    none = np.zeros(0, dtype=np.int64)
    end_ent = t.entries.get(end, none)
    buff_ent = t.entries.get(BUFF_ID, none) if buff and buff_remaining <= 0 else none
    v0 = rules.move_speed

    def steps(d: float) -> float:
        return buff_steps(d, rules, buff_remaining) if buff_remaining > 0 else d / v0

    def to_set(rows: np.ndarray, cols: np.ndarray, table: np.ndarray) -> np.ndarray:
        return table[rows][..., cols].min(axis=-1) if len(cols) else np.full(rows.shape, INF)

    f32 = np.float32  # the DP runs in float32 (world units up to ~1e6: 0.1-unit resolution) for speed
    legs = leg[idx[:, :, None, None], idx[None, None, :, :]].astype(f32)  # (n, K, n, K)
    # the flash tables (leg_f, start_flash and what is derived from them) are all set, or all None without the flash
    legs_f = leg_f[idx[:, :, None, None], idx[None, None, :, :]].astype(f32) if leg_f is not None else None
    e_n = to_set(idx, end_ent, leg).astype(f32)
    ef_n = to_set(idx, end_ent, leg_f).astype(f32) if leg_f is not None else None
    full = (1 << n) - 1
    g = tour_table(start_walk[idx].astype(f32), legs, start_flash[idx].astype(f32) if start_flash is not None else None,
                   legs_f)
    # cost to the end without the buff for every visited set, with 0 / 1 flash
    end_no_flash = (g[..., 0] + e_n).min(axis=(1, 2), initial=INF)
    end_one_flash = (g[..., 1] + e_n).min(axis=(1, 2), initial=INF)
    if ef_n is not None:
        end_one_flash = np.minimum(end_one_flash, (g[..., 0] + ef_n).min(axis=(1, 2), initial=INF))
    end_no_flash[0] = start_walk[end_ent].min(initial=INF)
    end_one_flash[0] = start_flash[end_ent].min(initial=INF) if start_flash is not None else INF
    best_cost = steps(min(end_no_flash[full], end_one_flash[full]))
    best: tuple[int, int | None, int, int] = (full, None, int(end_one_flash[full] < end_no_flash[full]), 0)
    r = None
    if len(buff_ent):
        fast = rules.buff_speed * rules.buff_duration

        def buffed_steps(d: np.ndarray) -> np.ndarray:
            return np.where(d <= fast, d / rules.buff_speed, rules.buff_duration + (d - fast) / v0)

        n_buff = len(buff_ent)
        # cost start -> visited set -> buff entry (to_*) and buff entry -> set left to visit -> end (from_*, indexed
        # by the set left), without / with the flash (*_f)
        to_buff, to_buff_f, from_buff, from_buff_f = (np.full((full + 1, n_buff), INF) for _ in range(4))
        r = tour_table(e_n, legs.transpose(2, 3, 0, 1), ef_n,
                       legs_f.transpose(2, 3, 0, 1) if legs_f is not None else None)
        for i in range(n):
            legs_to_buff, legs_from_buff = leg[idx[i][:, None], buff_ent], leg[buff_ent[:, None], idx[i]].T  # (K, B)
            gi, ri = g[:, i], r[:, i]  # (M, K, 2)
            to_buff = np.minimum(to_buff, (gi[:, :, 0, None] + legs_to_buff).min(axis=1))
            to_buff_f = np.minimum(to_buff_f, (gi[:, :, 1, None] + legs_to_buff).min(axis=1))
            from_buff = np.minimum(from_buff, (ri[:, :, 0, None] + legs_from_buff).min(axis=1))
            from_buff_f = np.minimum(from_buff_f, (ri[:, :, 1, None] + legs_from_buff).min(axis=1))
            if leg_f is not None:
                flash_to_buff, flash_from_buff = leg_f[idx[i][:, None], buff_ent], leg_f[buff_ent[:, None], idx[i]].T
                to_buff_f = np.minimum(to_buff_f, (gi[:, :, 0, None] + flash_to_buff).min(axis=1))
                from_buff_f = np.minimum(from_buff_f, (ri[:, :, 0, None] + flash_from_buff).min(axis=1))
        to_buff[0], from_buff[0] = start_walk[buff_ent], to_set(buff_ent, end_ent, leg)
        if leg_f is not None and start_flash is not None:
            to_buff_f[0], from_buff_f[0] = start_flash[buff_ent], to_set(buff_ent, end_ent, leg_f)
        comp = full ^ np.arange(full + 1)
        steps_flash_after = to_buff / v0 + buffed_steps(np.minimum(from_buff[comp], from_buff_f[comp]))
        steps_flash_before = to_buff_f / v0 + buffed_steps(from_buff[comp])
        tot = np.minimum(steps_flash_after, steps_flash_before)
        mask, b = np.unravel_index(int(np.argmin(tot)), tot.shape)
        if tot[mask, b] < best_cost:
            flash_before = int(steps_flash_before[mask, b] < steps_flash_after[mask, b])
            flash_after = 0 if flash_before else int(from_buff_f[full ^ mask, b] < from_buff[full ^ mask, b])
            best_cost, best = float(tot[mask, b]), (int(mask), int(buff_ent[b]), flash_before, flash_after)
    margin = max(2.0, 0.03 * best_cost) + LEG_ROUNDING * (n + 2) if math.isfinite(best_cost) else 0.0
    fit: tuple[float, float] | None = (best_cost, margin)
    if not best_cost <= (INF if steps_left is None else steps_left) - margin:
        fit = None
        # the whole tour does not fit: the best-scoring set of treasures (no buff)
        limit = INF if steps_left is None else steps_left
        d = np.minimum(end_no_flash, end_one_flash).astype(np.float64)
        cost = np.where(d <= rules.buff_speed * buff_remaining, d / rules.buff_speed,
                        buff_remaining + (d - rules.buff_speed * buff_remaining) / v0)
        count = np.array([bin(m).count("1") for m in range(full + 1)])
        played = cost + LEG_ROUNDING * (count + 1)
        score = np.where(played <= limit - np.maximum(2.0, 0.03 * played), 100.0 * count - 0.2 * played, -INF)
        subset = int(np.argmax(score)) if np.isfinite(score).any() else int(np.argmin(played))
        best_cost, best = float(cost[subset]), (subset, None, int(end_one_flash[subset] < end_no_flash[subset]), 0)
    return replace(_reconstruct(problem, end, g, r, legs, legs_f, e_n, ef_n, end_ent, best, best_cost), fit=fit)


def _reconstruct(problem: _Problem, end: int, g: np.ndarray, r: np.ndarray | None, legs: np.ndarray,
                 legs_f: np.ndarray | None, e_n: np.ndarray, ef_n: np.ndarray | None, end_ent: np.ndarray,
                 best: tuple[int, int | None, int, int], cost: float) -> Plan:
    """Turn the DP's optimum ``(visited set before the buff / the end, buff entry or None, flashes before,
    flashes after)`` back into a route of ``(pos id, entry index or None, flash on the leg into it)``."""
    idx, nodes, leg, leg_f = problem.idx, problem.nodes, problem.leg, problem.leg_f
    mask, bi, flash_before, flash_after = best
    route: list[tuple[int, int | None, bool]] = []
    first = (end, None) if bi is None else (BUFF_ID, bi)
    if mask:
        target = e_n if bi is None else leg[idx, bi]
        target_f = ef_n if bi is None else (leg_f[idx, bi] if leg_f is not None else None)
        i, e, flashes_used, flash_last = _pick(g[mask], target, target_f, flash_before)
        route += [(nodes[m], int(idx[m, ee]), f) for m, ee, f in tour_trace(g, legs, legs_f, mask, i, e, flashes_used)]
        route.append((*first, flash_last))
    else:
        route.append((*first, flash_before == 1))
    if bi is not None:
        left = ((1 << len(nodes)) - 1) ^ mask
        if left:
            assert r is not None  # a buff entry is only chosen in _solve once the buff's table r is built
            from_buff_f = leg_f[bi, idx] if leg_f is not None else None
            j, e, flashes_used, flash_last = _pick(r[left], leg[bi, idx], from_buff_f, flash_after)
            legs_t = legs.transpose(2, 3, 0, 1)
            legs_ft = legs_f.transpose(2, 3, 0, 1) if legs_f is not None else None
            # j first; flag = flash on the leg out of it
            rev = tour_trace(r, legs_t, legs_ft, left, j, e, flashes_used)[::-1]
            route.append((nodes[rev[0][0]], int(idx[rev[0][0], rev[0][1]]), flash_last))
            for t in range(1, len(rev)):
                route.append((nodes[rev[t][0]], int(idx[rev[t][0], rev[t][1]]), rev[t - 1][2]))
            route.append((end, None, rev[-1][2]))
        else:
            route.append((end, None, flash_after == 1))
    return _make_plan(problem, route, cost)


def _make_plan(problem: _Problem, route: list[tuple[int, int | None, bool]], cost: float) -> Plan:
    ids = [pid for pid, _, _ in route]
    order = tuple(p for p in ids if p != BUFF_ID)
    buff_before = ids.index(BUFF_ID) if BUFF_ID in ids else None
    flash = None
    for k, (_, ent, flash_last) in enumerate(route):
        if flash_last:
            a = route[k - 1][1] if k else None
            b = ent
            if b is None:  # the end: its best entry from a
                end_ent = problem.tables.entries[ids[-1]]
                start_flash, leg_f = problem.start_flash, problem.leg_f
                assert start_flash is not None and leg_f is not None  # a flash is only planned with its tables
                src = start_flash if a is None else leg_f[a]
                b = int(end_ent[int(np.argmin(src[end_ent]))])
            flash = _describe_flash(problem, a, b, k)
            break
    return Plan(order=order, flash=flash, buff=buff_before is not None, buff_before=buff_before,
                predicted_steps=predict_steps(cost, len(route)), cost=float(cost))


def predict_steps(cost: float, legs: int) -> int:
    """Whole steps predicted for a tour of model cost ``cost`` (steps) and ``legs`` pickups: the model's continuous
    length plus ``LEG_ROUNDING`` per leg (a pickup only happens at the end of a whole step), rounded up; -1 when the
    tour is impossible."""
    return math.ceil(cost + LEG_ROUNDING * legs - 1e-9) if math.isfinite(cost) else -1


def plan_from_state(tables: PathTables, x: float, z: float, treasures, *, use_flash: bool, use_buff: bool,
                flash_ready: bool, buff_available: bool, buff_remaining: int,
                steps_left: float | None) -> tuple[Plan, _Problem]:
    ts = sorted({int(t) for t in treasures})
    bad = [t for t in ts if not 1 <= t < len(tables.game_map.positions_world) or t == tables.end]
    if bad or len(ts) > MAX_TREASURES:
        raise ValueError(f"treasures {ts} must be at most {MAX_TREASURES} distinct ids in 1..15 other than the end "
                         f"({tables.end}); bad ids: {bad}")
    problem = _problem(tables, x, z, ts, flash=use_flash and flash_ready)
    plan = _solve(problem, tables.end, tables.rules, use_buff and buff_available, int(buff_remaining), steps_left)
    return plan, problem


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
    return plan_from_state(tables, x, z, treasures, use_flash=use_flash, use_buff=use_buff, flash_ready=flash_ready,
                       buff_available=buff_available, buff_remaining=buff_remaining, steps_left=steps_left)[0]


# ------------------------------------------------------------------------------------------------ Held–Karp core
def _layers(n: int) -> list[np.ndarray]:
    masks = np.arange(1 << n)
    pc = np.zeros(1 << n, dtype=np.int64)
    for i in range(n):
        pc += (masks >> i) & 1
    return [masks[pc == p] for p in range(n + 1)]


def tour_table(start: np.ndarray, legs: np.ndarray, start_f: np.ndarray | None,
               legs_f: np.ndarray | None) -> np.ndarray:
    """Held–Karp over ``(visited set, last node, entry, flashes used)``, vectorised over the sets of each size.

    :param start: (n, K) cost from the start to entry ``e`` of node ``i`` (``inf`` pads missing entries).
    :param legs: (n, K, n, K) ``legs[i, e, j, e']`` cost from entry ``e`` of ``i`` to entry ``e'`` of ``j``.
    :param start_f: like ``start`` but with the one flash used on that leg (``None``: no flash).
    :param legs_f: like ``legs`` with the flash (``None``: no flash).
    :return: ``g[mask, i, e, u]`` (2**n, n, K, 2): least cost from the start through exactly the nodes of ``mask``,
        ending at entry ``e`` of node ``i`` with ``u`` flashes used.
    """
    n, k = start.shape
    g = np.full((1 << n, n, k, 2), INF, dtype=legs.dtype)
    for i in range(n):
        g[1 << i, i, :, 0] = start[i]
        if start_f is not None:
            g[1 << i, i, :, 1] = start_f[i]
    layers = _layers(n)
    for p in range(1, n):
        for j in range(n):
            sel = layers[p][(layers[p] >> j) & 1 == 0]  # the sets of size p without j
            out = np.full((2, len(sel), k), INF, dtype=legs.dtype)
            for i in range(n):  # only the sets that hold i can end at i
                rows = np.flatnonzero((sel >> i) & 1)
                if not len(rows):
                    continue
                cur = g[sel[rows], i]  # (m, K, 2)
                lij = legs[i, :, j, :]
                out[0, rows] = np.minimum(out[0, rows], (cur[:, :, 0, None] + lij).min(axis=1))
                if legs_f is not None:
                    w1 = np.minimum((cur[:, :, 1, None] + lij).min(axis=1),
                                    (cur[:, :, 0, None] + legs_f[i, :, j, :]).min(axis=1))
                    out[1, rows] = np.minimum(out[1, rows], w1)
            tgt = sel | (1 << j)
            g[tgt, j, :, 0] = out[0]
            if legs_f is not None:
                g[tgt, j, :, 1] = out[1]
    return g


def tour_trace(g: np.ndarray, legs: np.ndarray, legs_f: np.ndarray | None, mask: int, i: int, e: int,
               u: int) -> list[tuple[int, int, bool]]:
    """The tour of state ``g[mask, i, e, u]`` of :func:`tour_table`, first node first, as
    ``(node, entry, flash on the leg into it)`` (recomputes each argmin, so no parent table is stored)."""
    seq = []
    while True:
        prev = mask & ~(1 << i)
        if prev == 0:
            seq.append((i, e, u == 1))
            return seq[::-1]
        cand = g[prev, :, :, u] + legs[:, :, i, e]
        flashed = False
        if u == 1 and legs_f is not None:
            cf = g[prev, :, :, 0] + legs_f[:, :, i, e]
            if cf.min() < cand.min():
                cand, flashed = cf, True
        kk, ee = np.unravel_index(int(np.argmin(cand)), cand.shape)
        seq.append((i, e, flashed))
        mask, i, e, u = prev, int(kk), int(ee), (0 if flashed else u)


def held_karp(start: np.ndarray, legs: np.ndarray, end: np.ndarray) -> tuple[float, list[int]]:
    """Plain Held–Karp: the cheapest path start -> every node once -> end.

    :param start: (n,) cost from the start to each node.
    :param legs: (n, n) cost between nodes.
    :param end: (n,) cost from each node to the end.
    :return: ``(cost, order)``.
    """
    start, legs, end = (np.asarray(a, dtype=np.float64) for a in (start, legs, end))
    n = len(start)
    if n == 0:
        return 0.0, []
    g = tour_table(start[:, None], legs[:, None, :, None], None, None)
    tot = g[-1, :, 0, 0] + end
    i = int(np.argmin(tot))
    seq = tour_trace(g, legs[:, None, :, None], None, (1 << n) - 1, i, 0, 0)
    return float(tot[i]), [node for node, _, _ in seq]


def buff_steps(distance: float, rules: Rules, remaining: int | None = None) -> float:
    """Steps to cover ``distance`` when the next ``remaining`` (default ``rules.buff_duration``) run at the buff's
    speed."""
    r = rules.buff_duration if remaining is None else remaining
    fast = rules.buff_speed * r
    if distance <= fast:
        return distance / rules.buff_speed
    return r + (distance - fast) / rules.move_speed
