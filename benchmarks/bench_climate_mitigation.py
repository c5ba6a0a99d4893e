"""climate-mitigation speed: env-steps/s with the surrogate engine and with CICERO-SCM in JAX
(``cicero-jax``) for 1…4096 parallel envs, the same env with the CICERO-SCM oracle engine
(ratio in the same run), and IPPO training throughput on scenario (ii) with each JAX engine
(env steps/s including the updates).

    python benchmarks/bench_climate_mitigation.py
    python benchmarks/bench_climate_mitigation.py --envs 1 64 1024 --steps 70 --train-steps 44800
    python benchmarks/bench_climate_mitigation.py --host-devices 2   # env batch split over 2 cores

Env rows: random actions, ``--steps`` steps per env (a multiple of 35 keeps whole episodes,
so every 35th step carries the 15-year look-ahead), one compiled ``lax.scan`` over steps of a
``vmap`` over envs; compile time separately, median of ``--repeats`` runs. CICERO row: one
env, one oracle run per engine step through ``jax.pure_callback`` (the look-ahead adds 15
more per episode), timed over one whole episode. Paper (scenario i, authors' code): 217.7 ms
(CICERO) vs 1.6 ms (surrogate on GPU) per env step, 137×.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402


def _host_devices(argv: list[str]) -> int:
    """``--host-devices N`` read before jax starts (XLA reads its flags once)."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--host-devices" and i + 1 < len(argv) else arg.partition("--host-devices=")[2]
        if value.isdigit():
            return int(value)
    return 1  # argparse reports a bad value


use_cpu_safe_xla_flags()
if __name__ == "__main__" and _host_devices(sys.argv[1:]) > 1:
    import os  # one XLA CPU device per core: the env batch is split over them

    os.environ["XLA_FLAGS"] += f" --xla_force_host_platform_device_count={_host_devices(sys.argv[1:])}"

import jax  # noqa: E402

from benchmarks.harness import format_table, save_results, time_compiled, time_python  # noqa: E402
from jaxclimate import make  # noqa: E402
from jaxclimate.testing import rollout  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default="i", choices=["i", "ii"], help="scenario for the env rows (default i, as the paper)")
    p.add_argument("--envs", type=int, nargs="+", default=[1, 16, 256, 1024, 4096])
    p.add_argument("--steps", type=int, default=70, help="steps per env (default 70 = two episodes)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--engines",
        nargs="+",
        default=["gru", "cicero-jax"],
        choices=["gru", "cicero-jax"],
        help="JAX climate engines for the env rows (default both)",
    )
    p.add_argument(
        "--train-engines",
        nargs="+",
        default=["gru", "cicero-jax"],
        choices=["gru", "cicero-jax"],
        help="engines for the IPPO training rows (default both)",
    )
    p.add_argument("--cicero", action=argparse.BooleanOptionalAction, default=True, help="time the CICERO oracle engine")
    p.add_argument("--train-steps", type=int, default=112_000, help="IPPO env steps on scenario (ii); 0 skips")
    p.add_argument("--train-envs", type=int, default=32)
    p.add_argument(
        "--full-window-row", action=argparse.BooleanOptionalAction, default=True, help="also time the largest batch with reuse_baseline_prefix=False"
    )
    p.add_argument("--host-devices", type=int, default=1, help="CPU only: split the env batch over this many XLA host devices (one per core)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if min(args.envs) < 1 or args.steps < 1 or args.repeats < 1 or args.train_steps < 0 or args.host_devices < 1:
        p.error("--envs, --steps, --repeats, --host-devices must be >= 1 and --train-steps >= 0")
    return args


def shard_over_devices(keys: jax.Array) -> jax.Array:
    """Env keys split over every device when they divide evenly (else left on one)."""
    n_dev = jax.device_count()
    if n_dev == 1 or keys.shape[0] % n_dev:
        return keys
    mesh = jax.make_mesh((n_dev,), ("env",), axis_types=(jax.sharding.AxisType.Auto,))
    return jax.device_put(keys, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("env")))


def time_env_row(engine_label: str, env, params, n: int, args) -> dict:
    """``args.steps`` random-action steps of ``n`` envs (split over the devices), timed."""
    keys = shard_over_devices(jax.random.split(jax.random.PRNGKey(0), n))
    fn = jax.vmap(lambda k: rollout(env, params, k, args.steps)[1]["rewards"])
    t = time_compiled(fn, keys, repeats=args.repeats)
    return {
        "engine": engine_label,
        "n_envs": n,
        "devices": len(keys.sharding.device_set),
        "compile_s": t["compile_s"],
        "median_s": t["median_s"],
        "env_steps_per_s": n * args.steps / t["median_s"],
        "ms_per_env_step": 1e3 * t["median_s"] / (n * args.steps),
    }


ENGINE_LABELS = {"gru": "surrogate (gru)", "cicero-jax": "CICERO-SCM in JAX"}


def env_rows(args) -> list[dict]:
    rows = []
    for engine in args.engines:
        env, params = make("climate-mitigation", scenario=args.scenario, engine=engine)
        for n in args.envs:
            rows.append(time_env_row(ENGINE_LABELS[engine], env, params, n, args))
            print(f"  {ENGINE_LABELS[engine]}, {n:>5} envs: {rows[-1]['env_steps_per_s']:,.0f} env-steps/s", flush=True)
    if args.full_window_row and "gru" in args.engines:
        # the largest batch again, re-encoding all 65 years every step: what the prefix reuse saves
        from jaxclimate.climate.engines import SurrogateEngine
        from jaxclimate.envs.climate_mitigation.env import START_YEAR

        engine = SurrogateEngine("gru", start_year=START_YEAR, reuse_baseline_prefix=False)
        env, params = make("climate-mitigation", scenario=args.scenario, engine=engine)
        rows.append(time_env_row("surrogate (gru), full window", env, params, max(args.envs), args))
        print(f"  {max(args.envs):>5} envs, full 65-year window every step: {rows[-1]['env_steps_per_s']:,.0f} env-steps/s", flush=True)
    return rows


def cicero_row(args) -> dict | None:
    try:
        env, params = make("climate-mitigation", scenario=args.scenario, engine="cicero")
    except ImportError as err:
        print(f"  {err}: no CICERO reference", flush=True)
        return None
    run = jax.jit(lambda k: rollout(env, params, k, 35)[1]["rewards"])
    jax.block_until_ready(run(jax.random.PRNGKey(1)))  # compile + warm the oracle
    t = time_python(lambda: jax.block_until_ready(run(jax.random.PRNGKey(0))), repeats=min(args.repeats, 3))
    return {
        "engine": "CICERO-SCM (pure_callback)",
        "n_envs": 1,
        "median_s": t["median_s"],
        "env_steps_per_s": 35 / t["median_s"],
        "ms_per_env_step": 1e3 * t["median_s"] / 35,
    }


def training_row(args, engine: str = "gru") -> dict:
    from jaxclimate.algos.ippo import IPPOConfig, make_trainer

    env, params = make("climate-mitigation", scenario="ii", engine=engine)
    config = IPPOConfig(
        total_timesteps=args.train_steps,
        num_envs=args.train_envs,
        num_steps=35,
        network="lstm",
        hidden_size=64,
        lr=1e-3,
        gamma=0.999,
        update_epochs=4,
        num_minibatches=4,
    )
    trainer = make_trainer(env, params, config)
    t = time_compiled(lambda rs: trainer.run(rs, config.num_updates), trainer.init(jax.random.PRNGKey(0)), repeats=min(args.repeats, 3))
    steps = config.num_updates * config.steps_per_update
    return {
        "what": "IPPO (LSTM 64, 10 independent learners) on scenario ii",
        "engine": ENGINE_LABELS[engine],
        "env_steps": steps,
        "num_envs": args.train_envs,
        "compile_s": t["compile_s"],
        "median_s": t["median_s"],
        "env_steps_per_s": steps / t["median_s"],
    }


def main(argv=None) -> dict:
    args = parse_args(argv)
    print(f"bench_climate_mitigation: scenario {args.scenario}, device {jax.devices()[0].device_kind}", flush=True)
    rows = env_rows(args)
    reference = cicero_row(args) if args.cicero else None
    if reference is not None:
        for row in rows:
            row["speedup_vs_cicero"] = reference["ms_per_env_step"] / row["ms_per_env_step"]
        rows.append(reference)
    training = [training_row(args, engine) for engine in args.train_engines] if args.train_steps else []
    print()
    print(
        format_table(
            rows,
            [
                ("engine", "engine", "s"),
                ("n_envs", "envs", "d"),
                ("devices", "devices", "d"),
                ("env_steps_per_s", "env-steps/s", ",.0f"),
                ("ms_per_env_step", "ms/env-step", ".5f"),
                ("compile_s", "compile s", ".2f"),
                ("speedup_vs_cicero", "× CICERO", ",.0f"),
            ],
        )
    )
    for row in training:
        print(
            f"\nIPPO training, scenario ii, {row['engine']}: {row['env_steps_per_s']:,.0f} env-steps/s including updates "
            f"({row['env_steps']:,} steps in {row['median_s']:.1f} s, compile {row['compile_s']:.1f} s)"
        )
    payload = {"config": vars(args) | {"out": str(args.out)}, "rows": rows, "reference": reference, "training": training}
    name = "bench_climate_mitigation" + (f"-{jax.device_count()}dev" if jax.device_count() > 1 else "")
    path = save_results(name, payload, args.out)
    print(f"\nsaved {path}")
    return payload


if __name__ == "__main__":
    main()
