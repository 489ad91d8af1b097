"""The scripted yardstick of Gorge Chase (:class:`~sb3_realm.games.gorge.experts.ScriptedPolicy`): legal and
deterministic play, survival against random play, and hand-made situations (flee, pick up a seen treasure, flash out
of a dead end)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from helpers import gorge_maps_dir

from sb3_realm.games.gorge.core import Monster, Treasure
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.experts import ScriptedPolicy
from sb3_realm.games.gorge.rules import DIRECTIONS, is_caught

SHORT = {"max_step": 400}  # long enough for monster 2 and the chase, short enough for a fast test


def play(env: GorgeEnv, seed: int, policy: ScriptedPolicy | None, steps: int = 10_000) -> tuple[list[int], dict]:
    """Actions and the last ``info`` of one episode (at most ``steps`` steps); random legal play without a policy."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    if policy is not None:
        policy.reset(env)
    actions, info = [], {}
    for _ in range(steps):
        legal = env.game.legal_actions()  # the platform's mask: the scripted policy may stand still against a wall
        action = policy.act(env, obs) if policy is not None else int(rng.choice(np.flatnonzero(legal)))
        assert legal[action], f"illegal action {action} at step {env.game.step_no}"
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return actions, info


def test_legal_and_deterministic():
    env = GorgeEnv(**SHORT)
    first, _ = play(env, 3, ScriptedPolicy(env), steps=150)
    again, _ = play(GorgeEnv(**SHORT), 3, ScriptedPolicy(env), steps=150)
    assert first == again
    assert ScriptedPolicy.name == "scripted"


def test_survives_much_longer_than_random_play():
    env = GorgeEnv(**SHORT)
    policy = ScriptedPolicy(env)
    scripted = [play(env, seed, policy)[1]["steps"] for seed in range(3)]
    random = [play(env, seed, None)[1]["steps"] for seed in range(3)]
    assert np.mean(scripted) >= 250
    assert np.mean(scripted) >= 4 * np.mean(random)


def test_open_map_episode_collects_treasures():
    env = GorgeEnv(map_names=["open_9"], maps_dir=gorge_maps_dir(), **SHORT)
    _, info = play(env, 0, ScriptedPolicy(env))
    assert info["steps"] >= 300 and info["treasures"] >= 3


# ------------------------------------------------------------------------------------------- hand-made situations
def drawn_env(tmp_path: Path, rows: list[str]) -> GorgeEnv:
    """An env on a 128 x 128 map whose top-left corner is drawn as text rows (``.`` road, ``#`` obstacle), without
    items."""
    walk = np.zeros((128, 128), dtype=bool)
    for z, row in enumerate(rows):
        walk[z, :len(row)] = [c == "." for c in row]
    cells = [{"x": x, "z": z, "type_id": 3 if walk[z, x] else 1, "height": 0.0} for z in range(128) for x in range(128)]
    path = tmp_path / "gorge_drawn.json"
    path.write_text(json.dumps({"name": "drawn", "width": 128, "height": 128, "cells": cells}), encoding="utf-8")
    return GorgeEnv(map_path=path, treasure_count=0, buff_count=0)


def place(env: GorgeEnv, hero: tuple[int, int], monsters: list[tuple[int, int]],
          treasures: list[tuple[int, int]] = ()) -> None:
    """Reset, then put the hero, speed-1 monsters and treasures on the given cells."""
    env.reset(seed=0)
    game = env.game
    game.hero = hero
    game.history = deque([(0, hero)], maxlen=game.rules.history_length)
    game.treasures = [Treasure(i + 1, c) for i, c in enumerate(treasures)]
    game.monsters = [Monster(50 + i, c, 1, c) for i, c in enumerate(monsters)]


ROOM = ["#" * 40] + ["#" + "." * 38 + "#" for _ in range(38)] + ["#" * 40]  # a 38 x 38 open room


def test_flees_from_an_adjacent_monster(tmp_path):
    env = drawn_env(tmp_path, ROOM)
    for monster, away in [((22, 20), -1), ((18, 20), 1), ((20, 22), 0)]:  # east, west, south of the hero
        for use_flash in (False, True):
            place(env, (20, 20), [monster])
            policy = ScriptedPolicy(env, use_flash=use_flash)
            policy.reset(env)
            action = policy.act(env, None)
            if not use_flash:
                dx, dz = DIRECTIONS[action]
                assert action < 8 and (dx == away if away else dz == -1)
            env.step(action)
            hx, hz = env.game.hero
            mx, mz = env.game.monsters[0].cell
            assert not env.game.terminated and abs(hx - mx) + abs(hz - mz) >= 2

def test_picks_up_a_seen_treasure(tmp_path):
    env = drawn_env(tmp_path, ROOM)
    place(env, (10, 10), [(36, 36)], treasures=[(14, 12)])
    policy = ScriptedPolicy(env)
    policy.reset(env)
    for _ in range(5):
        env.step(policy.act(env, None))
    assert env.game.treasures_collected == 1


def test_flashes_out_of_a_dead_end(tmp_path):
    # a room on the west, a dead-end corridor east from it at z = 10 ending at x = 30, and a second room beyond a
    # wall on the east, joined to the first one by a long corridor along the bottom
    rows = []
    for z in range(40):
        row = ["#"] * 60
        for x in range(60):
            if (2 <= x <= 18 and 2 <= z <= 20) or (33 <= x <= 57 and 2 <= z <= 20):
                row[x] = "."
            elif z == 10 and 19 <= x <= 30:
                row[x] = "."
            elif (z == 35 and 2 <= x <= 57) or (x in (2, 57) and 20 <= z <= 35):
                row[x] = "."
        rows.append("".join(row))
    env = drawn_env(tmp_path, rows)
    place(env, (30, 10), [(27, 10)])
    assert env.action_masks()[8:].all()
    policy = ScriptedPolicy(env)
    policy.reset(env)
    action = policy.act(env, None)
    assert action >= 8
    env.step(action)
    assert env.game.hero[0] >= 33 and not env.game.terminated
    assert not any(is_caught(m.cell, env.game.hero) for m in env.game.monsters)


def test_unknown_treasures_are_not_used(tmp_path):
    # a treasure out of view is not a goal: the hero does not head for it
    env = drawn_env(tmp_path, ROOM)
    place(env, (5, 5), [], treasures=[(34, 34)])
    policy = ScriptedPolicy(env)
    policy.reset(env)
    policy.act(env, None)
    assert policy.memory.treasures == {}
    place(env, (30, 30), [], treasures=[(34, 34)])
    policy.reset(env)
    policy.act(env, None)
    assert policy.memory.treasures == {1: (34, 34)}


@pytest.mark.parametrize("use_flash", [False])
def test_without_flash_never_flashes(use_flash):
    env = GorgeEnv(**SHORT)
    actions, _ = play(env, 1, ScriptedPolicy(env, use_flash=use_flash), steps=200)
    assert max(actions) < 8
