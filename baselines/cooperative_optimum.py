"""The cooperative optimum by gradient, beside the constant policies and the learned ones.

    python baselines/cooperative_optimum.py                      # the climate game, scenario (ii), both engines
    python baselines/cooperative_optimum.py --engines cicero-jax --iterations 600 --restarts 8

The climate game (``jaxclimate/envs/climate_mitigation/planner.py``): one planner sets every
country's levers in every year, continuously within the levels' range, to maximise the sum of
the countries' discounted returns (γ = 0.999, the paper's learners'), by projected Adam through
the whole episode, the climate engine included, several restarts ``vmap``ped, one compiled
program per engine. Reported per engine: the planner's welfare and its largest projected-
gradient entry (zero at a maximum), business as usual (no lever), the best constant discrete
policy of the 3⁴ grid, and — on the GRU surrogate, the engine it was trained on — the IPPO
policy of ``baselines/results/climate_mitigation_ii.json``, with the share of the gap from
business as usual to the planner that each closes. Returns are compared undiscounted (the
episode returns training logs), the optimisation uses γ. Results go to
``baselines/results/cooperative_optimum_climate_game.json`` and a figure beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate import make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.envs.climate_mitigation import planner  # noqa: E402
from jaxclimate.envs.climate_mitigation.env import LEVER_NAMES, START_YEAR  # noqa: E402

RESULTS = Path(__file__).parent / "results"
LEARNED = RESULTS / "climate_mitigation_ii.json"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default="ii", choices=["i", "ii"])
    p.add_argument("--engines", nargs="+", default=["gru", "cicero-jax"], choices=["gru", "lstm", "tcn", "cicero-jax"])
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--restarts", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--no-plot", action="store_true")
    return p.parse_args(argv)


def _summary(env, params, levers: planner.Levers) -> dict:
    """Undiscounted returns, temperatures and mean levers of one episode."""
    run = jax.jit(lambda x: planner.episode(env, params, x))(levers)
    rewards = np.asarray(run["rewards"])
    return {
        "return_per_country": rewards.sum(axis=0).tolist(),
        "total_return": float(rewards.sum()),
        "temperature": np.asarray(run["temperature"]).tolist(),
        "temperature_2050": float(run["temperature"][-1]),
        "temperature_2065": float(run["lookahead_temperature"][-1]),
        "mean_levers": dict(
            zip(LEVER_NAMES, [*np.asarray(levers.efforts).mean(axis=(0, 1)).tolist(), float(np.mean(np.asarray(levers.adaptation)))])
        ),
    }


def engine_row(engine: str, args) -> dict:
    env, params = make("climate-mitigation", scenario=args.scenario, engine=engine)
    config = planner.PlannerConfig(iterations=args.iterations, restarts=args.restarts, learning_rate=args.learning_rate)
    grid, constants = planner.constant_policy_welfare(env, params, config.gamma)
    start = time.perf_counter()
    found = planner.optimise(env, params, jax.random.PRNGKey(args.seed), config)
    wall = time.perf_counter() - start
    bau = planner.Levers(*(jnp.zeros_like(x) for x in planner.upper_bounds(env, params)))
    best = grid[int(np.argmax(constants))]
    row = {
        "engine": engine,
        "planner": {
            **_summary(env, params, found["levers"]),
            "welfare": found["welfare"],
            "welfare_per_restart": found["welfare_per_restart"].tolist(),
            "max_projected_gradient": found["max_projected_gradient"],
            "projected_gradient": {  # per kind of lever: largest entry and the 99th percentile of |g_P|
                kind: {"max": float(np.max(np.abs(g))), "p99": float(np.percentile(np.abs(g), 99))}
                for kind, g in zip(("efforts", "adaptation"), found["projected_gradient"])
            },
            "history": found["history"][:: max(1, args.iterations // 100)].tolist(),
            "levers_by_year": {
                "efforts": np.asarray(found["levers"].efforts).mean(axis=1).tolist(),
                "adaptation": np.asarray(found["levers"].adaptation).mean(axis=1).tolist(),
            },
            "seconds": wall,
        },
        "business_as_usual": {**_summary(env, params, bau), "welfare": float(planner.welfare(env, params, bau, config.gamma))},
        "best_constant": {
            **_summary(env, params, planner.constant_levers(env, params, best)),
            "levels": best.tolist(),
            "welfare": float(constants.max()),
        },
    }
    if engine == "gru" and args.scenario == "ii" and LEARNED.exists():
        learned = json.loads(LEARNED.read_text())["summary"]
        row["ippo"] = {
            "total_return": float(np.sum(learned["final_return"]["countries"])),
            "note": "mean episode return of the last updates of the recorded IPPO run (stochastic policies, GRU engine)",
        }
    lo, hi = row["business_as_usual"]["total_return"], row["planner"]["total_return"]
    for name in ("best_constant", "ippo"):
        if name in row:
            row[name]["gap_closed"] = (row[name]["total_return"] - lo) / (hi - lo)
    return row


def plot(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = record["engines"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.5))
    names = ["business_as_usual", "best_constant", "ippo", "planner"]
    for i, row in enumerate(rows):
        values = [row[n]["total_return"] if n in row else np.nan for n in names]
        axes[0].bar(np.arange(len(names)) + 0.4 * i, values, 0.4, label=row["engine"])
    axes[0].set_xticks(np.arange(len(names)) + 0.2, ["no action", "best constant", "IPPO (learned)", "planner"])
    axes[0].set(ylabel="sum of the countries' episode returns", title="Scenario (ii): returns")
    axes[0].legend(fontsize=8)
    years = np.arange(START_YEAR, START_YEAR + len(rows[0]["planner"]["temperature"]))
    for row in rows:
        (line,) = axes[1].plot(years, row["planner"]["temperature"], label=f"planner, {row['engine']}")
        axes[1].plot(years, row["business_as_usual"]["temperature"], "--", color=line.get_color(), label=f"no action, {row['engine']}")
        efforts = np.asarray(row["planner"]["levers_by_year"]["efforts"])
        for j, lever in enumerate(LEVER_NAMES[:3]):
            axes[2].plot(years, efforts[:, j], ["-", "--", ":"][j], color=line.get_color(), label=f"{lever}, {row['engine']}")
    axes[1].set(xlabel="year", ylabel="ΔT (K)", title="Temperature under the planner and with no action")
    axes[1].legend(fontsize=7)
    axes[2].set(xlabel="year", ylabel="mean effort over countries", title="The planner's efforts")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for engine in args.engines:
        print(f"planner on the climate game ({args.scenario}), engine {engine} ...", flush=True)
        rows.append(engine_row(engine, args))
        p = rows[-1]
        print(
            f"  planner {p['planner']['total_return']:.3f} (max projected gradient {p['planner']['max_projected_gradient']:.1e}), "
            f"best constant {p['best_constant']['total_return']:.3f} {p['best_constant']['levels']}, "
            f"no action {p['business_as_usual']['total_return']:.3f}" + (f", IPPO {p['ippo']['total_return']:.3f}" if "ippo" in p else ""),
            flush=True,
        )
    record = {
        "scenario": args.scenario,
        "gamma": planner.PlannerConfig().gamma,
        "iterations": args.iterations,
        "restarts": args.restarts,
        "learning_rate": args.learning_rate,
        "device": jax.devices()[0].device_kind,
        "jax": jax.__version__,
        "engines": rows,
    }
    stem = f"cooperative_optimum_climate_game{'' if args.scenario == 'ii' else '_' + args.scenario}"
    atomic_write_text(args.out / f"{stem}.json", json.dumps(record, indent=1) + "\n")
    if not args.no_plot:
        plot(record, args.out / f"{stem}.png")
    return record


if __name__ == "__main__":
    main()
