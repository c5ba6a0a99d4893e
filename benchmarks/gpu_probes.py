"""Probes behind the accelerator rows that missed a target: where the time goes, and whether a
plain change (a loop unrolled, another solver) moves it. Each probe times variants of one thing
in the same run on the same device, so their ratios can be read directly.

    python benchmarks/gpu_probes.py --out DIR [--only ippo cicero ebm gru flags] [--dry-run]

* ``ippo``: IPPO on the climate game's scenario (ii), paper settings, 64 seeds: the whole update
  with ``scan_unroll`` 1 / 5 / 7 (35: a 59-s compile on the CPU), and the env's share of it
  (random-action rollouts of the same 1,024 envs for 35 steps).
* ``cicero``: the climate game on CICERO-SCM in JAX at 65,536 envs with the year's two sub-step
  scans rolled and unrolled by 4 (``CiceroJAX.unroll``; fully unrolled, a 74-s compile on the CPU).
* ``ebm``: ebm-v1 at 65,536 envs with random actions drawn every step and with one action
  held (how much of the benchmark is the action sampler), and its implicit-diffusion solve
  alone: ``lax.linalg.tridiagonal_solve`` against elimination as a ``lax.scan`` over the 96
  latitudes and parallel cyclic reduction (7 levels), with their largest difference.
* ``gru``: the climate game (gru) at 65,536 envs with the surrogate's cell written four ways:
  flax's GRUCell (six products a step), the hidden state's and the input's kernels merged (two
  products), the package's cell (one product of the hidden state, the input's five columns as
  multiply-adds) and one product of [h, x], all at ``Precision.HIGHEST``, and the package's
  cell at 3xTF32 (a data point); with each one's largest temperature difference from flax's
  cell over random emission paths.
* ``flags``: the IPPO row again in a subprocess under XLA GPU flags (CUDA-graph while loops).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from benchmarks.bench_accelerator import ippo_seeds_row, rollout_checksum  # noqa: E402
from benchmarks.harness import device_info, time_compiled  # noqa: E402
from jaxclimate import make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.core import precision  # noqa: E402
from jaxclimate.core.linalg import tridiagonal_solve  # noqa: E402

FLAG_VARIANTS = {
    "command buffers incl. WHILE, CONDITIONAL": "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL",
    "while-loop double buffering": "--xla_gpu_enable_while_loop_double_buffering=true",
}


def ippo_update_s(seeds: int, updates: int, dry: bool, **overrides) -> dict:
    """The accelerator row's IPPO timing (``bench_accelerator.ippo_seeds_row``) under ``overrides``."""
    row = ippo_seeds_row(seeds, updates, dry, **overrides)
    return {**overrides, "compile_s": row["compile_s"], "update_s": row["median_s"] / updates, "env_steps_per_s": row["env_steps_per_s"]}


def probe_ippo(dry: bool) -> dict:
    seeds, updates = (2, 2) if dry else (64, 20)
    rows = [ippo_update_s(seeds, updates, dry, scan_unroll=u) for u in (1, 5, 7)]
    env, params = make("climate-mitigation-ii")
    n = seeds * (4 if dry else 16)
    env_only = time_compiled(lambda k: rollout_checksum(env, params, k, 35), jax.random.split(jax.random.PRNGKey(0), n), repeats=3)
    return {
        "seeds": seeds,
        "updates": updates,
        "rows": rows,
        "env_rollout_35_steps_s": env_only["median_s"],
        "env_rollout_compile_s": env_only["compile_s"],
    }


def probe_cicero(dry: bool) -> dict:
    n = 256 if dry else 65_536
    rows = []
    for unroll in (1, 4):
        env, params = make("climate-mitigation", engine="cicero-jax")
        env.engine.model.unroll = unroll
        t = time_compiled(lambda k: rollout_checksum(env, params, k, 35), jax.random.split(jax.random.PRNGKey(0), n), repeats=3)
        rows.append({"unroll": unroll, "compile_s": t["compile_s"], "env_steps_per_s": n * 35 / t["median_s"]})
    return {"n_envs": n, "rows": rows}


def thomas(lower, diag, upper, rhs):
    """Elimination without pivoting as two ``lax.scan``s over the last axis (batched)."""
    a, b, c, d = (jnp.moveaxis(x, -1, 0) for x in (lower, diag, upper, rhs))

    def forward(carry, row):
        c_prev, d_prev = carry
        ai, bi, ci, di = row
        m = bi - ai * c_prev
        return (ci / m, (di - ai * d_prev) / m), (ci / m, (di - ai * d_prev) / m)

    zero = jnp.zeros_like(b[0])
    _, (cp, dp) = jax.lax.scan(forward, (zero, zero), (a, b, c, d))
    _, x = jax.lax.scan(lambda x_next, row: (row[1] - row[0] * x_next,) * 2, zero, (cp, dp), reverse=True)
    return jnp.moveaxis(x, 0, -1)


def cyclic_reduction(lower, diag, upper, rhs):
    """Parallel cyclic reduction: each level eliminates the neighbours at distance s (1, 2, 4, …)."""
    n = diag.shape[-1]
    a, b, c, d = lower, diag, upper, rhs

    def shifted(x, s, fill):  # x[i - s] (s > 0) or x[i + |s|] (s < 0), identity rows outside
        pad = jnp.full(x.shape[:-1] + (abs(s),), fill, x.dtype)
        return jnp.concatenate([pad, x[..., :-s]], -1) if s > 0 else jnp.concatenate([x[..., -s:], pad], -1)

    s = 1
    while s < n:
        k1 = a / shifted(b, s, 1.0)
        k2 = c / shifted(b, -s, 1.0)
        a, c, b, d = (
            -k1 * shifted(a, s, 0.0),
            -k2 * shifted(c, -s, 0.0),
            b - k1 * shifted(c, s, 0.0) - k2 * shifted(a, -s, 0.0),
            d - k1 * shifted(d, s, 0.0) - k2 * shifted(d, -s, 0.0),
        )
        s *= 2
    return d / b


def probe_ebm(dry: bool) -> dict:
    from jaxclimate.envs.ebm import physics

    n = 256 if dry else 65_536
    env, params = make("ebm-v1")
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    sampled = time_compiled(lambda k: rollout_checksum(env, params, k, 200), keys, repeats=3)
    actions = jax.vmap(env.sample_actions)(keys)
    held = time_compiled(lambda k: rollout_checksum(env, params, k, 200, held_actions=actions), keys, repeats=3)
    k = jax.random.uniform(jax.random.PRNGKey(1), (n, 1), minval=0.1, maxval=1.0)
    g_lower, g_upper = jnp.asarray(physics.G_LOWER, jnp.float32), jnp.asarray(physics.G_UPPER, jnp.float32)
    lower, upper = -k * g_lower, -k * g_upper
    diag = 1.0 + k * (g_lower + g_upper)
    rhs = jax.random.normal(jax.random.PRNGKey(2), (n, physics.NUM_LAT))
    solvers = {
        "lax.linalg.tridiagonal_solve": jax.vmap(functools.partial(tridiagonal_solve, fused=False)),
        "elimination (lax.scan)": thomas,
        "parallel cyclic reduction": cyclic_reduction,
    }
    reference = solvers["lax.linalg.tridiagonal_solve"](lower, diag, upper, rhs)
    rows = []
    for name, solve in solvers.items():
        t = time_compiled(solve, lower, diag, upper, rhs, repeats=5)
        err = float(jnp.max(jnp.abs(solve(lower, diag, upper, rhs) - reference)))
        rows.append({"solver": name, "solve_s": t["median_s"], "compile_s": t["compile_s"], "max_abs_diff": err})
    return {
        "n_envs": n,
        "rollout_200_steps_sampled_actions_s": sampled["median_s"],
        "rollout_200_steps_held_action_s": held["median_s"],
        "solvers": rows,
    }


#: the engine's own cell (jaxclimate.climate.surrogate.merged_gru_step) among ``gru_cells``
PACKAGE_CELL = "package: one product of h, x as multiply-adds"


def gru_cells(parts) -> dict:
    """The variants of ``probe_gru``: name -> step(h, row) for the engine's ``RecurrentParts``."""
    from jaxclimate.climate.surrogate import gru_update, merged_gru_step

    w_h, w_x, b_x, b_hn = w = parts._gru
    H = w_h.shape[0]
    zeros = jnp.zeros((w_x.shape[0], H), w_x.dtype)
    # [h, x] @ [[W_hr W_hz W_hn 0], [W_ir W_iz 0 W_in]]: r, z, the hidden part of n, the input part of n
    w_hx = jnp.concatenate(
        [jnp.concatenate([w_h, jnp.zeros((H, H), w_h.dtype)], -1), jnp.concatenate([w_x[:, : 2 * H], zeros, w_x[:, 2 * H :]], -1)], 0
    )
    b_hx = jnp.concatenate([b_x[: 2 * H], b_hn, b_x[2 * H :]])

    def one_product_of_h_and_x(h, x):
        g = jnp.concatenate([h, x], -1) @ w_hx + b_hx
        r, z = jax.nn.sigmoid(g[..., :H]), jax.nn.sigmoid(g[..., H : 2 * H])
        return (1 - z) * jnp.tanh(g[..., 3 * H :] + r * g[..., 2 * H : 3 * H]) + z * h

    return {
        "flax GRUCell (6 products)": lambda h, x: parts._cell.apply(parts._cell_params, h, x)[0],
        "two products (h 128x384, x 5x384)": lambda h, x: gru_update(h @ w_h, x @ w_x + b_x, h, b_hn),
        PACKAGE_CELL: lambda h, x: merged_gru_step(w, h, x),
        "one product of [h, x] (133x512)": one_product_of_h_and_x,
    }


def probe_gru(dry: bool) -> dict:
    from jaxclimate.climate import engines

    n, steps = (256, 4) if dry else (65_536, 35)
    env, params = make("climate-mitigation", engine="gru")
    last = jnp.asarray(env.engine.init().window[-1])
    paths = jax.random.uniform(jax.random.PRNGKey(1), (64, 65, 1), minval=0.0, maxval=1.5) * last
    # every cell at HIGHEST, then the package's cell at 3xTF32 (float32-accurate, not adopted: a data point)
    variants = [(name, "highest") for name in gru_cells(env.engine._parts)] + [(PACKAGE_CELL, "TF32_TF32_F32_X3")]
    rows, reference = [], None
    for name, algorithm in variants:
        precision.PHYSICS_PRECISION = algorithm  # read when the products are traced
        try:
            env, params = make("climate-mitigation", engine="gru")  # a fresh engine: nothing traced yet
            env.engine._parts.step = gru_cells(env.engine._parts)[name]  # read when the step is traced
            temps = jax.jit(jax.vmap(lambda e: engines.rollout(env.engine, e)))(paths)
            reference = temps if reference is None else reference
            t = time_compiled(lambda k: rollout_checksum(env, params, k, steps), jax.random.split(jax.random.PRNGKey(0), n), repeats=3)
        except Exception as error:  # e.g. an algorithm this backend does not support
            rows.append({"cell": name, "precision": algorithm, "error": f"{type(error).__name__}: {str(error)[:300]}"})
            continue
        finally:
            precision.PHYSICS_PRECISION = "highest"
        rows.append(
            {
                "cell": name,
                "precision": algorithm,
                "compile_s": t["compile_s"],
                "env_steps_per_s": n * steps / t["median_s"],
                "max_abs_dT_from_flax_K": float(jnp.max(jnp.abs(temps - reference))),
            }
        )
        print(
            f"  gru: {name:<48} {algorithm:<18} {rows[-1]['env_steps_per_s']:>14,.0f} env-steps/s, {rows[-1]['max_abs_dT_from_flax_K']:.2e} K",
            flush=True,
        )
    return {"n_envs": n, "steps": steps, "rows": rows}


def probe_flags(dry: bool) -> dict:
    rows = []
    code = (
        "import json,sys; sys.path.insert(0, '.'); from benchmarks.gpu_probes import ippo_update_s; "
        f"print('ROW', json.dumps(ippo_update_s({2 if dry else 64}, {2 if dry else 10}, {dry})))"
    )
    for name, flag in FLAG_VARIANTS.items():
        env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " " + flag).strip())
        start = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
            row = next((json.loads(line[4:]) for line in out.stdout.splitlines() if line.startswith("ROW ")), None)
            rows.append({"variant": name, "flag": flag, "rc": out.returncode, "row": row, "stderr_tail": out.stderr[-400:]})
        except subprocess.TimeoutExpired:
            rows.append({"variant": name, "flag": flag, "rc": None, "row": None, "stderr_tail": "timed out after 120 s"})
        rows[-1]["wall_s"] = time.perf_counter() - start
    return {"rows": rows}


PROBES = {"ippo": probe_ippo, "cicero": probe_cicero, "ebm": probe_ebm, "gru": probe_gru, "flags": probe_flags}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", nargs="+", choices=list(PROBES), default=list(PROBES))
    p.add_argument("--dry-run", action="store_true", help="tiny sizes (CPU)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"device": device_info(), "dry_run": args.dry_run, "probes": {}}
    for name in args.only:
        start = time.perf_counter()
        try:
            result["probes"][name] = PROBES[name](args.dry_run)
        except Exception as error:  # a probe that breaks is recorded; the others still run
            result["probes"][name] = {"error": f"{type(error).__name__}: {error}"}
        result["probes"][name]["wall_s"] = time.perf_counter() - start
        atomic_write_text(args.out / "probes.json", json.dumps(result, indent=1, default=str))
        print(name, json.dumps(result["probes"][name], default=str)[:1500], flush=True)
    return result


if __name__ == "__main__":
    main()
