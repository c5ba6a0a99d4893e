"""XLA:CPU probe: a ``where`` on one flag per environment, joined with exp/log work on a
(envs, regions) array, runs element by element without vectors (docs/rice_n.md §16.1).

    python benchmarks/xla_cpu_select.py [--envs 256] [--repeats 9]

The work is RICE-N's population update L' = L·((1 + L_a)/(1 + L))^l_g (Eq. 38) as exp and log,
200 times in a ``lax.scan``, on (envs, regions) float32 arrays, in four forms: without a
``where``; inside ``where(flag, L₀, L')`` with one flag per environment (the auto-reset's shape
after ``vmap``) none of them set, and all of them set; and with a full (envs, regions) flag
array. Each at 20, 24 and 27 regions; µs per update, median of ``--repeats`` runs after a
warm-up. With the per-environment flags unset the update is several times slower than
without the ``where``; with all of them set it is nearly free (only the chosen side is
computed, element by element); a per-element flag costs little.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.harness import format_table, save_results, time_compiled  # noqa: E402

UPDATES = 200


def forms(regions: int) -> dict:
    """``{form: (update(L, flag) -> L', flag)}`` for one number of regions."""
    L_a = jnp.asarray(np.linspace(100.0, 2000.0, regions), jnp.float32)
    l_g = jnp.full(regions, 0.134, jnp.float32)
    L_0 = jnp.asarray(np.linspace(50.0, 1500.0, regions), jnp.float32)

    def grow(L):
        return L * jnp.exp(l_g * jnp.log((1.0 + L_a) / (1.0 + L)))

    return {
        "no where": lambda L, flag: grow(L),
        "where, per-env flag": lambda L, flag: jnp.where(flag[:, None], L_0, grow(L)),
        "where, per-element flag": lambda L, flag: jnp.where(flag, L_0, grow(L)),
    }, L_0


def time_update(update, L, flag, repeats: int) -> float:
    """µs per update: median of ``repeats`` timed runs of a compiled scan of ``UPDATES``."""
    run = lambda L, flag: jax.lax.scan(lambda L, _: (update(L, flag), None), L, None, length=UPDATES)[0]  # noqa: E731
    return 1e6 * time_compiled(run, L, flag, repeats=repeats)["median_s"] / UPDATES


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", type=int, default=256)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    rows = []
    for regions in (20, 24, 27):
        updates, L_0 = forms(regions)
        L = jnp.tile(L_0, (args.envs, 1))
        cases = [
            ("no where", jnp.zeros(args.envs, bool)),
            ("where, per-env flag", jnp.zeros(args.envs, bool)),
            ("where, per-env flag", jnp.ones(args.envs, bool)),
            ("where, per-element flag", jnp.zeros((args.envs, regions), bool)),
        ]
        for form, flag in cases:
            us = time_update(updates[form], L, flag, args.repeats)
            rows.append({"regions": regions, "form": form, "flags set": "all" if bool(flag.all()) else "none", "us_per_update": us})
    print(
        format_table(
            rows, [("regions", "regions", "d"), ("form", "form", "s"), ("flags set", "flags set", "s"), ("us_per_update", "µs/update", ".1f")]
        )
    )
    path = save_results("xla_cpu_select", {"config": {"envs": args.envs, "repeats": args.repeats, "updates": UPDATES}, "rows": rows}, args.out)
    print(f"saved {path}")
    return rows


if __name__ == "__main__":
    main()
