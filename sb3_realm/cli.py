"""The ``sb3-realm`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

__all__ = ["main", "run_demo"]


def run_demo(out: str | Path = "runs/demo", map_path: str | None = None, seed: int = 0, usr_conf: dict | None = None,
             gif: bool = True) -> dict:
    """Play one episode of a random legal policy; write ``episode.gif`` and ``summary.json`` under ``out``."""
    from .envs import RealmEnv
    from .game.render import save_gif

    env = RealmEnv(map_path=map_path, render_mode="rgb_array" if gif else None)
    _, info = env.reset(seed=seed, options=usr_conf)
    rng = np.random.default_rng(seed)
    frames = [env.render()] if gif else []
    terminated = truncated = False
    step_info: dict = {}
    while not (terminated or truncated):
        legal = np.flatnonzero(env.action_masks())
        _, _, terminated, truncated, step_info = env.step(int(rng.choice(legal)))
        if gif and (env.game.step_no % 4 == 0 or terminated or truncated):
            frames.append(env.render())
    summary = {k: step_info[k] for k in ("score", "win", "treasures", "treasures_missed", "steps", "flash_used",
                                         "buff_used", "bumps")}
    summary.update(map=env.game_map.name, seed=seed, treasure_ids=info["treasure_ids"], usr_conf=info["usr_conf"])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if gif:
        summary["gif"] = str(save_gif(frames, out / "episode.gif", fps=env.metadata["render_fps"]))
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _json_dict(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"treasure_num\": 3}}', got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="sb3-realm", description="Back to the Realm with Stable-Baselines3.")
    parser.add_argument("--version", action="version", version=f"sb3-realm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="play one episode of a random legal policy, print its score, write a GIF")
    demo.add_argument("--map", dest="map_path", default=None, help="map JSON (official format); default: shipped map")
    demo.add_argument("--out", default="runs/demo", help="output folder (episode.gif, summary.json)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the treasure draw and of the random policy")
    demo.add_argument("--usr-conf", type=_json_dict, default=None,
                      help='competition usr_conf as JSON, e.g. \'{"treasure_num": 3, "max_step": 500}\'')
    demo.add_argument("--no-gif", action="store_true", help="skip the GIF")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            summary = run_demo(args.out, args.map_path, args.seed, args.usr_conf, gif=not args.no_gif)
            print(json.dumps(summary, indent=2))
    except ValueError as exc:  # bad user input: one clear line, no traceback
        print(f"sb3-realm {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
