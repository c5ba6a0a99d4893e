"""InvestESG speed: env-steps/s for 1…4096 parallel environments at 5 × 3 and 10 × 10, and
IPPO training throughput, against the original implementations.

    python benchmarks/bench_invest_esg.py
    python benchmarks/bench_invest_esg.py --reference-repo ORIGINAL_CHECKOUT --reference-python VENV/bin/python
    python benchmarks/bench_invest_esg.py --envs 1 1024 --markets exp_default --train-updates 0

Environment rows: random actions (fractions uniform in [0, cap], bits Bernoulli(½)),
``--episodes`` whole 100-year episodes per env, one compiled ``lax.scan`` over steps of a
``vmap`` over envs of ``env.step`` (transition, auto-reset and every agent's observation,
carried through the scan so each step's is written to memory as a rollout writes it).
Compile time separately; median of ``--repeats`` runs.

Training rows: IPPO with the ``paper_sb3`` and ``authors_jax`` presets on the paper default
(5 companies, 3 investors; independent learners), ``--seeds`` seeds vmapped in one program,
env-steps/s per seed summed over seeds, updates included; median of ``--repeats`` chunks of
``--train-updates`` updates. "3 seeds × 3M" is the paper's budget (30k episodes per seed)
projected from that rate.

References. With ``--reference-repo`` (a checkout of github.com/yuanjiayiy/InvestESG) and
``--reference-python`` (an interpreter with its dependencies), the original NumPy environment
is timed in the same run (``benchmarks/reference_invest_esg.py``); otherwise its speed is
quoted from the reference measurement on this machine class (2-vCPU AMD EPYC; 4.4k–5.4k
env-steps/s at 5 × 3, 1.9k–2.0k at 10 × 10). The authors' JAX environment no longer runs on
current JAX (``jax.tree_map``); its speeds are quoted from the same measurement (JAX 0.4.33,
``vmap`` over 1024 envs + ``scan``: 0.77M–1.40M env-steps/s, median of runs 1.21M, at 5 × 3;
0.24M at 10 × 10), as is the original Stable-Baselines3 training (20.9 env-steps/s).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from benchmarks.harness import format_table, save_results, time_compiled  # noqa: E402
from jaxclimate import make  # noqa: E402
from jaxclimate.algos.ippo import IPPOConfig, make_trainer  # noqa: E402
from jaxclimate.envs.invest_esg import COMPANIES, INVESTORS  # noqa: E402
from jaxclimate.envs.invest_esg.report import AUTHORS_JAX, PAPER_SB3  # noqa: E402

#: Quoted reference speeds, env-steps/s (see the module docstring).
NUMPY_ENV = {"exp_default": 4900.0, "scale_10x10": 1950.0}
AUTHORS_JAX_ENV_1024 = {"exp_default": 1.21e6, "scale_10x10": 0.24e6}
SB3_TRAINING = 20.9
PRESETS = {"paper_sb3": PAPER_SB3, "authors_jax": AUTHORS_JAX}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", type=int, nargs="+", default=[1, 16, 256, 1024, 4096])
    p.add_argument("--markets", nargs="+", default=["exp_default", "scale_10x10"])
    p.add_argument("--episodes", type=int, default=1, help="whole episodes per env (default 1)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--train-updates", type=int, default=20, help="updates per timed training chunk (0: no training rows)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    p.add_argument("--hidden", type=int, nargs="+", help="override the presets' layer widths (smoke runs only)")
    p.add_argument("--reference-repo", type=Path, help="checkout of the original InvestESG to time its NumPy env")
    p.add_argument("--reference-python", default=sys.executable, help="interpreter with the original's dependencies")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if min(args.envs) < 1 or args.episodes < 1 or args.repeats < 1 or args.train_updates < 0 or args.seeds < 1:
        p.error("--envs, --episodes, --repeats and --seeds must be >= 1, --train-updates >= 0")
    return args


def rollout_checksum(env, params, keys, num_steps, fresh_actions: bool = False):
    """``num_steps`` steps of ``len(keys)`` envs with random actions: ``vmap(reset)``, then a
    ``lax.scan`` over ``vmap(step)``; the observations are carried through the scan (written
    every step) and the checksum sums rewards and the last observations.

    Actions: per env, random fractions in [0, cap] and random bits drawn once; step t plays
    the fractions shifted by t·0.618·cap modulo cap and the bits flipped every other year (per
    entry an add, a compare, a select and an xor), as the RICE-N benchmark does: drawing 30 fresh
    numbers per env and step with ``jax.random`` costs about as much as the step itself (the
    reference measurements time the environment, not action sampling). ``fresh_actions=True``
    draws them every step instead (reported as its own row)."""
    obs, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    cap, n = env.action_cap, keys.shape[0]
    shapes = {COMPANIES: (n, env.num_companies, 3), INVESTORS: (n, env.num_investors, env.num_companies)}

    def draw(key):
        k_c, k_i = jax.random.split(key)
        return {
            COMPANIES: jax.random.uniform(k_c, shapes[COMPANIES], maxval=cap),
            INVESTORS: jax.random.bernoulli(k_i, 0.5, shapes[INVESTORS]).astype(jnp.int32),
        }

    base = draw(jax.random.fold_in(keys[0], 1))

    def body(carry, inputs):
        states, obs, total = carry
        t, key = inputs
        k_a, k_s = jax.random.split(key)
        if fresh_actions:
            actions = draw(k_a)
        else:
            shifted = base[COMPANIES] + jnp.mod(t * (0.618 * cap), cap)  # a scalar modulo; per entry an add,
            actions = {
                COMPANIES: jnp.where(shifted >= cap, shifted - cap, shifted),  # a compare and a select
                INVESTORS: base[INVESTORS] ^ (t & 1),
            }
        obs, states, rewards, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_s, n), states, actions, params)
        return (states, obs, total + sum(jnp.sum(r) for r in rewards.values())), None

    inputs = (jnp.arange(num_steps), jax.random.split(keys[0], num_steps))
    (states, obs, total), _ = jax.lax.scan(body, (states, obs, jnp.zeros(())), inputs)
    return total + sum(jnp.sum(o) for o in obs.values())


def reference_numpy(args, market: str, env) -> dict | None:
    if args.reference_repo is None:
        return None
    cfg = env.config
    cmd = [
        args.reference_python,
        str(Path(__file__).with_name("reference_invest_esg.py")),
        "--repo",
        str(args.reference_repo),
        "--companies",
        str(cfg.num_companies),
        "--company-capital",
        str(cfg.company_capital[0]),
        "--investors",
        str(cfg.num_investors),
        "--investor-capital",
        str(cfg.investor_capital[0]),
        "--repeats",
        str(args.repeats),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_envs(args) -> list[dict]:
    rows = []
    for market in args.markets:
        env, params = make("invest-esg", config=market)
        ref = reference_numpy(args, market, env)
        numpy_rate = ref["env_steps_per_s"] if ref else NUMPY_ENV.get(market)
        steps = args.episodes * int(params.max_steps)

        def row(label: str, n: int, fresh_actions: bool) -> dict:
            keys = jax.random.split(jax.random.PRNGKey(0), n)
            timing = time_compiled(lambda k: rollout_checksum(env, params, k, steps, fresh_actions=fresh_actions), keys, repeats=args.repeats)
            rate = n * steps / timing["median_s"]
            return {
                "market": label,
                "size": f"{env.num_companies}x{env.num_investors}",
                "envs": n,
                "env_steps_per_s": rate,
                "compile_s": timing["compile_s"],
                "median_s": timing["median_s"],
                "runs_s": timing["runs_s"],
                "numpy_env_steps_per_s": numpy_rate,
                "numpy_measured_here": ref is not None,
                "x_numpy": rate / numpy_rate if numpy_rate else None,
                "x_authors_jax_1024": rate / AUTHORS_JAX_ENV_1024[market] if market in AUTHORS_JAX_ENV_1024 else None,
            }

        for n in args.envs:
            rows.append(row(market, n, fresh_actions=False))
            print(f"{market} {n:>5} envs: {rows[-1]['env_steps_per_s']:,.0f} env-steps/s (compile {rows[-1]['compile_s']:.1f} s)", flush=True)
        n = max(args.envs)  # the same with fresh jax.random actions every step, at the largest batch
        rows.append(row(market + " (fresh random actions)", n, fresh_actions=True))
        print(f"{market} {n:>5} envs, fresh jax.random actions every step: {rows[-1]['env_steps_per_s']:,.0f} env-steps/s", flush=True)
    return rows


def bench_training(args) -> list[dict]:
    rows = []
    env, params = make("invest-esg")
    for name in args.presets:
        overrides = {"total_timesteps": 3_000_000, **({"hidden_sizes": tuple(args.hidden)} if args.hidden else {})}
        config = IPPOConfig(**{**PRESETS[name], **overrides})
        trainer = make_trainer(env, params, config)
        states = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(0), args.seeds))
        chunk = lambda s: jax.vmap(lambda r: trainer.run(r, args.train_updates))(s)[0]  # noqa: E731
        timing = time_compiled(chunk, states, repeats=args.repeats)
        steps = args.train_updates * config.steps_per_update * args.seeds
        rate = steps / timing["median_s"]
        paper = None if args.hidden else 3 * 3_000_000 / rate  # projected only with the preset's own network
        rows.append(
            {
                "preset": name,
                "hidden_sizes": list(config.hidden_sizes),
                "seeds": args.seeds,
                "updates_per_chunk": args.train_updates,
                "env_steps_per_s": rate,
                "compile_s": timing["compile_s"],
                "median_s": timing["median_s"],
                "runs_s": timing["runs_s"],
                "paper_budget_minutes": paper and paper / 60,
                "x_sb3_training": rate / SB3_TRAINING,
            }
        )
        projection = f"3 seeds × 3M env steps ≈ {paper / 60:.0f} min" if paper else f"hidden {args.hidden}: no projection"
        print(f"IPPO {name}: {rate:,.0f} env-steps/s incl. updates ({args.seeds} seeds); {projection}", flush=True)
    return rows


def main(argv=None) -> dict:
    args = parse_args(argv)
    env_rows = bench_envs(args)
    train_rows = bench_training(args) if args.train_updates else []
    print()
    print(
        format_table(
            env_rows,
            [
                ("market", "market", ""),
                ("envs", "envs", "d"),
                ("env_steps_per_s", "env-steps/s", ",.0f"),
                ("compile_s", "compile s", ".1f"),
                ("numpy_env_steps_per_s", "NumPy env", ",.0f"),
                ("x_numpy", "× NumPy", ",.0f"),
                ("x_authors_jax_1024", "× authors' JAX@1024", ".2f"),
            ],
        )
    )
    if train_rows:
        print()
        print(
            format_table(
                train_rows,
                [
                    ("preset", "IPPO preset", ""),
                    ("env_steps_per_s", "env-steps/s", ",.0f"),
                    ("compile_s", "compile s", ".1f"),
                    ("paper_budget_minutes", "3 seeds × 3M (min)", ".0f"),
                    ("x_sb3_training", "× SB3", ",.0f"),
                ],
            )
        )
    payload = {"env_rows": env_rows, "training_rows": train_rows}
    path = save_results(
        "bench_invest_esg",
        {**payload, "quoted": {"numpy_env": NUMPY_ENV, "authors_jax_env_1024": AUTHORS_JAX_ENV_1024, "sb3_training": SB3_TRAINING}},
        args.out,
    )
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
