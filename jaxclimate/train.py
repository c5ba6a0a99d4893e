"""``python -m jaxclimate.train``: train IPPO on a jaxclimate environment.

With no arguments it trains recurrent IPPO (LSTM, one network per country, as the paper) on
``climate-mitigation`` scenario (i) with the shipped GRU surrogate — about a minute on a
2-core CPU — and writes a run directory:

* ``config.json`` — everything needed to resume or repeat the run;
* ``metrics.jsonl`` — one JSON line per update (env steps, mean returns per agent, losses);
* ``checkpoints/`` — orbax checkpoints of the full training state every few chunks;
* ``summary.json``, ``returns.png`` (and for the climate game ``levers.png``,
  ``temperature.png``, ``trajectories.npz`` — the reservoir of training episodes that
  ``python -m jaxclimate.evaluation.consistency RUN_DIR`` replays through CICERO-SCM).

Training runs as compiled chunks of updates under a host loop that shows progress.
``--resume RUN_DIR`` continues from the last checkpoint and ends exactly where an
uninterrupted run would; Ctrl-C saves a checkpoint at the last finished chunk and exits.
Seeds run in one program (``vmap``).

Examples::

    python -m jaxclimate.train                                   # scenario (i), 1 seed
    python -m jaxclimate.train --scenario ii --seeds 4 --total-timesteps 1000000
    python -m jaxclimate.train --network mlp --set lr=3e-4 --set ent_coef=0.02
    python -m jaxclimate.train --env-set damage_coefficient=0.006
    python -m jaxclimate.train --resume runs/climate-mitigation-i-20261121-120000
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from jaxclimate._xla import use_cpu_safe_xla_flags

use_cpu_safe_xla_flags()  # before JAX starts its backend (see jaxclimate/_xla.py)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate._io import atomic_savez, atomic_write_text  # noqa: E402
from jaxclimate.algos.ippo import IPPOConfig, make_trainer  # noqa: E402
from jaxclimate.core.registry import make, registered_envs  # noqa: E402

#: Per-environment IPPO defaults (the CLI's starting point; ``--set`` overrides).
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "climate-mitigation": dict(
        total_timesteps=120_000, num_envs=16, num_steps=35, network="lstm", hidden_size=64, lr=1e-3,
        gamma=0.999, gae_lambda=0.95, ent_coef=0.01, update_epochs=4, num_minibatches=4,
    ),
}
LEVERS = ("energy", "methane", "agriculture", "adaptation")


# --- options ----------------------------------------------------------------------------------


def _parse_value(text: str, like: Any = None) -> Any:
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


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"error: {what} takes KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def build_options(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m jaxclimate.train", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("Examples::")[1],
    )
    parser.add_argument("--env", default="climate-mitigation", help="environment id (default climate-mitigation)")
    parser.add_argument("--scenario", default="i", choices=["i", "ii"], help="climate-mitigation scenario (default i)")
    parser.add_argument("--engine", default="gru", help="climate engine for climate-mitigation: gru (default), cicero, ...")
    parser.add_argument("--algo", default="ippo", choices=["ippo"], help="learning algorithm (default ippo)")
    parser.add_argument("--seeds", type=int, default=1, help="independent seeds trained in one program (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--total-timesteps", type=int, help="env steps per seed (default: per env, 120k for the climate game)")
    parser.add_argument("--num-envs", type=int, help="parallel environments per seed")
    parser.add_argument("--network", choices=["mlp", "lstm", "gru"], help="actor-critic network")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="IPPOConfig field override (repeatable)")
    parser.add_argument("--env-set", action="append", default=[], metavar="KEY=VALUE", help="environment parameter or option override")
    parser.add_argument("--chunks", type=int, default=20, help="compiled chunks the run is split into (progress granularity; default 20)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="checkpoint every N chunks (default 5; always at the end)")
    parser.add_argument("--reservoir", type=int, default=2000, help="training episodes kept per seed for the consistency replay")
    parser.add_argument("--run-dir", type=Path, help="output directory (default runs/<env>-<scenario>-<time>)")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    if args.resume is not None:
        path = args.resume / "config.json"
        if not path.exists():
            parser.error(f"--resume: {path} not found")
        options = json.loads(path.read_text())
        options.update(run_dir=str(args.resume), resume=True, quiet=args.quiet, no_plots=args.no_plots)
        return options

    if args.env not in registered_envs():
        parser.error(f"--env must be one of {registered_envs()}, got {args.env!r}")
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    ippo = dict(ENV_DEFAULTS.get("climate-mitigation" if args.env.startswith("climate-mitigation") else args.env, {}))
    for name, value in (("total_timesteps", args.total_timesteps), ("num_envs", args.num_envs), ("network", args.network)):
        if value is not None:
            ippo[name] = value
    fields = {f.name: f for f in dataclasses.fields(IPPOConfig)}
    defaults = IPPOConfig()
    for key, text in _pairs(args.set, "--set").items():
        if key not in fields:
            parser.error(f"--set: unknown IPPOConfig field {key!r}; fields: {sorted(fields)}")
        try:
            ippo[key] = _parse_value(text, getattr(defaults, key))
        except ValueError as err:
            parser.error(f"--set {key}: {err}")
    try:
        IPPOConfig(**ippo)
    except ValueError as err:
        parser.error(str(err))
    env_overrides = {k: _parse_value(v) for k, v in _pairs(args.env_set, "--env-set").items()}
    if args.env.startswith("climate-mitigation"):
        env_overrides = {"scenario": args.scenario, "engine": args.engine, **env_overrides}
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    tag = f"{args.env}-{args.scenario}" if args.env == "climate-mitigation" else args.env
    return dict(
        env=args.env, env_overrides=env_overrides, algo=args.algo, ippo=ippo, seeds=args.seeds, seed=args.seed,
        chunks=max(1, args.chunks), checkpoint_every=max(1, args.checkpoint_every), reservoir=args.reservoir,
        run_dir=str(args.run_dir or Path("runs") / f"{tag}-{stamp}"), resume=False, quiet=args.quiet, no_plots=args.no_plots,
    )


# --- the run ------------------------------------------------------------------------------------


def _is_climate_game(env) -> bool:
    from jaxclimate.envs.climate_mitigation import ClimateMitigation

    return isinstance(env, ClimateMitigation)


def _chunk_sizes(num_updates: int, chunks: int) -> list[int]:
    chunks = min(chunks, num_updates)
    base, extra = divmod(num_updates, chunks)
    return [base + (1 if i < extra else 0) for i in range(chunks)]


def _metric_lines(metrics: dict, first_update: int, steps_per_update: int) -> list[str]:
    """One JSON line per update; metrics[group][name] is (seeds, updates, ...)."""
    host = jax.tree_util.tree_map(np.asarray, metrics)
    n = next(iter(host.values()))["episode_return"].shape[1]
    lines = []
    for i in range(n):
        update = first_update + i + 1
        row: dict[str, Any] = {"update": update, "env_steps": update * steps_per_update}
        for group, m in host.items():
            row[group] = {
                "episode_return": m["episode_return"][:, i].tolist(),  # [seed][agent]
                "episode_return_mean": float(m["episode_return"][:, i].mean()),
                **{k: float(m[k][:, i].mean()) for k in ("loss", "actor_loss", "value_loss", "entropy", "approx_kl")},
            }
        lines.append(json.dumps(row))
    return lines


def run(options: dict[str, Any], stop_after_chunks: int | None = None) -> dict[str, Any]:
    """Train as ``options`` say (see :func:`build_options`); returns the summary dict.
    ``stop_after_chunks`` stops early as an interrupt would (after saving a checkpoint)."""
    from jaxclimate.checkpoint import Checkpointer
    from jaxclimate.evaluation.consistency import EpisodeReservoir

    run_dir = Path(options["run_dir"])
    if not options["resume"] and (run_dir / "checkpoints").exists() and any((run_dir / "checkpoints").iterdir()):
        raise SystemExit(f"error: {run_dir} already holds checkpoints; continue it with --resume {run_dir} or choose another --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    if not options["resume"]:
        saved = {k: v for k, v in options.items() if k not in ("resume", "quiet", "no_plots")}
        atomic_write_text(run_dir / "config.json", json.dumps(saved, indent=2) + "\n")
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
    env, env_params = make(options["env"], **options["env_overrides"])
    config = IPPOConfig(**options["ippo"])
    climate_game = _is_climate_game(env)
    recorder = EpisodeReservoir(options["reservoir"], config.num_envs) if climate_game and options["reservoir"] > 0 else None
    trainer = make_trainer(env, env_params, config, recorder)
    seeds = options["seeds"]
    keys = jax.random.split(jax.random.PRNGKey(options["seed"]), seeds)
    state = jax.jit(jax.vmap(trainer.init))(keys)
    sizes = _chunk_sizes(config.num_updates, options["chunks"])
    ckpt = Checkpointer(run_dir / "checkpoints")
    done_chunks = 0
    if options["resume"]:
        restored = ckpt.restore_latest(like=state)
        if restored is None:
            raise SystemExit(f"--resume: no checkpoint in {run_dir / 'checkpoints'}")
        state, done_chunks = restored, int(ckpt.latest_step())
        _truncate_metrics(run_dir / "metrics.jsonl", sum(sizes[:done_chunks]))
    runners = {}

    def compiled(n: int):
        if n not in runners:
            runners[n] = jax.jit(jax.vmap(lambda rs: trainer.run(rs, n)))
        return runners[n]

    from tqdm.auto import tqdm

    total = config.num_updates * config.steps_per_update * seeds
    bar = tqdm(total=total, initial=sum(sizes[:done_chunks]) * config.steps_per_update * seeds, unit="step",
               unit_scale=True, desc=f"IPPO {env.name}", disable=options["quiet"], smoothing=0.3)
    interrupted = False
    wall = time.perf_counter()
    chunks_done = done_chunks  # chunks whose state *and* metrics are complete
    try:
        for chunk in range(done_chunks, len(sizes)):
            if stop_after_chunks is not None and chunk - done_chunks >= stop_after_chunks:
                interrupted = True
                break
            first_update = sum(sizes[:chunk])
            new_state, metrics = compiled(sizes[chunk])(state)
            lines = _metric_lines(metrics, first_update, config.steps_per_update)
            with open(run_dir / "metrics.jsonl", "a", encoding="utf8") as f:
                f.write("\n".join(lines) + "\n")
            state, chunks_done = new_state, chunk + 1
            last = json.loads(lines[-1])
            bar.update(sizes[chunk] * config.steps_per_update * seeds)
            bar.set_postfix({g: f"{last[g]['episode_return_mean']:.3f}" for g in env.agents})
            if (chunk + 1) % options["checkpoint_every"] == 0 or chunk + 1 == len(sizes):
                ckpt.save(chunk + 1, state)
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: saving the last finished chunk", file=sys.stderr)
    bar.close()
    elapsed = time.perf_counter() - wall
    if interrupted:
        _truncate_metrics(run_dir / "metrics.jsonl", sum(sizes[:chunks_done]))
        if ckpt.latest_step() != chunks_done:
            ckpt.save(chunks_done, state)
        ckpt.close()
        print(f"stopped after {chunks_done}/{len(sizes)} chunks; continue with: python -m jaxclimate.train --resume {run_dir}")
        return {"interrupted": True, "chunks_done": chunks_done, "state": state}
    ckpt.close()
    summary = _finish(env, env_params, trainer, state, options, run_dir, elapsed, climate_game, recorder)
    summary["state"] = state
    return summary


def _truncate_metrics(path: Path, updates: int) -> None:
    """Drop metric lines written after the checkpoint we resume from."""
    if path.exists():
        lines = [line for line in path.read_text().splitlines() if line.strip()][:updates]
        atomic_write_text(path, "".join(line + "\n" for line in lines))


# --- the end of a run: evaluation, summary, plots ----------------------------------------------


def evaluate_policy(env, env_params, trainer, state, seed_index: int = 0) -> dict[str, np.ndarray]:
    """One deterministic episode of seed ``seed_index``'s policy: actions, rewards, and for
    the climate game the temperatures 2016..2065."""
    params = jax.tree_util.tree_map(lambda x: x[seed_index], state.params)
    carry = jax.tree_util.tree_map(lambda x: x[seed_index][:, :1], state.carry)
    act, step = jax.jit(trainer.act), jax.jit(env.step)
    obs, env_state = env.reset(jax.random.PRNGKey(0), env_params)
    first = jnp.ones((1,), bool)
    actions_log, rewards_log, temps = [], [], []
    for t in range(int(getattr(env_params, "max_steps", 1000))):
        batch = jax.tree_util.tree_map(lambda x: x[None], obs)
        actions, carry = act(params, batch, carry, first, jax.random.PRNGKey(t))
        actions = jax.tree_util.tree_map(lambda x: x[0], actions)
        obs, env_state, rewards, terminated, truncated, info = step(jax.random.PRNGKey(t), env_state, actions, env_params)
        first = jnp.zeros((1,), bool)
        actions_log.append(jax.tree_util.tree_map(np.asarray, actions))
        rewards_log.append(jax.tree_util.tree_map(np.asarray, rewards))
        if "temperature" in info:
            temps.append(float(info["temperature"]))
        if bool(terminated) or bool(truncated):
            if "lookahead_temperatures" in info:
                temps.extend(np.asarray(info["lookahead_temperatures"]).tolist())
            break
    stack = lambda logs: {g: np.stack([x[g] for x in logs]) for g in logs[0]}  # noqa: E731
    return {"actions": stack(actions_log), "rewards": stack(rewards_log), "temperatures": np.asarray(temps)}


def _bau_temperatures(env, env_params) -> np.ndarray:
    obs, s = env.reset(jax.random.PRNGKey(0), env_params)
    step, temps = jax.jit(env.step), []
    zeros = {g: jnp.zeros((n, 4), jnp.int32) for g, n in env.agents.items()}
    while True:
        obs, s, _, terminated, _, info = step(jax.random.PRNGKey(0), s, zeros, env_params)
        temps.append(float(info["temperature"]))
        if bool(terminated):
            return np.asarray(temps + np.asarray(info["lookahead_temperatures"]).tolist())


def _finish(env, env_params, trainer, state, options, run_dir, elapsed, climate_game, recorder) -> dict[str, Any]:
    from jaxclimate.evaluation.consistency import EpisodeReservoir

    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    summary: dict[str, Any] = {
        "env": env.name, "seeds": options["seeds"], "updates": len(rows), "env_steps_per_seed": rows[-1]["env_steps"],
        "wall_seconds_this_session": elapsed, "device": jax.devices()[0].device_kind,
        "final_return": {g: np.mean([r[g]["episode_return"] for r in rows[-5:]], axis=(0, 1)).tolist() for g in env.agents},
    }
    evaluations = [evaluate_policy(env, env_params, trainer, state, s) for s in range(options["seeds"])]
    if climate_game:
        levels = np.stack([e["actions"]["countries"] for e in evaluations])  # (seeds, 35, N, 4)
        efforts = np.concatenate([np.asarray(env_params.effort_levels)[levels[..., :3]],
                                  np.asarray(env_params.adaptation_levels)[levels[..., 3:]]], axis=-1)
        summary["mean_levers"] = {lever: efforts[..., i].mean(axis=(0, 1)).tolist() for i, lever in enumerate(LEVERS)}
        summary["policy_temperature_2050"] = float(np.mean([e["temperatures"][34] for e in evaluations]))
        summary["policy_temperature_2065"] = float(np.mean([e["temperatures"][-1] for e in evaluations]))
        bau = _bau_temperatures(env, env_params)
        summary["bau_temperature_2065"] = float(bau[-1])
        if recorder is not None:
            stores = [EpisodeReservoir.contents(jax.tree_util.tree_map(lambda x: x[s], state.recorder)) for s in range(options["seeds"])]
            atomic_savez(run_dir / "trajectories.npz", emissions=np.concatenate([e for e, _ in stores]),
                         temperatures=np.concatenate([t for _, t in stores]), first_year=np.asarray(2016))
            summary["stored_episodes"] = int(sum(len(e) for e, _ in stores))
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    _print_summary(summary, env)
    if not options.get("no_plots"):
        _plots(rows, env, run_dir, summary, evaluations if climate_game else None, bau if climate_game else None)
    return summary


def _print_summary(summary: dict, env) -> None:
    print(f"\n{summary['env']}: {summary['updates']} updates, {summary['env_steps_per_seed']:,} env steps per seed, "
          f"{summary['seeds']} seed(s), {summary['wall_seconds_this_session']:.1f} s")
    for group, returns in summary["final_return"].items():
        header = f"{'agent':>6} {'return':>10}" + ("".join(f"{lever:>13}" for lever in LEVERS) if "mean_levers" in summary else "")
        print(f"\n[{group}]\n{header}")
        for i, r in enumerate(returns):
            line = f"{i:>6} {r:>10.4f}"
            if "mean_levers" in summary:
                line += "".join(f"{summary['mean_levers'][lever][i]:>13.3f}" for lever in LEVERS)
            print(line)
    if "policy_temperature_2065" in summary:
        print(f"\nlearned policy: ΔT 2050 {summary['policy_temperature_2050']:.3f} K, 2065 {summary['policy_temperature_2065']:.3f} K "
              f"(no action: {summary['bau_temperature_2065']:.3f} K in 2065)")


def _plots(rows, env, run_dir, summary, evaluations, bau) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r["env_steps"] for r in rows])
    for group in env.agents:
        returns = np.array([r[group]["episode_return"] for r in rows])  # (updates, seeds, agents)
        fig, ax = plt.subplots(figsize=(7, 4))
        for i in range(returns.shape[2]):
            ax.plot(steps, returns[:, :, i].mean(1), label=f"agent {i}")
            if returns.shape[1] > 1:
                ax.fill_between(steps, returns[:, :, i].min(1), returns[:, :, i].max(1), alpha=0.2)
        ax.set(xlabel="env steps per seed", ylabel="episode return", title=f"{env.name}: return per agent ({group})")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(run_dir / ("returns.png" if len(env.agents) == 1 else f"returns-{group}.png"), dpi=120)
        plt.close(fig)
    if evaluations is None:
        return
    levers = summary["mean_levers"]
    n = len(levers["energy"])
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(LEVERS)
    for j, lever in enumerate(LEVERS):
        ax.bar(np.arange(n) + j * width, levers[lever], width, label=lever)
    ax.set(xlabel="country", ylabel="mean level (effort 0–1; adaptation spending)", title="learned policy: mean lever levels")
    ax.set_xticks(np.arange(n) + 0.4 - width / 2, [str(i) for i in range(n)])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(run_dir / "levers.png", dpi=120)
    plt.close(fig)
    years = np.arange(2016, 2016 + len(bau))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(years, bau, "k--", label="no action (SSP2-4.5 growth)")
    for s, e in enumerate(evaluations):
        ax.plot(years[: len(e["temperatures"])], e["temperatures"], label=f"learned policy, seed {s}")
    ax.axvspan(2050.5, years[-1], color="grey", alpha=0.15, label="look-ahead")
    ax.set(xlabel="year", ylabel="ΔT (K)", title="temperature under the learned policy (surrogate engine)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(run_dir / "temperature.png", dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    options = build_options(argv)
    print(f"run directory: {options['run_dir']}")
    result = run(options)
    return 130 if result.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
