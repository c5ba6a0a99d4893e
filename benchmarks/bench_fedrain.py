"""Federated DDPG training throughput on the EBM environments (FedRAIN-Lite).

    python benchmarks/bench_fedrain.py
    python benchmarks/bench_fedrain.py --envs ebm-v3-a6 --seeds 10 --steps 2000 --full-row

Rows: agent-steps/s **including updates** (acting, storing, one critic step per agent and env
step, the actor and target updates every ``policy_frequency`` steps, FedAvg every 5 episodes),
for ebm-v1 (1 agent), ebm-v2/v3 with 2 and 6 agents, and 1…10 seeds ``vmap``ped in one program,
with the tuned DDPG settings (networks of 256, batch 128). Each measurement trains ``--steps``
env steps per seed after ``learning_starts`` so every step updates; compile time separately,
median of ``--repeats`` runs. "row" = the projected wall time of a whole table row (10 seeds ×
20k steps) from that rate; ``--full-row`` also times one whole row end to end.

Where the time goes: each row also gives the matrix-multiply work of an agent-step counted by
hand (``deterministic_update_flops``; it matches XLA's cost analysis of the compiled update to
a few per cent), the rate it is done at, and that rate against this device's matrix-multiply
peak measured in the same run (a 2048 × 2048 float32 product, one device = one core under the
CPU-safe XLA flags). ``row_at_peak_minutes`` is the wall time of a whole row if every core ran
matrix products at that peak and did nothing else — a floor no implementation of the tuned
networks in float32 can beat on this machine.

Reference: in the original, one PyTorch process per agent stepped a climlab model: 48–52 ms per
environment step, ~17 minutes of environment time alone per 20k-step run and agent (measured
on this machine class; the learners' own time comes on top).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from benchmarks.harness import format_table, save_results, time_compiled  # noqa: E402
from jaxclimate import make  # noqa: E402
from jaxclimate.algos.off_policy import DDPGConfig, deterministic_update_flops, make_trainer  # noqa: E402

ORIGINAL_ENV_STEP_S = 0.050  # original ebm-v1/v2 environment step (48–52 ms), learners excluded
ROW_STEPS, ROW_SEEDS = 20_000, 10


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=["ebm-v1", "ebm-v2-a2", "ebm-v3-a2", "ebm-v2-a6", "ebm-v3-a6"])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 10])
    p.add_argument("--steps", type=int, default=1000, help="timed env steps per seed (after warm-up)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--full-row", action="store_true", help="also time one whole row (10 seeds × 20k steps) per env")
    p.add_argument("--hidden", type=int, help="override the tuned width 256 (smoke runs only)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.steps < 200 or args.steps % 200 or args.repeats < 1 or min(args.seeds) < 1:
        p.error("--steps must be a positive multiple of 200; --repeats and --seeds >= 1")
    return args


def matmul_peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    """Float32 matrix-multiply rate of one device (GFLOP/s), the median of ``repeats`` products."""
    a = jnp.ones((size, size), jnp.float32)
    timing = time_compiled(lambda x: x @ x, a, repeats=repeats)
    return 2 * size**3 / timing["median_s"] / 1e9


def row_flops(config: DDPGConfig, obs_dim: int, act_dim: int, agents: int) -> float:
    """Matrix-multiply FLOPs of a whole table row: every seed and agent acts every step and
    updates after ``learning_starts``."""
    count = deterministic_update_flops(config, obs_dim, act_dim)
    updating = ROW_STEPS - config.learning_starts
    learn = count["per_agent_step"] - count["act"]
    return ROW_SEEDS * agents * (updating * learn + ROW_STEPS * count["act"])


def timed_training(env_id: str, seeds: int, steps: int, repeats: int, hidden: int | None = None, peak_gflops: float | None = None) -> dict:
    env, params = make(env_id)
    config = DDPGConfig(total_timesteps=ROW_STEPS, federation_period=5, **({"hidden_size": hidden} if hidden else {}))
    trainer = make_trainer(env, params, config)
    states = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(0), seeds))
    states = states.replace(step=jnp.full((seeds,), config.learning_starts, jnp.int32))  # every timed step updates
    chunk = lambda s: jax.vmap(lambda r: trainer.run(r, steps // config.num_steps)[0])(s)  # noqa: E731
    timing = time_compiled(chunk, states, repeats=repeats)
    rate = seeds * env.num_agents * steps / timing["median_s"]
    row_s = ROW_SEEDS * env.num_agents * ROW_STEPS / rate
    (group,) = env.agents
    obs_dim, act_dim = env.observation_space(group).shape[0], env.action_space(group).shape[0]
    flops = deterministic_update_flops(config, obs_dim, act_dim)["per_agent_step"]
    row = {
        "env": env_id,
        "agents": env.num_agents,
        "seeds": seeds,
        "steps": steps,
        "compile_s": timing["compile_s"],
        "median_s": timing["median_s"],
        "runs_s": timing["runs_s"],
        "agent_steps_per_s": rate,
        "env_steps_per_s": seeds * steps / timing["median_s"],
        # a row's wall time only from the row's own network and seeds (tiny settings project nothing)
        "projected_row_minutes": row_s / 60 if seeds == ROW_SEEDS and not hidden else None,
        "mflop_per_agent_step": flops / 1e6,
        "achieved_gflop_s": rate * flops / 1e9,
        "row_tflop": row_flops(config, obs_dim, act_dim, env.num_agents) / 1e12,
    }
    if peak_gflops:
        cores = os.cpu_count() if jax.default_backend() == "cpu" else jax.device_count()
        row["fraction_of_peak"] = row["achieved_gflop_s"] / peak_gflops
        row["row_at_peak_minutes"] = None if hidden else row["row_tflop"] * 1e12 / (peak_gflops * 1e9 * cores) / 60
    return row


def _checksum(state) -> jax.Array:
    return sum(jnp.sum(x) for x in jax.tree_util.tree_leaves(state) if jnp.issubdtype(x.dtype, jnp.floating))


def full_row(env_id: str) -> dict:
    env, params = make(env_id)
    config = DDPGConfig(total_timesteps=ROW_STEPS, federation_period=5)
    trainer = make_trainer(env, params, config)
    keys = jax.random.split(jax.random.PRNGKey(0), ROW_SEEDS)
    # return what the training produced (a checksum of the learned weights): returning only the
    # step counter let XLA drop the whole training as dead code (0.002 s on an H200)
    train = jax.jit(jax.vmap(lambda k: _checksum(trainer.run(trainer.init(k), config.num_updates)[0].learners)))
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(compiled(keys))
    return {"env": env_id, "agents": env.num_agents, "compile_s": compile_s, "row_seconds": time.perf_counter() - start}


def main(argv=None) -> dict:
    args = parse_args(argv)
    peak = matmul_peak_gflops()
    print(f"float32 matrix-multiply peak of one device: {peak:.1f} GFLOP/s", flush=True)
    rows = []
    for env_id in args.envs:
        for seeds in args.seeds:
            row = timed_training(env_id, seeds, args.steps, args.repeats, args.hidden, peak)
            rows.append(row)
            projected = f", a 10-seed × 20k row ≈ {row['projected_row_minutes']:.1f} min" if row["projected_row_minutes"] else ""
            print(
                f"{env_id} × {seeds} seeds: {row['agent_steps_per_s']:,.0f} agent-steps/s incl. updates "
                f"(compile {row['compile_s']:.1f} s){projected}; {row['mflop_per_agent_step']:.1f} MFLOP per agent-step, "
                f"{row['achieved_gflop_s']:.1f} GFLOP/s = {100 * row['fraction_of_peak']:.0f} % of peak"
                + (
                    f"; a row is {row['row_tflop']:.0f} TFLOP, ≥ {row['row_at_peak_minutes']:.1f} min at every core's peak"
                    if row["row_at_peak_minutes"] is not None
                    else f" (hidden {args.hidden}: no row projection)"
                ),
                flush=True,
            )
    full = [full_row(e) for e in args.envs] if args.full_row else []
    for f in full:
        print(f"{f['env']}: whole row (10 seeds × 20k steps) {f['row_seconds'] / 60:.1f} min + compile {f['compile_s']:.1f} s")
    print()
    print(
        format_table(
            rows,
            [
                ("env", "env", ""),
                ("agents", "agents", "d"),
                ("seeds", "seeds", "d"),
                ("agent_steps_per_s", "agent-steps/s", ",.0f"),
                ("compile_s", "compile s", ".1f"),
                ("projected_row_minutes", "row (min)", ".1f"),
                ("mflop_per_agent_step", "MFLOP/agent-step", ".1f"),
                ("fraction_of_peak", "of peak", ".0%"),
                ("row_at_peak_minutes", "row at peak (min)", ".1f"),
            ],
        )
    )
    path = save_results(
        "bench_fedrain",
        {
            "rows": rows,
            "full_rows": full,
            "config": "DDPGConfig() tuned, fed05",
            "matmul_peak_gflop_s_per_device": peak,
            "original_env_step_s": ORIGINAL_ENV_STEP_S,
        },
        args.out,
    )
    print(f"\nwrote {path}")
    return {"rows": rows, "full_rows": full}


if __name__ == "__main__":
    main()
