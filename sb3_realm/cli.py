"""The ``sb3-realm`` command line."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import pickle
import signal
import sys
import threading
import warnings
from pathlib import Path

from . import games
from .agents.checkpoint import TRUST_ENV
from .agents.load import policy_game
from .agents.submission import folder_code_note
from .arguments import ArgumentParser, json_dict, map_file, not_utf8
from .atomic import check_output_file, share_folder
from .evaluation import PROTOCOLS, evaluate, format_report, plot_scores, replay, run_demo, write_json_atomic
from .evaluation.reports import check_outputs_apart, input_paths, with_yardstick_keys
from .executors import EXECUTORS, RAY_ADDRESS_ENV, check_executor
from .version import __version__

# The training, imitation, export and tuning layers are imported inside their commands: they load torch, SB3 and
# Optuna (seconds), which `sb3-realm --help`, `demo`, `eval` and `replay` of a non-SB3 policy never need.

__all__ = ["main"]

TRUST_HELP = ("load the checkpoints this command reads with SB3's plain load, which unpickles their entries and so "
              "can run code: only for files you made yourself with your own SB3 code (default: their entries are "
              "rebuilt from plain data, nothing unpickled)")

MAP_HELP = ("map JSON (official format), e.g. the competition's realm_map_1.json from your code package; default: the "
            "shipped default map")
#: the named settings of every game (``eval --settings``); each game checks its own
SETTINGS = list(dict.fromkeys(name for spec in games.GAMES.values() for name in spec.settings))
SETTINGS_HELP = ("the named settings every game plays over its usr_conf (default: the game as shipped); "
                 + "; ".join(f"{spec.title}: " + ", ".join(f"{name} ({' '.join(f'{k} {v}' for k, v in values.items())})"
                                                          for name, values in spec.settings.items() if values)
                             for spec in games.GAMES.values() if len(spec.settings) > 1)
                 + " (--max-step wins over a setting's max_step)")
GAME_HELP = (f"the game to play: {', '.join(games.GAMES)}, or a game's import path package.module:ATTR (default: the "
             "one the checkpoint or submission records, or the game of the expert named; there is no default game: "
             "'random' needs it)")
DEMO_GAME_HELP = (f"the game to play: {', '.join(games.GAMES)}, or a game's import path package.module:ATTR (required: "
                  "there is no default game)")


def _game_arg(value: str) -> str:
    """``--game``: a registered game's name, or the import path ``package.module:ATTR`` of a game of one's own
    (imported and registered here; its name)."""
    try:
        return games.get(value).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    titles = " and ".join(spec.title for spec in games.GAMES.values())
    parser = ArgumentParser(prog="sb3-realm", description=f"{titles} with Stable-Baselines3.")
    parser.add_argument("--version", action="version", version=f"sb3-realm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _demo_parser(sub)
    for add in (_eval_parser, _train_parser, _imitate_parser, _replay_parser, _build_submission_parser):
        add(sub).add_argument("--trust-pickle", action="store_true", help=TRUST_HELP)  # they read SB3 checkpoints
    return parser


def _yardsticks() -> str:
    """Each game's yardstick, for the help texts of ``eval`` and ``imitate``."""
    return ", ".join(f"{spec.title}'s {spec.evaluation.yardstick!r}" for spec in games.GAMES.values())


def _open_maps() -> str:
    """The open maps' file names of the games that read maps from a folder, for the help of ``--maps-dir``."""
    return "; ".join(f"{spec.title}: {spec.maps.competition_file}" for spec in games.GAMES.values()
                     if "maps_dir" in spec.env.options)


def _demo_parser(sub) -> argparse.ArgumentParser:
    demo = sub.add_parser("demo", help="play one episode of a random legal policy, print its score, write a GIF")
    demo.add_argument("--map", dest="map_path", type=map_file, default=None, help=MAP_HELP)
    demo.add_argument("--out", default="runs/demo", help="output folder (episode.gif, summary.json)")
    demo.add_argument("--seed", type=seed_int, default=0, help="seed of the treasure draw and of the random policy")
    demo.add_argument("--usr-conf", type=json_dict, default=None,
                      help='competition usr_conf as JSON, e.g. \'{"treasure_num": 3, "max_step": 500}\'')
    demo.add_argument("--no-gif", action="store_true", help="skip the GIF")
    demo.add_argument("--game", type=_game_arg, default=None, help=DEMO_GAME_HELP)
    return demo


def _eval_parser(sub) -> argparse.ArgumentParser:
    # the per-game parts of the help texts, from the games registered when the parser is built
    specs = list(games.GAMES.values())
    experts = "; ".join(f"{_either([repr(name) for name in spec.experts])} for {spec.title}" for spec in specs
                        if spec.experts)
    ev = sub.add_parser("eval", help="score a policy by the competition's rules over a protocol")
    ev.add_argument("policy", help=f"an SB3 checkpoint (.zip), 'random', or an expert of the game ({experts})")
    # the protocols of every game registered when the parser is built (PROTOCOLS: those registered at import)
    protocols = list(dict.fromkeys([*PROTOCOLS, *(p for spec in specs for p in spec.evaluation.protocols)]))
    ev.add_argument("--protocol", choices=protocols, default=None,
                    help=f"default: the game's first ({'; '.join(_first_protocol(spec) for spec in specs)})")
    ev.add_argument("--game", type=_game_arg, default=None, help=GAME_HELP)
    ev.add_argument("--map", dest="map_path", type=map_file, default=None, help=MAP_HELP)
    ev.add_argument("--seed", type=seed_int, default=0, help="seed of the leaderboard draw and of stochastic policies")
    ev.add_argument("--treasures", type=int, default=None, help="treasures per game (default 9)")
    ev.add_argument("--games", type=int, default=None, help="how many games the protocol plays, per map where it "
                    "plays several (a protocol of fixed games takes none; default: the game's own)")
    ev.add_argument("--sets", type=_treasure_sets, default=None, help="custom protocol: '3,4,5;6,7,8'")
    ev.add_argument("--maps", type=_map_list, default=None,
                    help=f"--protocol maps ({_either([s.title for s in specs if 'maps' in s.evaluation.protocols])}"
                         "): the maps to play, e.g. own_2,open_5,path/to/map.json")
    ev.add_argument("--maps-dir", default=None, metavar="DIR",
                    help=f"the folder of a game's open maps ({_open_maps()}; default: the "
                         f"{_either(games.maps_folder_variables())} environment variable)")
    ev.add_argument("--allow-overlap", action="store_true",
                    help="score a checkpoint on maps its run trained on too (refused by default)")
    ev.add_argument("--max-step", type=int, default=None, help="max_step of every game (default: the game's own)")
    ev.add_argument("--settings", choices=SETTINGS, default="default", help=SETTINGS_HELP)
    ev.add_argument("--workers", type=int, default=1, help="processes (Ray workers with --executor ray)")
    _executor_options(ev)
    ev.add_argument("--json", dest="json_path", default=None, help="write the full report as JSON here")
    ev.add_argument("--plot", default=None, help="write a PNG of the score distribution here")
    ev.add_argument("--worst", type=_worst_count, default=10, help="how many of the worst games to list (1 or more)")
    ev.add_argument("--no-yardstick", action="store_true", help=f"skip the yardstick's score ({_yardsticks()}; no "
                    "gap column)")
    ev.add_argument("--no-oracle", dest="no_yardstick", action="store_true", help=argparse.SUPPRESS)  # the old name
    ev.add_argument("--expert-option", type=_expert_option, action="append", default=[], metavar="NAME=VALUE",
                    help="an option of the game's expert policies, its value as JSON (e.g. use_flash=false); repeat "
                         "for more")
    ev.add_argument("--no-flash", action="store_true", help="expert policy: never flash (--expert-option "
                    "use_flash=false)")
    ev.add_argument("--no-buff", action="store_true", help="expert policy: ignore the buff (--expert-option "
                    "use_buff=false)")
    ev.add_argument("--mask-wall-moves", action="store_true",
                    help="env option (a MaskablePPO checkpoint plays with its run's own mask anyway)")
    return ev


def _executor_options(parser: argparse.ArgumentParser, config_key: str | None = None) -> None:
    """``--executor`` and ``--ray-address``: where the command's games run (:mod:`sb3_realm.executors`)."""
    if config_key is not None:
        parser.add_argument("--executor", choices=EXECUTORS, default=None,
                            help=f"where the games run: worker processes of this machine or a Ray cluster (default: "
                                 f"the config's {config_key}, processes unless set)")
    else:
        parser.add_argument("--executor", choices=EXECUTORS, default="processes",
                            help="where the games run: worker processes of this machine (default) or a Ray cluster")
    parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help=f"the Ray cluster to join (host:6379, or auto for the one `ray start` made on this "
                             f"machine; default: ${RAY_ADDRESS_ENV}, else Ray starts on this machine for the run)")


def _train_parser(sub) -> argparse.ArgumentParser:
    tr = sub.add_parser("train", help="train PPO / MaskablePPO / RecurrentPPO from a YAML config (or resume a run)")
    tr.add_argument("--config", default=None, help="YAML config (see configs/); default: built-in defaults")
    tr.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config value, e.g. --set algo.hyperparams.n_steps=256 (repeatable)")
    tr.add_argument("--map", dest="map_path", type=map_file, default=None, help="map JSON (official format)")
    tr.add_argument("--out", default=None, help="run directory (default: the config's out)")
    tr.add_argument("--total-steps", type=int, default=None, help="total env steps (overrides total_timesteps)")
    tr.add_argument("--resume", default=None, metavar="DIR", help="continue the run in DIR from its last checkpoint")
    tr.add_argument("--init-from", default=None, metavar="MODEL",
                    help="start from the weights of a trained model of the same algorithm and network (e.g. "
                         "runs/imitate/final_model.zip); hyperparameters from the config, optimizer and timesteps "
                         "afresh (finetune.init_from)")
    tr.add_argument("--from-study", nargs=2, default=None, metavar=("STORAGE", "STUDY"),
                    help="train the config of a trial of an Optuna study (tuning/tune_*.py), rebuilt from its stored "
                         "params and base config, e.g. --from-study sqlite:///runs/study-rewards/study.db rewards")
    tr.add_argument("--trial", type=int, default=None, metavar="N",
                    help="with --from-study: trial number N (default: the best trial)")
    tr.add_argument("--no-progress", action="store_true",
                    help="no progress bar for this command (also without a terminal): one line per held-out "
                         "evaluation on stderr instead")
    tr.add_argument("--ray-address", default=None, metavar="ADDRESS",
                    help=f"with env.vec_env: ray, the Ray cluster whose actors step the envs (default: "
                         f"${RAY_ADDRESS_ENV}, else Ray starts on this machine for the run)")
    return tr


def _imitate_parser(sub) -> argparse.ArgumentParser:
    im = sub.add_parser("imitate", help=f"an expert teaches an SB3 policy (each game's yardstick: "
                                        f"{_yardsticks()}): expert games, behaviour cloning, DAgger rounds; the best "
                                        "model by held-out competition score (or resume a run)")
    im.add_argument("--config", default=None,
                    help="YAML config with an imitation section (configs/realm/imitate/quick.yaml, "
                         "configs/gorge/imitate.yaml)")
    im.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config value, e.g. --set imitation.rounds=6 (repeatable)")
    im.add_argument("--map", dest="map_path", type=map_file, default=None, help="map JSON (official format)")
    im.add_argument("--out", default=None, help="run directory (default: the config's out)")
    im.add_argument("--resume", default=None, metavar="DIR",
                    help="continue the run in DIR from its last complete round (e.g. with --set imitation.rounds=8)")
    im.add_argument("--no-progress", action="store_true", help="no progress bar")
    _executor_options(im, "imitation.executor")
    return im


def _replay_parser(sub) -> argparse.ArgumentParser:
    rp = sub.add_parser("replay", help="GIF of one episode and a PNG of its route")
    rp.add_argument("policy", help="an SB3 checkpoint (.zip), 'oracle', 'oracle-refined' (its tour played "
                    "step-exactly) or 'random'")
    rp.add_argument("--out", default="episode.gif", help="GIF path; the route PNG goes beside it (.png); a .png path "
                    "writes the route there and the GIF beside it (.gif)")
    rp.add_argument("--map", dest="map_path", type=map_file, default=None, help=MAP_HELP)
    rp.add_argument("--game", type=_game_arg, default=None, help=GAME_HELP)
    rp.add_argument("--seed", type=seed_int, default=0, help="seed of the treasure draw and of stochastic policies")
    rp.add_argument("--usr-conf", type=json_dict, default=None, help="competition usr_conf as JSON")
    rp.add_argument("--mask-wall-moves", action="store_true",
                    help="env option (a MaskablePPO checkpoint plays with its run's own mask anyway)")
    return rp


def _build_submission_parser(sub) -> argparse.ArgumentParser:
    bs = sub.add_parser("build-submission", help="export a trained policy into an upload folder for the competition "
                                                 "platform (torch + numpy only), optionally proving it on a stand-in "
                                                 "of the platform")
    bs.add_argument("model", help="the SB3 checkpoint (.zip) of PPO, MaskablePPO or RecurrentPPO")
    bs.add_argument("--out", required=True, help="upload folder to write (built aside, then renamed)")
    bs.add_argument("--code-package", default=None, metavar="DIR",
                    help="your official code package (the folder the Kaiwu client gives you): --out becomes a "
                         "complete copy of it, ready to upload, with only the needed lines of conf/ edited; without "
                         "it, --out holds the algorithm folder, ckpt/ and the lines to merge into your conf")
    defaults = ", ".join(f"{spec.submission.layouts[0]} for {spec.title}" for spec in games.GAMES.values()
                         if spec.submission.layouts)
    bs.add_argument("--layout", default=None, help=f"platform layout (default: the model's game's: {defaults})")
    bs.add_argument("--game", default=None, help=f"the game the model plays ({', '.join(games.GAMES)}); default: "
                                                 "the one its run config records (needed for a model saved outside "
                                                 "sb3-realm train)")
    from .export import layouts  # lazy: the export layer (see the top); only for the layouts' folders and defaults

    game_layouts = [(spec, layouts.get(name)) for spec in games.GAMES.values() for name in spec.submission.layouts
                    if name in layouts.names()]
    algo_dirs = "; ".join(
        _either([f"{d} (default)" if d == layout.default_algo_dir else d for d in layout.algo_dirs])
        + f" for {spec.title}" + (f" ({layout.name})" if len(spec.submission.layouts) > 1 else "")
        for spec, layout in game_layouts)
    bs.add_argument("--algo-dir", default=None, help=f"the algorithm folder, one the platform registers: {algo_dirs}")
    bs.add_argument("--ckpt-id", default=None, help="integer id of ckpt/model.ckpt-<id>.pkl, the preload and eval "
                                                    "model id (default: the model's timesteps)")
    bs.add_argument("--workflow", default="keep", choices=["keep", "finetune"],
                    help="what a platform training task does with the weights: keep them (default: every model it "
                         "saves is this policy) or finetune them (REINFORCE on the platform's samples)")
    searchable = _either([spec.title for spec in games.GAMES.values() if spec.submission.search is not None])
    bs.add_argument("--search", type=int, default=None, metavar="STEPS",
                    help=f"{searchable}: exploit() runs the rollout search around the network's action, each call "
                         "playing at most STEPS world steps of rollouts (recorded in the package; e.g. 400); "
                         "default: the network alone")
    bs.add_argument("--zip", action="store_true", help="also write <out>.zip with ckpt/, conf/ and the algorithm "
                                                       "folder (the 2024 recipe's upload; needs --code-package)")
    bs.add_argument("--force", action="store_true", help="replace an existing output folder")
    _check_arguments(bs, game_layouts)
    return bs


def _check_arguments(bs: argparse.ArgumentParser, game_layouts: list) -> None:
    """``build-submission``'s ``--check`` and the options of its games."""
    one_map = _either([spec.title for spec in games.GAMES.values() if "maps_dir" not in spec.env.options])
    its_own = "the game's own"
    bs.add_argument("--check", action="store_true",
                    help="prove it on a stand-in of the platform, in processes without sb3_realm/SB3/gymnasium: the "
                         "folder loads, a training task with the preload keys runs and saves twice, the saved "
                         "models are the exported weights, and the saved model plays the leaderboard games (and "
                         "more, up to --check-states states) with every action and score equal to model.predict")
    bs.add_argument("--map", dest="map_path", type=map_file, default=None,
                    help=(f"{one_map}: " if one_map else "")
                         + "map JSON of the --check's games; default: the map the model was trained on, as its run "
                         "config records it (env.map_path, a file that must be there, else the shipped map that "
                         "env.map_name names, e.g. the shipped default map)")
    bs.add_argument("--maps-dir", default=None, metavar="DIR",
                    help=f"the open maps ({_open_maps()}) for the --check's training task; default: the "
                         f"environment variable {_either(games.maps_folder_variables())}, else the package's own maps")
    bs.add_argument("--check-games", type=int, default=None,
                    help="games of the check, of the game's default protocol (default: the layout's: "
                         + ", ".join(f"{getattr(layout, 'check_games', None) or its_own} for {spec.title}"
                                     for spec, layout in game_layouts) + ")")
    bs.add_argument("--check-states", type=int, default=10_000, help="states the check compares at least")
    bs.add_argument("--check-max-step", type=int, default=None,
                    help="max_step of the check's games (default: the layout's: "
                         + ", ".join(f"{getattr(layout, 'check_max_step', None) or its_own} for {spec.title}"
                                     for spec, layout in game_layouts) + ")")
    bs.add_argument("--check-seed", type=seed_int, default=0, help="seed of the check's leaderboard draw")


def _either(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``: the choices of a help text."""
    return " or ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def _first_protocol(spec: games.GameSpec) -> str:
    """A game's default protocol and what it plays, for ``eval --protocol``'s help."""
    first = spec.evaluation.protocols[0]
    plays = spec.evaluation.describe(first, None)
    return f"{spec.title}: {first}" + (f", {plays}" if plays else "")


def _treasure_sets(text: str) -> list[list[int]]:
    try:
        return [[int(v) for v in part.split(",") if v.strip()] for part in text.split(";") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"treasure sets look like '3,4,5;6,7,8', got {text!r}") from exc


def _cmd_train(args) -> None:
    from .training import load_config, resume_config, train  # lazy: torch + SB3 (see the top)

    overrides = list(args.overrides)
    if args.map_path is not None:
        overrides.append(f"env.map_path={json.dumps(args.map_path)}")
    if args.total_steps is not None:
        overrides.append(f"total_timesteps={args.total_steps}")
    if args.trial is not None and args.from_study is None:
        raise ValueError("--trial N goes with --from-study STORAGE STUDY")
    if args.init_from is not None:
        overrides.append(f"finetune.init_from={json.dumps(args.init_from)}")
    if args.resume:
        if args.config is not None or args.out is not None or args.from_study is not None or args.init_from:
            raise ValueError("--resume continues a run with its own config.yaml and directory; drop --config/--out/"
                             "--from-study/--init-from (use --set or --total-steps to change it)")
        config = resume_config(args.resume, overrides)
    elif args.from_study is not None:
        from .training import config_from_dict, config_to_dict
        from .tuning import trial_config  # lazy: Optuna (see the top)

        if args.config is not None:
            raise ValueError("--from-study rebuilds the config from the study; drop --config (use --set to change it)")
        storage, study = args.from_study
        config, number = trial_config(storage, study, args.trial)
        overrides.append(f"out={json.dumps(args.out or f'runs/{study}-trial{number}')}")
        config = config_from_dict(config_to_dict(config), overrides)
    else:
        if args.out is not None:
            overrides.append(f"out={json.dumps(args.out)}")
        config = load_config(args.config, overrides)
    if args.ray_address and config.env.vec_env != "ray":
        raise ValueError(f"--ray-address {args.ray_address!r} is for env.vec_env: ray (Ray actors step the envs); add "
                         "--set env.vec_env=ray or leave the address out")
    model, run_dir = train(config, resume=args.resume, progress=not args.no_progress and sys.stderr.isatty(),
                           talk=sys.stderr)
    print(json.dumps({"run_dir": str(run_dir), "num_timesteps": int(model.num_timesteps),
                      "final_model": str(run_dir / "final_model.zip"),
                      "best_model": str(run_dir / "best_model.zip") if (run_dir / "best_model.zip").exists() else None},
                     indent=2))


def _cmd_imitate(args) -> None:
    from .imitation import imitate  # lazy: torch + SB3 (see the top)
    from .imitation.config import load_imitate_config, read_run_config

    overrides = list(args.overrides)
    if args.map_path is not None:
        overrides.append(f"env.map_path={json.dumps(args.map_path)}")
    if args.executor is not None:
        overrides.append(f"imitation.executor={args.executor}")
    if args.resume:
        if args.config is not None or args.out is not None:
            raise ValueError("--resume continues a run with its own config.yaml and directory; drop --config/--out "
                             "(use --set to change it, e.g. --set imitation.rounds=8)")
        config = read_run_config(args.resume, overrides)
    else:
        if args.out is not None:
            overrides.append(f"out={json.dumps(args.out)}")
        config = load_imitate_config(args.config, overrides)
    check_executor(config.imitation.executor, args.ray_address, option="imitation.executor")
    _model, run_dir = imitate(config, resume=args.resume, progress=not args.no_progress and sys.stderr.isatty(),
                             talk=sys.stderr)
    report = with_yardstick_keys(json.loads((run_dir / "eval.json").read_text(encoding="utf-8")))
    print(json.dumps({"run_dir": str(run_dir), "final_model": str(run_dir / "final_model.zip"),
                      "best_round": report["best_round"], "best_mean_score": report["best_mean_score"],
                      "yardstick_mean_score": report["yardstick_mean_score"],
                      "dataset_states": report["history"][-1]["states"], "wall_s": report["history"][-1]["wall_s"]},
                     indent=2))


def _cmd_build_submission(args) -> int:
    from .export import build_submission, check_submission, next_steps  # lazy: torch + SB3 (see the top)

    if args.check:  # the check's options, before anything is built
        for flag, value in (("--check-games", args.check_games), ("--check-max-step", args.check_max_step)):
            if value is not None and value < 1:
                raise ValueError(f"{flag} {value} must be >= 1; nothing was built")
        if args.check_states < 0:
            raise ValueError(f"--check-states {args.check_states} must be >= 0; nothing was built")
    maps_dir = args.maps_dir if args.maps_dir is not None else games.maps_folder_from_environment()
    if args.check and maps_dir is not None and not os.path.isdir(maps_dir):
        raise ValueError(f"--maps-dir {maps_dir!r} is not a folder; give the folder of gorge_chase_map_<k>.json, or "
                         "leave it out to use the package's own maps; nothing was built")
    result: dict = {}

    def measure_and_check(manifest: dict) -> None:  # while --out is held: no other build replaces it meanwhile
        result.update({"out": str(Path(args.out)), "weights": manifest["weights"], "files": len(manifest["files"]),
                       "size_bytes": sum(p.stat().st_size for p in Path(args.out).rglob("*") if p.is_file())})
        if args.zip:
            result["zip"] = str(Path(args.out).with_name(Path(args.out).name + ".zip"))
            result["zip_left_out"] = manifest["zip"]["left_out"]
        if args.check:
            report = check_submission(args.out, args.model, map_path=args.map_path, games=args.check_games,
                                      seed=args.check_seed, max_step=args.check_max_step,
                                      min_states=args.check_states, progress=sys.stderr.isatty(), maps_dir=maps_dir)
            report.pop("imported_top_level_modules", None)
            result["check"] = report

    manifest = build_submission(args.model, args.out, layout=args.layout, algo_dir=args.algo_dir,
                                ckpt_id=args.ckpt_id, code_package=args.code_package, workflow=args.workflow,
                                make_zip=args.zip, force=args.force, game=args.game, search=args.search,
                                then=measure_and_check)
    status = 0 if not args.check or result["check"]["ok"] else 1
    print(json.dumps(result, indent=2))
    if status:
        print("sb3-realm build-submission: the check FAILED: see check.platform_task (the stand-in's training task) "
              "and check.first_mismatches (actions that differ from the model)", file=sys.stderr)
    else:  # the platform's own terms are Chinese: a stream that cannot encode them shows '?' rather than failing
        encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
        print(next_steps(manifest, args.out).encode(encoding, errors="replace").decode(encoding), file=sys.stderr)
    return status


def _map_list(text: str) -> list[str]:
    """argparse type of ``--maps``: comma-separated map names or paths."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no map; give map names or paths separated by commas, e.g. "
                                         "own_2,open_5")
    return names


def _eval_env_kwargs(args) -> dict:
    """The env options of ``eval``: ``--mask-wall-moves`` and the open maps' folder (``--maps-dir``, else the game's
    environment variable) for a game whose env takes one; a ``ValueError`` for an option the game's env lacks."""
    spec = policy_game(args.policy, args.game)
    kwargs: dict = {}
    if args.mask_wall_moves:
        if "mask_wall_moves" not in spec.env.options:
            raise ValueError(f"--mask-wall-moves is an option of another game's env; {spec.title} masks its illegal "
                             "actions itself: drop --mask-wall-moves")
        kwargs["mask_wall_moves"] = True
    maps_dir = args.maps_dir if args.maps_dir is not None else games.maps_folder_from_environment(spec)
    if maps_dir is not None and "maps_dir" in spec.env.options:
        if not os.path.isdir(maps_dir):  # before any game, naming where the folder came from
            given = (f"--maps-dir {maps_dir!r}" if args.maps_dir is not None
                     else f"the environment variable {spec.maps.folder_variable}={maps_dir!r}")
            what = "does not exist" if not os.path.lexists(maps_dir) else "is not a folder"
            raise ValueError(f"{given} {what}; give the folder that holds the open maps gorge_chase_map_<k>.json, "
                             f"or {'leave --maps-dir out' if args.maps_dir is not None else 'unset the variable'}")
        kwargs["maps_dir"] = maps_dir
    elif args.maps_dir is not None:
        others = [other for other in games.GAMES.values() if "maps_dir" in other.env.options]
        hint = "".join(f" (or pass --game {other.name}: --maps-dir is an option of {other.title})" for other in others
                       if args.game is None)
        raise ValueError(f"--maps-dir {args.maps_dir!r}: {spec.title} plays one map, given with --map PATH: drop "
                         f"--maps-dir{hint}")
    return kwargs


def _expert_option(text: str) -> tuple[str, object]:
    """argparse type of ``--expert-option NAME=VALUE``: the name and the value read as JSON (a bare word that is
    not JSON: the word)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE; give an option of the game's experts and its "
                                         "value, e.g. --expert-option use_flash=false")
    try:
        return name.strip(), json.loads(value)
    except json.JSONDecodeError:
        return name.strip(), value


def _expert_options(args) -> dict | None:
    """The options of ``eval``'s expert policy: ``--expert-option``'s, with ``--no-flash`` and ``--no-buff`` the
    short forms of ``use_flash=false`` and ``use_buff=false``."""
    options = dict(args.expert_option)
    for flag, name in ((args.no_flash, "use_flash"), (args.no_buff, "use_buff")):
        if flag:
            options[name] = False
    return options or None


def _cmd_eval(args) -> None:
    for path, flag in ((args.json_path, "--json"), (args.plot, "--plot")):
        if path is not None:
            check_output_file(path, flag)  # before any game is played
    check_outputs_apart({"--json": args.json_path, "--plot": args.plot}, input_paths(args.policy, args.map_path))
    with _share_outputs(args):  # before any game: no report into a folder another command holds (a run)
        _note_folder_code(args)
        report = evaluate(args.policy, args.protocol, map_path=args.map_path, seed=args.seed,
                          treasures=args.treasures, games=args.games, custom=args.sets, max_step=args.max_step,
                          workers=args.workers, yardstick=not args.no_yardstick, progress=sys.stderr.isatty(),
                          expert_options=_expert_options(args),
                          env_kwargs=_eval_env_kwargs(args) or None, game=args.game, maps=args.maps,
                          allow_overlap=args.allow_overlap, settings=args.settings, executor=args.executor,
                          ray_address=args.ray_address)
        print(format_report(report, worst=args.worst))
        with _share_outputs(args):  # again: a folder made since the start may have been taken since
            if args.json_path:
                print(f"report: {write_json_atomic(report.to_dict(), args.json_path)}")
            if args.plot:
                print(f"plot: {plot_scores(report, args.plot)}")


def _share_outputs(args) -> contextlib.ExitStack:
    """The folders ``eval`` writes its outputs into, each checked to be held by no other command and shared while
    the returned stack is open (:func:`~sb3_realm.atomic.share_folder`)."""
    held = contextlib.ExitStack()
    with held:
        for path, flag in ((args.json_path, "--json"), (args.plot, "--plot")):
            if path is not None:
                held.enter_context(share_folder(Path(path).parent, f"the folder of {flag} {path!r},"))
        return held.pop_all()


def _note_folder_code(args) -> None:
    """``eval DIR`` and ``replay DIR`` of a submission folder: one line on stderr, before it plays, saying that the
    folder's own code runs (:func:`~sb3_realm.agents.submission.folder_code_note`)."""
    note = folder_code_note(args.policy)
    if note is not None:
        print(f"sb3-realm {args.command}: note: {note}", file=sys.stderr)


def _warning_printer(command: str, default):
    """``warnings.showwarning`` that prints the package's own warnings as one line, others as usual."""

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.startswith("sb3_realm"):
            print(f"sb3-realm {command}: warning: {message}", file=sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    return show


def _worst_count(text: str) -> int:
    """An argparse type: how many of the worst games ``eval`` lists, an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give a count of games >= 1, e.g. --worst 30") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} lists no game; give a count of games >= 1, e.g. --worst 30")
    return value


def seed_int(text: str) -> int:
    """An argparse type: a seed, an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; a seed is an integer >= 0, e.g. 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a seed is an integer >= 0, e.g. 0")
    return value


_NO_ROOM = {errno.ENOSPC: "the disk is full", errno.EFBIG: "the file would exceed the size limit",
            errno.EDQUOT: "the disk quota is used up"}


def os_error_text(exc: OSError) -> str:
    """One line for an OSError: what happened, to which file, and what to do."""
    where = f" {exc.filename!r}" if exc.filename else ""
    if exc.errno in _NO_ROOM:
        return (f"{_NO_ROOM[exc.errno]}: could not write{where or ' its output'}; free some space and run the command "
                "again (what it wrote before is intact: files are written whole or not at all)")
    if exc.errno == errno.ENAMETOOLONG:
        return f"the name or path{where[:120]}{'...' if len(where) > 120 else ''} is too long; use a shorter one"
    reason = exc.strerror or str(exc)
    return f"{reason}:{where or ' (no file named)'}; check the path and its permissions"


def unicode_error_text(exc: UnicodeError) -> str:
    """One line for a text that is not UTF-8: the name that could not be written (the line of the text that holds
    it, e.g. a path with a byte that is not UTF-8, which Python keeps as a lone surrogate), or the text that could
    not be read, and what to do."""
    if isinstance(exc, UnicodeEncodeError) and isinstance(exc.object, str):
        text = exc.object
        start = text.rfind("\n", 0, exc.start) + 1
        end = text.find("\n", exc.end)
        line = text[start:end if end >= 0 else len(text)]
        shown = line if len(line) <= 300 else line[:300] + "..."
        return (f"{shown!r} holds {not_utf8(line) or 'characters that are not UTF-8'}, and the command writes its "
                "names in UTF-8 (in a file, a log or a report): rename the file or folder in UTF-8, or choose another "
                "name")
    if isinstance(exc, UnicodeDecodeError):
        return (f"a text it read is not UTF-8 ({exc.reason} at byte {exc.start}: {exc.object[exc.start:exc.end]!r}); "
                "save the file as UTF-8")
    return f"a text that is not UTF-8: {exc}; use UTF-8 names and files"


def _exit_on_sigterm(signum, frame) -> None:
    """SIGTERM (``kill``, a job scheduler, a closing terminal) ends the command as Ctrl-C does: context managers
    close their worker pools and temporary files, so no worker process is left behind."""
    raise SystemExit(128 + signum)


def _register_games_by_path(argv: list[str] | None) -> None:
    """Register the games that ``--game`` names by import path before the parser is built: its ``--protocol`` and
    ``--settings`` choices are those of the registered games. A path that gives no game is left to ``--game``'s own
    message."""
    args = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(args):
        value = args[i + 1] if arg == "--game" and i + 1 < len(args) else arg.partition("=")[2] if (
            arg.startswith("--game=")) else ""
        if ":" in value:
            with contextlib.suppress(ValueError):
                games.get(value)


def _set_command_environment(args) -> dict[str, str | None]:
    """Set the variables that the command's workers read too (``--trust-pickle``; ``--ray-address``, the cluster of
    its Ray workers or actors); returns their values before, to put back."""
    before = {name: os.environ.get(name) for name in (TRUST_ENV, RAY_ADDRESS_ENV)}
    if getattr(args, "trust_pickle", False):  # seen by this process and the workers it starts
        os.environ[TRUST_ENV] = "1"
    if getattr(args, "ray_address", None):
        os.environ[RAY_ADDRESS_ENV] = args.ray_address
    return before


def main(argv: list[str] | None = None) -> int:
    _register_games_by_path(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()  # signal handlers live there only
    previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm) if main_thread else None
    default_showwarning = warnings.showwarning
    warnings.showwarning = _warning_printer(args.command, default_showwarning)
    environment_before = _set_command_environment(args)
    try:
        if args.command == "demo":
            summary = run_demo(args.out, args.map_path, args.seed, args.usr_conf, gif=not args.no_gif, game=args.game)
            print(json.dumps(summary, indent=2))
        elif args.command == "train":
            _cmd_train(args)
        elif args.command == "imitate":
            _cmd_imitate(args)
        elif args.command == "eval":
            _cmd_eval(args)
        elif args.command == "build-submission":
            return _cmd_build_submission(args)
        elif args.command == "replay":
            env_kwargs = {"mask_wall_moves": True} if args.mask_wall_moves else None
            _note_folder_code(args)
            print(json.dumps(replay(args.policy, args.out, map_path=args.map_path, usr_conf=args.usr_conf,
                                    seed=args.seed, env_kwargs=env_kwargs, game=args.game), indent=2))
    except UnicodeError as exc:  # a name or a text that is not UTF-8: which one, not the codec's words
        print(f"sb3-realm {args.command}: error: {unicode_error_text(exc)}", file=sys.stderr)
        return 2
    except ValueError as exc:  # bad user input: one clear line, no traceback
        print(f"sb3-realm {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a name too long, a folder without permission: one line
        print(f"sb3-realm {args.command}: error: {os_error_text(exc)}", file=sys.stderr)
        return 1
    except pickle.UnpicklingError as exc:  # torch.load(weights_only=True) met objects that are not tensors
        print(f"sb3-realm {args.command}: error: a weights file holds objects that are not plain tensors, so it was "
              f"not loaded ({str(exc).splitlines()[0][:200]}); rebuild or re-save it from a model you trust",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: workers and temporary files are closed on the way out
        print(f"sb3-realm {args.command}: interrupted; files are written whole or not at all, so what was written "
              "stays usable (a run resumes with --resume)", file=sys.stderr)
        return 130
    finally:
        for name, before in environment_before.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
        warnings.showwarning = default_showwarning
        if main_thread:
            signal.signal(signal.SIGTERM, previous_sigterm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
