"""The oracle planner and expert policy: Held–Karp against brute force, known tours on hand-made maps, the buff and
the flash, and episodes won with every treasure on the default, small and real maps."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import open_map

from sb3_realm.games.realm import EpisodeConfig, Game, Rules, competition_observation, default_map, small_map
from sb3_realm.games.realm.core import simulate_move
from sb3_realm.games.realm.experts import LEG_ROUNDING, OraclePolicy, buff_steps, held_karp, oracle_action, plan_tour
from sb3_realm.games.realm.experts.paths import INF, cell_links, field_at, field_value, path_tables, point_links
from sb3_realm.games.realm.experts.tour import tour_table, tour_trace

FAR = [(4 + 3 * i, 36) for i in range(12)]  # spare positions in the top row of a 40 x 40 open map


def positions(**ids: tuple[int, int]) -> list[tuple[int, int]]:
    """16 grid positions: ``p<id>=(gx, gz)`` for the given ids, the others spread along the top row."""
    spare = iter(FAR)
    return [ids[f"p{i}"] if f"p{i}" in ids else next(spare) for i in range(16)]


def play(game_map, ids, policy: OraclePolicy, start: int = 2, end: int = 1, max_step: int = 2000,
         perturb: float = 0.0, seed: int = 0, moves: list | None = None) -> Game:
    """One episode of the oracle through the competition observation; with ``perturb`` > 0 a random legal action
    replaces the oracle's with that probability; ``moves`` (a list) receives the oracle's actions. Asserts that the
    oracle never flashes while the talent is down."""
    config = EpisodeConfig.from_usr_conf({"start": start, "end": end, "treasure_random": 0,
                                          "treasure_id": list(ids), "max_step": max_step})
    game = Game(game_map, policy.rules)
    game.reset(config, config.treasure_id)
    policy.reset(config)
    rng = np.random.default_rng(seed)
    while not (game.terminated or game.truncated):
        obs, env_info = competition_observation(game)
        action = oracle_action(policy, obs, env_info)
        assert 0 <= action < 16
        assert obs.legal_act[1] == 1 or action < 8, "the oracle flashed while the talent was cooling down"
        if moves is not None:
            moves.append(action)
        if perturb and rng.random() < perturb:
            action = int(rng.integers(16 if obs.legal_act[1] else 8))
        game.step(action)
    return game


# ------------------------------------------------------------------------------------------------ Held–Karp
@pytest.mark.parametrize("seed", range(6))
def test_held_karp_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    start, legs, end = rng.random(n) * 10, rng.random((n, n)) * 10, rng.random(n) * 10
    cost, order = held_karp(start, legs, end)
    brute = min((start[p[0]] + sum(legs[a, b] for a, b in itertools.pairwise(p)) + end[p[-1]], p)
                for p in itertools.permutations(range(n)))
    assert cost == pytest.approx(brute[0])
    assert sorted(order) == list(range(n))
    assert start[order[0]] + sum(legs[a, b] for a, b in itertools.pairwise(order)) + end[order[-1]] == \
        pytest.approx(brute[0])


@pytest.mark.parametrize("seed", range(4))
def test_entry_dp_with_flash_matches_brute_force(seed):
    """The DP over (set, node, entry, flash used) against enumerating orders, entries and the flash leg."""
    rng = np.random.default_rng(100 + seed)
    n, k = 4, 2
    legs = rng.random((n, k, n, k)) * 10
    legs_f = legs - rng.random((n, k, n, k)) * 4  # a flash shortens some legs
    start, start_f = rng.random((n, k)) * 10, rng.random((n, k)) * 8
    end, end_f = rng.random((n, k)) * 10, rng.random((n, k)) * 8
    g = tour_table(start, legs, start_f, legs_f)
    full = (1 << n) - 1
    best = min((g[full, :, :, 0] + end).min(), (g[full, :, :, 1] + end).min(), (g[full, :, :, 0] + end_f).min())
    brute = math.inf
    for perm in itertools.permutations(range(n)):
        for ents in itertools.product(range(k), repeat=n):
            for fl in range(n + 2):  # leg index of the flash (n + 1: none)
                c = (start_f if fl == 0 else start)[perm[0], ents[0]]
                for t in range(1, n):
                    table = legs_f if fl == t else legs
                    c += table[perm[t - 1], ents[t - 1], perm[t], ents[t]]
                c += (end_f if fl == n else end)[perm[-1], ents[-1]]
                brute = min(brute, c)
    assert best == pytest.approx(brute)
    # the trace gives a tour of that cost
    u = 0 if (g[full, :, :, 0] + end).min() == best else 1
    arr = g[full, :, :, u] + end
    i, e = np.unravel_index(int(np.argmin(arr)), arr.shape)
    seq = tour_trace(g, legs, legs_f, full, int(i), int(e), u)
    assert sorted(node for node, _, _ in seq) == list(range(n))
    assert sum(fl for _, _, fl in seq) == u


def test_buff_steps():
    r = Rules()
    assert buff_steps(10000, r) == pytest.approx(10.0)
    assert buff_steps(50000, r) == pytest.approx(50.0)
    assert buff_steps(50000 + 7000, r) == pytest.approx(60.0)
    assert buff_steps(7000, r, remaining=0) == pytest.approx(10.0)


# ------------------------------------------------------------------------------------------------ known tours
def test_treasures_on_a_line_are_taken_in_line_order():
    game_map = open_map(40, grid_positions=positions(p2=(4, 20), p1=(35, 20), p5=(12, 20), p3=(20, 20),
                                                     p4=(28, 20), p0=(36, 4)))
    plan = plan_tour(game_map, [3, 4, 5], end=1, start=2, use_flash=False, use_buff=False)
    assert plan.order == (5, 3, 4, 1)
    assert plan.flash is None and not plan.buff
    assert plan.cost == pytest.approx((33 - 4) * 500 / 700)  # straight to the end's disc (centre-inside cells)
    assert plan.predicted_steps == math.ceil(plan.cost + LEG_ROUNDING * 4)
    game = play(game_map, [3, 4, 5], OraclePolicy(game_map, use_flash=False, use_buff=False))
    assert game.win and game.collected == [5, 3, 4]
    assert math.ceil(plan.cost) - 1 <= game.step_no <= plan.predicted_steps


def detour_map():
    """A wall across the room (z 19..20) with a gap at the right end: start and end on the left, below and above."""
    return open_map(40, walls=[(slice(19, 21), slice(2, 34))],
                    grid_positions=positions(p2=(5, 5), p1=(5, 34), p3=(30, 8), p4=(30, 31), p5=(12, 31),
                                             p0=(36, 3)))


def test_detour_map_order_and_flash_over_the_wall():
    game_map = detour_map()
    walk = plan_tour(game_map, [3, 4, 5], end=1, start=2, use_flash=False, use_buff=False)
    assert walk.order == (3, 4, 5, 1)
    flash = plan_tour(game_map, [3, 4, 5], end=1, start=2, use_flash=True, use_buff=False)
    assert flash.flash is not None and flash.cost < walk.cost - 5
    assert 0 <= flash.flash.leg < len(flash.route) and 0 <= flash.flash.direction < 8
    (gx, gz), (lx, lz) = flash.flash.cell, flash.flash.landing
    assert game_map.walkable[gz, gx] and game_map.walkable[lz, lx]
    assert (gz < 19) != (lz < 19)  # over the wall
    games = {}
    for use_flash in (False, True):
        policy = OraclePolicy(game_map, use_flash=use_flash, use_buff=False)
        games[use_flash] = game = play(game_map, [3, 4, 5], policy)
        assert game.win and sorted(game.collected) == [3, 4, 5]
        assert game.talent_count == int(use_flash) and game.flash_fail_count == 0
        assert abs(game.step_no - policy.planned_steps) <= 2 + 0.02 * policy.planned_steps
    assert games[True].step_no < games[False].step_no - 5


def test_buff_on_the_way_is_used_and_avoided_when_disabled():
    game_map = open_map(40, grid_positions=positions(p2=(4, 20), p1=(35, 20), p0=(9, 20), p3=(20, 8)))
    with_buff = plan_tour(game_map, [3], end=1, start=2, use_flash=False, use_buff=True)
    without = plan_tour(game_map, [3], end=1, start=2, use_flash=False, use_buff=False)
    assert with_buff.buff and with_buff.route[0] == 0 and not without.buff
    assert with_buff.cost < without.cost
    on = play(game_map, [3], OraclePolicy(game_map, use_flash=False, use_buff=True))
    off = play(game_map, [3], OraclePolicy(game_map, use_flash=False, use_buff=False))
    assert on.win and off.win and on.buff_count == 1 and off.buff_count == 0
    assert on.step_no < off.step_no


def _chain_steps(t, sv, sf, route, flash_leg, rules):
    """Model steps of a fixed route (buff id 0 inside, end last) with the flash on leg ``flash_leg`` (or None)."""
    ent = [t.entries[n] for n in route]
    b = route.index(0) if 0 in route else len(route) - 1

    def table(k):  # the leg into route[k]
        return t.leg_flash if k == flash_leg else t.leg

    fwd = (sf if flash_leg == 0 else sv)[ent[0]]
    for k in range(1, b + 1):
        fwd = (fwd[:, None] + table(k)[np.ix_(ent[k - 1], ent[k])]).min(axis=0)
    if b == len(route) - 1:
        return fwd.min() / rules.move_speed
    back = np.zeros(len(ent[-1]))
    for k in range(len(route) - 2, b - 1, -1):
        back = (table(k + 1)[np.ix_(ent[k], ent[k + 1])] + back[None, :]).min(axis=1)
    return min(f / rules.move_speed + buff_steps(d, rules) for f, d in zip(fwd, back, strict=True))


def test_plan_matches_brute_force_over_orders_buff_and_flash():
    game_map, rules, treasures = default_map(), Rules(), [3, 6, 9, 13]
    plan = plan_tour(game_map, treasures, end=1, start=2)
    t = path_tables(game_map, rules, 1)
    x, z = (float(v) for v in game_map.positions_world[2])
    sv, sf = t.entry_values_at(x, z), t.flash_values_from(t.point_field(x, z))
    brute = math.inf
    for perm in itertools.permutations(treasures):
        for b in range(len(perm) + 2):  # buff before perm[b] (len + 1: no buff)
            route = (*perm[:b], 0, *perm[b:], 1) if b <= len(perm) else (*perm, 1)
            for fl in [None, *range(len(route))]:
                brute = min(brute, _chain_steps(t, sv, sf, route, fl, rules))
    assert plan.cost == pytest.approx(brute, rel=1e-5)
    assert _chain_steps(t, sv, sf, plan.route, plan.flash.leg if plan.flash else None, rules) == \
        pytest.approx(plan.cost, rel=1e-5)


# ------------------------------------------------------------------------------------------------ playing
@pytest.mark.parametrize("ids, start, end", [
    ((3, 4, 5, 6, 7, 8, 9, 10, 11), 2, 1),
    ((4, 6, 8, 9, 10, 12, 13, 14, 15), 2, 1),
    ((3, 5, 7, 11, 12, 13, 14, 15), 2, 1),
    ((1, 3, 4, 6, 7, 10, 12), 9, 5),
])
def test_default_map_wins_with_every_treasure(ids, start, end):
    game_map = default_map()
    policy = OraclePolicy(game_map)
    game = play(game_map, ids, policy, start=start, end=end)
    assert game.win and sorted(game.collected) == sorted(ids)
    assert policy.plan.order[-1] == end and isinstance(policy.planned_steps, int)
    assert abs(game.step_no - policy.planned_steps) <= 0.02 * policy.planned_steps


@pytest.mark.parametrize("ids", [tuple(range(3, 16)), (3, 6, 9, 12, 15), (4, 5, 7, 8, 10, 11, 13, 14)])
def test_small_map_wins_with_every_treasure(ids):
    game_map = small_map()
    game = play(game_map, ids, OraclePolicy(game_map))
    assert game.win and sorted(game.collected) == sorted(ids)


@pytest.mark.parametrize("seed", range(3))
def test_recovers_from_random_deviations_and_never_flashes_illegally(seed):
    """A random legal action replaces the oracle's a third of the time (as when it labels a learner's states):
    out-of-order pickups, foreign flashes and detours; it still wins with every treasure."""
    game_map = default_map()
    rules = Rules(unready_flash="error")  # an illegal flash would raise
    ids = (3, 5, 6, 8, 10, 11, 12, 14, 15)
    game = play(game_map, ids, OraclePolicy(game_map, rules), perturb=0.35, seed=seed)
    assert game.win and sorted(game.collected) == list(ids)


def test_ties_broken_toward_the_next_node_play_as_well():
    """``tie_break = "heading"`` (the labels of ``imitation.tie_break``) changes the move in many states, never the
    outcome: every treasure, about as many steps."""
    game_map = default_map()
    for ids in [(3, 5, 6, 8, 10, 11, 12, 14, 15), (4, 5, 7, 8, 9, 11, 13, 14, 15)]:
        games, moves = {}, {}
        for rule in ("index", "heading"):
            policy = OraclePolicy(game_map)
            policy.tie_break = rule
            moves[rule] = []
            game = games[rule] = play(game_map, ids, policy, moves=moves[rule])
            assert game.win and sorted(game.collected) == sorted(ids)
        assert abs(games["heading"].step_no - games["index"].step_no) <= 0.02 * games["index"].step_no
        n = min(len(moves["index"]), len(moves["heading"]))
        assert np.mean(np.array(moves["index"][:n]) != np.array(moves["heading"][:n])) > 0.05
    policy = OraclePolicy(game_map)
    policy.tie_break = "sideways"
    with pytest.raises(ValueError, match="tie_break = 'sideways'"):
        play(game_map, (3, 4), policy)


def test_greedy_policy_is_kept_out_of_loops():
    """With the look-ahead off (1 move), corners would trap a greedy walker; repeated states deepen the search."""
    game_map = default_map()
    for ids in [(3, 4, 5, 6, 7, 8, 9, 10, 11), (3, 5, 7, 9, 11, 12, 13, 14, 15)]:
        policy = OraclePolicy(game_map)
        policy.lookahead = policy.cruise_lookahead = 1
        game = play(game_map, ids, policy)
        assert game.win and game.treasure_count == 9


def test_short_max_step_drops_treasures_but_reaches_the_end():
    game_map = default_map()
    ids = (3, 4, 5, 6, 7, 8, 9, 10, 11)
    full = play(game_map, ids, OraclePolicy(game_map))
    short = play(game_map, ids, OraclePolicy(game_map), max_step=full.step_no - 60)
    assert short.win and 0 < short.treasure_count < 9
    assert short.score() > 0


def test_same_state_asked_twice():
    game_map = small_map()
    config = EpisodeConfig.from_usr_conf({"treasure_random": 0, "treasure_id": [3, 9, 14]})
    game = Game(game_map)
    game.reset(config, config.treasure_id)
    policy = OraclePolicy(game_map)
    policy.reset(config)
    obs, env_info = competition_observation(game)
    first = policy.act(obs, env_info)
    planned = policy.planned_steps
    assert policy.act(obs, env_info) == first and policy.planned_steps == planned and policy.replans == 0


def test_act_before_reset_raises():
    game_map = small_map()
    game = Game(game_map)
    config = EpisodeConfig.from_usr_conf({"treasure_random": 0, "treasure_id": [3]})
    game.reset(config, config.treasure_id)
    with pytest.raises(RuntimeError, match="reset"):
        OraclePolicy(game_map).act(*competition_observation(game))
    with pytest.raises(ValueError, match="treasures"):
        plan_tour(game_map, [1, 3], end=1, start=2)


@pytest.mark.realmap
def test_real_map_a_few_sets(real_map):
    for ids in [(3, 4, 5, 6, 7, 8, 9, 10, 11), (7, 8, 9, 10, 11, 12, 13, 14, 15), (3, 5, 6, 8, 9, 11, 12, 14, 15)]:
        policy = OraclePolicy(real_map)
        game = play(real_map, ids, policy)
        assert game.win and game.treasure_count == 9
        assert abs(game.step_no - policy.planned_steps) <= 0.02 * policy.planned_steps


ALL_SETS = list(itertools.combinations(range(3, 16), 9))  # start 2, end 1: C(13, 9) = 715


@pytest.mark.slow
def test_default_map_all_715_sets():
    game_map = default_map()
    policy = OraclePolicy(game_map)
    lost = [ids for ids in ALL_SETS if not ((g := play(game_map, ids, policy)).win and g.treasure_count == 9)]
    assert not lost


@pytest.mark.slow
@pytest.mark.realmap
def test_real_map_all_715_sets_within_2_percent_of_plan(real_map):
    policy = OraclePolicy(real_map)
    bad = []
    for ids in ALL_SETS:
        game = play(real_map, ids, policy)
        if not (game.win and game.treasure_count == 9) or \
                abs(game.step_no - policy.planned_steps) > 0.02 * policy.planned_steps:
            bad.append((ids, game.win, game.treasure_count, game.step_no, policy.planned_steps))
    assert not bad



def _labels_in_a_learner_loop(seed: int, tell: bool, max_step: int = 200) -> list[tuple[tuple[float, float], int]]:
    """The oracle labels 40 steps of a learner that walks east, west, east, ... (DAgger on a looping learner);
    ``tell``: the oracle is told whenever the learner's move was not its own."""
    from sb3_realm.games.realm.env import RealmEnv
    from sb3_realm.games.realm.experts.adapter import OracleAdapter

    env = RealmEnv(map_name="small")
    obs, _ = env.reset(seed=seed, options={"treasure_random": 1, "treasure_num": 2, "max_step": max_step})
    oracle = OracleAdapter(env)
    oracle.reset(env)
    out = []
    for t in range(40):
        label = oracle.act(env, obs)
        action = 0 if t % 2 == 0 else 4
        if tell and action != label:
            oracle.played_other()
        hero = env.competition_obs()[1].frame_state.heroes[0]
        out.append(((hero.pos.x, hero.pos.z), label))
        obs, *_ = env.step(action)
    return out


@pytest.mark.parametrize("seed", [0, 4])
def test_labels_of_a_learner_loop_depend_on_the_state_only(seed):
    """The oracle's loop guard (deeper search, then the BFS field, on revisits) is for its own oscillations; told
    that the learner played (``played_other``), it labels each revisited position as the first time."""
    def flips(labels):
        first: dict = {}
        return sum(first.setdefault(pos, label) != label for pos, label in labels)

    assert flips(_labels_in_a_learner_loop(seed, tell=True)) == 0
    assert flips(_labels_in_a_learner_loop(seed, tell=False)) > 0  # what DAgger's labels were without it


def test_a_plan_knows_the_steps_left_it_fits():
    """``Plan.fits``: the whole tour is planned again from the same state for any steps left that it fits in; a tour
    cut down to fit has no such range."""
    game_map = small_map()
    ids = (3, 9, 14)
    whole = plan_tour(game_map, ids, end=1, start=2)
    cost, margin = whole.fit
    assert cost == pytest.approx(whole.cost) and whole.fits(None) and whole.fits(cost + margin)
    assert not whole.fits(cost + margin - 0.5)
    again = plan_tour(game_map, ids, end=1, start=2, steps_left=cost + margin)
    assert again == whole and again.fit == whole.fit
    cut = plan_tour(game_map, ids, end=1, start=2, steps_left=cost + margin - 0.5)
    assert cut.fit is None and not cut.fits(10_000) and len(cut.order) < len(whole.order)


@pytest.mark.parametrize(("seed", "max_step"), [(0, 200), (4, 200), (0, 45), (4, 45)])
def test_plans_reused_in_a_learner_loop_label_as_fresh_plans_do(seed, max_step, monkeypatch):
    """In a learner's loop the oracle is asked for a new plan at every step; the plan it made before in the same
    state is reused (and the route's fields kept when the route is unchanged). The labels are those of planning
    afresh every time, also when the steps left cut the tour down (``max_step`` 45)."""
    import sb3_realm.games.realm.experts.expert as expert

    calls = []
    plan_from_state = expert.plan_from_state

    def counted(*args, **kwargs):
        calls.append(1)
        return plan_from_state(*args, **kwargs)

    monkeypatch.setattr(expert, "plan_from_state", counted)
    reused = _labels_in_a_learner_loop(seed, tell=True, max_step=max_step), _labels_of_a_random_walker(seed, max_step)
    n_reused = len(calls)
    calls.clear()
    _plan_afresh_every_time(monkeypatch)
    fresh = _labels_in_a_learner_loop(seed, tell=True, max_step=max_step), _labels_of_a_random_walker(seed, max_step)
    assert reused == fresh
    assert n_reused < len(calls)  # the loop did call for plans, and some were reused


def _plan_afresh_every_time(monkeypatch) -> None:
    """The oracle as it was before plans were reused: every new plan planned and its route valued from scratch."""
    from sb3_realm.games.realm.experts.expert import OraclePolicy
    from sb3_realm.games.realm.experts.tour import Plan

    monkeypatch.setattr(Plan, "fits", lambda self, steps_left: False)
    replan = OraclePolicy._replan

    def from_scratch(self, *args):
        replan(self, *args)
        self._fields = {}
        self._chain()

    monkeypatch.setattr(OraclePolicy, "_replan", from_scratch)


def _labels_of_a_random_walker(seed: int, max_step: int) -> list[tuple[tuple[float, float], int]]:
    """The oracle labels 120 steps of a learner that mostly walks back and forth at random on the default map (exact
    revisits, pickups out of the planned order, so routes that change), told that the moves were not its own."""
    from sb3_realm.games.realm.env import RealmEnv
    from sb3_realm.games.realm.experts.adapter import OracleAdapter

    env = RealmEnv(map_name="default")
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed, options={"treasure_random": 1, "treasure_num": 9, "max_step": max_step * 4})
    oracle = OracleAdapter(env)
    oracle.reset(env)
    out = []
    for _ in range(120):
        label = oracle.act(env, obs)
        action = label if rng.random() < 0.5 else int(rng.choice([0, 2, 4, 6]))
        if action != label:
            oracle.played_other()
        hero = env.competition_obs()[1].frame_state.heroes[0]
        out.append(((hero.pos.x, hero.pos.z), label))
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return out


@pytest.mark.parametrize("corner_penalty", [0.0, 37.5])
def test_a_field_read_through_the_cell_table_is_the_same_float_as_through_the_point_links(corner_penalty):
    """``field_at`` (the oracle's fast read of a cost-to-go field at a point) against ``field_value`` over
    ``point_links``, at random points of every kind of cell (open, beside walls, at wall corners, on the edge where a
    wall stops the hero) with fields that are unusable (inf) in places."""
    game_map = default_map()
    h, w = game_map.walkable.shape
    walk = game_map.walkable.ravel().tolist()
    table = cell_links(walk, w, h)
    rng = np.random.default_rng(0)
    values = rng.uniform(0, 50_000, w * h)
    values[rng.random(w * h) < 0.2] = INF
    values = values.tolist()
    cells = np.flatnonzero(game_map.walkable)
    checked = corners = 0
    for cell in rng.choice(cells, 3000):
        cz, cx = divmod(int(cell), w)
        x0, z0 = game_map.grid_to_world(cx, cz)  # the cell's centre
        for fx, fz in [rng.uniform(-250, 250, 2), (249.999, -250.0), (-250.0, 249.999)]:
            x, z = x0 + fx, z0 + fz
            links = point_links(walk, w, h, x, z, corner_penalty)
            assert field_at(values, table, w, h, x, z, corner_penalty) == field_value(values, links)
            corners += sum(1 for link in table[cell] if link[3])
            checked += 1
    assert checked == 9000 and corners > 100


def test_the_look_ahead_s_landings_are_the_game_s_moves():
    """The oracle's look-ahead skips ``simulate_move``'s wall checks in open cells (no wall within a move's reach):
    the same landings, to the float, at both speeds, in open cells and beside walls."""
    game_map = default_map()
    policy = OraclePolicy(game_map)
    h, w = game_map.walkable.shape
    rules = policy.rules
    rng = np.random.default_rng(1)
    kinds = set()
    for cell in rng.choice(np.flatnonzero(game_map.walkable), 3000):
        cz, cx = divmod(int(cell), w)
        x0, z0 = game_map.grid_to_world(cx, cz)
        x, z = x0 + rng.uniform(-250, 250), z0 + rng.uniform(-250, 250)
        for speed in (rules.move_speed, rules.buff_speed):
            landings = policy._landings(x, z, speed, {})
            assert landings == [simulate_move(x, z, d, speed, policy._walk, w, h, rules.substep) for d in range(8)]
        kinds.add(policy._open[cell])
    assert kinds == {True, False}
