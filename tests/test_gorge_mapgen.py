"""The shipped Gorge Chase maps: they are what ``tools/gorge_mapgen.py`` generates, and their statistics lie inside the
ranges measured on the 10 open maps (``docs/gorge-rules.md`` section 1.2).

The ranges are written out here from the spec's table, not taken from the generator's constants, and the cheap
statistics are re-measured with plain Python, so a bug in the generator's checker cannot hide a bad map. The open maps
are Tencent's data: they are read from ``SB3_REALM_GORGE_MAPS`` or ``<repo>/../shared/data/gorge`` to check that
:func:`map_statistics` reproduces the spec's figures, and the test is skipped when they are missing (it fails
instead with ``SB3_REALM_REQUIRE_REAL_MAP=1``).
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from helpers import gorge_maps_dir, load_tool

gorge_mapgen = load_tool("gorge_mapgen")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "sb3_realm" / "games" / "gorge" / "data"
SEEDS = (1, 2, 3, 4, 5)
N = 128

# docs/gorge-rules.md section 1.2, map k -> (road cells, dead ends, min ring-10, median ring-10, 8-neighbour share,
# exact 4-connected diameter, road x range, road z range)
OPEN_MAPS = {
    1: (4024, 0, 4, 23, 0.52, 348, (13, 114), (15, 114)),
    2: (3906, 2, 4, 23, 0.44, 264, (12, 115), (15, 115)),
    3: (4304, 1, 8, 24, 0.55, 217, (9, 113), (14, 113)),
    4: (4296, 0, 8, 24, 0.50, 273, (10, 117), (13, 118)),
    5: (4298, 2, 8, 20, 0.55, 489, (11, 116), (13, 116)),
    6: (4510, 1, 8, 24, 0.54, 295, (12, 115), (13, 116)),
    7: (4947, 1, 12, 29, 0.61, 296, (13, 114), (15, 114)),
    8: (4021, 2, 8, 24, 0.53, 259, (14, 113), (17, 114)),
    9: (4239, 1, 10, 26, 0.55, 198, (14, 113), (14, 113)),
    10: (4253, 2, 10, 25, 0.60, 214, (15, 113), (14, 113)),
}
ROAD = (min(v[0] for v in OPEN_MAPS.values()), max(v[0] for v in OPEN_MAPS.values()))  # 3906 .. 4947
DEAD_ENDS = (0, 2)
FULL8 = (0.44, 0.61)
MIN_RING = 4
DIAMETER = (198, 489)
COORD = (min(min(v[6][0], v[7][0]) for v in OPEN_MAPS.values()), max(max(v[6][1], v[7][1]) for v in OPEN_MAPS.values()))


@functools.cache
def generated(seed: int) -> dict:
    return gorge_mapgen.generate_map(seed)


@functools.cache
def shipped(seed: int) -> dict:
    return _read(DATA / f"gorge_own_{seed}.json.gz")


def _read(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))


def _grid(data: dict) -> np.ndarray:
    road = np.zeros((N, N), dtype=bool)
    for cell in data["cells"]:
        road[cell["z"], cell["x"]] = cell["type_id"] == 3
    return road


def _plain_checks(data: dict) -> list[str]:
    """Format and the cheap statistics, measured with plain Python lists."""
    bad = []
    if list(data) != ["name", "width", "height", "cells", "objects", "metadata"]:
        bad.append(f"keys {list(data)}")
    cells = data["cells"]
    if len(cells) != N * N or any(c != {"x": i % N, "z": i // N, "type_id": c["type_id"], "height": 0.0}
                                  for i, c in enumerate(cells)):
        return [*bad, "cells are not 16384 row-major {x, z, type_id, height: 0.0}"]
    if {c["type_id"] for c in cells} != {1, 3}:
        bad.append("type_id not in {1, 3}")
    road = [[cells[z * N + x]["type_id"] == 3 for x in range(N)] for z in range(N)]

    def at(x: int, z: int) -> bool:
        return 0 <= x < N and 0 <= z < N and road[z][x]

    cellset = [(x, z) for z in range(N) for x in range(N) if road[z][x]]
    if not ROAD[0] <= len(cellset) <= ROAD[1] or not 0.24 <= len(cellset) / (N * N) <= 0.30:
        bad.append(f"road cells {len(cellset)}")
    if any(not (COORD[0] <= x <= COORD[1] and COORD[0] <= z <= COORD[1]) for x, z in cellset):
        bad.append(f"road outside {COORD}")
    dead = sum(sum(at(x + dx, z + dz) for dx, dz in ((1, 0), (-1, 0), (0, 1), (0, -1))) == 1 for x, z in cellset)
    if not DEAD_ENDS[0] <= dead <= DEAD_ENDS[1]:
        bad.append(f"dead ends {dead}")
    full = sum(all(at(x + dx, z + dz) for dx in (-1, 0, 1) for dz in (-1, 0, 1)) for x, z in cellset) / len(cellset)
    if not FULL8[0] <= full <= FULL8[1]:
        bad.append(f"8-neighbour share {full:.3f}")
    pinch = sum(at(x + 1, z + s) and not at(x + 1, z) and not at(x, z + s) for x, z in cellset for s in (1, -1))
    if pinch:
        bad.append(f"{pinch} pinch diagonals")
    seen = {cellset[0]}
    queue = deque([cellset[0]])
    while queue:
        x, z = queue.popleft()
        for nxt in ((x + 1, z), (x - 1, z), (x, z + 1), (x, z - 1)):
            if at(*nxt) and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    if len(seen) != len(cellset):
        bad.append("not one 4-connected component")
    return bad


@pytest.mark.parametrize("seed", SEEDS)
def test_shipped_map_is_the_generators_output(seed: int) -> None:
    assert shipped(seed) == generated(seed)
    meta = shipped(seed)["metadata"]
    assert meta["author"] == "sb3_realm mapgen"
    assert "not derived from the competition's maps" in meta["description"]
    assert shipped(seed)["name"] == f"gorge_own_{seed}"


@pytest.mark.parametrize("seed", SEEDS)
def test_shipped_map_statistics_lie_in_the_open_maps_ranges(seed: int) -> None:
    data = shipped(seed)
    assert _plain_checks(data) == []
    stats = gorge_mapgen.map_statistics(_grid(data))
    assert gorge_mapgen.statistics_problems(stats) == []
    assert stats["components"] == 1 and stats["pinches"] == 0 and stats["border_road"] == 0
    assert stats["min_ring"] >= MIN_RING
    assert DIAMETER[0] <= stats["diameter"] <= DIAMETER[1]


def test_shipped_maps_differ() -> None:
    grids = [_grid(shipped(seed)) for seed in SEEDS]
    for i in range(len(grids)):
        for j in range(i):
            assert (grids[i] != grids[j]).sum() > 1000


def test_checks_catch_broken_maps() -> None:
    data = shipped(1)
    road = _grid(data)
    # road cells on a straight west wall of an obstacle area: a 1-cell spur east of one is a dead end
    wall = road & np.roll(road, 1, axis=0) & np.roll(road, -1, axis=0)
    for dz in (-1, 0, 1):
        for dx in (1, 2):
            wall &= ~np.roll(np.roll(road, -dz, axis=0), -dx, axis=1)
    spots = np.argwhere(wall)
    spots = spots[np.linspace(0, len(spots) - 1, 3).astype(int)]
    spurs = copy.deepcopy(data)
    for z, x in spots:
        spurs["cells"][z * N + x + 1]["type_id"] = 3
    assert any(v.startswith("dead ends") for v in _plain_checks(spurs))
    stats = gorge_mapgen.map_statistics(_grid(spurs))
    assert stats["dead_ends"] == 3 and any("dead ends" in v for v in gorge_mapgen.statistics_problems(stats))

    pinch = copy.deepcopy(data)
    z, x = spots[0]
    pinch["cells"][(z - 1) * N + x + 1]["type_id"] = 3  # the spot and this cell touch diagonally...
    pinch["cells"][(z - 2) * N + x + 1]["type_id"] = 3
    pinch["cells"][(z - 1) * N + x]["type_id"] = 1  # ... once their shared orthogonal cells are both obstacles
    assert any("pinch" in v for v in _plain_checks(pinch))
    assert gorge_mapgen.map_statistics(_grid(pinch))["pinches"] >= 1

    islands = copy.deepcopy(data)
    islands["cells"][2 * N + 2]["type_id"] = 3
    assert "not one 4-connected component" in _plain_checks(islands)
    stats = gorge_mapgen.map_statistics(_grid(islands))
    assert stats["components"] == 2 and stats["border_road"] == 1 and stats["diameter"] is None
    assert gorge_mapgen.statistics_problems(stats) != []


def test_diameter_is_exact_on_small_grids() -> None:
    """:func:`diameter_4` agrees with BFS from every cell on random connected grids."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = rng.random((14, 14)) < 0.62
        label = gorge_mapgen._components4(w)
        if not len(label):
            continue
        keep = np.zeros(w.size, dtype=bool)
        keep[np.flatnonzero(w.ravel())[label == np.argmax(np.bincount(label))]] = True
        w = keep.reshape(w.shape)
        cells = [tuple(c) for c in np.argwhere(w)]
        best = 0
        for start in cells:
            dist = {start: 0}
            queue = deque([start])
            while queue:
                z, x = queue.popleft()
                for nxt in ((z + 1, x), (z - 1, x), (z, x + 1), (z, x - 1)):
                    if nxt in dist or not (0 <= nxt[0] < 14 and 0 <= nxt[1] < 14) or not w[nxt]:
                        continue
                    dist[nxt] = dist[(z, x)] + 1
                    queue.append(nxt)
            best = max(best, max(dist.values()))
        assert gorge_mapgen.diameter_4(w)[0] == best


def test_generator_is_deterministic_and_other_seeds_are_valid() -> None:
    other = generated(11)
    assert other == gorge_mapgen.generate_map(11)
    assert other["cells"] != shipped(1)["cells"]
    assert _plain_checks(other) == []
    assert gorge_mapgen.statistics_problems(gorge_mapgen.map_statistics(_grid(other))) == []
    with pytest.raises(ValueError):
        gorge_mapgen.generate_grid(-1)


def test_cli_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gorge_mapgen.main(["--check", str(DATA)]) == 0
    out = tmp_path / "maps"
    assert gorge_mapgen.main(["--out", str(out), "--seeds", "2", "11"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["gorge_own_11.json.gz", "gorge_own_2.json.gz"]  # no temp files
    assert (out / "gorge_own_2.json.gz").read_bytes() == (DATA / "gorge_own_2.json.gz").read_bytes()
    assert _read(out / "gorge_own_11.json.gz") == generated(11)
    assert gorge_mapgen.main(["--check", str(out), "--seeds", "2", "11"]) == 0
    capsys.readouterr()
    changed = _read(out / "gorge_own_11.json.gz")
    changed["cells"][0]["type_id"] = 3
    (out / "gorge_own_11.json.gz").write_bytes(gzip.compress(json.dumps(changed).encode("utf-8")))
    assert gorge_mapgen.main(["--check", str(out), "--seeds", "2", "11"]) == 1
    assert "gorge_own_11.json.gz differs" in capsys.readouterr().err
    assert gorge_mapgen.main(["--check", str(out), "--seeds", "3"]) == 1  # missing file
    (out / "gorge_own_2.json.gz").write_text("{", encoding="utf-8")
    assert gorge_mapgen.main(["--check", str(out), "--seeds", "2"]) == 1
    assert "cannot read it as JSON" in capsys.readouterr().err


@pytest.mark.realmap
def test_statistics_reproduce_the_open_maps_figures() -> None:
    folder = gorge_maps_dir()
    own = [_grid(shipped(seed)) for seed in SEEDS]
    for k, (road, dead, min_ring, median_ring, full8, diameter, x_range, z_range) in OPEN_MAPS.items():
        grid = _grid(json.loads((folder / f"gorge_chase_map_{k}.json").read_text(encoding="utf-8")))
        stats = gorge_mapgen.map_statistics(grid)
        assert (stats["road"], stats["dead_ends"], stats["min_ring"], stats["median_ring"]) == (
            road, dead, min_ring, median_ring), k
        assert round(stats["full8_share"], 2) == full8, k
        assert (stats["diameter"], stats["x_range"], stats["z_range"]) == (diameter, x_range, z_range), k
        assert (stats["components"], stats["pinches"], stats["border_road"]) == (1, 0, 0), k
        for mine in own:  # the shipped maps are not copies of an open map (both are ~74 % obstacle)
            assert (mine == grid).sum() < 0.9 * N * N
