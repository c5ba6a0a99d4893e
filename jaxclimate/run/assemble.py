"""A run from its options: :func:`configure` checks what a run is asked to be and returns its
:class:`~jaxclimate.run_options.RunOptions`; :func:`make_run` builds the environment, the
algorithm's config and the trainer they describe.

Every refusal is a :class:`RunError` naming the option (the command line turns the name into
its flag), raised before anything is written or compiled.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from jaxclimate.algos.registry import algorithms, get_algorithm, why_not
from jaxclimate.core.registry import make, registered_envs
from jaxclimate.core.uncertainty import Randomized, uncertainty_of
from jaxclimate.reporting import TrainingReport, report_for
from jaxclimate.run.presets import default_preset, with_gpu_presets
from jaxclimate.run_options import RunOptions

#: the options that size a run; setting either keeps a preset's CPU meaning (no ``-gpu``)
SIZING = ("total_timesteps", "num_envs")

HOST_CALLBACK_REFUSED = (
    "{env}: every step calls back to the host (a host round trip per step, far slower than a compiled step); "
    "{advice}or allow it (--allow-host-callback, allow_host_callback=True) to train on it anyway"
)

RECURRENT_ON_HOST_DEVICES = (
    "{n} XLA:CPU devices in one process (--xla_force_host_platform_device_count) can hang with a recurrent network "
    "(docs/guide.md); use --cpu-processes {n} instead (one process per core), or --network mlp"
)


class RunError(ValueError):
    """A run that cannot be made as asked: ``option`` names the setting at fault (None where
    the message names it), ``joiner`` goes between the name and the message."""

    def __init__(self, option: str | None, message: str, joiner: str = ": "):
        self.option, self.message, self.joiner = option, message, joiner
        super().__init__(message if option is None else f"{option}{joiner}{message}")

    def as_flag(self) -> str:
        """The message as the command line says it, the option as its ``--flag``."""
        return self.message if self.option is None else f"--{self.option.replace('_', '-')}{self.joiner}{self.message}"


class Run(NamedTuple):
    """What a run's options build: the environment (as evaluated) and its parameters, the
    algorithm's config, the trainer (on the training environment: under ``uncertainty``, each
    episode draws its own parameters) and the environment's training report."""

    env: Any
    env_params: Any
    config: Any
    trainer: Any
    report: TrainingReport


def make_run(options: RunOptions) -> Run:
    """The environment, its parameters, the algorithm's config and the trainer ``options``
    describe; ``ValueError``/``TypeError`` if they cannot train together."""
    env, env_params = make(options.env, **options.env_overrides)
    algo = get_algorithm(options.algo)
    config = algo.config_cls(**options.config)
    refusal = why_not(algo.name, env, env_params, config)
    if refusal is not None:
        raise ValueError(refusal)
    report = report_for(options.env)
    train_env = env
    if options.uncertainty is not None:  # each training episode under its own draw; evaluation stays nominal
        train_env = Randomized(env, uncertainty_of(env, options.uncertainty), env_params)
    trainer = algo.make_trainer(train_env, env_params, config, report.recorder(env, config, options), report.rollout_hook(env, config, options))
    return Run(env, env_params, config, trainer, report)


def presets_for(env_id: str, env, algo_name: str) -> dict[str, dict]:
    """The named hyper-parameter sets ``env_id``'s report has for ``algo_name``, ``-gpu`` variants included."""
    algo = get_algorithm(algo_name)
    return with_gpu_presets(report_for(env_id).presets(env, algo.name), algo.config_cls)


def configure(
    env: str = "climate-mitigation",
    algo: str = "ippo",
    *,
    preset: str | None = None,
    config: dict[str, Any] | None = None,
    env_overrides: dict[str, Any] | None = None,
    seeds: int = 1,
    seed: int = 0,
    chunks: int = 20,
    checkpoint_every: int = 5,
    reservoir: int = 2000,
    rollout: dict[str, Any] | None = None,
    uncertainty: str | None = None,
    run_dir: str | Path | None = None,
    loggers: tuple[str, ...] = (),
    wandb_project: str | None = "jaxclimate",
    allow_host_callback: bool = False,
    quiet: bool = False,
    no_plots: bool = False,
    note: Callable[[str], None] | None = None,
) -> RunOptions:
    """The options of a run of ``algo`` on ``env``, checked: the preset (default: the
    environment's first, its ``-gpu`` variant on an accelerator unless ``config`` sizes the run)
    with ``config``'s fields over it, ``env_overrides`` as :func:`jaxclimate.make` takes them.
    ``note`` receives what the run does unasked (default: printed to stderr unless ``quiet``).

    >>> options = configure("ebm-v1", "apg", config={"total_timesteps": 4000}, run_dir="runs/x")  # doctest: +SKIP
    >>> summary = jaxclimate.run.train(options)                                                   # doctest: +SKIP
    """
    say = note or (lambda text: None if quiet else print(f"note: {text}", file=sys.stderr))
    config, env_overrides = dict(config or {}), dict(env_overrides or {})
    _check_counts(seeds=(seeds, 1), seed=(seed, 0), chunks=(chunks, 1), checkpoint_every=(checkpoint_every, 1), reservoir=(reservoir, 0))
    if env not in registered_envs():
        raise RunError("env", f"must be one of {registered_envs()}, got {env!r}", " ")
    if algo not in algorithms():
        raise RunError("algo", f"must be one of {sorted(algorithms())}, got {algo!r}", " ")
    algorithm, report = get_algorithm(algo), report_for(env)
    defaults = {k: v for k, v in report.env_defaults(algorithm).items() if k not in env_overrides}
    if defaults:
        said = ", ".join(f"{k}={v}" for k, v in defaults.items())
        say(f"{env} trains {algo} with {said} by default (--env-set KEY=VALUE changes it)")
    env_overrides = defaults | env_overrides
    built, env_params = _make_env(env, env_overrides)
    _check_environment(built, env_params, algo, uncertainty, allow_host_callback)
    try:
        for line in report.preflight(built, env_overrides):
            say(line)
    except ValueError as err:
        raise RunError("env", f"{env}: {err}", " ") from None
    presets = presets_for(env, built, algo)
    if preset is not None and preset not in presets:
        raise RunError("preset", f"{built.name} has {sorted(presets) or 'no'} presets for {algo}, got {preset!r}")
    preset = preset if preset is not None else default_preset(presets, sized_by_user=any(k in config for k in SIZING))
    if not presets:
        say(f"{built.name} has no {algo} preset; training with {algorithm.config_cls.__name__}'s defaults and your settings")
    config = _checked_config(algorithm, presets.get(preset, {}) | config, built, env_params)
    run_dir = _checked_run_dir(run_dir, built.name, algo)
    options = RunOptions(
        env=env,
        env_overrides=env_overrides,
        algo=algo,
        preset=preset,
        config=config,
        seeds=seeds,
        seed=seed,
        chunks=chunks,
        checkpoint_every=checkpoint_every,
        reservoir=reservoir,
        rollout=dict(rollout or {}),
        run_dir=run_dir,
        quiet=quiet,
        no_plots=no_plots,
        loggers=tuple(loggers),
        wandb_project=wandb_project,
        uncertainty=uncertainty,
    )
    try:
        make_run(options)
    except (ValueError, TypeError) as err:
        raise RunError("algo", f"{algo} on {built.name}: {err}", " ") from None
    return options


def _check_counts(**counts: tuple[int, int]) -> None:
    for name, (value, low) in counts.items():
        if not isinstance(value, (int, np.integer)) or value < low:
            raise RunError(name, f"must be >= {low}, got {value}", " ")


def _make_env(env_id: str, overrides: dict[str, Any]):
    try:
        return make(env_id, **overrides)
    except (ValueError, TypeError) as err:
        raise RunError("env", f"{env_id}: {err}", " ") from None


def _check_environment(env, env_params, algo: str, uncertainty: str | None, allow_host_callback: bool) -> None:
    """What the environment must offer this run: the algorithm's needs, the named uncertainty,
    and compiled steps (no host round trip per step) unless allowed."""
    refusal = why_not(algo, env, env_params)
    if refusal is not None:
        raise RunError("algo", refusal, " ")  # "--algo ddpg needs …; <env>'s … act in …"
    if uncertainty is not None:
        try:
            uncertainty_of(env, uncertainty).check(env_params)
        except ValueError as err:
            raise RunError("uncertainty", str(err)) from None
    advice = env.capabilities.host_callback
    if advice is not None and not allow_host_callback:
        raise RunError(None, HOST_CALLBACK_REFUSED.format(env=env.name, advice=f"{advice}; " if advice else ""))


def _checked_config(algorithm, config: dict[str, Any], env, env_params) -> dict[str, Any]:
    """``config`` if ``algorithm``'s config class takes it and the budget trains on ``env``."""
    fields = {f.name for f in dataclasses.fields(algorithm.config_cls)}
    unknown = sorted(set(config) - fields)
    if unknown:
        raise RunError("config", f"unknown {algorithm.config_cls.__name__} field {unknown[0]!r}; fields: {sorted(fields)}")
    try:
        built = algorithm.config_cls(**config)
    except (ValueError, TypeError) as err:
        raise RunError(None, str(err)) from None
    refusal = why_not(algorithm.name, env, env_params, built)
    if refusal is not None:
        raise RunError("algo", refusal, " ")
    host_devices = len(jax.local_devices()) if jax.default_backend() == "cpu" else 0
    if config.get("network") in ("lstm", "gru") and host_devices > 1:
        raise RunError(None, RECURRENT_ON_HOST_DEVICES.format(n=host_devices))
    return config


def _checked_run_dir(run_dir: str | Path | None, env_name: str, algo: str) -> str:
    if jax.process_count() > 1 and run_dir is None:
        raise RunError("run_dir", "is needed with several processes (each would pick its own time-stamped default)", " ")
    if run_dir is not None and Path(run_dir).exists() and not Path(run_dir).is_dir():
        raise RunError("run_dir", f"{run_dir} is a file, not a folder")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    tag = re.sub(r"[^A-Za-z0-9_.+-]+", "-", env_name).strip("-")
    return str(run_dir or Path("runs") / f"{tag}-{algo}-{stamp}")


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
    if options.uncertainty is not None:
        line += f", each episode under a draw of the {options.uncertainty!r} uncertainty"
    asked = getattr(config, "total_timesteps", steps)
    if asked != steps:
        line += f" (total_timesteps {asked:,} rounded down to whole updates)"
    return line
