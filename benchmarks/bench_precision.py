"""What the climate surrogate's products cost and how exact they are, per dot algorithm.

    python benchmarks/bench_precision.py --out DIR [--dry-run]

The GRU surrogate is the climate game's most expensive part: every year it runs its cell over
the stepped part of a 65-year window (about 40 cell steps per env step over an episode), and its
products are traced at ``Precision.HIGHEST`` (``jaxclimate.core.precision``) so that a GPU does
not run them as TF32. This measures, at 65,536 envs, the env-steps/s of the climate game (gru)
and the surrogate's largest temperature difference from the ``HIGHEST`` result over a batch of
random emission paths, for each of ``jax.lax.DotAlgorithmPreset``'s float32-accurate
multi-pass algorithms (3×TF32, 6×BF16, 9×BF16) and the backend default. An algorithm the
backend does not support is recorded as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.bench_accelerator import rollout_checksum  # noqa: E402
from benchmarks.harness import device_info, time_compiled  # noqa: E402
from jaxclimate import make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.climate import engines  # noqa: E402
from jaxclimate.core import precision  # noqa: E402

ALGORITHMS = ("highest", "TF32_TF32_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", None)


def surrogate_temperatures(paths: jax.Array) -> np.ndarray:
    """dT of the shipped GRU for each emission path (batch, years, 5), traced at the current precision."""
    engine = engines.SurrogateEngine("gru")
    return np.asarray(jax.jit(jax.vmap(lambda e: engines.rollout(engine, e)))(paths))


def random_paths(n: int, years: int) -> jax.Array:
    engine = engines.SurrogateEngine("gru")
    last = jnp.asarray(engine.init().window[-1])
    scale = jax.random.uniform(jax.random.PRNGKey(1), (n, years, 1), minval=0.0, maxval=1.5)
    return scale * last


def row(algorithm, n: int, steps: int, paths: jax.Array) -> dict:
    precision.PHYSICS_PRECISION = algorithm  # read when the products are traced
    label = algorithm or "backend default"
    try:
        temps = surrogate_temperatures(paths)
        env, params = make("climate-mitigation", engine="gru")
        keys = jax.random.split(jax.random.PRNGKey(0), n)
        t = time_compiled(lambda k: rollout_checksum(env, params, k, steps), keys, repeats=3)
    except Exception as err:  # an algorithm this backend lacks
        return {"algorithm": label, "supported": False, "error": f"{type(err).__name__}: {str(err)[:300]}"}
    return {
        "algorithm": label,
        "supported": True,
        "n_envs": n,
        "steps": steps,
        "env_steps_per_s": n * steps / t["median_s"],
        "compile_s": t["compile_s"],
        "runs_s": t["runs_s"],
        "temperatures": temps,
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    n, steps = (64, 4) if args.dry_run else (65_536, 35)
    paths = random_paths(64 if args.dry_run else 1024, 85)
    start, rows = time.perf_counter(), []
    reference = None
    for algorithm in ALGORITHMS:
        r = row(algorithm, n, steps, paths)
        temps = r.pop("temperatures", None)
        if temps is not None:
            reference = temps if reference is None else reference
            r["max_abs_dT_difference_from_highest_K"] = float(np.max(np.abs(temps - reference)))
        rows.append(r)
        print(json.dumps(r), flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(
            args.out / "precision.json",
            json.dumps({"device": device_info(), "dry_run": args.dry_run, "wall_s": time.perf_counter() - start, "rows": rows}, indent=1) + "\n",
        )
    precision.PHYSICS_PRECISION = "highest"
    return {"rows": rows}


if __name__ == "__main__":
    main()
