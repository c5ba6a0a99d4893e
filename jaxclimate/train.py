"""``python -m jaxclimate.train``: train any registered algorithm on any jaxclimate environment.

With no arguments it trains recurrent IPPO (LSTM, one network per country, as the paper) on
``climate-mitigation`` scenario (i) with the shipped GRU surrogate — about a minute on a
2-core CPU — and writes a run directory:

* ``config.json`` — everything needed to resume or repeat the run;
* ``metrics.jsonl`` — one JSON line per update (env steps, mean returns per agent and seed,
  the algorithm's losses, and the environment's episode metrics where it reports them);
* ``checkpoints/`` — orbax checkpoints of the full training state every few chunks;
* ``summary.json``, ``returns.png`` (``returns-<group>.png`` with several agent groups) and
  whatever the environment's training report adds (the climate game: ``levers.png``,
  ``temperature.png``, ``trajectories.npz`` for ``python -m jaxclimate.envs.climate_mitigation.consistency``;
  InvestESG: the paper's P100 / W100 curves and the learned policy; the EBM: the learned
  temperature profile and band errors);
* ``tensorboard/`` and ``wandb/`` with ``--logger tensorboard,wandb`` (the same scalars as
  ``metrics.jsonl``, named as :mod:`jaxclimate.loggers` lists).

``--algo`` picks the algorithm (``ippo``, ``ddpg``, ``td3``, ``tqc``), ``--preset`` a named
hyper-parameter set the environment provides for it (the papers' settings; the first is the
default), ``--set KEY=VALUE`` any field of the algorithm's config. Training runs as compiled
chunks under a host loop that shows progress. ``--resume RUN_DIR`` continues from the last
checkpoint and ends exactly where an uninterrupted run would; Ctrl-C saves a checkpoint at the
last finished chunk and exits. Seeds run in one program (``vmap``). Compiled programs are kept in
JAX's persistent compilation cache (``~/.cache/jaxclimate/xla``; see :mod:`jaxclimate._cache`), so
a second run of the same configuration starts without recompiling; ``--no-compile-cache`` (or
``JAXCLIMATE_COMPILE_CACHE=0``) turns it off.

Examples::

    python -m jaxclimate.train                                   # climate game, scenario (i), 1 seed
    python -m jaxclimate.train --scenario ii --seeds 4 --total-timesteps 1000000
    python -m jaxclimate.train --network mlp --set lr=3e-4 --set ent_coef=0.02
    python -m jaxclimate.train --env invest-esg --preset paper_sb3 --seeds 3
    python -m jaxclimate.train --env invest-esg --env-set config=exp_a3 --env-set event_mode=reference_events
    python -m jaxclimate.train --env ebm-v3-a6 --algo ddpg --fed 5 --seeds 10
    python -m jaxclimate.train --env rice-n --env-set protocol=my_protocols.py:MedianFloor   # docs/protocols.md
    python -m jaxclimate.train --env rice-n --env-set protocol=club --env-set negotiation.<field>=VALUE
    python -m jaxclimate.train --env ebm-v1 --logger tensorboard,wandb    # + TensorBoard and W&B
    python -m jaxclimate.train --resume runs/climate-mitigation-i-ippo-20261121-120000
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jaxclimate._xla import use_cpu_safe_xla_flags

use_cpu_safe_xla_flags()  # before JAX starts its backend (see jaxclimate/_xla.py)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate import _cache, _xla, distributed  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.algos.base import run_up_to  # noqa: E402
from jaxclimate.algos.registry import algorithms, get_algorithm  # noqa: E402
from jaxclimate.core.registry import make, registered_envs  # noqa: E402
from jaxclimate.core.uncertainty import Randomized, uncertainty_of  # noqa: E402
from jaxclimate.loggers import MetricsSink, parse_loggers  # noqa: E402
from jaxclimate.reporting import evaluate_policies, nan_mean, plot_returns, report_for  # noqa: E402
from jaxclimate.run_options import RunOptions  # noqa: E402

# --- options ----------------------------------------------------------------------------------


def parse_value(text: str, like: Any = None) -> Any:
    """A command-line value, typed like ``like`` (a default of the field it sets) when given."""
    if isinstance(like, bool) or text.lower() in ("true", "false"):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if isinstance(like, int) and not isinstance(like, bool):
        return int(float(text))
    if isinstance(like, float):
        return float(text)
    if isinstance(like, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def key_value(text: str) -> tuple[str, str]:
    """The argparse ``type`` of the ``KEY=VALUE`` flags: ``(key, value)``, stripped; anything
    else is refused while parsing (exit 2, one line naming the flag)."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add_distributed_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("several processes or hosts (jax.distributed; see docs/guide.md)")
    group.add_argument("--coordinator", metavar="HOST:PORT", help=f"address of process 0's coordinator (or ${distributed.ENV_COORDINATOR})")
    group.add_argument("--num-processes", type=int, help=f"processes in the run (or ${distributed.ENV_NUM_PROCESSES})")
    group.add_argument("--process-id", type=int, help=f"this process, 0..N-1 (or ${distributed.ENV_PROCESS_ID})")
    group.add_argument(
        "--cpu-processes", type=int, metavar="N", help="use N CPU cores as N processes of one run on this machine (loopback jax.distributed)"
    )


def add_cache_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-compile-cache", action="store_true", help="do not read or write JAX's persistent compilation cache (~/.cache/jaxclimate/xla)"
    )


def configure_compile_cache(argv: list[str] | None = None) -> Path | None:
    """Turn the persistent compilation cache on unless ``--no-compile-cache`` is in ``argv``
    (or ``JAXCLIMATE_COMPILE_CACHE=0``); must run before the first compilation."""
    parser = argparse.ArgumentParser(add_help=False)
    add_cache_flag(parser)
    args, _ = parser.parse_known_args(argv)
    return None if args.no_compile_cache else _cache.enable_compilation_cache()


def initialize_distributed(argv: list[str] | None = None) -> bool:
    """Join a multi-process run when ``argv`` (or the environment) names a coordinator; must
    run before any JAX computation, so before :func:`build_options` builds the environment."""
    parser = argparse.ArgumentParser(add_help=False)
    add_distributed_flags(parser)
    args, _ = parser.parse_known_args(argv)
    try:
        return distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None


def start_cpu_processes(argv: list[str]) -> tuple[list[str], list[subprocess.Popen]]:
    """``--cpu-processes N``: start processes 1..N-1 of one run on this machine (loopback
    coordinator, one CPU device each) and return this process's arguments as process 0 with
    the children. Several CPU devices in one process can hang with recurrent networks
    (docs/guide.md); separate processes do not. No ``--cpu-processes``: ``(argv, [])``."""
    parser = argparse.ArgumentParser(prog="python -m jaxclimate.train", add_help=False)
    add_distributed_flags(parser)
    args, _ = parser.parse_known_args(argv)
    if args.cpu_processes is None or args.cpu_processes == 1:
        return argv, []
    if args.cpu_processes < 1 or args.coordinator or args.num_processes or args.process_id is not None:
        parser.error(
            f"--cpu-processes must be >= 1 (got {args.cpu_processes}) and starts its own processes "
            "(no --coordinator, --num-processes or --process-id beside it)"
        )
    base = [a for i, a in enumerate(argv) if not (a.startswith("--cpu-processes") or argv[i - 1 : i] == ["--cpu-processes"])]
    os.environ["XLA_FLAGS"] = _xla.without_flag(os.environ.get("XLA_FLAGS", ""), "xla_force_host_platform_device_count")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    n = args.cpu_processes
    joined = lambda i: [*base, "--coordinator", address, "--num-processes", str(n), "--process-id", str(i)]  # noqa: E731
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    children = [subprocess.Popen([sys.executable, "-m", "jaxclimate.train", *joined(i)], env=env) for i in range(1, n)]
    return joined(0), children


def wait_for(children: list[subprocess.Popen], failed: bool) -> int:
    """Wait for the processes :func:`start_cpu_processes` started (stop them if this one failed);
    the first non-zero exit code, or 0."""
    codes = []
    for child in children:
        if failed:
            child.terminate()
        codes.append(child.wait())
    return next((c for c in codes if c), 0)


RECURRENT_ON_HOST_DEVICES = (
    "{n} XLA:CPU devices in one process (--xla_force_host_platform_device_count) can hang with a recurrent network "
    "(docs/guide.md); use --cpu-processes {n} instead (one process per core), or --network mlp"
)


def _cpu_devices_in_process() -> int:
    return len(jax.local_devices()) if jax.default_backend() == "cpu" else 0


HOST_CALLBACK_REFUSED = (
    "{env}: every step calls back to the host (a host round trip per step, far slower than a compiled step); "
    "{advice}or pass --allow-host-callback to train on it anyway"
)


#: A ``-gpu`` preset's parallel envs per seed, against its base preset's.
GPU_ENV_SCALE = 16


def with_gpu_presets(presets: dict[str, dict], config_cls: type) -> dict[str, dict]:
    """Each on-policy preset and its ``<name>-gpu`` variant, sized to fill an accelerator:
    ``GPU_ENV_SCALE``× the parallel envs and env steps, so the same number of updates, each on
    that many times the samples with minibatches of the same size (``num_minibatches`` scaled
    alike where minibatches are groups of whole sequences)."""
    defaults = config_cls()
    if not all(hasattr(defaults, f) for f in ("num_envs", "total_timesteps", "num_minibatches", "minibatch_size")):
        return dict(presets)
    out = dict(presets)
    for name, preset in presets.items():
        value = lambda key, p=preset: p.get(key, getattr(defaults, key))  # noqa: E731
        sized = {**preset, "num_envs": value("num_envs") * GPU_ENV_SCALE, "total_timesteps": value("total_timesteps") * GPU_ENV_SCALE}
        if value("minibatch_size") == 0:
            sized["num_minibatches"] = value("num_minibatches") * GPU_ENV_SCALE
        out[f"{name}-gpu"] = sized
    return out


def default_preset(presets: dict[str, dict], sized_by_user: bool = False) -> str | None:
    """The environment's first preset, or its ``-gpu`` variant where JAX runs on an accelerator
    and the command line sets neither the env steps nor the envs (those keep the preset's
    meaning: the same steps on 16× the envs would be 16× fewer updates)."""
    first = next(iter(presets), None)
    if first is not None and not sized_by_user and jax.default_backend() != "cpu" and f"{first}-gpu" in presets:
        return f"{first}-gpu"
    return first


def _config_from_flags(parser: argparse.ArgumentParser, args: argparse.Namespace, algo, presets: dict) -> tuple[str | None, dict]:
    """The preset (named, or the default for this device) and the algorithm's config fields it
    and the flags set (``--total-timesteps``, ``--num-envs``, ``--network``, ``--fed``, ``--set``)."""
    sized_by_user = (
        args.total_timesteps is not None or args.num_envs is not None or any(key in ("total_timesteps", "num_envs") for key, _ in args.set)
    )
    preset = args.preset if args.preset is not None else default_preset(presets, sized_by_user)
    config = dict(presets.get(preset, {}))
    fields = {f.name: f for f in dataclasses.fields(algo.config_cls)}
    shortcuts = (
        ("--total-timesteps", "total_timesteps", args.total_timesteps),
        ("--num-envs", "num_envs", args.num_envs),
        ("--network", "network", args.network),
        ("--fed", "federation_period", args.fed),
    )
    for flag, name, value in shortcuts:
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
    return preset, config


def make_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m jaxclimate.train``."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxclimate.train",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples::")[1],
    )
    parser.add_argument("--env", default="climate-mitigation", help=f"environment id (default climate-mitigation): {', '.join(registered_envs())}")
    parser.add_argument("--list", action="store_true", help="list environment ids, algorithms and their presets, then exit")
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
    parser.add_argument(
        "--set", action="append", default=[], type=key_value, metavar="KEY=VALUE", help="algorithm config field override (repeatable)"
    )
    parser.add_argument(
        "--env-set",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="environment parameter or constructor option override (dotted for a nested parameter, e.g. negotiation.bca_rate=0.5)",
    )
    parser.add_argument(
        "--rollout-set",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="rollout option of the environment's training report (invest-esg: seed_years, seed_companies, ...)",
    )
    parser.add_argument("--chunks", type=int, default=20, help="compiled chunks the run is split into (progress granularity; default 20)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="checkpoint every N chunks (default 5; always at the end)")
    parser.add_argument("--reservoir", type=int, default=2000, help="climate game: training episodes kept per seed for the consistency replay")
    parser.add_argument("--run-dir", type=Path, help="output directory (default runs/<env>-<algo>-<time>)")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint")
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
    """Environment ids, with each algorithm's presets for them (``--list``)."""
    lines = ["environment ids, and the presets each algorithm has for them (`-gpu`: sized for an accelerator):"]
    for env_id in registered_envs():
        env, _ = make(env_id)
        report = report_for(env_id)
        named = []
        for name in sorted(algorithms()):
            algo = get_algorithm(name)
            presets = with_gpu_presets(report.presets(env, algo.name), algo.config_cls)
            named.append(f"{name}: {', '.join(presets) or '(defaults)'}")
        lines.append(f"  {env_id:<28} " + "; ".join(named))
    return "\n".join(lines)


def _check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The numeric flags' valid ranges, which argparse does not know: one line each, before anything is built."""
    for flag, value, low in (
        ("--seeds", args.seeds, 1),
        ("--seed", args.seed, 0),
        ("--chunks", args.chunks, 1),
        ("--checkpoint-every", args.checkpoint_every, 1),
        ("--reservoir", args.reservoir, 0),
    ):
        if value < low:
            parser.error(f"{flag} must be >= {low}, got {value}")


def build_options(argv: list[str] | None = None) -> RunOptions:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.list:
        print(list_text())
        raise SystemExit(0)
    if args.resume is not None:
        path = args.resume / "config.json"
        if not path.exists():
            parser.error(f"--resume: {path} not found")
        record = json.loads(path.read_text())
        return RunOptions.from_record(record, run_dir=str(args.resume), resume=True, quiet=args.quiet, no_plots=args.no_plots)

    if args.env not in registered_envs():
        parser.error(f"--env must be one of {registered_envs()}, got {args.env!r}")
    try:
        loggers = parse_loggers(args.logger)
    except ValueError as err:
        parser.error(str(err))
    _check_flags(parser, args)
    algo = get_algorithm(args.algo)
    user_overrides = {k: parse_value(v) for k, v in dict(args.env_set).items()}
    env_defaults = {k: v for k, v in report_for(args.env).env_defaults(algo).items() if k not in user_overrides}
    if env_defaults and not args.quiet:
        said = ", ".join(f"{k}={v}" for k, v in env_defaults.items())
        print(f"note: {args.env} trains {algo.name} with {said} by default (--env-set KEY=VALUE changes it)", file=sys.stderr)
    env_overrides = env_defaults | user_overrides
    for name in ("scenario", "engine"):
        if getattr(args, name) is not None:
            env_overrides[name] = getattr(args, name)
    try:
        env, env_params = make(args.env, **env_overrides)
    except (ValueError, TypeError) as err:
        parser.error(f"--env {args.env}: {err}")
    if args.uncertainty is not None:
        try:
            uncertainty_of(env, args.uncertainty).check(env_params)
        except ValueError as err:
            parser.error(f"--uncertainty: {err}")
    if env.uses_host_callback and not args.allow_host_callback:
        advice = f"{env.host_callback_advice}; " if env.host_callback_advice else ""
        parser.error(HOST_CALLBACK_REFUSED.format(env=env.name, advice=advice))
    presets = with_gpu_presets(report_for(args.env).presets(env, algo.name), algo.config_cls)
    if args.preset is not None and args.preset not in presets:
        parser.error(f"--preset: {env.name} has {sorted(presets) or 'no'} presets for {algo.name}, got {args.preset!r}")
    preset, config = _config_from_flags(parser, args, algo, presets)
    if not presets:
        print(
            f"note: {env.name} has no {algo.name} preset; training with {algo.config_cls.__name__}'s defaults and your "
            f"flags (python -m jaxclimate.train --list shows the presets)",
            file=sys.stderr,
        )
    try:
        algo.config_cls(**config)
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    host_devices = _cpu_devices_in_process()
    if config.get("network") in ("lstm", "gru") and host_devices > 1:
        parser.error(RECURRENT_ON_HOST_DEVICES.format(n=host_devices))
    if jax.process_count() > 1 and args.run_dir is None:
        parser.error("--run-dir is needed with several processes (each would pick its own time-stamped default)")
    if args.run_dir is not None and args.run_dir.exists() and not args.run_dir.is_dir():
        parser.error(f"--run-dir: {args.run_dir} is a file, not a folder")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    tag = re.sub(r"[^A-Za-z0-9_.+-]+", "-", env.name).strip("-")
    options = RunOptions(
        env=args.env,
        env_overrides=env_overrides,
        algo=algo.name,
        preset=preset,
        config=config,
        seeds=args.seeds,
        seed=args.seed,
        chunks=args.chunks,
        checkpoint_every=args.checkpoint_every,
        reservoir=args.reservoir,
        rollout={k: parse_value(v) for k, v in dict(args.rollout_set).items()},
        run_dir=str(args.run_dir or Path("runs") / f"{tag}-{algo.name}-{stamp}"),
        resume=False,
        quiet=args.quiet,
        no_plots=args.no_plots,
        loggers=tuple(loggers),
        wandb_project=args.wandb_project,
        uncertainty=args.uncertainty,
    )
    try:
        make_run(options)
    except (ValueError, TypeError) as err:
        parser.error(f"--algo {algo.name} on {env.name}: {err}")
    return options


# --- the run ------------------------------------------------------------------------------------


def resolved_config(config: Any, env_params: Any, options: RunOptions) -> dict[str, Any]:
    """What the run actually uses, defaults included: every field of the algorithm's config,
    the environment's parameters (arrays of more than 64 values by shape only), and the env
    steps the run will take per seed (whole updates: at most ``total_timesteps``)."""
    params = {}
    for field in dataclasses.fields(env_params):
        value = np.asarray(getattr(env_params, field.name))
        params[field.name] = value.tolist() if value.size <= 64 else f"array{list(value.shape)}"
    return {
        "algo_config": dataclasses.asdict(config),
        "env_params": params,
        "updates": config.num_updates,
        "env_steps_per_update": config.steps_per_update,
        "env_steps_per_seed": config.num_updates * config.steps_per_update,
        "seeds": options.seeds,
    }


def steps_line(config: Any, options: RunOptions) -> str:
    """The run's length as it will be, said once at the start (and why, where it differs from the request)."""
    steps = config.num_updates * config.steps_per_update
    line = (
        f"{options.algo} on {options.env}: {config.num_updates:,} updates × {config.steps_per_update:,} env "
        f"steps = {steps:,} env steps per seed, {options.seeds} seed(s)"
    )
    asked = getattr(config, "total_timesteps", steps)
    if asked != steps:
        line += f" (total_timesteps {asked:,} rounded down to whole updates)"
    return line


def _chunk_sizes(num_updates: int, chunks: int) -> list[int]:
    chunks = min(chunks, num_updates)
    base, extra = divmod(num_updates, chunks)
    return [base + (1 if i < extra else 0) for i in range(chunks)]


def metric_lines(metrics: dict, first_update: int, steps_per_update: int) -> list[str]:
    """One JSON line per update. ``metrics[group][name]`` is (seeds, updates, ...): returns are
    kept per seed and agent, everything else averaged over seeds (and learners);
    ``metrics["episode"]`` (the environment's episode metrics) is kept per seed."""
    host = jax.tree_util.tree_map(np.asarray, metrics)
    n = jax.tree_util.tree_leaves(host)[0].shape[1]
    lines = []
    for i in range(n):
        update = first_update + i + 1
        row: dict[str, Any] = {"update": update, "env_steps": update * steps_per_update}
        for key, m in host.items():
            if key == "episode":
                row["episode"] = {name: v[:, i].tolist() for name, v in m.items()}
                continue
            row[key] = {
                "episode_return": m["episode_return"][:, i].tolist(),  # [seed][agent]
                "episode_return_mean": nan_mean(m["episode_return"][:, i]),  # NaN: no episode finished
                **{name: float(v[:, i].mean()) for name, v in m.items() if name != "episode_return"},
            }
        lines.append(json.dumps(row))
    return lines


def make_run(options: RunOptions) -> tuple[Any, Any, Any, Any]:
    """The environment, its parameters, the algorithm's config and the trainer ``options``
    describe; ``ValueError``/``TypeError`` if they cannot train together."""
    env, env_params = make(options.env, **options.env_overrides)
    algo = get_algorithm(options.algo)
    config = algo.config_cls(**options.config)
    report = report_for(options.env)
    train_env = env
    if options.uncertainty is not None:  # each training episode under its own draw; evaluation stays nominal
        train_env = Randomized(env, uncertainty_of(env, options.uncertainty), env_params)
    trainer = algo.make_trainer(train_env, env_params, config, report.recorder(env, config, options), report.rollout_hook(env, config, options))
    return env, env_params, config, trainer


def run(options: RunOptions, stop_after_chunks: int | None = None) -> dict[str, Any]:
    """Train as ``options`` say (see :func:`build_options`); returns the summary dict.
    ``stop_after_chunks`` stops early as an interrupt would (after saving a checkpoint)."""
    from jaxclimate.checkpoint import Checkpointer

    run_dir = Path(options.run_dir)
    writer = distributed.is_writer()  # process 0 writes the run's files; every process computes
    if not options.resume and (run_dir / "checkpoints").exists() and any((run_dir / "checkpoints").iterdir()):
        raise SystemExit(f"error: {run_dir} already holds checkpoints; continue it with --resume {run_dir} or choose another --run-dir")
    env, env_params, config, trainer = make_run(options)  # a run that cannot start leaves no folder behind
    run_dir.mkdir(parents=True, exist_ok=True)
    if not options.resume and writer:
        resolved = resolved_config(config, env_params, options)
        atomic_write_text(run_dir / "config.json", json.dumps(dict(options.recorded(), resolved=resolved), indent=2, default=str) + "\n")
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
    sink = MetricsSink(run_dir, options, writer)
    algo, report = get_algorithm(options.algo), report_for(options.env)
    seeds = options.seeds
    # the seed axis laid over every device of every process (one device: plain jit(vmap))
    placement = distributed.RunPlacement.over_devices(seeds)
    keys = placement.from_host(np.asarray(jax.random.split(jax.random.PRNGKey(options.seed), seeds)))
    init = placement.compile(trainer.init).trace(keys)  # traced once: its shapes, then its program
    check_state_fits(init.out_info, config, placement)
    if writer and not options.quiet:
        print(steps_line(config, options), file=sys.stderr)
    state = init.lower().compile()(keys)
    sizes = _chunk_sizes(config.num_updates, options.chunks)
    ckpt = Checkpointer(run_dir / "checkpoints")
    done_chunks = 0
    if options.resume:
        state, done_chunks = _resume(state, ckpt, placement, sizes, config.steps_per_update, run_dir, writer)
    length = max(sizes)  # one program for every chunk size (they differ by one update at most)
    # the state lives once (donated); each chunk says what went non-finite
    runner = placement.compile(lambda rs, n: _run_and_check(trainer, rs, n, length), donate=True, num_shared=1)

    bar = _progress_bar(
        f"{algo.name.upper()} {env.name}", config.num_updates, sum(sizes[:done_chunks]), config.steps_per_update * seeds, options.quiet or not writer
    )
    interrupted = False
    wall = time.perf_counter()
    chunks_done = done_chunks  # chunks whose state *and* metrics are complete

    def record(chunk: int, metrics: Any) -> None:
        """Write a finished chunk's metrics and move the progress bar."""
        rows = jax.tree_util.tree_map(lambda x: x[:, : sizes[chunk]], placement.to_host(metrics))  # (seeds, updates, ...)
        lines = metric_lines(rows, sum(sizes[:chunk]), config.steps_per_update)
        sink.write(lines)
        last = json.loads(lines[-1])
        bar.update(sizes[chunk] * config.steps_per_update * seeds)
        bar.set_postfix(
            {g: "no episode ended" if np.isnan(last[g]["episode_return_mean"]) else f"{last[g]['episode_return_mean']:.3f}" for g in env.agents}
        )

    pending, non_finite = None, None  # pending: (chunk, metrics) computed on the device, metrics not yet written
    try:
        for chunk in range(done_chunks, len(sizes)):
            if stop_after_chunks is not None and chunk - done_chunks >= stop_after_chunks:
                interrupted = True
                break
            state, metrics, flags = runner(state, placement.shared(np.int32(sizes[chunk])))  # the old state is donated to the new one
            pending = (chunk, metrics)
            record(chunk, metrics)
            pending = None
            non_finite = _first_non_finite(placement.to_host(flags), chunk, ckpt.latest_step() or 0)
            if non_finite:
                break
            chunks_done = chunk + 1
            if (chunk + 1) % options.checkpoint_every == 0 or chunk + 1 == len(sizes):
                ckpt.save(chunk + 1, placement.to_host(state))
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: saving the last finished chunk", file=sys.stderr)
        if pending is not None:  # the chunk had finished on the device: keep it
            record(*pending)
            chunks_done = pending[0] + 1
    bar.close()
    sink.close()
    elapsed = time.perf_counter() - wall
    if non_finite:
        ckpt.close()
        print(non_finite, file=sys.stderr)
        return {"non_finite": non_finite, "chunks_done": chunks_done}
    if interrupted:
        return _stop(state, chunks_done, sizes, ckpt, placement, run_dir, writer)
    host_state = placement.to_host(state)
    ckpt.close()
    if not writer:
        return {"process": jax.process_index(), "devices": placement.num_devices, "state": host_state}
    devices = {"count": placement.num_devices, "processes": jax.process_count(), "kind": placement.mesh.devices.flat[0].device_kind}
    summary = _finish(env, env_params, trainer, host_state, options, run_dir, elapsed, report, devices)
    summary["state"] = host_state
    return summary


def _resume(state, ckpt, placement, sizes: list[int], steps_per_update: int, run_dir: Path, writer: bool) -> tuple[Any, int]:
    """The latest checkpoint's state and its chunk count; a run killed before its first
    checkpoint (a preempted job restarted with --resume) starts from the beginning."""
    restored, done_chunks = ckpt.restore_latest(like=state), 0
    if restored is not None:
        state, done_chunks = placement.from_host(restored), int(ckpt.latest_step())
    if writer:
        _truncate_metrics(run_dir / "metrics.jsonl", sum(sizes[:done_chunks]))
        print(
            f"resuming {run_dir} after chunk {done_chunks}/{len(sizes)} ({sum(sizes[:done_chunks]) * steps_per_update:,} env steps per seed)"
            if done_chunks
            else f"resuming {run_dir}: no checkpoint yet, starting it from the beginning with its saved configuration"
        )
    return state, done_chunks


def _run_and_check(trainer, state, n: jax.Array, length: int) -> tuple[Any, Any, dict[str, jax.Array]]:
    """``n`` (traced, ≤ ``length``) updates of one run, their metrics in ``length`` rows, and
    whether its training state (parameters, optimiser and env state, buffers) or its losses
    went non-finite: a pass over them inside the program."""
    state, metrics = run_up_to(trainer.run, state, n, length)

    def non_finite(leaves) -> jax.Array:
        floats = [x for x in leaves if jnp.issubdtype(x.dtype, jnp.inexact)]
        return jnp.any(jnp.stack([~jnp.all(jnp.isfinite(x)) for x in floats])) if floats else jnp.zeros((), bool)

    losses = [x for path, x in jax.tree_util.tree_leaves_with_path(metrics) if "loss" in jax.tree_util.keystr(path)]
    return state, metrics, {"training state": non_finite(jax.tree_util.tree_leaves(state)), "losses": non_finite(losses)}


def _first_non_finite(flags: dict[str, np.ndarray], chunk: int, last_finite: int) -> str | None:
    """One line naming the chunk, the seed and the quantity that went non-finite, or None."""
    for quantity in ("losses", "training state"):
        seeds = np.flatnonzero(np.asarray(flags[quantity]))
        if seeds.size:
            kept = f"the last finite checkpoint is chunk {last_finite}" if last_finite else "no checkpoint was kept"
            return (
                f"error: non-finite {quantity} in chunk {chunk + 1}, seed {int(seeds[0])}"
                f"{f' (and {seeds.size - 1} more)' if seeds.size > 1 else ''}: training stopped; {kept}"
            )
    return None


def _stop(state, chunks_done: int, sizes: list[int], ckpt, placement, run_dir: Path, writer: bool) -> dict[str, Any]:
    """End an interrupted run at its last finished chunk: metrics cut there, a checkpoint saved."""
    # interrupted in the instant between a chunk's call and taking its result: the state it
    # was given is gone (donated), so the run continues from its last checkpoint
    host_state = None
    if _donated(state):
        chunks_done = int(ckpt.latest_step() or 0)
    else:
        host_state = placement.to_host(state)
    if writer:
        _truncate_metrics(run_dir / "metrics.jsonl", sum(sizes[:chunks_done]))
    if host_state is not None and ckpt.latest_step() != chunks_done:
        ckpt.save(chunks_done, host_state)
    resumable = ckpt.latest_step() is not None
    ckpt.close()
    if writer:
        print(
            f"stopped after {chunks_done}/{len(sizes)} chunks; "
            + (f"continue with: python -m jaxclimate.train --resume {run_dir}" if resumable else "no checkpoint yet: start again")
        )
    return {"interrupted": True, "chunks_done": chunks_done, "state": host_state}


def _donated(tree: Any) -> bool:
    return any(getattr(x, "is_deleted", lambda: False)() for x in jax.tree_util.tree_leaves(tree))


def check_state_fits(state_shapes: Any, config, placement) -> None:
    """Refuse, before anything is allocated, a run whose training state (``state_shapes``, every
    seed's; replay buffers included) would not fit its devices, naming the settings to lower."""
    from jaxclimate.memory import check_fits, tree_bytes

    per_device = tree_bytes(state_shapes) / placement.num_devices
    lower = "--seeds or --num-envs" + (" or --set buffer_size=…" if hasattr(config, "buffer_size") else "")
    try:
        check_fits(per_device, "the training state", lower, jax.local_devices()[0])
    except MemoryError as err:
        raise SystemExit(f"error: {err}") from None


def _truncate_metrics(path: Path, updates: int) -> None:
    """Drop metric lines written after the checkpoint we resume from."""
    if path.exists():
        lines = [line for line in path.read_text().splitlines() if line.strip()][:updates]
        atomic_write_text(path, "".join(line + "\n" for line in lines))


# --- the end of a run: evaluation, summary, plots ----------------------------------------------


def _progress_bar(desc: str, updates: int, updates_done: int, steps_per_update: int, disable: bool):
    """The run's progress bar, in env steps over every seed, starting where a resumed run stands."""
    from tqdm.auto import tqdm

    total, initial = updates * steps_per_update, updates_done * steps_per_update
    return tqdm(total=total, initial=initial, unit="step", unit_scale=True, desc=desc, disable=disable, smoothing=0.3)


def _finish(env, env_params, trainer, state, options: RunOptions, run_dir, elapsed, report, devices) -> dict[str, Any]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    last = rows[-5:]
    summary: dict[str, Any] = {
        "env": env.name,
        "algo": options.algo,
        "preset": options.preset,
        "seeds": options.seeds,
        "updates": len(rows),
        "env_steps_per_seed": rows[-1]["env_steps"],
        "wall_seconds_this_session": elapsed,
        "device": devices["kind"],
        "devices": devices,
        "final_return": {g: nan_mean([r[g]["episode_return"] for r in last], axis=(0, 1)).tolist() for g in env.agents},
    }
    if "episode" in rows[-1]:  # the environment's episode metrics, mean over the last updates and seeds
        summary["final_episode_metrics"] = {name: nan_mean([r["episode"][name] for r in last], axis=(0, 1)).tolist() for name in rows[-1]["episode"]}
    evaluations = evaluate_policies(env, env_params, trainer, state)
    summary.update(report.summarize(env, env_params, trainer, state, rows, evaluations, options, run_dir))
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    _print_summary(summary, env, report)
    if not options.no_plots:
        plot_returns(env, rows, run_dir)
        report.plot(env, rows, summary, evaluations, run_dir)
    return summary


def _print_summary(summary: dict, env, report) -> None:
    print(
        f"\n{summary['env']} ({summary['algo']}): {summary['updates']} updates, {summary['env_steps_per_seed']:,} env steps per "
        f"seed, {summary['seeds']} seed(s), {summary['wall_seconds_this_session']:.1f} s"
    )
    for group, returns in summary["final_return"].items():
        if np.isnan(returns).all():  # episodes longer than the updates' rollouts, or too few updates
            print(f"\n[{group}] no episode ended during the last updates: no episode return yet (train longer)")
            continue
        print(f"\n[{group}] mean episode return of the last updates\n{'agent':>6} {'return':>12}")
        for i, r in enumerate(returns):
            print(f"{i:>6} {r:>12.4f}")
    for line in report.summary_lines(summary):
        print(line)


def main(argv: list[str] | None = None) -> int:
    argv, children = start_cpu_processes(sys.argv[1:] if argv is None else list(argv))
    code = 1
    try:
        configure_compile_cache(argv)
        initialize_distributed(argv)
        options = build_options(argv)
        if distributed.is_writer():
            print(f"run directory: {options.run_dir}")
        result = run(options)
        code = 130 if result.get("interrupted") else 1 if result.get("non_finite") else 0
    finally:
        if children:  # they wait at jax.distributed's shutdown barrier for this process: reach it first
            jax.distributed.shutdown()
        code = code or wait_for(children, failed=code != 0)
    return code


if __name__ == "__main__":
    sys.exit(main())
