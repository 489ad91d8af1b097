"""Game rules and the competition's episode configuration (``usr_conf``).

Every rule of the game (docs/game.md) is a named field of :class:`Rules` with the competition's default. Fields
tagged [A] are our assumptions where the sources are silent; change them to match what you measure on the platform.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np

__all__ = ["LEADERBOARD_CONF", "USR_CONF_KEYS", "EpisodeConfig", "Rules"]


@dataclass(frozen=True)
class Rules:
    """The rules of one game. Units: world units (500 per cell) and steps (3 frames, ~200 ms).

    :param move_speed: distance moved per step without the buff (spec ~700, measured 660-711).
    :param buff_speed: distance per step with the speed buff (spec ~1000).
    :param buff_duration: steps of boosted speed after picking up the buff.
    :param buff_respawn: steps after a pickup until the buff is available again (90 s ~ 450 steps).
    :param flash_distance: length of a flash (talent) in world units.
    :param flash_cooldown: steps after a flash until the talent is ready again (120 s ~ 600 steps).
    :param failed_flash_spends_cooldown: [A] whether a flash whose destination is an obstacle still starts the cooldown.
    :param unready_flash: [A] what a flash action (8..15) does while the talent cools down: ``"move"`` moves in the
        same direction (the action mask normally forbids it); ``"error"`` raises ``ValueError``.
    :param pickup_radius: treasures, the buff and the end trigger within this world distance of the hero.
    :param substep: [A] longest sub-step of a move; each sub-step moves along x then z and stops at a wall on each
        axis separately, so the hero slides along walls and never cuts a wall corner. Must be <= one cell (500).
    :param bump_threshold: a move step whose displacement is <= this counts as a wall bump (official feature code).
    :param frames_per_step: ``frame_no`` advance per step.
    :param score_end: score for reaching the end.
    :param score_per_treasure: score for each collected treasure (only counted when the end is reached).
    :param score_per_step_left: score for each step left of ``max_step`` at the end.
    :param l2_bucket_edges: [A] world-distance thresholds of ``l2_distance`` buckets 1..5 (the official table was
        never published): bucket = 1 + number of edges < distance.
    :param path_bucket_edges: [A] BFS-cell thresholds of ``path_distance`` buckets 1..5, same rule.
    :param grid_distance_scale: ``grid_distance`` = 4-neighbour BFS cells / this.
    :param memory_increment: each step adds this to the visit map at the hero's cell (capped at 1).
    :param view_radius: local map windows are ``2 * view_radius + 1`` cells wide (51 x 51).
    """

    move_speed: float = 700.0
    buff_speed: float = 1000.0
    buff_duration: int = 50
    buff_respawn: int = 450
    flash_distance: float = 8000.0
    flash_cooldown: int = 600
    failed_flash_spends_cooldown: bool = True
    unready_flash: str = "move"
    pickup_radius: float = 1000.0
    substep: float = 250.0
    bump_threshold: float = 500.0
    frames_per_step: int = 3
    score_end: float = 150.0
    score_per_treasure: float = 100.0
    score_per_step_left: float = 0.2
    l2_bucket_edges: tuple[float, ...] = (5000.0, 10000.0, 20000.0, 40000.0)
    path_bucket_edges: tuple[int, ...] = (10, 25, 50, 100)
    grid_distance_scale: float = 256.0
    memory_increment: float = 0.2
    view_radius: int = 25

    def __post_init__(self) -> None:
        positive = ("move_speed", "buff_speed", "flash_distance", "pickup_radius", "substep", "grid_distance_scale",
                    "memory_increment")
        for name in positive:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"Rules.{name} must be a positive number, got {v!r}")
        if self.substep > 500:
            raise ValueError(f"Rules.substep must be <= 500 (one cell) so a sub-step never skips a wall, got "
                             f"{self.substep!r}")
        for name in ("buff_duration", "buff_respawn", "flash_cooldown", "frames_per_step", "view_radius"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"Rules.{name} must be a non-negative integer, got {v!r}")
        if self.unready_flash not in ("move", "error"):
            raise ValueError(f"Rules.unready_flash must be 'move' or 'error', got {self.unready_flash!r}")
        for name in ("l2_bucket_edges", "path_bucket_edges"):
            edges = tuple(getattr(self, name))
            if len(edges) != 4 or any(b <= a for a, b in itertools.pairwise(edges)):
                raise ValueError(f"Rules.{name} must be 4 increasing thresholds (buckets 1..5), got {edges!r}")
            object.__setattr__(self, name, edges)

    @classmethod
    def from_dict(cls, data: Mapping) -> Rules:
        """Build from a plain dict; unknown keys raise ``ValueError`` listing the valid ones."""
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(f"unknown rules keys {unknown}; valid keys are {sorted(valid)}")
        return cls(**dict(data))

    def score(self, win: bool, treasures: int, steps: int, max_step: int) -> float:
        """The competition score: ``150 + 100 * treasures + 0.2 * (max_step - steps)`` on reaching the end, else 0."""
        if not win:
            return 0.0
        return self.score_end + self.score_per_treasure * treasures + self.score_per_step_left * (max_step - steps)


USR_CONF_KEYS = ("start", "end", "treasure_random", "treasure_num", "treasure_id", "talent_type", "max_step")
MAX_STEP_LIMIT = 2000
LEADERBOARD_CONF = {"start": 2, "end": 1, "treasure_random": 1, "treasure_num": 9, "talent_type": 1,
                    "max_step": 2000}


def _int(key: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"usr_conf[{key!r}] must be an integer in {lo}..{hi}, got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"usr_conf[{key!r}] = {value!r} is out of range; allowed {lo}..{hi}")
    return int(value)


@dataclass(frozen=True)
class EpisodeConfig:
    """A validated ``usr_conf``. Build with :meth:`from_usr_conf`; missing keys take the leaderboard's values.

    :param start: start position id (1..15).
    :param end: end position id (1..15, different from start).
    :param treasure_random: 1 = draw ``treasure_num`` ids uniformly from {1..15} - {start, end}; 0 = use treasure_id.
    :param treasure_num: how many random treasures (0..13).
    :param treasure_id: fixed treasure ids (1..15, excluding start and end).
    :param talent_type: must be 1 (flash).
    :param max_step: step limit, 1..2000.
    """

    start: int = 2
    end: int = 1
    treasure_random: int = 1
    treasure_num: int = 9
    treasure_id: tuple[int, ...] = ()
    talent_type: int = 1
    max_step: int = 2000

    @classmethod
    def from_usr_conf(cls, usr_conf: Mapping | None = None, base: EpisodeConfig | None = None) -> EpisodeConfig:
        """Validate a competition ``usr_conf`` dict (also accepted wrapped as ``{"diy": {...}}``).

        Keys missing from ``usr_conf`` are taken from ``base`` (default: the leaderboard configuration).
        Every invalid value raises ``ValueError`` naming the key, the value and the allowed range.
        """
        base = base or cls()
        if usr_conf is None:
            return base
        if not isinstance(usr_conf, Mapping):
            raise ValueError(f"usr_conf must be a dict with keys {list(USR_CONF_KEYS)}, got {type(usr_conf).__name__}")
        if set(usr_conf) == {"diy"} and isinstance(usr_conf["diy"], Mapping):
            usr_conf = usr_conf["diy"]
        unknown = sorted(set(usr_conf) - set(USR_CONF_KEYS))
        if unknown:
            raise ValueError(f"unknown usr_conf keys {unknown}; valid keys are {list(USR_CONF_KEYS)}")
        merged = {f.name: getattr(base, f.name) for f in fields(cls)}
        merged.update(usr_conf)
        start = _int("start", merged["start"], 1, 15)
        end = _int("end", merged["end"], 1, 15)
        if start == end:
            raise ValueError(f"usr_conf['end'] = {end} equals usr_conf['start']; start and end must differ (1..15)")
        treasure_random = _int("treasure_random", merged["treasure_random"], 0, 1)
        treasure_num = _int("treasure_num", merged["treasure_num"], 0, 13)
        raw_ids = merged["treasure_id"]
        if raw_ids is None:
            raw_ids = ()
        if isinstance(raw_ids, (str, bytes)) or not hasattr(raw_ids, "__iter__"):
            raise ValueError(f"usr_conf['treasure_id'] must be a list of ids in 1..15, got {raw_ids!r}")
        ids = tuple(_int("treasure_id", v, 1, 15) for v in raw_ids)
        if not treasure_random:
            if len(set(ids)) != len(ids):
                raise ValueError(f"usr_conf['treasure_id'] = {list(ids)} has duplicates; each id at most once")
            clash = sorted({start, end} & set(ids))
            if clash:
                raise ValueError(f"usr_conf['treasure_id'] = {list(ids)} contains {clash}, the start/end id; "
                                 f"allowed ids are 1..15 except start={start} and end={end}")
        talent_type = merged["talent_type"]
        if isinstance(talent_type, bool) or talent_type != 1:
            raise ValueError(f"usr_conf['talent_type'] = {talent_type!r}; it must be 1 (flash)")
        max_step = _int("max_step", merged["max_step"], 1, MAX_STEP_LIMIT)
        return cls(start=start, end=end, treasure_random=treasure_random, treasure_num=treasure_num,
                   treasure_id=tuple(sorted(ids)), talent_type=1, max_step=max_step)

    def to_usr_conf(self) -> dict:
        """The competition dict for this configuration."""
        return {"start": self.start, "end": self.end, "treasure_random": self.treasure_random,
                "treasure_num": self.treasure_num, "treasure_id": list(self.treasure_id),
                "talent_type": self.talent_type, "max_step": self.max_step}

    def training_usr_conf(self, count: int) -> dict:
        """The ``usr_conf`` of a fresh training game with ``count`` treasures drawn at random from the env seed."""
        return {**self.to_usr_conf(), "treasure_random": 1, "treasure_num": int(count), "treasure_id": []}

    def treasure_pool(self) -> list[int]:
        """Ids random treasures are drawn from: {1..15} minus {start, end}."""
        return [i for i in range(1, 16) if i not in (self.start, self.end)]

    def draw_treasures(self, rng: np.random.Generator) -> tuple[int, ...]:
        """The treasure ids of one episode: a uniform sample when random, else ``treasure_id``."""
        if not self.treasure_random:
            return self.treasure_id
        pool = self.treasure_pool()
        picked = rng.choice(len(pool), size=self.treasure_num, replace=False)
        return tuple(sorted(pool[i] for i in picked))
