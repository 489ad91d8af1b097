"""The scripted yardstick of Gorge Chase: a hand-written policy that flees along the monsters' distance fields,
prefers cells with escape room over pockets, takes the treasures and buffs it has seen when that is safe, explores the
map to see more of them, and flashes when cornered or when a flash lands far from the monsters (numpy + standard
library only).

Knowledge: the whole terrain (the open maps are public), the monsters' cells, speeds and last moves (their rule, spec
4.7, predicts their next move), the timers and configured steps of the episode (monster 2 appears where the hero
stood ``spawn_delay`` steps before ``monster_interval``), and only the treasures and buffs the hero has seen in its
21 x 21 view, remembered across steps.

Each step, every distinct cell the legal actions lead to (the 8 moves and, when the flash is ready, the 8 flashes) is
an outcome, scored in four measures against the monsters' BFS fields, less the distance a moving monster covers
this step:

- *caught*: a predicted monster (every tie branch of its rule) within Chebyshev 1 after the step;
- *margin*: steps before a monster can stand next to the outcome's cell (speeds, the coming speed-up and monster 2's
  announced spawn included);
- *room*: cells within ``horizon`` hero steps (diagonal moves, corner rule, the buff's double step) that the hero
  reaches before any monster can; *exits*: those at least ``exit_steps`` away, each weighted by its lead; *lasting*:
  the latest a monster can reach one of them;
- *progress* toward the goal (the seen treasure or buff with the least distance plus a penalty where a monster gets
  there about as soon, else the nearest unseen road) and the items picked up on the way.

The safety value is a sum of logarithms of the four measures, less a cost for a margin under 3, for standing still
and for spending the flash. Moves that keep a margin of ``safe_margin`` and ``min_room`` cells are *calm*: among
them the goal decides; without any, the safety value (plus pickups) decides, flashes included. Buffs are kept for the
speed-up (taken from ``buff_lead`` steps before it, or early enough to be back by then). No random numbers: the same
state gives the same action.

The hero's step distances within Chebyshev ``RADIUS`` of every road cell are precomputed per map (``(road cells, 33,
33)`` bytes, with a small table of monster distances and the flash landings; 1-2 s per open map, cached per map
object), so a step costs one batch of ``(outcomes, 33, 33)`` array operations and the monsters' BFS rows.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..maps import STEPS_4, UNREACHABLE, GorgeMap
from ..protocol import ORGAN_PRESENT, SUB_TYPE_BUFF, SUB_TYPE_TREASURE, VIEW_RANGE
from ..rules import AXIS_PENALTY, DIRECTIONS, PREV_PENALTY, diagonal_allowed

__all__ = ["ScriptedPolicy", "LocalTables", "local_tables", "RADIUS"]

Cell = tuple[int, int]

RADIUS = 16  # half-size of the hero's precomputed windows: cells within Chebyshev 16 of a cell
HERO_LEVELS = 32  # hero steps searched in those windows (the escape room counts fewer)
NEAR = 6  # half-size of the monsters' windows: enough to predict every monster that can catch in one step
FAR = 255  # table value of a cell not reached inside the window (or an obstacle)
_FIELD_CACHE = 32  # goal distance fields kept per map


# ----------------------------------------------------------------------------------------------- per-map tables
def _window_bfs(walkable: np.ndarray, road_xz: np.ndarray, radius: int, diagonal: bool, levels: int = FAR - 1,
                chunk: int = 512) -> np.ndarray:
    """Distances from every road cell to the cells of its ``(2r+1, 2r+1)`` window, over paths that stay inside the
    window: 4-connected steps, or the hero's 8 moves with the corner rule (``diagonal``). Many sources are searched
    at once, one array level per BFS level, up to ``levels`` levels.

    :return: (N, 2r+1, 2r+1) uint8, ``[id, dz + r, dx + r]``; :data:`FAR` where not reached (or >= 255).
    """
    h, w = walkable.shape
    size = 2 * radius + 1
    pad = np.zeros((h + 2 * radius, w + 2 * radius), dtype=bool)
    pad[radius:radius + h, radius:radius + w] = walkable
    views = sliding_window_view(pad, (size, size))
    steps = list(STEPS_4) + ([d for d in DIRECTIONS if d[0] and d[1]] if diagonal else [])

    def shifted(a: np.ndarray, dx: int, dz: int) -> np.ndarray:
        """``out[p] = a[p + (dx, dz)]`` (False beyond the window)."""
        out = np.zeros_like(a)
        out[:, max(0, -dz):size - max(0, dz), max(0, -dx):size - max(0, dx)] = \
            a[:, max(0, dz):size - max(0, -dz), max(0, dx):size - max(0, -dx)]
        return out

    n = len(road_xz)
    table = np.empty((n, size, size), dtype=np.uint8)
    for lo in range(0, n, chunk):
        xs, zs = road_xz[lo:lo + chunk, 0], road_xz[lo:lo + chunk, 1]
        win = views[zs, xs]  # (K, size, size): the terrain around each source
        # a diagonal step from p needs one of the two orthogonal cells between p and the target to be road
        corner = {(dx, dz): shifted(win, dx, 0) | shifted(win, 0, dz) for dx, dz in steps if dx and dz}
        dist = np.full(win.shape, FAR, dtype=np.uint8)
        dist[:, radius, radius] = 0
        reached = np.zeros(win.shape, dtype=bool)
        reached[:, radius, radius] = True
        front = reached.copy()
        for level in range(1, levels + 1):
            new = np.zeros_like(front)
            for dx, dz in steps:
                f = front & corner[(dx, dz)] if dx and dz else front
                new[:, max(0, dz):size - max(0, -dz), max(0, dx):size - max(0, -dx)] |= \
                    f[:, max(0, -dz):size - max(0, dz), max(0, -dx):size - max(0, dx)]
            new &= win
            new &= ~reached
            if not new.any():
                break
            reached |= new
            dist[new] = level
            front = new
        table[lo:lo + len(xs)] = dist
    table.setflags(write=False)
    return table


@dataclass(eq=False)
class LocalTables:
    """What the scripted policy precomputes for one map.

    :param monster: (N, 13, 13) uint8 4-connected distances (a monster's walk) around every road cell.
    :param hero: (N, 33, 33) uint8 hero moves (8 directions, corner rule) around every road cell, up to
        ``HERO_LEVELS``.
    :param flash: (N, 8) int32 road id where a flash from each road cell lands per direction (N: in place).
    """

    game_map: GorgeMap
    monster: np.ndarray
    hero: np.ndarray
    flash: np.ndarray

    def __post_init__(self) -> None:
        self._fields: OrderedDict[Cell, np.ndarray] = OrderedDict()
        m = self.game_map
        n, r = m.road_count, RADIUS
        h, w = m.walkable.shape
        pad = np.full((h + 2 * r, w + 2 * r), n, dtype=np.intp)
        pad[r:r + h, r:r + w] = m.road_index
        self._id_views = sliding_window_view(pad, (2 * r + 1, 2 * r + 1))

    def window_ids(self, xs: np.ndarray, zs: np.ndarray) -> np.ndarray:
        """(K, 33, 33) road ids of the windows centred on the cells ``(xs[k], zs[k])`` (``road_count`` off the
        road)."""
        return self._id_views[zs, xs]

    def field(self, cell: Cell) -> np.ndarray:
        """(H, W) int32 4-connected distances from ``cell`` (kept for the last few goals)."""
        got = self._fields.get(cell)
        if got is None:
            got = self.game_map.distance_field(*cell)
            self._fields[cell] = got
            if len(self._fields) > _FIELD_CACHE:
                self._fields.popitem(last=False)
        else:
            self._fields.move_to_end(cell)
        return got


_TABLES: weakref.WeakKeyDictionary[GorgeMap, LocalTables] = weakref.WeakKeyDictionary()


def local_tables(game_map: GorgeMap) -> LocalTables:
    """The tables of ``game_map``, computed on first use and cached while the map object lives."""
    got = _TABLES.get(game_map)
    if got is None:
        walkable, road_xz = game_map.walkable, game_map.road_xz
        n = game_map.road_count
        flash = np.full((n, 8), n, dtype=np.int32)
        h, w = walkable.shape
        for d, (dx, dz) in enumerate(DIRECTIONS):
            reach = 8 if dx and dz else 10
            for k in range(1, reach + 1):  # the farthest road cell on the line wins: later k overwrite
                x, z = road_xz[:, 0] + k * dx, road_xz[:, 1] + k * dz
                inside = (x >= 0) & (x < w) & (z >= 0) & (z < h)
                ok = np.zeros(n, dtype=bool)
                ok[inside] = walkable[z[inside], x[inside]]
                flash[ok, d] = game_map.road_index[z[ok], x[ok]]
        flash.setflags(write=False)
        got = LocalTables(game_map, _window_bfs(walkable, road_xz, NEAR, False),
                          _window_bfs(walkable, road_xz, RADIUS, True, HERO_LEVELS), flash)
        _TABLES[game_map] = got
    return got


# ----------------------------------------------------------------------------------------------------- policy
@dataclass
class _Outcome:
    action: int
    cell: Cell
    path: tuple[Cell, ...]
    flash: bool
    caught: bool = False
    room: int = 0
    margin: int = 0
    exits: int = 0
    lasting: int = 0
    progress: int = 0
    pickup: float = 0.0
    value: float = 0.0


@dataclass
class _Field:
    """A monster's distance field (by road id), its speed, the hero steps before it exists (monster 2
    before its spawn) and whether it moves in the coming step."""

    row: np.ndarray
    speed: int
    delay: int
    moves: bool


@dataclass
class _Threat:
    """A monster after the coming step: the cells it may stand on (one per tie branch of its rule) and its speed."""

    cells: list[Cell]
    speed: int


class ScriptedPolicy:
    """The scripted yardstick (see the module docstring). Deterministic: it draws no random numbers. The class
    attributes are its weights and thresholds (set them on an instance to try others).

    :param env: a :class:`~sb3_realm.games.gorge.env.GorgeEnv` (its map's tables are built on first use).
    :param use_flash: allow flash actions.
    :param use_buff: go for seen speed buffs (buffs on the way are still picked up).
    """

    name = "scripted"
    room_weight = 30.0  # value of log(1 + cells the hero reaches before any monster, within RADIUS)
    margin_weight = 40.0  # value of log(1 + steps before a monster can reach the hero's cell)
    horizon = 20  # hero steps within which the escape room is counted
    exit_steps = 11  # cells owned at least this many hero steps away are the ways out of the neighbourhood
    slack_cap = 8  # ... each counted by the steps it is reached before a monster, up to this many
    exit_weight = 30.0  # value of log(1 + the sum)
    critical_margin = 3  # margins below this ...
    critical_cost = 60.0  # ... cost this much per missing step
    lasting_weight = 40.0  # value of log(1 + the latest step a monster can reach a cell the hero reaches first)
    stay_cost = 10.0  # value given up by standing still (a blocked move) with a monster near
    safe_margin = 6  # a move keeping at least this many steps before a monster can reach the hero ...
    min_room = 60  # ... and this much escape room is safe: the goal decides among such moves
    progress_weight = 4.0  # value of one cell of progress toward the goal (a diagonal move makes 2)
    treasure_bonus = 400.0  # value of a treasure picked up by the move
    buff_bonus = 150.0  # value of a buff picked up by the move
    flash_cost = 60.0  # value given up by spending the flash
    flash_cost_late = 25.0  # ... once the monsters are fast (the flash is the way to gain ground then)
    contest_margin = 4  # a goal a monster reaches less than this many steps after the hero is contested ...
    contest_weight = 3.0  # ... costing this many steps per step of shortfall ...
    contest_base = 20.0  # ... plus this many
    stall_steps = 12  # a goal not approached for this many steps ...
    ban_steps = 40  # ... is ignored for this many
    explore_refresh = 20  # steps between choices of the exploration target
    buff_lead = 20  # buffs are kept for the speed-up: taken from this many steps before it, or early enough to be back
    buff_stage = 60  # from this many steps before the speed-up, buffs are goals at their late weight
    buff_weight_early = 0.35  # a buff is worth this share of a treasure as a goal before the speed-up
    buff_weight_late = 1.5  # ... and this share from the speed-up on

    def __init__(self, env, use_flash: bool = True, use_buff: bool = True) -> None:
        self.use_flash = bool(use_flash)
        self.use_buff = bool(use_buff)
        self.tables: LocalTables = None  # type: ignore[assignment]  # set by reset()
        self._reset_memory()

    # ------------------------------------------------------------------------------------------ episode memory
    def _reset_memory(self) -> None:
        self.seen: np.ndarray = None  # type: ignore[assignment]  # (H, W) bool: cells that were once in view
        self.treasures: dict[int, Cell] = {}  # seen treasures not collected
        self.buffs: dict[int, Cell] = {}  # seen buffs
        self.buff_ready: dict[int, int] = {}  # buff id -> step from which it is collectable (0: now, as far as known)
        self.history: dict[int, Cell] = {}  # step -> hero cell
        self.explore_target: Cell | None = None
        self._explore_until = 0
        self.banned: dict[Cell, int] = {}  # goal cell -> last step it is ignored
        self.goal: Cell | None = None
        self._goal_best = 0
        self._goal_since = 0
        self._last_step = -1

    def reset(self, env) -> None:
        """Forget the last episode (call at the start of each episode)."""
        self._reset_memory()
        game = env.game
        if game is not None:
            self.tables = local_tables(game.game_map)

    def _observe(self, env) -> None:
        game = env.game
        if self.tables is None or self.tables.game_map is not game.game_map:
            self.tables = local_tables(game.game_map)
        if self.seen is None or game.step_no < self._last_step:
            self._reset_memory()
            self.seen = np.zeros(game.game_map.walkable.shape, dtype=bool)
        self._last_step = game.step_no
        hx, hz = game.hero
        self.history[game.step_no] = game.hero
        self.seen[max(0, hz - VIEW_RANGE):hz + VIEW_RANGE + 1, max(0, hx - VIEW_RANGE):hx + VIEW_RANGE + 1] = True
        obs = env.platform_obs()["observation"]
        remaining = set(obs["env_info"]["treasure_id"])
        for organ in obs["frame_state"]["organs"]:
            oid, cell = int(organ["config_id"]), (int(organ["pos"]["x"]), int(organ["pos"]["z"]))
            if organ["sub_type"] == SUB_TYPE_TREASURE:
                self.treasures[oid] = cell
            elif organ["sub_type"] == SUB_TYPE_BUFF:
                self.buffs[oid] = cell
                if organ["status"] == ORGAN_PRESENT:
                    self.buff_ready[oid] = 0
                elif self.buff_ready.get(oid, 0) <= game.step_no:
                    self.buff_ready[oid] = game.step_no + 1  # waiting, respawn time unknown: look again later
        for oid in [t for t in self.treasures if t not in remaining]:
            del self.treasures[oid]
        if game.events.buff is not None and game.events.buff in self.buffs:
            self.buff_ready[game.events.buff] = game.step_no + game.config.buff_cooldown

    # --------------------------------------------------------------------------------------------------- act
    def act(self, env, obs=None) -> int:
        """The action for the env's current state (``obs`` is not used: the state is read from ``env``)."""
        game = env.game
        self._observe(env)
        legal = np.asarray(env.action_masks(), dtype=bool)
        outcomes = self._outcomes(game, legal)
        threats = self._threats(game)
        fields = self._fields(game)
        goal_field = self._goal_field(game, fields)
        self._evaluate(game, outcomes, threats, fields, goal_field)
        free = [o for o in outcomes if not o.caught] or outcomes
        # safe enough: the goal decides among the moves that keep a margin and room; else flee (safety decides)
        calm = [o for o in free if not o.flash and o.margin >= self.safe_margin and o.room >= self.min_room]
        if calm and goal_field is not None:
            best = max(calm, key=lambda o: (o.pickup + self.progress_weight * o.progress, o.value, -o.action))
        else:
            best = max(free, key=lambda o: (o.value + o.pickup, -o.action))
        return int(best.action)

    # -------------------------------------------------------------------------------------------- outcomes
    def _outcomes(self, game, legal: np.ndarray) -> list[_Outcome]:
        """One outcome per distinct cell the legal actions lead to (moves first, so a flash is played only where it
        lands somewhere no move reaches)."""
        m = game.game_map
        length = 1 + (game.rules.buff_extra_speed if game.has_buff else 0)
        hx, hz = game.hero
        found: dict[Cell, _Outcome] = {}
        for a in range(8):
            dx, dz = DIRECTIONS[a]
            x, z = hx, hz
            path: list[Cell] = []
            for _ in range(length):
                if not diagonal_allowed(m, x, z, dx, dz):
                    break
                x, z = x + dx, z + dz
                path.append((x, z))
            cell = (x, z)
            if legal[a] and cell not in found:
                found[cell] = _Outcome(a, cell, tuple(path) or (cell,), False)
        if self.use_flash and legal[8:].all():
            n = m.road_count
            hid = m.road_id(hx, hz)
            for d in range(8):
                land = int(self.tables.flash[hid, d])
                if land == n:
                    continue
                cell = (int(m.road_xz[land, 0]), int(m.road_xz[land, 1]))
                if cell in found:
                    continue
                dx, dz = DIRECTIONS[d]
                k = max(abs(cell[0] - hx), abs(cell[1] - hz))
                found[cell] = _Outcome(8 + d, cell, tuple((hx + j * dx, hz + j * dz) for j in range(1, k + 1)), True)
        return list(found.values())

    # --------------------------------------------------------------------------------------------- threats
    def _threats(self, game) -> list[tuple]:
        """The monsters' state for :meth:`_predict`: (cell, speed, prev, last_axis) in spawn order."""
        return [(mon.cell, mon.speed, mon.prev, mon.last_axis) for mon in game.monsters]

    def _predict(self, game, hero: Cell, monsters: list[tuple]) -> list[_Threat]:
        """The monsters after the coming step with the hero on ``hero``: each sub-step goes to the 4-neighbour of
        least distance to the hero plus the back-step and same-axis penalties (docs/gorge/rules.md); every tie branch is
        kept. A monster too far to catch the hero this step is left where it is."""
        t = self.tables
        m = game.game_map
        r = NEAR
        hid = m.road_id(*hero)
        window = t.monster[hid]
        hx, hz = hero
        out: list[_Threat] = []
        taken = {cell for cell, *_ in monsters}
        for cell, speed, prev, axis in monsters:
            if cell == hero or max(abs(cell[0] - hx), abs(cell[1] - hz)) > r - speed - 1:
                out.append(_Threat([cell], speed))
                continue
            others = taken - {cell}
            states = [(cell, prev, axis)]
            for _ in range(speed):
                nxt = []
                for c, p, ax in states:
                    best, best_score = [], UNREACHABLE
                    for dx, dz in STEPS_4:
                        n = (c[0] + dx, c[1] + dz)
                        if n in others:
                            continue
                        d = int(window[n[1] - hz + r, n[0] - hx + r])
                        if d == FAR:
                            continue
                        a = "x" if dx else "z"
                        s = 100 * d + (PREV_PENALTY if n == p else 0) + (AXIS_PENALTY if a == ax else 0)
                        if s < best_score:
                            best, best_score = [(n, c, a)], s
                        elif s == best_score:
                            best.append((n, c, a))
                    nxt.extend(best or [(c, p, ax)])
                states = list(dict.fromkeys(nxt))
            cells = list(dict.fromkeys(s[0] for s in states))
            out.append(_Threat(cells, speed))
            if len(cells) == 1:
                taken = (taken - {cell}) | {cells[0]}
        return out

    # ------------------------------------------------------------------------------------------ evaluation
    def _fields(self, game) -> list[_Field]:
        """The monsters' 4-connected distance fields, monster 2 included from the step its spawn cell is known."""
        m = game.game_map
        found: list[tuple[Cell, int, int, bool]] = [(mon.cell, mon.speed, 0, True) for mon in game.monsters]
        if not game.second_spawned and game.monster_interval > 0 and game.rules.monster_count >= 2:
            coming = game.step_no + 1
            spawn_step = game.monster_interval - game.rules.spawn_delay
            delay = game.monster_interval - coming
            if delay >= 0 and spawn_step <= game.step_no and spawn_step in self.history:
                speed = game.rules.monster_speed + (1 if game.boosted else 0)
                found.append((self.history[spawn_step], speed, delay, False))
        return [_Field(m.road_distances(*c), speed, delay, moves) for c, speed, delay, moves in found]

    def _evaluate(self, game, outcomes: list[_Outcome], monsters: list[tuple], fields: list[_Field],
                  goal_field: np.ndarray | None) -> None:
        """Score every outcome (all windows at once: one ``(K, 33, 33)`` array per measure)."""
        m = game.game_map
        t = self.tables
        r = RADIUS
        step = game.step_no
        duration = game.rules.buff_duration
        buffs_here = {cell for oid, cell in self.buffs.items() if self.buff_ready.get(oid, 0) <= step}
        xs = np.array([o.cell[0] for o in outcomes])
        zs = np.array([o.cell[1] for o in outcomes])
        hero_steps = t.hero[m.road_index[zs, xs]].astype(np.int32)  # (K, 33, 33)
        buff = np.full(len(outcomes), game.buff_remaining - 1 if game.has_buff else 0)
        takes_buff = np.array([any(c in buffs_here for c in o.path) for o in outcomes])
        buff[takes_buff] = duration - 1
        if buff.any():
            b = buff[:, None, None]
            hero_steps = np.where(hero_steps <= 2 * b, (hero_steps + 1) // 2, hero_steps - b)
        ids = t.window_ids(xs, zs)  # (K, 33, 33) road ids, N off the road
        coming = step + 1
        threat_time = np.full(ids.shape, 10 ** 6, dtype=np.int32)
        for f in fields:
            # a monster moving this step may stand up to ``speed`` cells nearer to any cell afterwards
            need = np.maximum(f.row[ids] - (f.speed if f.moves else 0) - 1, 0)
            slow = max(0, game.monster_speedup - coming - f.delay) if not game.boosted else 0
            speed = max(f.speed, 1)
            if slow:
                steps = np.where(need <= speed * slow, -(-need // speed),
                                 slow + -(-(need - speed * slow) // (speed + 1)))
            else:
                steps = -(-need // speed)
            np.minimum(threat_time, steps + f.delay, out=threat_time)
        # cells beyond the horizon are reached only by paths winding through the window's edge: not counted
        owned = (hero_steps <= self.horizon) & (hero_steps < threat_time)
        rooms = owned.sum(axis=(1, 2))
        # ways out: owned cells some distance away, each counted by how early the hero gets there (up to a cap), so
        # a region the monsters are closing in on from two sides counts for little
        slack = np.minimum(threat_time - hero_steps, self.slack_cap)
        exits = np.where(owned & (hero_steps >= self.exit_steps), slack, 0).sum(axis=(1, 2))
        margins = threat_time[:, r, r]
        # the latest a monster can reach a cell the hero gets to first: how long the hero lasts by running there
        lasting = np.where(owned, np.minimum(threat_time, 1000), 0).max(axis=(1, 2))
        # concave in each measure: a step of safety counts for much when little is left, for little when much is
        safety = (self.room_weight * np.log1p(rooms) + self.margin_weight * np.log1p(np.minimum(margins, 1000))
                  + self.exit_weight * np.log1p(exits) + self.lasting_weight * np.log1p(lasting))
        here = int(goal_field[game.hero[1], game.hero[0]]) if goal_field is not None else UNREACHABLE
        treasures = set(self.treasures.values())
        for k, o in enumerate(outcomes):
            hx, hz = o.cell
            for th in self._predict(game, o.cell, monsters):
                if any(max(abs(c[0] - hx), abs(c[1] - hz)) <= 1 for c in th.cells):
                    o.caught = True
            o.room, o.exits, o.margin, o.lasting = int(rooms[k]), int(exits[k]), int(margins[k]), int(lasting[k])
            value = float(safety[k])
            if here < UNREACHABLE and goal_field is not None:
                there = int(goal_field[hz, hx])
                if there < UNREACHABLE:
                    o.progress = here - there
            o.pickup = self.treasure_bonus * sum(1 for c in o.path if c in treasures)
            if takes_buff[k] and not game.has_buff:
                o.pickup += self.buff_bonus if self._buff_welcome(game, 1) else -self.buff_bonus
            if o.margin < self.critical_margin:  # a monster can be next to the hero after a step or two
                value -= self.critical_cost * (self.critical_margin - o.margin)
            if o.cell == game.hero and game.monsters and o.margin < 2 * self.horizon:
                value -= self.stay_cost
            if o.flash:
                value -= self.flash_cost_late if game.boosted else self.flash_cost
            o.value = value

    # ------------------------------------------------------------------------------------------------ goals
    def _goal_field(self, game, fields: list[_Field]) -> np.ndarray | None:
        """The distance field of the current goal: the best seen treasure or buff (nearness, less a penalty where a
        monster gets there about as soon), else an unseen part of the map; a goal the hero has not come nearer to
        for ``stall_steps`` steps is dropped for ``ban_steps``."""
        step = game.step_no
        best = self._item_goal(game, fields)
        if best is None:
            unseen_left = game.config.treasure_count - game.treasures_collected - len(self.treasures)
            if unseen_left > 0:
                target = self.explore_target
                if (target is None or self.seen[target[1], target[0]] or self.banned.get(target, -1) >= step
                        or step >= self._explore_until):
                    target = self._explore_target(game, fields)
                    self.explore_target = target
                    self._explore_until = step + self.explore_refresh
                best = target
        if best is None:
            self.goal = None
            return None
        field = self.tables.field(best)
        d = int(field[game.hero[1], game.hero[0]])
        if best != self.goal:
            self.goal, self._goal_best, self._goal_since = best, d, step
        elif d < self._goal_best:
            self._goal_best, self._goal_since = d, step
        elif step - self._goal_since > self.stall_steps:
            self.banned[best] = step + self.ban_steps
            self.goal = None
        return field

    def _item_goal(self, game, fields: list[_Field]) -> Cell | None:
        """The seen treasure or buff with the least cost: its distance plus the contest penalty (a buff's cost
        divided by its weight), or None."""
        t = self.tables
        m = game.game_map
        hx, hz = game.hero
        step = game.step_no
        weight = self.buff_weight_late if step + self.buff_stage >= game.monster_speedup else self.buff_weight_early
        items = [(cell, False) for cell in self.treasures.values()]
        if self.use_buff and not game.has_buff:
            items += [(cell, True) for oid, cell in self.buffs.items()
                      if self.buff_ready.get(oid, 0) <= step + int(t.field(cell)[hz, hx])]
        best, best_score = None, float("inf")
        for cell, is_buff in items:
            if self.banned.get(cell, -1) >= step:
                continue
            d = int(t.field(cell)[hz, hx])
            if d >= UNREACHABLE or (is_buff and not self._buff_welcome(game, d)):
                continue
            score = (d + self._contest(game, fields, m.road_id(*cell), d)) / (weight if is_buff else 1.0)
            if score < best_score:
                best, best_score = cell, score
        return best

    def _buff_welcome(self, game, steps: int) -> bool:
        """Whether taking a buff ``steps`` from now is worth it: from shortly before the speed-up on (the buff is the
        way to outrun fast monsters), or early enough that it is back by then."""
        when = game.step_no + steps
        return (when + self.buff_lead >= game.monster_speedup
                or when + game.config.buff_cooldown + self.buff_lead <= game.monster_speedup)

    def _contest(self, game, fields: list[_Field], goal_id: int, d: int) -> float:
        """Extra cost of a goal ``d`` steps away that a monster reaches about as soon as the hero: the hero would
        walk into it."""
        extra = 0.0
        for f in fields:
            reach = f.delay + int(f.row[goal_id]) / max(f.speed, 1)
            if reach < d + self.contest_margin:
                extra += self.contest_weight * (d + self.contest_margin - reach) + self.contest_base
        return extra

    def _explore_target(self, game, fields: list[_Field]) -> Cell | None:
        """The unseen road cell the hero reaches soonest, less a penalty where a monster gets there about as soon."""
        m = game.game_map
        ids = np.flatnonzero(~self.seen[m.road_xz[:, 1], m.road_xz[:, 0]])
        if not ids.size:
            return None
        hero = m.road_distances(*game.hero)[ids].astype(np.float64)
        score = hero.copy()
        for f in fields:
            reach = f.delay + f.row[ids] / max(f.speed, 1)
            short = hero + self.contest_margin - reach
            score += np.where(short > 0, self.contest_weight * short + self.contest_base, 0.0)
        score[hero >= UNREACHABLE] = np.inf
        for cell, until in self.banned.items():
            if until >= game.step_no and m.is_road(*cell):
                score[ids == m.road_id(*cell)] = np.inf
        k = int(np.argmin(score))
        if not np.isfinite(score[k]):
            return None
        x, z = m.road_xz[ids[k]]
        return int(x), int(z)
