"""robot_vacuum's coverage planner, memory and experts: the bitset searches against a plain BFS, the planner's moves
(legal, away from the official robots, within the battery), its coverage on an open map, the memory's map against
the game's true arrays, and whole games of both experts, deterministic for a seed."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest
from sb3_realm_vacuum.core import VacuumGame
from sb3_realm_vacuum.experts import CoveragePolicy, ObservedPolicy, game_belief
from sb3_realm_vacuum.memory import Memory
from sb3_realm_vacuum.observation import env_obs
from sb3_realm_vacuum.planner import (
    DANGER,
    UNREACHABLE,
    Belief,
    CoveragePlanner,
    bits_of,
    blend_levels,
    charger_levels,
    collision_risk,
)
from sb3_realm_vacuum.rules import DIRECTIONS, SIZE, VIEW_RADIUS, Rules, VacuumConfig, can_move

CHARGERS = ((20, 20), (100, 20), (20, 100), (100, 100))
P = SIZE + 1


def open_map(walls=(), chargers=CHARGERS, border: int = 4) -> SimpleNamespace:
    """An open room (obstacles ``border`` cells deep around it) with the wall cells ``walls``."""
    walkable = np.zeros((SIZE, SIZE), dtype=bool)
    walkable[border:SIZE - border, border:SIZE - border] = True
    for x, z in walls:
        walkable[z, x] = False
    walkable.setflags(write=False)
    return SimpleNamespace(name="open", walkable=walkable, chargers=chargers)


def house_map() -> SimpleNamespace:
    """Rooms with walls, doors and furniture: a long wall with two doors, a pillar block, a room in a corner."""
    walls = [(64, z) for z in range(4, 124) if not 30 <= z <= 32 and not 90 <= z <= 93]
    walls += [(x, 64) for x in range(4, 64) if not 20 <= x <= 22]
    walls += [(x, z) for x in range(80, 90) for z in range(50, 58)]
    walls += [(x, 40) for x in range(90, 124) if x != 100] + [(90, z) for z in range(4, 40)]
    return open_map(walls)


class Stand:
    """What the experts read of an env: ``unwrapped.game`` and ``unwrapped.platform_obs()``."""

    def __init__(self, game: VacuumGame) -> None:
        self.game = game
        self.unwrapped = self

    def platform_obs(self) -> dict:
        return env_obs(self.game)


def new_game(game_map, seed: int = 0, hero=None, npcs=None, **conf) -> VacuumGame:
    robots = len(npcs) if npcs is not None else conf.pop("robot_count", 4)
    return VacuumGame(game_map, VacuumConfig(robot_count=robots, **conf), np.random.default_rng(seed), hero=hero,
                      npc_spawns=npcs)


def play(policy, game: VacuumGame, steps: int | None = None, check=None) -> list[int]:
    """Play ``policy`` on ``game`` to its end (or ``steps`` steps); the actions. ``check(game, action, policy)`` is
    called before each step."""
    env = Stand(game)
    policy.reset(env)
    actions = []
    while not game.done and (steps is None or len(actions) < steps):
        action = policy.act(env, None)
        assert isinstance(action, int) and 0 <= action < 8
        if check is not None:
            check(game, action, policy)
        actions.append(action)
        game.step(action)
    return actions


def bfs_steps(walkable: np.ndarray, sources) -> np.ndarray:
    """Plain BFS of robot steps (8 moves, corner rule) from the cells ``sources``: the reference."""
    out = np.full((SIZE, SIZE), UNREACHABLE, dtype=np.int64)
    queue = deque()
    for x, z in sources:
        if walkable[z, x]:
            out[z, x] = 0
            queue.append((x, z))
    while queue:
        x, z = queue.popleft()
        for dx, dz in DIRECTIONS:
            if can_move(walkable, x, z, dx, dz) and out[z + dz, x + dx] == UNREACHABLE:
                out[z + dz, x + dx] = out[z, x] + 1
                queue.append((x + dx, z + dz))
    return out


def levels_to_array(within: list[int]) -> np.ndarray:
    """The distances of a ``within`` list as an array (UNREACHABLE where no level holds the cell)."""
    out = np.full(SIZE * P, UNREACHABLE, dtype=np.int64)
    last = 0
    for k, bits in enumerate(within):
        new = bits & ~last
        data = new.to_bytes((SIZE * P + 7) // 8, "little")
        mask = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little", count=SIZE * P).astype(bool)
        out[mask] = k
        last = bits
    return out.reshape(SIZE, P)[:, :SIZE]


# ------------------------------------------------------------------------------------------------------ searches
def test_charger_levels_match_a_plain_bfs_with_the_corner_rule():
    rng = np.random.default_rng(3)
    walkable = rng.random((SIZE, SIZE)) < 0.62  # many diagonal pinches: the corner rule matters
    walkable[0, :] = True  # road on the map's edge: no wrap into the next row
    walkable[:, SIZE - 1] = True
    sources = [(5, 5), (120, 64), (64, 127)]
    mask = np.zeros((SIZE, SIZE), dtype=bool)
    for x, z in sources:
        mask[z, x] = True
    got = levels_to_array(charger_levels(bits_of(walkable), bits_of(mask)))
    want = bfs_steps(walkable, sources)
    assert (want < UNREACHABLE).sum() > 3000
    assert np.array_equal(got, want)


def test_slow_cells_count_two_steps_and_late_sources_count_their_delay():
    walkable = np.zeros((SIZE, SIZE), dtype=bool)
    walkable[10, 10:40] = True  # a corridor along z = 10
    source = np.zeros((SIZE, SIZE), dtype=bool)
    source[10, 10] = True
    slow = np.zeros((SIZE, SIZE), dtype=bool)
    slow[10, 20:25] = True  # 5 slow cells
    got = levels_to_array(charger_levels(bits_of(walkable), bits_of(source), slow=bits_of(slow)))
    assert got[10, 19] == 9 and got[10, 24] == 14 + 5 - 5 + 5 and got[10, 30] == 20 + 5
    late = np.zeros((SIZE, SIZE), dtype=bool)
    late[10, 39] = True
    got = levels_to_array(charger_levels(bits_of(walkable), bits_of(source), late=bits_of(late), delay=10))
    assert got[10, 39] == 10 and got[10, 30] == 19 and got[10, 29] == 19  # 29 from the source, 9 + 10 from late


def test_blend_counts_known_ways_and_a_factor_through_unknown_cells():
    known = [0b1, 0b11, 0b111]
    hopeful = [0b1, 0b1011, 0b11111]
    out = blend_levels(known, hopeful, 2.0)
    # cells 0..2 by the known way; cell 3 (hopeful 1) at 2; cell 4 (hopeful 2) at 4
    assert out[0] == 0b1 and out[1] == 0b11 and out[2] == 0b1111 and out[4] == 0b11111
    assert out[3] == 0b1111


def test_collision_risk_counts_the_official_robots_moves():
    walkable = np.ones((SIZE, SIZE), dtype=bool)
    assert collision_risk(walkable, [(50, 50)], 53, 50) == 0.0  # 3 away: no move of it reaches
    assert collision_risk(walkable, [(50, 50)], 52, 50) == pytest.approx(3 / 8)  # E, NE, SE
    walkable[49:52, 51] = False  # a wall between: it cannot step east
    assert collision_risk(walkable, [(50, 50)], 52, 50) == 0.0


def test_bad_planner_settings_and_expert_options_are_refused():
    with pytest.raises(ValueError, match="margin"):
        CoveragePlanner(margin=0)
    with pytest.raises(ValueError, match="unknown_factor"):
        CoveragePlanner(unknown_factor=0.5)
    with pytest.raises(ValueError, match="use_flash"):
        CoveragePolicy(None, use_flash=True)
    with pytest.raises(ValueError, match="speed"):
        ObservedPolicy(None, speed=2)


# ------------------------------------------------------------------------------------------------------ decisions
def belief_of(walkable, dirty, x, z, npcs=(), battery=200, chargers=CHARGERS, step=0, max_step=1000) -> Belief:
    return Belief(walkable=walkable, dirty=dirty, unknown=None, x=x, z=z, battery=battery, battery_max=200,
                  chargers=chargers, npcs=list(npcs), step=step, max_step=max_step)


def test_the_planner_avoids_an_official_robot_next_to_its_path():
    walkable = open_map().walkable
    dirty = np.zeros((SIZE, SIZE), dtype=bool)
    dirty[60, 61:90] = True  # a line of dirt east of the robot at (60, 60)
    planner = CoveragePlanner()
    assert DIRECTIONS[planner.act(belief_of(walkable, dirty, 60, 60))] == (1, 0)  # alone: straight east
    npc = (63, 62)  # two rows below the line: the next cells east are within 2 of it
    x, z = 60, 60
    planner.reset()
    for _ in range(12):
        dx, dz = DIRECTIONS[planner.act(belief_of(walkable, dirty, x, z, npcs=[npc]))]
        x, z = x + dx, z + dz
        dirty[z, x] = False
        assert max(abs(x - npc[0]), abs(z - npc[1])) > DANGER
    assert x > npc[0]  # it went round, and on east


def test_the_planner_goes_to_charge_before_the_battery_runs_short():
    walkable = open_map().walkable
    dirty = np.zeros((SIZE, SIZE), dtype=bool)
    dirty[60, 61:120] = True  # dirt leading away from the charger
    one = ((20, 20),)
    planner = CoveragePlanner(margin=4)
    # the next dirty cell is 40 steps from the charger's footprint: 1 + 40 + 4 steps in hand
    planner.act(belief_of(walkable, dirty, 60, 60, battery=45, chargers=one))
    assert planner.mode == "clean" and planner.charger_distance(61, 60) == 40
    planner.reset()
    action = planner.act(belief_of(walkable, dirty, 60, 60, battery=44, chargers=one))
    assert planner.mode == "charge"
    dx, dz = DIRECTIONS[action]
    assert planner.charger_distance(60 + dx, 60 + dz) == planner.charger_distance(60, 60) - 1 == 38
    # with the battery to last the episode, no charger is needed
    planner.reset()
    planner.act(belief_of(walkable, dirty, 60, 60, battery=44, chargers=one, step=960))
    assert planner.mode == "clean"


def test_whole_games_keep_legal_moves_away_from_the_official_robots():
    game = new_game(house_map(), seed=4, hero=(40, 40))
    safe_modes = ("clean", "explore", "charge", "wait", "roam")
    counts = {"moves": 0}

    def check(g, action, policy):
        dx, dz = DIRECTIONS[action]
        moved = can_move(g.walkable, g.x, g.z, dx, dz)
        mode = policy.planner.mode
        if mode in ("clean", "explore", "charge"):
            assert moved, f"step {g.step_no}: a blocked move while {mode}"
        x, z = (g.x + dx, g.z + dz) if moved else (g.x, g.z)
        if mode in safe_modes:  # a choice among safe cells: never within DANGER of where a robot stands
            assert min(max(abs(x - a), abs(z - b)) for a, b in g.npcs) > DANGER, f"step {g.step_no}"
        counts["moves"] += moved

    play(CoveragePolicy(), game, check=check)
    assert game.step_no == 1000 and game.fail_reason == ""
    assert counts["moves"] > 950


@pytest.mark.parametrize("battery_max", [100, 200])
def test_started_full_the_robot_never_runs_out_of_battery(battery_max):
    game = new_game(house_map(), seed=1, hero=(110, 110), npcs=[(60, 110)], battery_max=battery_max)
    play(CoveragePolicy(), game)
    assert game.fail_reason != "battery" and game.step_no == 1000
    assert game.charge_count >= 4


def test_the_yardstick_cleans_most_steps_on_an_open_map():
    game = new_game(open_map(), seed=2, hero=(64, 64), npcs=[(110, 64)])
    play(CoveragePolicy(), game)
    assert game.fail_reason == ""
    assert game.clean_score > 0.85 * game.step_no


def test_the_observed_planner_cleans_and_survives_on_a_house_map():
    game = new_game(house_map(), seed=3, hero=(30, 100), npcs=[(100, 110)])
    play(ObservedPolicy(), game)
    assert game.fail_reason == "" and game.step_no == 1000
    assert game.clean_score > 0.7 * game.step_no


# ------------------------------------------------------------------------------------------------------ memory
def test_memory_rebuilds_the_seen_map_from_the_observations():
    game = new_game(house_map(), seed=5, hero=(70, 20))
    memory = Memory()
    spawns = list(game.npc_spawns)
    seen_at_reset = {j + 1 for j, (x, z) in enumerate(spawns) if max(abs(x - game.x), abs(z - game.z)) <= 10}
    policy = ObservedPolicy()
    env = Stand(game)
    policy.reset(env)
    for _ in range(300):
        obs = env.platform_obs()
        memory.update(obs)
        memory.update(obs)  # the same step again changes nothing
        seen = memory.seen
        assert np.array_equal(memory.unknown, ~seen)
        assert np.array_equal(memory.walkable[seen], game.walkable[seen])
        # dirt comes back nowhere: a cell dirty now was dirty when last seen
        assert not (game.dirty & seen & ~memory.dirty).any()
        r = VIEW_RADIUS
        z0, z1, x0, x1 = max(0, game.z - r), min(SIZE, game.z + r + 1), max(0, game.x - r), min(SIZE, game.x + r + 1)
        assert np.array_equal(memory.dirty[z0:z1, x0:x1], game.dirty[z0:z1, x0:x1])
        assert (memory.x, memory.z, memory.battery, memory.step) == (game.x, game.z, game.battery, game.step_no)
        for j, (nx, nz) in enumerate(game.npcs):
            if max(abs(nx - game.x), abs(nz - game.z)) <= r:
                assert memory.npcs[j + 1] == (nx, nz)
            else:
                assert j + 1 not in memory.npcs
        game.step(policy.act(env))
        if game.done:
            break
    assert seen.sum() > 2000
    for idx in seen_at_reset:
        assert memory.npc_spawns[idx] == spawns[idx - 1]
    for idx in memory.npc_boxes:
        x0, x1, z0, z1 = memory.spawn_region(idx)
        sx, sz = spawns[idx - 1]
        assert x0 <= sx <= x1 and z0 <= sz <= z1
    memory.update(env_obs(new_game(house_map(), seed=6)))  # step 0 again: a new episode
    assert memory.step == 0 and memory.seen.sum() <= 21 * 21


def test_memory_reads_the_observation_part_alone_and_the_belief_shares_its_arrays():
    game = new_game(open_map(), seed=0, hero=(64, 64), npcs=[(64, 70)])
    memory = Memory()
    memory.update(env_obs(game)["observation"])
    belief = memory.belief()
    assert belief.walkable is memory.walkable and belief.dirty is memory.dirty and belief.unknown is memory.unknown
    assert belief.npcs == ((64, 70),) and belief.npc_spawns == ((64, 70),)
    assert belief.chargers == CHARGERS and belief.battery == 200 and belief.max_step == 1000


# ------------------------------------------------------------------------------------------------------ experts
@pytest.mark.parametrize("expert", [CoveragePolicy, ObservedPolicy])
def test_both_experts_play_whole_games_deterministically(expert):
    runs = []
    for _ in range(2):
        game = new_game(house_map(), seed=11)
        runs.append((play(expert(), game), game.clean_score, game.step_no, game.fail_reason))
    assert runs[0] == runs[1]
    assert runs[0][2] > 100
    assert expert.name in ("coverage", "planner")


def test_the_yardstick_reads_the_whole_truth():
    game = new_game(open_map(), seed=0)
    belief = game_belief(game)
    assert belief.dirty is game.dirty and belief.unknown is None
    assert belief.npcs == [tuple(n) for n in game.npcs]
    assert len(belief.npc_areas) == len(game.npc_spawns)


def test_memory_takes_official_robots_out_of_view_where_the_observation_gives_their_positions():
    config = VacuumConfig(robot_count=2)
    spawns = [(64, 70), (110, 110)]
    hidden = VacuumGame(open_map(), config, np.random.default_rng(0), hero=(64, 64), npc_spawns=spawns)
    given = VacuumGame(open_map(), config, np.random.default_rng(0), Rules(npcs_in_view_only=False), hero=(64, 64),
                       npc_spawns=spawns)
    memory = Memory()
    memory.update(env_obs(hidden))
    assert memory.npcs == {1: (64, 70)} and set(memory.npc_spawns) == {1}
    memory.update(env_obs(given))  # the same step again: nothing new
    assert memory.npcs == {1: (64, 70)}
    memory.reset()
    memory.update(env_obs(given))  # the far robot's position given too
    assert memory.npcs == {1: (64, 70), 2: (110, 110)} and memory.npc_spawns[2] == (110, 110)


def test_without_a_known_charger_the_planner_just_cleans():
    walkable = open_map().walkable
    dirty = np.zeros((SIZE, SIZE), dtype=bool)
    dirty[60, 57] = True  # 3 steps west
    planner = CoveragePlanner()
    dx, _ = DIRECTIONS[planner.act(belief_of(walkable, dirty, 60, 60, battery=30, chargers=()))]
    assert dx == -1 and planner.mode == "clean"


@pytest.mark.parametrize(("battery", "mode"), [(45, "wait"), (35, "charge")])
def test_an_official_robot_in_the_way_is_waited_for_unless_the_battery_runs_short(battery, mode):
    walkable = np.zeros((SIZE, SIZE), dtype=bool)
    walkable[58:63, 9:100] = True  # a corridor 5 cells wide, z = 58 .. 62
    dirty = np.zeros((SIZE, SIZE), dtype=bool)
    npc = (30, 60)  # in its middle, between the robot and the only charger: passing means Chebyshev 2
    planner = CoveragePlanner(margin=4)
    action = planner.act(belief_of(walkable, dirty, 45, 60, npcs=[npc], battery=battery, chargers=((10, 60),)))
    assert planner.mode == mode
    dx, dz = DIRECTIONS[action]
    x, z = (45 + dx, 60 + dz) if can_move(walkable, 45, 60, dx, dz) else (45, 60)
    assert max(abs(x - npc[0]), abs(z - npc[1])) > DANGER
    if mode == "charge":  # 34 steps past it at Chebyshev 2, no time to wait
        assert len(planner._path) == 34 and all(max(abs(c % P - 30), abs(c // P - 60)) >= 2 for c in planner._path)
