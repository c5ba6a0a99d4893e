"""The training flags: ``python -m jaxclimate.train``'s command line (which ``python -m
jaxclimate.sweep`` shares) turned into :class:`~jaxclimate.run_options.RunOptions` through
:func:`jaxclimate.run.configure`. Each bad flag exits 2 with one line naming it, before
anything is built or written; heavy imports wait until they are needed, so a Ctrl-C while
they load is caught by the command (:func:`jaxclimate._cli.guarded`)."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from jaxclimate._cli import OneLineParser, add_cache_flag, add_distributed_flags, add_key_value_flag

#: flags that say how this session runs, not what the run is: a resumed run takes them anew
SESSION_FLAGS = {"resume", "quiet", "no_plots", "no_compile_cache", "coordinator", "num_processes", "process_id", "cpu_processes", "list"}

#: the command line's shortcuts for algorithm config fields
SHORTCUTS = (("--total-timesteps", "total_timesteps"), ("--num-envs", "num_envs"), ("--network", "network"), ("--fed", "federation_period"))

DEFAULT_PROG = "python -m jaxclimate.train"


def make_parser(prog: str = DEFAULT_PROG, doc: str | None = None) -> argparse.ArgumentParser:
    """The training command line (``doc``: the command's docstring, for ``--help``)."""
    from jaxclimate.algos.registry import algorithms
    from jaxclimate.core.registry import registered_envs

    parser = OneLineParser(
        prog=prog,
        description=doc and doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=doc and doc.split("Examples::")[-1],
    )
    parser.add_argument("--env", default="climate-mitigation", help=f"environment id (default climate-mitigation): {', '.join(registered_envs())}")
    parser.add_argument("--list", action="store_true", help="list the environment × algorithm pairs that train, with their presets, then exit")
    parser.add_argument("--algo", default="ippo", choices=sorted(algorithms()), help="learning algorithm (default ippo)")
    parser.add_argument("--preset", help="named hyper-parameter set of the environment for the algorithm (default: its first)")
    parser.add_argument("--scenario", help="shortcut for --env-set scenario=… (climate-mitigation: i or ii)")
    parser.add_argument("--engine", help="shortcut for --env-set engine=… (climate-mitigation: gru, cicero, ...)")
    parser.add_argument(
        "--uncertainty",
        metavar="NAME",
        help="train over a distribution of the environment's parameters, one draw per episode (docs/robustness.md; e.g. rice-n: climate, damage, climate-damage)",
    )
    parser.add_argument("--seeds", type=int, default=1, help="independent seeds trained in one program (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--total-timesteps", type=int, help="env steps per seed")
    parser.add_argument("--num-envs", type=int, help="parallel environments per seed")
    parser.add_argument("--network", choices=["mlp", "lstm", "gru"], help="actor-critic network (IPPO)")
    parser.add_argument("--fed", type=int, metavar="K", help="federated averaging every K episodes, 0 = never (ddpg/td3/tqc)")
    add_key_value_flag(parser, "--set", "algorithm config field override (repeatable)")
    add_key_value_flag(
        parser, "--env-set", "environment parameter or constructor option override (dotted for a nested parameter, e.g. negotiation.bca_rate=0.5)"
    )
    add_key_value_flag(parser, "--rollout-set", "rollout option of the environment's training report (invest-esg: seed_years, seed_companies, ...)")
    parser.add_argument("--chunks", type=int, default=20, help="compiled chunks the run is split into (progress granularity; default 20)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="checkpoint every N chunks (default 5; always at the end)")
    parser.add_argument("--reservoir", type=int, default=2000, help="climate game: training episodes kept per seed for the consistency replay")
    parser.add_argument("--run-dir", type=Path, help="output directory (default runs/<env>-<algo>-<time>)")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint (with its own settings)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--logger",
        default="jsonl",
        metavar="NAMES",
        help="where metrics go besides metrics.jsonl: tensorboard, wandb (comma-separated; default jsonl alone)",
    )
    parser.add_argument("--wandb-project", default="jaxclimate", help="W&B project for --logger wandb (default jaxclimate)")
    parser.add_argument(
        "--allow-host-callback", action="store_true", help="train even where each env step calls back to the host (the climate game's cicero engine)"
    )
    add_cache_flag(parser)
    add_distributed_flags(parser)
    return parser


def list_text() -> str:
    """The environment × algorithm pairs that train, each with its presets, and in one line per
    algorithm why the other environments are absent (``--list``)."""
    from jaxclimate.algos.registry import algorithms, why_not
    from jaxclimate.core.registry import make, registered_envs
    from jaxclimate.run.assemble import presets_for

    lines = ["environment ids, and the presets each algorithm that trains on them has (`-gpu`: sized for an accelerator):"]
    absent: dict[str, list[str]] = {}
    for env_id in registered_envs():
        env, params = make(env_id)
        named = []
        for name in sorted(algorithms()):
            if why_not(name, env, params) is not None:
                absent.setdefault(name, []).append(env_id)
                continue
            named.append(f"{name}: {', '.join(presets_for(env_id, env, name)) or '(defaults)'}")
        lines.append(f"  {env_id:<28} " + "; ".join(named))
    if absent:
        lines.append("\nnot listed:")
        for name, env_ids in sorted(absent.items()):
            lines.append(f"  {name} on {', '.join(env_ids)}: {algorithms()[name].requires or 'see its docs'}")
    return "\n".join(lines)


def given_flags(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    """The flags ``argv`` sets explicitly (by destination), defaults left out."""
    quiet = argparse.ArgumentParser(add_help=False)
    for action in parser._actions:  # the same flags, every default suppressed
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            quiet._add_action(_copy_without_default(action))
    return vars(quiet.parse_known_args(argv)[0])


def _copy_without_default(action: argparse.Action) -> argparse.Action:
    clone = copy.copy(action)
    clone.default = argparse.SUPPRESS
    clone.required = False
    return clone


def resume_options(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]):
    """The options of the run in ``--resume RUN_DIR``; a flag that would change what the run is
    (its environment, algorithm, budget, …) is refused by name: a resumed run keeps its settings."""
    from jaxclimate.run_options import RunOptions

    path = args.resume / "config.json"
    if not path.exists():
        parser.error(f"--resume: {path} not found")
    record = json.loads(path.read_text())
    given = given_flags(parser, argv)
    same = {name for name, value in given.items() if name in record and record[name] == value}  # e.g. --algo as recorded
    changed = sorted(set(given) - SESSION_FLAGS - same)
    if changed:
        flags = ", ".join("--" + name.replace("_", "-") for name in changed)
        parser.error(
            f"--resume: {flags} would change the run ({record.get('env')}, {record.get('algo')}); a resumed run keeps its own "
            "settings: drop them, or start a new run"
        )
    return RunOptions.from_record(record, run_dir=str(args.resume), resume=True, quiet=args.quiet, no_plots=args.no_plots)


def config_from_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The algorithm config fields the flags set (the shortcuts, then ``--set``), typed like their defaults."""
    from jaxclimate.algos.registry import get_algorithm
    from jaxclimate.run.values import parse_value

    algo = get_algorithm(args.algo)
    fields = {f.name for f in dataclasses.fields(algo.config_cls)}
    config = {}
    for flag, name in SHORTCUTS:
        value = getattr(args, name if name != "federation_period" else "fed")
        if value is not None:
            if name not in fields:
                parser.error(f"{flag} does not apply to {algo.name} (no {algo.config_cls.__name__}.{name})")
            config[name] = value
    defaults = algo.config_cls()
    for key, text in dict(args.set).items():
        if key not in fields:
            parser.error(f"--set: unknown {algo.config_cls.__name__} field {key!r}; fields: {sorted(fields)}")
        try:
            config[key] = parse_value(text, getattr(defaults, key))
        except ValueError as err:
            parser.error(f"--set {key}: {err}")
    return config


def build_options(argv: list[str] | None = None, prog: str = DEFAULT_PROG, doc: str | None = None):
    """The run's :class:`~jaxclimate.run_options.RunOptions` from the command line; a bad flag
    exits 2 with one line naming it, before anything is written."""
    from jaxclimate.loggers import parse_loggers
    from jaxclimate.run.assemble import RunError, configure
    from jaxclimate.run.values import parse_value

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = make_parser(prog, doc)
    args = parser.parse_args(argv)
    if args.list:
        print(list_text())
        raise SystemExit(0)
    if args.resume is not None:
        return resume_options(parser, args, argv)
    try:
        loggers = parse_loggers(args.logger)
    except ValueError as err:
        parser.error(str(err))
    env_overrides = {k: parse_value(v) for k, v in dict(args.env_set).items()}
    env_overrides |= {name: getattr(args, name) for name in ("scenario", "engine") if getattr(args, name) is not None}
    try:
        return configure(
            args.env,
            args.algo,
            preset=args.preset,
            config=config_from_flags(parser, args),
            env_overrides=env_overrides,
            seeds=args.seeds,
            seed=args.seed,
            chunks=args.chunks,
            checkpoint_every=args.checkpoint_every,
            reservoir=args.reservoir,
            rollout={k: parse_value(v) for k, v in dict(args.rollout_set).items()},
            uncertainty=args.uncertainty,
            run_dir=args.run_dir,
            loggers=tuple(loggers),
            wandb_project=args.wandb_project,
            allow_host_callback=args.allow_host_callback,
            quiet=args.quiet,
            no_plots=args.no_plots,
        )
    except RunError as err:
        parser.error(err.as_flag())
