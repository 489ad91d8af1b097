"""Replays: an animated GIF of one episode and a PNG of its whole route."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..agents import PolicySpec, RandomPolicy, play_episode
from ..atomic import atomic_write, check_output_file, check_writable_folder
from ..envs import RealmEnv
from ..game.maps import CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z
from ..game.render import save_gif
from .training_map import warn_training_map

__all__ = ["Episode", "record_episode", "plot_route", "replay", "replay_paths", "run_demo"]


@dataclass
class Episode:
    """What a replay needs of one played episode."""

    route: list[tuple[float, float]] = field(default_factory=list)  # hero world (x, z) after reset and each step
    flashes: list[tuple[int, bool]] = field(default_factory=list)  # (step, landed) of each flash
    buff_steps: list[int] = field(default_factory=list)
    frames: list[np.ndarray] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    usr_conf: dict = field(default_factory=dict)
    treasure_ids: list[int] = field(default_factory=list)


def record_episode(policy, *, map_path: str | None = None, usr_conf: dict | None = None, seed: int = 0,
                   frames: bool = True, frame_every: int = 2, env_kwargs: dict | None = None) -> tuple[Episode,
                                                                                                        RealmEnv]:
    """Play one episode of ``policy`` (``"random"``, ``"oracle"``, a checkpoint path, or a policy object with
    ``reset(env)`` and ``act(env, obs)``) and record it."""
    env = RealmEnv(map_path=map_path, render_mode="rgb_array" if frames else None, **(env_kwargs or {}))
    pol = PolicySpec(policy, seed=seed).build(env) if isinstance(policy, str) else policy
    warn_training_map(policy, env.game_map)
    ep = Episode()

    def record(env: RealmEnv, info: dict, done: bool) -> None:
        g = env.game
        if g.step_no == 0:  # just reset: the episode's configuration and start
            ep.usr_conf, ep.treasure_ids = info["usr_conf"], info["treasure_ids"]
        else:
            if g.events.flash:
                ep.flashes.append((g.step_no, not g.events.flash_failed))
            if g.events.buff:
                ep.buff_steps.append(g.step_no)
        ep.route.append((g.x, g.z))
        if frames and (g.step_no == 0 or g.step_no % frame_every == 0 or done):
            ep.frames.append(env.render())

    ep.info = play_episode(env, pol, seed, usr_conf, observe=record)
    return ep, env


def _to_cells(x: float, z: float) -> tuple[float, float]:
    return (x - GRID_ORIGIN_X) / CELL_WIDTH, (z - GRID_ORIGIN_Z) / CELL_WIDTH


def plot_route(ep: Episode, env: RealmEnv, path: str | os.PathLike, title: str = "") -> Path:
    """PNG of the route: walls, the route coloured by time, treasures taken and missed, buff, flash jumps, end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    game_map = env.game_map
    fig, ax = plt.subplots(figsize=(7, 7), dpi=100)
    ax.imshow(game_map.walkable, origin="lower", cmap="gray", vmin=-0.6, vmax=1.0,
              extent=(0, game_map.width, 0, game_map.height))
    pts = np.array([_to_cells(x, z) for x, z in ep.route])  # (steps + 1, 2) in cells
    flash_steps = {s for s, landed in ep.flashes if landed}
    segments = [[pts[i - 1], pts[i]] for i in range(1, len(pts)) if i not in flash_steps]
    times = [i for i in range(1, len(pts)) if i not in flash_steps]
    if segments:
        lc = LineCollection(segments, cmap="viridis", linewidths=2)
        lc.set_array(np.asarray(times, dtype=float))
        ax.add_collection(lc)
        fig.colorbar(lc, ax=ax, fraction=0.046, pad=0.04, label="step")
    for s in sorted(flash_steps):
        ax.annotate("", xy=pts[s], xytext=pts[s - 1], arrowprops={"arrowstyle": "->", "color": "magenta", "lw": 2,
                                                                  "linestyle": "--"})
    centre = game_map.positions_grid + 0.5  # (16, 2) cell centres
    missed = set(ep.info.get("treasures_missed", []))
    for i in ep.treasure_ids:
        taken = i not in missed
        x, y = centre[i]
        ax.scatter(x, y, marker="*" if taken else "X", s=160, c="gold" if taken else "red",
                   edgecolors="black", zorder=3, label="treasure taken" if taken else "treasure missed")
    ax.scatter(centre[0][0], centre[0][1], marker="^", s=120, c="royalblue", edgecolors="black", zorder=3,
               label=f"buff (taken {len(ep.buff_steps)}x)")
    (sx, sy), (ex, ey) = centre[ep.usr_conf["start"]], centre[ep.usr_conf["end"]]
    ax.scatter(sx, sy, marker="o", s=100, c="white", edgecolors="black", zorder=3,
               label="start")
    ax.scatter(ex, ey, marker="s", s=120, c="limegreen", edgecolors="black", zorder=3,
               label="end")
    if flash_steps:
        ax.plot([], [], "--", color="magenta", label="flash")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper left", fontsize=7)
    info = ep.info
    ax.set_title(title or f"score {info['score']:.1f} | {'win' if info['win'] else 'no win'} | treasures "
                          f"{info['treasures']}/{len(ep.treasure_ids)} | steps {info['steps']}")
    ax.set_xlim(0, game_map.width)
    ax.set_ylim(0, game_map.height)
    ax.set_xlabel("grid x")
    ax.set_ylabel("grid z")
    fig.tight_layout()
    try:
        return atomic_write(path, lambda f: fig.savefig(f, format="png"))
    finally:
        plt.close(fig)


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
           seed: int = 0, route_png: str | os.PathLike | None = None, env_kwargs: dict | None = None) -> dict:
    """Write the GIF of one episode and the PNG of its route (:func:`replay_paths`: ``out`` and ``out`` with
    ``.png``, or for an ``out`` ending in ``.png``, ``out`` with ``.gif`` and ``out``); both paths are checked before
    the episode is played, and both are returned (``gif``, ``png``)."""
    check_output_file(out, "replay --out")
    gif_path, png_path = replay_paths(out, route_png)
    check_output_file(gif_path, "replay --out")
    check_output_file(png_path, "the route image")
    ep, env = record_episode(policy, map_path=map_path, usr_conf=usr_conf, seed=seed, env_kwargs=env_kwargs)
    gif = save_gif(ep.frames, gif_path, fps=env.metadata["render_fps"])
    png = plot_route(ep, env, png_path)
    keys = ("score", "win", "treasures", "treasures_missed", "steps", "flash_used", "buff_used")
    return {**{k: ep.info[k] for k in keys}, "treasure_ids": ep.treasure_ids, "gif": str(gif), "png": str(png)}


def run_demo(out: str | os.PathLike = "runs/demo", map_path: str | None = None, seed: int = 0,
             usr_conf: dict | None = None, gif: bool = True) -> dict:
    """Play one episode of a random legal policy (one stream from ``seed``); write ``episode.gif`` (every 4th step)
    and ``summary.json`` under ``out``; returns the summary (``sb3-realm demo``)."""
    out = check_writable_folder(out, "demo --out")
    env = RealmEnv(map_path=map_path, render_mode="rgb_array" if gif else None)
    frames: list[np.ndarray] = []
    reset_info: dict = {}

    def record(env: RealmEnv, info: dict, done: bool) -> None:
        if env.game.step_no == 0:
            reset_info.update(info)
        if gif and (env.game.step_no % 4 == 0 or done):
            frames.append(env.render())

    final = play_episode(env, RandomPolicy(seed, reseed=False), seed, usr_conf, observe=record)
    summary = {k: final[k] for k in ("score", "win", "treasures", "treasures_missed", "steps", "flash_used",
                                     "buff_used", "bumps")}
    summary.update(map=env.game_map.name, seed=seed, treasure_ids=reset_info["treasure_ids"],
                   usr_conf=reset_info["usr_conf"])
    out.mkdir(parents=True, exist_ok=True)
    if gif:
        summary["gif"] = str(save_gif(frames, out / "episode.gif", fps=env.metadata["render_fps"]))
    text = json.dumps(summary, indent=2) + "\n"
    atomic_write(out / "summary.json", lambda f: f.write(text.encode("utf-8")))
    return summary
