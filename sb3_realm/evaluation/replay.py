"""Replays: an animated GIF of one episode and a PNG of its whole route."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import games
from ..agents import PolicySpec, RandomPolicy, play_episode
from ..agents.load import policy_game
from ..atomic import atomic_write, check_output_file, check_writable_folder
from ..games import GameEnv
from .reports import check_outputs_apart, input_paths
from .training_map import warn_training_map

__all__ = ["Episode", "plot_route", "record_episode", "replay", "replay_paths", "run_demo", "save_gif"]


#: what a replay or a demo reports of its episode, where the game's final ``info`` has it (the Realm's win and missed
#: treasures, Gorge Chase's catch)
_SUMMARY_KEYS = ("score", "win", "caught", "caught_after_speedup", "treasures", "treasures_missed", "steps",
                 "flash_used", "buff_used", "free_neighbours")


@dataclass
class Episode:
    """What a replay needs of one played episode."""

    route: list[tuple[float, float]] = field(default_factory=list)  # hero (x, z) after reset and each step
    flashes: list[tuple[int, bool]] = field(default_factory=list)  # (step, landed) of each flash
    buff_steps: list[int] = field(default_factory=list)
    frames: list[np.ndarray] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    usr_conf: dict = field(default_factory=dict)
    treasure_ids: list[int] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # what else the game's recorder keeps (Gorge Chase: monsters' paths)


def record_episode(policy, *, map_path: str | None = None, usr_conf: dict | None = None, seed: int = 0,
                   frames: bool = True, frame_every: int = 2, env_kwargs: dict | None = None,
                   game: str | None = None) -> tuple[Episode, GameEnv]:
    """Play one episode of ``policy`` (``"random"``, an expert such as ``"oracle"``, a checkpoint path, or a policy
    object with ``reset(env)`` and ``act(env, obs)``) and record it. ``game``: the game to play (None: the one the
    policy records, :func:`~sb3_realm.agents.load.policy_game`)."""
    spec = policy_game(policy, game)
    env = spec.env.make(map_path=map_path, render_mode="rgb_array" if frames else None, **(env_kwargs or {}))
    pol = PolicySpec(policy, seed=seed, game=spec.name).build(env) if isinstance(policy, str) else policy
    warn_training_map(policy, env.game_map, game=spec.name)
    ep = Episode()

    def record(env: GameEnv, info: dict, done: bool) -> None:
        g = env.game
        if g.step_no == 0:  # just reset: the episode's configuration and start
            ep.usr_conf, ep.treasure_ids = info["usr_conf"], list(info.get("treasure_ids", ()))
        spec.results.record_step(ep, env)
        if frames and (g.step_no == 0 or g.step_no % frame_every == 0 or done):
            ep.frames.append(env.render())

    ep.info = play_episode(env, pol, seed, usr_conf, observe=record)
    return ep, env


def plot_route(ep: Episode, env: GameEnv, path: str | os.PathLike, title: str = "",
               game: str | None = None) -> Path:
    """The PNG of ``ep``'s route on ``env``'s map, drawn by ``game``'s own drawing."""
    return games.get(game).results.plot_route(ep, env, path, title)


def save_gif(frames: Sequence[np.ndarray], path: str | os.PathLike, fps: int = 10) -> Path:
    """Write RGB frames as an animated GIF, atomically (temporary file, then rename)."""
    from PIL import Image  # lazy: only needed to write files

    if not frames:
        raise ValueError("save_gif needs at least one frame")
    images = [Image.fromarray(np.asarray(f, dtype=np.uint8)) for f in frames]
    return atomic_write(path, lambda f: images[0].save(f, format="GIF", save_all=True, append_images=images[1:],
                                                       duration=max(1, 1000 // fps), loop=0))


def replay_paths(out: str | os.PathLike, route_png: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """``(GIF, route PNG)`` of a replay written to ``out``: ``out`` is the GIF and the PNG goes beside it with
    ``.png``, or, when ``out`` ends in ``.png``, ``out`` is the route and the GIF goes beside it with ``.gif``. A
    ``ValueError`` when both would be one file."""
    out = Path(out)
    if route_png is None and out.suffix.lower() == ".png":
        gif, png = out.with_suffix(".gif"), out
    else:
        gif, png = out, Path(route_png) if route_png is not None else out.with_suffix(".png")
    if gif.absolute() == png.absolute():
        raise ValueError(f"the replay's GIF and its route PNG would both be {str(gif)!r}; name the GIF .gif (the PNG "
                         "goes beside it) or give the route image another path")
    return gif, png


def replay(policy: str, out: str | os.PathLike, *, map_path: str | None = None, usr_conf: dict | None = None,
           seed: int = 0, route_png: str | os.PathLike | None = None, env_kwargs: dict | None = None,
           game: str | None = None) -> dict:
    """Write the GIF of one episode and the PNG of its route (:func:`replay_paths`: ``out`` and ``out`` with
    ``.png``, or for an ``out`` ending in ``.png``, ``out`` with ``.gif`` and ``out``); both paths are checked before
    the episode is played (neither may be a file the replay reads: the checkpoint, its run config, the map), and both
    are returned (``gif``, ``png``)."""
    check_output_file(out, "replay --out")
    gif_path, png_path = replay_paths(out, route_png)
    check_output_file(gif_path, "replay --out")
    check_output_file(png_path, "the route image")
    check_outputs_apart({"replay --out": gif_path, "the route image": png_path}, input_paths(policy, map_path))
    spec = policy_game(policy, game)
    ep, env = record_episode(policy, map_path=map_path, usr_conf=usr_conf, seed=seed, env_kwargs=env_kwargs,
                             game=spec.name)
    gif = save_gif(ep.frames, gif_path, fps=env.metadata["render_fps"])
    png = spec.results.plot_route(ep, env, png_path)
    played = {k: ep.info[k] for k in _SUMMARY_KEYS if k in ep.info}
    if ep.treasure_ids:
        played["treasure_ids"] = ep.treasure_ids
    return {**played, "gif": str(gif), "png": str(png)}


def run_demo(out: str | os.PathLike = "runs/demo", map_path: str | None = None, seed: int = 0,
             usr_conf: dict | None = None, gif: bool = True, game: str | None = None) -> dict:
    """Play one episode of ``game`` (required: a random policy plays any game) with a random legal policy (one
    stream from ``seed``); write ``episode.gif`` (every 4th step) and ``summary.json`` under ``out``; returns the
    summary (``sb3-realm demo``)."""
    out = check_writable_folder(out, "demo --out")
    env = games.get(game).env.make(map_path=map_path, render_mode="rgb_array" if gif else None)
    frames: list[np.ndarray] = []
    reset_info: dict = {}

    def record(env: GameEnv, info: dict, done: bool) -> None:
        if env.game.step_no == 0:
            reset_info.update(info)
        if gif and (env.game.step_no % 4 == 0 or done):
            frames.append(env.render())

    final = play_episode(env, RandomPolicy(seed, reseed=False), seed, usr_conf, observe=record)
    summary = {k: final[k] for k in (*_SUMMARY_KEYS, "bumps") if k in final}
    summary.update(map=env.game_map.name, seed=seed)
    if "treasure_ids" in reset_info:
        summary["treasure_ids"] = reset_info["treasure_ids"]
    summary["usr_conf"] = reset_info["usr_conf"]
    out.mkdir(parents=True, exist_ok=True)
    if gif:
        summary["gif"] = str(save_gif(frames, out / "episode.gif", fps=env.metadata["render_fps"]))
    text = json.dumps(summary, indent=2) + "\n"
    atomic_write(out / "summary.json", lambda f: f.write(text.encode("utf-8")))
    return summary
