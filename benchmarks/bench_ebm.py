"""Env-steps per second of ebm-v1 under jit + vmap + scan, against climlab in the same run.

    python benchmarks/bench_ebm.py                      # 1, 64, 1024, 4096 envs; float32
    python benchmarks/bench_ebm.py --dtype float64      # the parity precision
    python benchmarks/bench_ebm.py --envs 1 64 --steps 50 --repeats 3 --ref-steps 20

jaxclimate side: ``n_envs`` independent ebm-v1 environments, each with its own fixed action
(drawn once from the action box), stepped ``--steps`` times inside one compiled
``lax.scan`` over a ``vmap`` of ``env.step`` (auto-reset and reward included).

Reference side (same process, same machine): climlab 0.9.2's ``EBM_annual(num_lat=96)``
configured as docs/ebm.md §3.2 and driven the way the original ebm-v1 environment drives it:
every step sets D, A, B, a0, a2 on the RL model, steps it, steps the static baseline copy
the original environment keeps beside it, and computes the reward. The single-model step
(setters + ``step_forward`` only) is reported too, as a conservative reference.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.harness import format_table, save_results, time_compiled, time_python  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", type=int, nargs="+", default=[1, 64, 1024, 4096], help="parallel environment counts")
    p.add_argument("--steps", type=int, default=200, help="steps per timed run (200 = one episode)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per configuration (median reported)")
    p.add_argument("--ref-steps", type=int, default=40, help="climlab steps per timed reference run")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="physics dtype")
    p.add_argument("--no-reference", action="store_true", help="skip the climlab reference")
    p.add_argument("--out", type=Path, default=None, help="results folder (default benchmarks/results)")
    args = p.parse_args(argv)
    for name in ("steps", "repeats", "ref_steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if any(n < 1 for n in args.envs):
        p.error("--envs must all be >= 1")
    return args


def jax_rollout_fn(env, params, steps: int):
    """(keys (n,), actions (n, 1, 195)) -> final rewards; n envs × ``steps`` steps."""

    def one_env(key, action):
        _, state = env.reset(key, params)

        def body(carry, k):
            state, total = carry
            _, state, rewards, *_ = env.step(k, state, {"bands": action}, params)
            return (state, total + rewards["bands"][0]), None

        (state, total), _ = jax.lax.scan(body, (state, jnp.zeros((), env.dtype)), jax.random.split(key, steps))
        return total

    return jax.vmap(one_env)


def bench_jax(env_counts, steps, repeats, dtype):
    from jaxclimate.envs.ebm import EBMEnv

    env = EBMEnv(1, dtype=dtype)
    params = env.default_params
    space = env.action_space()
    rows = []
    for n in env_counts:
        keys = jax.random.split(jax.random.PRNGKey(0), n)
        actions = jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(1), n))[:, None]
        timing = time_compiled(jax_rollout_fn(env, params, steps), keys, actions, repeats=repeats)
        env_steps = n * steps
        rows.append(
            {
                "n_envs": n,
                "steps": steps,
                "compile_s": timing["compile_s"],
                "median_s": timing["median_s"],
                "runs_s": timing["runs_s"],
                "env_steps_per_s": env_steps / timing["median_s"],
                "us_per_env_step": 1e6 * timing["median_s"] / env_steps,
            }
        )
        print(
            f"  jaxclimate {n:5d} envs: {rows[-1]['env_steps_per_s']:12,.0f} env-steps/s "
            f"(compile {timing['compile_s']:.2f} s, median {timing['median_s']:.4f} s)",
            flush=True,
        )
    return rows


def bench_climlab(ref_steps, repeats):
    """Per-step seconds of climlab: (original-env equivalent, single model step)."""
    try:
        with warnings.catch_warnings():  # climlab warns about Fortran modules the EBM never uses
            warnings.simplefilter("ignore")
            import climlab
    except ImportError:
        return None
    from jaxclimate.envs.ebm import TARGET

    rng = np.random.default_rng(0)
    D = rng.uniform(0.55, 0.65, ref_steps)
    A = rng.uniform(140, 420, (ref_steps, 96, 1))
    B = rng.uniform(1.95, 2.05, (ref_steps, 96, 1))
    a0, a2 = rng.uniform(0.3, 0.4, ref_steps), rng.uniform(0.2, 0.3, ref_steps)

    def build():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = climlab.EBM_annual(num_lat=96, a0=0.354, a2=0.25, D=0.6, A=np.full((96, 1), 210.0), B=np.full((96, 1), 2.0))
        m.Ts[:] = 50.0
        return m

    def set_and_step(m, t):
        m.subprocess["diffusion"].D = D[t]
        m.subprocess["LW"].A = A[t]
        m.subprocess["LW"].B = B[t]
        m.subprocess["albedo"].a0 = a0[t]
        m.subprocess["albedo"].a2 = a2[t]
        m.step_forward()

    def env_equivalent():
        rl, baseline = build(), build()
        for t in range(ref_steps):
            set_and_step(rl, t)
            baseline.step_forward()
            _reward = -np.mean((np.ravel(rl.Ts).astype(np.float32) - TARGET) ** 2)  # noqa: F841 (timed work)

    def model_only():
        m = build()
        for t in range(ref_steps):
            set_and_step(m, t)

    env_t = time_python(env_equivalent, repeats)
    model_t = time_python(model_only, repeats)
    return {
        "climlab_version": climlab.__version__,
        "ref_steps": ref_steps,
        "env_step_s": env_t["median_s"] / ref_steps,
        "model_step_s": model_t["median_s"] / ref_steps,
        "env_runs_s": env_t["runs_s"],
        "model_runs_s": model_t["runs_s"],
    }


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    print(f"bench_ebm: ebm-v1, {args.dtype}, device {jax.devices()[0].device_kind} ({jax.default_backend()})", flush=True)
    rows = bench_jax(args.envs, args.steps, args.repeats, args.dtype)
    reference = None if args.no_reference else bench_climlab(args.ref_steps, args.repeats)
    if reference is None and not args.no_reference:
        print("  climlab is not installed (pip install -e '.[dev]'): no reference ratio", flush=True)
    if reference is not None:
        print(
            f"  climlab {reference['climlab_version']}: original-env step {1e3 * reference['env_step_s']:.1f} ms, "
            f"model step {1e3 * reference['model_step_s']:.1f} ms",
            flush=True,
        )
        for row in rows:
            row["speedup_vs_env_step"] = reference["env_step_s"] / (row["us_per_env_step"] * 1e-6)
            row["speedup_vs_model_step"] = reference["model_step_s"] / (row["us_per_env_step"] * 1e-6)
    print()
    print(
        format_table(
            rows,
            [
                ("n_envs", "envs", "d"),
                ("env_steps_per_s", "env-steps/s", ",.0f"),
                ("us_per_env_step", "µs/env-step", ".3f"),
                ("compile_s", "compile s", ".2f"),
                ("speedup_vs_env_step", "× climlab env", ",.0f"),
                ("speedup_vs_model_step", "× climlab model", ",.0f"),
            ],
        )
    )
    payload = {"env": "ebm-v1", "dtype": args.dtype, "config": vars(args) | {"out": str(args.out)}, "jaxclimate": rows, "reference": reference}
    path = save_results(f"bench_ebm-{args.dtype}", payload, args.out)
    print(f"\nsaved {path}")
    return payload


if __name__ == "__main__":
    main()
