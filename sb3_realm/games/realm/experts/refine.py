"""The refined expert: the oracle's tour played step-exactly (numpy + standard library only).

The oracle (:mod:`.expert`) values positions with a continuous cost-to-go and looks a few moves ahead,
so each leg ends wherever that model puts it, rounded up to a whole step. A search under the exact rules (the
game's rules, docs/game.md) gains a few steps a game over it, mostly from ending legs on the edge of a pickup disc,
entering each disc where the next leg starts best, and flashing from the exact position.

:func:`refine` is that search: a beam search over whole games with the simulator's own move, flash and pickup
functions, on the oracle's route (the same visiting order, buff and flash leg), guided by the oracle's cost-to-go in
steps. Every state of depth ``n`` has played ``n`` steps, so the first state that ends the game with every treasure
of the route ends it in the fewest steps the beam found. Treasures off the route's order, the buff at another place
and the end before the last treasure are pruned. The beam does not promise to keep the oracle's own game: a set may
end a step later than the oracle's.

:class:`RefinedOraclePolicy` is the expert that plays (and labels, for imitation) those sequences: at the first step
and whenever the game leaves the refined sequence (a learner's move in DAgger), it refines from the exact state, up to
``max_refines`` times a game, then plays the oracle's own actions. The competition observation gives whole-unit
positions; the policy keeps the exact position by replaying each step's possible actions from the last exact one.

Which of the many sequences of the same length the beam keeps matters to a learner that imitates it: each state of
the beam is charged ``departure_cost`` steps for every move that is not the oracle's own move in that state
(``guided``; else the greedy move of the cost-to-go), so the sequence departs from the oracle only where that saves a
step. A wider beam finds shorter games and searches longer; counting departures from the oracle's own move (the
default) keeps far fewer moves unlike the oracle's than counting them from the greedy move, at some cost in time.
The states of one beam search share the guide's look-ahead values (:meth:`RefinedOraclePolicy._guide`). The gain,
time and departures of each setting, and of the default over all 715 nine-treasure sets of the competition map
(``benchmarks/oracle_real_map.py --refined``): docs/benchmarks.md.

A search is a function of its :class:`SearchKey` (map, rules, exact state, the oracle's plan there, the settings).
Imitation labels the same treasure sets again and again (the sweep's slow sets in every DAgger round, after the
expert's own games of them), and each such game starts with the same search from the start: the policy keeps the
searches it made at the first step of a game (``first_searches``), and a game that starts from the same key replays
the stored sequence (the first search is a large share of a DAgger labelling job's time).
"""

from __future__ import annotations

import hashlib
import math
from array import array
from dataclasses import dataclass
from typing import NamedTuple

from ..core import flash_landing, simulate_move
from ..maps import BUFF_ID
from ..observation import EnvInfo, Observation
from .expert import OraclePolicy, _State
from .paths import INF
from .tour import buff_steps

__all__ = ["REFINE_SETTINGS", "Refined", "RefinedOraclePolicy", "SearchKey", "check_setting", "refine"]

#: what :meth:`RefinedOraclePolicy.configure` may change, each with its type and the range it must be in
REFINE_SETTINGS = {
    "beam_width": (int, "an integer >= 1", lambda v: v >= 1),
    "max_refines": (int, "an integer >= 1", lambda v: v >= 1),
    "departure_cost": (float, "a number >= 0", lambda v: v >= 0),
    "guided": (bool, "true or false", lambda v: True),
}


def check_setting(name: str, value, label: str | None = None):
    """``value`` as the type of :data:`REFINE_SETTINGS`' ``name``; ``ValueError`` for a name it does not hold or a
    value of the wrong type or range (the message calls the setting ``label``, by default ``refined oracle NAME``)."""
    if name not in REFINE_SETTINGS:
        raise ValueError(f"{name!r} is not a setting of the refined oracle; use one of {list(REFINE_SETTINGS)}")
    kind, valid, test = REFINE_SETTINGS[name]
    if kind is bool:
        ok = isinstance(value, bool)
    else:
        ok = not isinstance(value, bool) and isinstance(value, (int, float) if kind is float else int)
    if not ok or not test(value):
        raise ValueError(f"{label or f'refined oracle {name}'} = {value!r} is out of range: it must be {valid}")
    return kind(value)


@dataclass(frozen=True)
class Refined:
    """A refined sequence from step ``start``: ``actions[i]`` is played at step ``start + i + 1`` and puts the hero at
    ``positions[i]`` (exact world units); the game ends after the last one with every treasure of the route."""

    start: int
    actions: tuple[int, ...]
    positions: tuple[tuple[float, float], ...]

    @property
    def steps(self) -> int:
        """Steps of the whole game (``start`` + the sequence)."""
        return self.start + len(self.actions)

    def packed(self) -> tuple[int, bytes, array]:
        """The sequence in compact form (a byte an action, the positions as one float64 array): about 6 KB for a
        whole game instead of 40 KB of tuples; :meth:`unpacked` gives back the same floats."""
        return self.start, bytes(self.actions), array("d", [v for p in self.positions for v in p])

    @classmethod
    def unpacked(cls, packed: tuple[int, bytes, array]) -> Refined:
        start, actions, flat = packed
        return cls(start=start, actions=tuple(actions), positions=tuple(zip(flat[0::2], flat[1::2], strict=True)))


class SearchKey(NamedTuple):
    """Everything a beam search of :class:`RefinedOraclePolicy` depends on (its result is a function of it): the
    game's map and rules (a fingerprint), the exact state, the oracle's plan there (route, flash leg, leg, flash to
    come) and the settings of the beam and of the oracle's look-ahead that guides it."""

    world: str
    step: int
    x: float
    z: float
    available: frozenset
    talent: bool
    buff_available: bool
    buff_remaining: int
    end: int
    max_step: int
    route: tuple
    flash_leg: int | None
    leg: int
    pre: bool
    settings: tuple


# C901 exempt: one beam-search loop whose branches (moves, flash, buff, pickups, pruning) share its state
def refine(oracle: OraclePolicy, step: int, x: float, z: float, *, talent: bool, buff_available: bool,  # noqa: C901
           buff_remaining: int, max_step: int, beam_width: int = 30, departure_cost: float = 0.0,
           guide=None) -> Refined | None:
    """Beam search from the exact state ``(step, x, z, ...)`` along ``oracle``'s current plan (its route, leg and
    flash leg, as :meth:`OraclePolicy.act` left them). ``None`` when the beam finds no game that collects every
    treasure of the route within ``max_step``.

    :param beam_width: states kept per step (the lowest steps-to-go plus departure charges).
    :param departure_cost: steps charged to a state for each move on its way that is not ``guide``'s move (or, without
        a guide, the move of least steps-to-go, the lowest action of a tie).
    :param guide: ``guide(step, x, z, leg, flash_to_come, last_boosted_step, buff_available) -> action``: the move a
        policy would play in a state of the beam (:meth:`RefinedOraclePolicy._guide`: the oracle's)."""
    if oracle.plan is None or oracle._config is None:
        raise RuntimeError("refine() needs an oracle with a plan: call oracle.act() in this state first")
    r = oracle.rules
    route, f, leg0 = oracle._route, oracle._flash_leg, oracle._leg
    last = len(route) - 1
    end = oracle._config.end
    walk, w, h = oracle._walk, oracle._w, oracle._h
    bidx = route.index(BUFF_ID) if BUFF_ID in route[leg0:] else None
    flash, value, within, landings = flash_landing, oracle._value, oracle._within, oracle._landings
    moves: dict[float, dict] = {}  # the 8 moves' landings by speed (see OraclePolicy._landings)
    speed0, speed1, fd = r.move_speed, r.buff_speed, r.flash_distance

    def steps_to_go(px: float, pz: float, k: int, pre: bool, boost: int, s: int) -> float:
        v = value(px, pz, k, pre)
        if not v < INF:
            return INF
        if bidx is not None and k <= bidx:
            return v / speed0  # the route's values are in move-speed units up to the buff (see OraclePolicy._chain)
        return buff_steps(v, r, max(0, boost - s))

    # a state: (x, z, leg, flash still to come, last boosted step, buff available, parent index, action, departures)
    pre0 = oracle._pre and talent and f is not None
    states = [(x, z, leg0, pre0, step + buff_remaining, buff_available, -1, -1, 0)]
    history: list[list[tuple]] = [states]
    for s in range(step + 1, max_step + 1):
        found: dict[tuple, tuple[float, tuple]] = {}
        for parent, (px, pz, k, pre, boost, bav, _, _, dep) in enumerate(states):
            speed = speed1 if s <= boost else speed0
            options = list(enumerate(landings(px, pz, speed, moves.setdefault(speed, {}))))
            if pre and k == f:
                for d in range(8):
                    q = flash(px, pz, d, fd, walk, w, h)
                    if q is not None:
                        options.append((8 + d, q))
            children = []
            for a, (nx, nz) in options:
                if within(end, nx, nz):
                    if all(route[j] == BUFF_ID or within(route[j], nx, nz) for j in range(k, last)):
                        return _trace(history, parent, (nx, nz, k, pre, boost, bav, parent, a, dep), step)
                    continue  # the end with a treasure left
                nk, nboost, nbav = k, boost, bav
                if nbav and within(BUFF_ID, nx, nz):
                    if nk != bidx:
                        continue  # the buff somewhere the route does not take it
                    nboost, nbav, nk = s + r.buff_duration, False, nk + 1
                while nk < last and route[nk] != BUFF_ID and within(route[nk], nx, nz):
                    nk += 1
                if any(route[j] != BUFF_ID and within(route[j], nx, nz) for j in range(nk + 1, last)):
                    continue  # a treasure out of the route's order
                npre = pre and a < 8
                if npre and f is not None and nk > f:  # (npre implies a flash leg f)
                    continue  # the flash leg passed without the flash
                cost = steps_to_go(nx, nz, nk, npre, nboost, s)
                if cost < INF:
                    children.append((cost, a, (nx, nz, nk, npre, nboost, nbav, parent, a)))
            if not children:
                continue
            if guide is not None:
                greedy = guide(s - 1, px, pz, k, pre, boost, bav)
            else:
                greedy = min(children)[1]  # the move the greedy cost-to-go picks (the lowest action of a tie)
            for cost, a, child in children:
                d = dep + (a != greedy)
                key = (round(child[0], 1), round(child[1], 1), child[2], child[3], child[4])
                score = cost + departure_cost * d
                old = found.get(key)
                if old is None or score < old[0]:
                    found[key] = (score, (*child, d))
        if not found:
            return None
        states = [c[1] for c in sorted(found.values(), key=lambda c: c[0])[:beam_width]]
        history.append(states)
    return None


def _trace(history: list[list[tuple]], parent: int, final: tuple, start: int) -> Refined:
    chain = [final]
    for depth in range(len(history) - 1, 0, -1):
        node = history[depth][parent]
        chain.append(node)
        parent = node[6]
    chain.reverse()
    return Refined(start=start, actions=tuple(int(c[7]) for c in chain),
                   positions=tuple((float(c[0]), float(c[1])) for c in chain))


class RefinedOraclePolicy(OraclePolicy):
    """The oracle's tour played by :func:`refine` (see the module docstring). Same interface as
    :class:`OraclePolicy`; ``refined_steps`` is the length of the first refined game of the episode, ``oracle_label``
    the plain oracle's action in the last state asked."""

    #: states kept per step by the beam search
    beam_width: int = 10
    #: refinements per game (the first one and after leaving the sequence); then the oracle's own actions
    max_refines: int = 4
    #: steps a state of the beam is charged for each move that is not the greedy one (see :func:`refine`)
    departure_cost: float = 0.2
    #: departures counted from the oracle's own move in each state of the beam (else from the greedy one)
    guided: bool = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        m = self.map
        world = [m.walkable.tobytes(), repr(m.positions_world.tolist()).encode(), repr(self.rules).encode()]
        self._world = hashlib.sha256(b"|".join(world)).hexdigest()
        #: the searches made at the first step of a game (:class:`SearchKey` -> :meth:`Refined.packed`, or None when
        #: the beam found no game): a game that starts from the same state again (the same treasure set labelled in a
        #: later DAgger round, or after the expert's own game of it) replays that search instead of searching again,
        #: with the same moves; :class:`~sb3_realm.imitation.collect.Collector` shares them among its workers
        self.first_searches: dict[SearchKey, tuple | None] = {}
        #: the searches of ``first_searches`` this policy made itself (what a worker hands back)
        self.new_searches: dict[SearchKey, tuple | None] = {}

    def search_key(self, st, x: float, z: float) -> SearchKey:
        """The :class:`SearchKey` of a search from the state ``st`` (exact position ``x, z``) under the current plan."""
        c = self._config
        assert c is not None  # set by reset(); a search starts in act(), after OraclePolicy.act()
        settings = (self.beam_width, self.departure_cost, self.guided, self.tie_break, self.tie_tolerance,
                    self.lookahead, self.cruise_lookahead, self.corner_penalty, self.use_flash, self.use_buff)
        return SearchKey(self._world, st.step, x, z, frozenset(st.available), st.talent, st.buff_available,
                         st.buff_remaining, c.end, c.max_step, tuple(self._route), self._flash_leg, self._leg,
                         self._pre, settings)

    def configure(self, **settings) -> None:
        """Set any of :data:`REFINE_SETTINGS` on this expert (its class attributes are the defaults); see
        :func:`check_setting` for what is refused."""
        for name, value in settings.items():
            setattr(self, name, check_setting(name, value))

    def _clear(self) -> None:
        super()._clear()
        self._refined: Refined | None = None
        self._refines = 0
        self._exact: tuple[int, float, float] | None = None  # (step, x, z) of the last state seen
        self.refined_steps: int | None = None
        self.oracle_label: int | None = None
        self._memos: dict | None = None  # see _guide

    def act(self, obs: Observation, env_info: EnvInfo) -> int:
        label = super().act(obs, env_info)  # keeps the oracle's plan current, and is the fallback
        self.oracle_label = label
        st = self._read(obs, env_info)
        x, z = self._track(st)
        seq = self._refined
        i = st.step - seq.start if seq is not None else -1
        if seq is not None and 0 <= i < len(seq.actions) and (i == 0 or self._on(seq, i - 1, st.x, st.z)):
            return self._play(seq.actions[i])
        if self._refines >= self.max_refines:
            return label
        self._refines += 1
        assert self._config is not None  # OraclePolicy.act() above refuses to run before reset()
        key = self.search_key(st, x, z) if st.step == 0 else None
        if key is not None and key in self.first_searches:
            known = self.first_searches[key]
            seq = None if known is None else Refined.unpacked(known)
        else:
            self._memos = {}  # the guide's look-ahead values, shared by the states of this beam search
            try:
                seq = refine(self, st.step, x, z, talent=st.talent, buff_available=st.buff_available,
                             buff_remaining=st.buff_remaining, max_step=self._config.max_step,
                             beam_width=self.beam_width, departure_cost=self.departure_cost,
                             guide=self._guide if self.guided else None)
            finally:
                self._memos = None
            if key is not None:
                self.first_searches[key] = self.new_searches[key] = None if seq is None else seq.packed()
        self._refined = seq
        if seq is None:
            return label
        if self.refined_steps is None:
            self.refined_steps = seq.steps
        return self._play(seq.actions[0])

    def _guide(self, s: int, x: float, z: float, k: int, pre: bool, boost: int, bav: bool) -> int:
        """The oracle's move in a state of the beam (its plan's leg ``k``, flash to come ``pre``). During a beam
        search of :meth:`act` the look-ahead's values are shared by its states (``_memos``; the plan and each leg's
        treasures are the same for all of them): the same moves as searching afresh, in about a third of the time."""
        saved = (self._leg, self._pre, self._remaining, self._visits, self._expect, self._expect_val,
                 self._last_flash)
        route = self._route
        self._leg, self._pre, self._visits = k, pre, {}
        self._remaining = {route[j] for j in range(k, len(route) - 1) if route[j] != BUFF_ID}
        st = _State(step=s, x=x, z=z, available=set(self._remaining), buff_available=bav,
                    buff_remaining=max(0, boost - s), talent=pre)
        try:
            return self._choose(st, x, z, self._memos)
        finally:
            (self._leg, self._pre, self._remaining, self._visits, self._expect, self._expect_val,
             self._last_flash) = saved

    def _play(self, action: int) -> int:
        self.played_other()  # the oracle's loop guard counts its own moves only
        self._last_query = None
        self._expect = None
        return action

    @staticmethod
    def _on(seq: Refined, i: int, x: float, z: float) -> bool:
        px, pz = seq.positions[i]
        return math.floor(px) == x and math.floor(pz) == z

    def _track(self, st) -> tuple[float, float]:
        """The exact position: the landing, among every action from the last exact position, whose whole units are
        the observed ones (the observed position itself at the start or when none fits)."""
        last, self._exact = self._exact, None
        x, z = st.x, st.z
        if last is not None and last[0] == st.step - 1:
            r, (_, lx, lz) = self.rules, last
            fits = []
            for speed in (r.move_speed, r.buff_speed):
                for d in range(8):
                    q = simulate_move(lx, lz, d, speed, self._walk, self._w, self._h, r.substep)
                    if math.floor(q[0]) == st.x and math.floor(q[1]) == st.z:
                        fits.append(q)
            for d in range(8):
                landing = flash_landing(lx, lz, d, r.flash_distance, self._walk, self._w, self._h)
                if landing is not None and math.floor(landing[0]) == st.x and math.floor(landing[1]) == st.z:
                    fits.append(landing)
            if fits:
                x, z = fits[0]
        self._exact = (st.step, x, z)
        return x, z
