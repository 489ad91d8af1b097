"""The shipped default map: it is what ``tools/mapgen.py`` generates, and it satisfies every design constraint.

The constraint checks here are written independently of the generator's own helpers (plain lists and
``collections.deque``), so a bug in the generator's checker cannot hide a bad map.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections import deque
from pathlib import Path

import pytest
from helpers import load_tool

mapgen = load_tool("mapgen")

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MAP = REPO / "sb3_realm" / "games" / "realm" / "data" / "default_map.json"
N = 128
KEYS = ["description", "CellWidth", "Width", "Height", "Flags", "positions_world_xz"]
# Mean pairwise BFS distance among treasure slots 3..15 on the competition's map_1 (see test_real_map_calibration).
REAL_TREASURE_MEAN_BFS = 108.3


def _bfs(flags: list[int], start: tuple[int, int]) -> list[int]:
    """4-neighbour BFS over row-major ``flags[gz * 128 + gx]`` from ``start = (gx, gz)``; -1 = unreachable."""
    dist = [-1] * (N * N)
    s = start[1] * N + start[0]
    dist[s] = 0
    queue = deque([s])
    while queue:
        i = queue.popleft()
        gz, gx = divmod(i, N)
        for nx, nz in ((gx + 1, gz), (gx - 1, gz), (gx, gz + 1), (gx, gz - 1)):
            j = nz * N + nx
            if 0 <= nx < N and 0 <= nz < N and flags[j] == 1 and dist[j] < 0:
                dist[j] = dist[i] + 1
                queue.append(j)
    return dist


def _cell(xz: list[int]) -> tuple[int, int]:
    return (xz[0] + 2250) // 500, (xz[1] + 5250) // 500


# C901 exempt: the rules checklist, one independent check per rule of realm-rules.md
def _violations(data: dict) -> list[str]:  # noqa: C901
    """Every constraint of the default map, checked from scratch; returns what is wrong."""
    bad: list[str] = []
    if list(data) != KEYS:
        bad.append(f"keys {list(data)}")
    if not isinstance(data["description"], str) or "sb3_realm" not in data["description"]:
        bad.append("description")
    if (data["CellWidth"], data["Width"], data["Height"]) != (500, N, N):
        bad.append("size")
    flags = data["Flags"]
    if len(flags) != N * N or any(type(v) is not int or v not in (0, 1) for v in flags):
        return [*bad, "Flags must be 16384 ints 0/1"]

    def walkable(gx: int, gz: int) -> bool:
        return 0 <= gx < N and 0 <= gz < N and flags[gz * N + gx] == 1

    for bz in range(0, N, 2):
        for bx in range(0, N, 2):
            if len({flags[(bz + dz) * N + bx + dx] for dz in (0, 1) for dx in (0, 1)}) != 1:
                bad.append(f"2x2 block at ({bx}, {bz}) is mixed")
    if any(walkable(gx, gz) for gz in range(N) for gx in range(N) if min(gx, gz, N - 1 - gx, N - 1 - gz) < 2):
        bad.append("2-cell border not all wall")
    n_walk = sum(flags)
    if not 3500 <= n_walk <= 5000:
        bad.append(f"walkable count {n_walk}")
    for gz in range(N):
        for gx in range(N):
            if walkable(gx, gz) and not any(
                all(walkable(gx + ox + i, gz + oz + j) for i in (0, 1) for j in (0, 1))
                for ox in (-1, 0)
                for oz in (-1, 0)
            ):
                bad.append(f"1-cell passage at ({gx}, {gz})")
    first = flags.index(1)
    reached = _bfs(flags, (first % N, first // N))
    if sum(d >= 0 for d in reached) != n_walk:
        bad.append("walkable cells not one 4-connected component")

    pos = data["positions_world_xz"]
    if sorted(pos, key=int) != [str(i) for i in range(16)]:
        return [*bad, f"position ids {sorted(pos)}"]
    cells = []
    for i in range(16):
        xz = pos[str(i)]
        if len(xz) != 2 or any(type(v) is not int for v in xz):
            return [*bad, f"position {i} = {xz!r} is not [int, int]"]
        gx, gz = _cell(xz)
        if [gx * 500 - 2000, gz * 500 - 5000] != xz:
            bad.append(f"position {i} is not a cell centre")
        cells.append((gx, gz))
    if len(set(cells)) != 16:
        bad.append("positions not distinct")
    for i, (gx, gz) in enumerate(cells):
        if not walkable(gx, gz):
            bad.append(f"position {i} not walkable")
        if not all(walkable(gx + dx, gz + dz) for dx in range(-3, 4) for dz in range(-3, 4)):
            bad.append(f"position {i} within 3 cells of a wall")
        for j in range(i):
            if math.dist(cells[i], cells[j]) < 12:
                bad.append(f"positions {i} and {j} closer than 12 cells")
    if bad:
        return bad
    d_end = _bfs(flags, cells[1])
    start_end = d_end[cells[2][1] * N + cells[2][0]]
    if not 150 <= start_end <= 230:
        bad.append(f"start -> end BFS {start_end}")
    pair = []
    for i in range(3, 16):
        dist = _bfs(flags, cells[i])
        pair += [dist[cells[j][1] * N + cells[j][0]] for j in range(i + 1, 16)]
    mean = sum(pair) / len(pair)
    if not 0.7 * REAL_TREASURE_MEAN_BFS <= mean <= 1.3 * REAL_TREASURE_MEAN_BFS:
        bad.append(f"mean treasure BFS {mean:.1f}")
    return bad


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))


def test_committed_map_is_the_generators_output(committed: dict) -> None:
    assert committed == mapgen.generate_default_map()
    assert committed == mapgen.generate_default_map(mapgen.DEFAULT_SEED)


def test_committed_map_satisfies_every_constraint(committed: dict) -> None:
    assert _violations(committed) == []


def test_constraint_checks_catch_broken_maps(committed: dict) -> None:
    flags = committed["Flags"]
    w = flags.index(1)  # the first walkable cell is the top-left cell of a walkable 2x2 block
    half_block = copy.deepcopy(committed)
    half_block["Flags"][w] = 0
    assert any("mixed" in v for v in _violations(half_block))

    cramped = copy.deepcopy(committed)
    gx, gz = _cell(cramped["positions_world_xz"]["5"])
    bx, bz = (gx + 2) // 2 * 2, gz // 2 * 2  # wall off the aligned block 2..3 cells to its right
    for dz in (0, 1):
        for dx in (0, 1):
            cramped["Flags"][(bz + dz) * N + bx + dx] = 0
    assert "position 5 within 3 cells of a wall" in _violations(cramped)

    swapped = copy.deepcopy(committed)
    swapped["positions_world_xz"]["1"] = committed["positions_world_xz"]["2"]
    assert "positions not distinct" in _violations(swapped)


def test_another_seed_gives_another_valid_map(committed: dict) -> None:
    other = mapgen.generate_default_map(7)
    assert other["Flags"] != committed["Flags"]
    assert other["positions_world_xz"] != committed["positions_world_xz"]
    assert _violations(other) == []
    assert other == mapgen.generate_default_map(7)  # deterministic


def test_cli_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mapgen.main(["--check", str(DEFAULT_MAP)]) == 0
    out = tmp_path / "sub" / "map.json"
    assert mapgen.main(["--out", str(out), "--seed", "7"]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == mapgen.generate_default_map(7)
    assert [p.name for p in out.parent.iterdir()] == ["map.json"]  # no temp file left behind
    assert mapgen.main(["--check", str(out), "--seed", "7"]) == 0
    assert mapgen.main(["--check", str(out)]) == 1  # seed 7's map is not the default one
    assert "differs" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    assert mapgen.main(["--check", str(tmp_path / "broken.json")]) == 1


def _real_map_path() -> Path | None:
    for candidate in (os.environ.get("SB3_REALM_REAL_MAP"), REPO.parent / "shared" / "data" / "realm_map_1.json"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@pytest.mark.realmap
def test_real_map_calibration(committed: dict) -> None:
    """The hard-coded calibration figure is the real map's, and the default map is not a copy of it."""
    path = _real_map_path()
    if path is None:
        pytest.skip("competition map not available (../shared/data/realm_map_1.json or SB3_REALM_REAL_MAP)")
    real = json.loads(path.read_text(encoding="utf-8"))
    flags = [int(v) for v in real["Flags"]]
    cells = [_cell(real["positions_world_xz"][str(i)]) for i in range(16)]
    pair = []
    for i in range(3, 16):
        dist = _bfs(flags, cells[i])
        pair += [dist[cells[j][1] * N + cells[j][0]] for j in range(i + 1, 16)]
    assert sum(pair) / len(pair) == pytest.approx(REAL_TREASURE_MEAN_BFS, abs=0.05)
    same = sum(a == b for a, b in zip(flags, committed["Flags"], strict=True))
    assert same < 0.9 * N * N  # far from identical (both are ~75 % wall, so chance agreement is ~60 %)
    assert committed["positions_world_xz"] != real["positions_world_xz"]
