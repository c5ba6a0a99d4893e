"""One-step climate inference, the paper's Table 1 "mean inference" protocol: for each step,
append E(t) to the 65-year window, normalise, forward pass -> T(t).

    python benchmarks/bench_climate_inference.py                 # 100,000 surrogate steps
    python benchmarks/bench_climate_inference.py --steps 10000 --cicero-steps 20

Surrogate engine: ``--steps`` consecutive engine steps inside one compiled ``lax.scan``
(one environment, the sequential case the paper times), plus the same number of steps
spread over a batch of environments (``--batch``) to show throughput. CICERO engine: the
real oracle through ``jax.pure_callback``, one restart run (2015..2075) per step, timed over
``--cicero-steps`` steps. Paper (paper-era oracle, PyTorch): 464 ms CICERO vs 1.1 ms CPU /
0.4 ms GPU surrogate per step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.harness import format_table, save_results, time_compiled, time_python  # noqa: E402


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="gru", help="shipped surrogate name")
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=1024, help="environments for the throughput row")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cicero-steps", type=int, default=20)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if min(args.steps, args.batch, args.repeats) < 1 or args.cicero_steps < 0:
        p.error("--steps, --batch and --repeats must be >= 1, --cicero-steps >= 0")
    from jaxclimate.climate import cicero, engines

    # the Table 1 protocol: a full forward pass over the 65-year window every step
    eng = engines.SurrogateEngine(args.model, start_year=2016, reuse_baseline_prefix=False)
    rng = np.random.default_rng(0)
    base = cicero.baseline_controllable()[116].astype(np.float32)
    emissions = jnp.asarray(base * rng.uniform(0.9, 1.1, (args.steps, 5)), jnp.float32)

    def sequential(E):  # one engine stepped args.steps times
        return jax.lax.scan(eng.step, eng.init(), E)[1]

    per_env = max(1, args.steps // args.batch)
    batch_E = emissions[: per_env * args.batch].reshape(args.batch, per_env, 5)

    def batched(E):
        return jax.vmap(sequential)(E)

    print(f"bench_climate_inference: {args.model} surrogate, device {jax.devices()[0].device_kind}", flush=True)
    seq = time_compiled(sequential, emissions, repeats=args.repeats)
    bat = time_compiled(batched, batch_E, repeats=args.repeats)
    rows = [
        {
            "engine": f"surrogate ({args.model}), 1 env",
            "steps": args.steps,
            "compile_s": seq["compile_s"],
            "median_s": seq["median_s"],
            "ms_per_step": 1e3 * seq["median_s"] / args.steps,
        },
        {
            "engine": f"surrogate ({args.model}), {args.batch} envs",
            "steps": per_env * args.batch,
            "compile_s": bat["compile_s"],
            "median_s": bat["median_s"],
            "ms_per_step": 1e3 * bat["median_s"] / (per_env * args.batch),
        },
    ]
    reference = None
    if args.cicero_steps:
        try:
            cicero.require_ciceroscm()
        except ImportError as err:
            print(f"  {err}: no CICERO reference", flush=True)
        else:
            ce = engines.CiceroEngine(start_year=2016)
            run = jax.jit(lambda E: jax.lax.scan(ce.step, ce.init(), E)[1])
            E_c = jnp.asarray(np.asarray(emissions[: args.cicero_steps], np.float64))
            timing = time_python(lambda: jax.block_until_ready(run(E_c)), repeats=min(args.repeats, 3))
            reference = {
                "engine": "CICERO-SCM (pure_callback, restart run per step)",
                "steps": args.cicero_steps,
                "median_s": timing["median_s"],
                "ms_per_step": 1e3 * timing["median_s"] / args.cicero_steps,
            }
            rows.append(reference)
            for row in rows[:2]:
                row["speedup_vs_cicero"] = reference["ms_per_step"] / row["ms_per_step"]
    print()
    print(
        format_table(
            rows,
            [
                ("engine", "engine", "s"),
                ("steps", "steps", "d"),
                ("ms_per_step", "ms/step", ".5f"),
                ("compile_s", "compile s", ".2f"),
                ("speedup_vs_cicero", "× CICERO", ",.0f"),
            ],
        )
    )
    payload = {"config": vars(args) | {"out": str(args.out)}, "rows": rows, "reference": reference}
    path = save_results("bench_climate_inference", payload, args.out)
    print(f"\nsaved {path}")
    return payload


if __name__ == "__main__":
    main()
