"""The cooperative optimum by gradient, beside the constant policies and the learned ones.

    python baselines/cooperative_optimum.py                      # both systems, every engine / climate module
    python baselines/cooperative_optimum.py --systems rice-n --modules dice
    python baselines/cooperative_optimum.py --systems game --engines cicero-jax --iterations 600 --restarts 8

**The climate game** (``jaxclimate/envs/climate_mitigation/planner.py``): one planner sets every
country's levers in every year, continuously within the levels' range, to maximise the sum of
the countries' discounted returns (γ = 0.999, the paper's learners'), by projected Adam through
the whole episode, the climate engine included, several restarts ``vmap``ped, one compiled
program per engine. Reported per engine: the planner's welfare and its projected gradient
(zero at a maximum), business as usual (no lever), the best constant discrete policy of the 3⁴
grid, and — on the GRU surrogate, the engine it was trained on — the IPPO policy of
``baselines/results/climate_mitigation_ii.json``, with the share of the gap from business as
usual to the planner that each closes. Returns are compared undiscounted (the episode returns
training logs), the optimisation uses γ.

**RICE-N** (``jaxclimate/envs/rice_n/planner.py``): the planner sets every region's savings and
mitigation rate at every activity step (no trade, as the paper's constant policies) to maximise
global welfare discounted at the model's ρ, under each climate module (DICE-2016, CICERO-SCM in
JAX, the GRU surrogate). Reported per module: the planner on the paper's index plane beside the
11 × 11 constant policies (their Pareto front and hypervolume, and the hypervolume with the
planner added), business as usual (s 0.2, μ 0), and the learned policies of
``baselines/rice_n.py`` per negotiation protocol, trained under the same climate module (its
``--climate`` records), with the share of the gap in return from business as usual to the
planner that each closes. Modules run later join the rows of those run before.

Results go to ``baselines/results/cooperative_optimum_{climate_game,rice_n}.json`` and a figure
beside each.
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
from jaxclimate.envs.rice_n import evaluation as rice_evaluation  # noqa: E402
from jaxclimate.envs.rice_n import planner as rice_planner  # noqa: E402

RESULTS = Path(__file__).parent / "results"
LEARNED = RESULTS / "climate_mitigation_ii.json"
BAU_RATES = (0.2, 0.0)  # RICE-N's business as usual: 20 % savings, no abatement


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--systems", nargs="+", default=["game", "rice-n"], choices=["game", "rice-n"])
    p.add_argument("--scenario", default="ii", choices=["i", "ii"], help="the climate game's scenario")
    p.add_argument("--modules", nargs="+", default=["dice", "cicero-jax", "gru"], help="RICE-N's climate modules")
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


def _settings(args) -> dict:
    """What every record of this script states about how it was made."""
    return {
        "iterations": args.iterations,
        "restarts": args.restarts,
        "learning_rate": args.learning_rate,
        "device": jax.devices()[0].device_kind,
        "jax": jax.__version__,
    }


def game(args) -> dict:
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
    record = {"scenario": args.scenario, "gamma": planner.PlannerConfig().gamma, **_settings(args), "engines": rows}
    stem = f"cooperative_optimum_climate_game{'' if args.scenario == 'ii' else '_' + args.scenario}"
    atomic_write_text(args.out / f"{stem}.json", json.dumps(record, indent=1) + "\n")
    if not args.no_plot:
        plot(record, args.out / f"{stem}.png")
    return record


# --- RICE-N ----------------------------------------------------------------------------------


def _rice_outcome(env, params, rates: rice_planner.Rates) -> dict:
    """A RICE-N policy's measures, with its undiscounted return per region (what training logs)."""
    run = jax.jit(lambda r: rice_planner.episode(env, params, r))(rates)
    outcome = rice_planner.metrics(env, params, rates)
    outcome["return_per_region"] = float(np.sum(np.asarray(run["utility"], np.float64)) / env.num_regions)
    return outcome


def _constant_grid(env, params) -> list[dict]:
    """The paper's 11 × 11 constant policies (savings, mitigation levels 0..10), one program."""
    levels = np.arange(11) / 10
    grid = np.array([(s, m) for s in levels for m in levels])
    runs = jax.jit(jax.vmap(lambda s, m: rice_planner.episode(env, params, rice_planner.constant_rates(env, s, m))))(*jnp.asarray(grid, env.dtype).T)
    temperature, output = np.asarray(runs["temperature"], np.float64), np.asarray(runs["output"], np.float64)
    delta_t, total_output = temperature[:, -1] - temperature[:, 0], output.sum(axis=(1, 2))
    return [
        {
            "savings": float(s),
            "mitigation": float(m),
            "welfare": float(np.sum(np.asarray(runs["welfare"][i], np.float64))),
            "return_per_region": float(np.sum(np.asarray(runs["utility"][i], np.float64)) / env.num_regions),
            "delta_t": float(delta_t[i]),
            "climate_index": float(rice_evaluation.climate_index(delta_t[i], rounded=False)),
            "economic_index": float(rice_evaluation.economic_index(total_output[i], rounded=False)),
        }
        for i, (s, m) in enumerate(grid)
    ]


def learned_rice_n(module: str) -> Path:
    """The record of ``baselines/rice_n.py`` for a climate module (``--climate``): the learned
    policies the planner is compared with, trained under the same climate."""
    return RESULTS / ("rice_n.json" if module == "dice" else f"rice_n_{module.replace('-', '_')}.json")


def rice_row(module: str, args) -> dict:
    env, params = make("rice-n", climate=module)
    config = rice_planner.PlannerConfig(iterations=args.iterations, restarts=args.restarts, learning_rate=args.learning_rate)
    start = time.perf_counter()
    found = rice_planner.optimise(env, params, jax.random.PRNGKey(args.seed), config)
    wall = time.perf_counter() - start
    grid = _constant_grid(env, params)
    points = np.array([[g["climate_index"], g["economic_index"]] for g in grid])
    optimum = _rice_outcome(env, params, found["rates"])
    row = {
        "module": module,
        "planner": {
            **optimum,
            "welfare_per_restart": found["welfare_per_restart"].tolist(),
            "max_projected_gradient": found["max_projected_gradient"],
            "savings_by_step": np.asarray(found["rates"].savings).mean(axis=1).tolist(),
            "mitigation_by_step": np.asarray(found["rates"].mitigation).mean(axis=1).tolist(),
            "seconds": wall,
        },
        "business_as_usual": _rice_outcome(env, params, rice_planner.constant_rates(env, *BAU_RATES)),
        "best_constant": max(grid, key=lambda g: g["welfare"]),
        "constants": grid,
        "hypervolume_constants": rice_evaluation.hypervolume(points),
        "hypervolume_with_planner": rice_evaluation.hypervolume(np.vstack([points, [[optimum["climate_index"], optimum["economic_index"]]]])),
    }
    learned_file = learned_rice_n(module)
    if learned_file.exists():
        row["learned_record"] = str(learned_file.relative_to(RESULTS.parent.parent))
        row["learned"] = {
            r["protocol"]: {
                "return_per_region": float(np.mean(r["mean_episode_return_last_update"])),
                "points": r["points"],
                "hypervolume": r["hypervolume"],
            }
            for r in json.loads(learned_file.read_text())["results"]
        }
    lo, hi = row["business_as_usual"]["return_per_region"], optimum["return_per_region"]
    for entry in [row["best_constant"], *row.get("learned", {}).values()]:
        entry["gap_closed"] = (entry["return_per_region"] - lo) / (hi - lo)
    return row


def plot_rice(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = record["modules"]
    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 5), squeeze=False)
    for ax, row in zip(axes[0], rows):
        points = np.array([[g["climate_index"], g["economic_index"]] for g in row["constants"]])
        ax.scatter(*points.T, s=10, c="lightgrey", label="constant policies (s, μ)")
        front = rice_evaluation.pareto_front(points)
        ax.plot(*front[np.argsort(front[:, 0])].T, "k-", lw=0.8, label=f"their Pareto front, HV {row['hypervolume_constants']:.3f}")
        bau = row["business_as_usual"]
        ax.scatter(bau["climate_index"], bau["economic_index"], marker="s", c="tab:grey", s=60, label="business as usual (s 0.2, μ 0)")
        for protocol, learned in row.get("learned", {}).items():
            ax.scatter(*np.asarray(learned["points"]).T, marker="^", s=50, label=f"IPPO, {protocol} (seeds)")
        p = row["planner"]
        ax.scatter(
            p["climate_index"],
            p["economic_index"],
            marker="*",
            s=250,
            c="tab:red",
            label=f"planner (HV with it {row['hypervolume_with_planner']:.3f})",
        )
        ax.set(xlabel="climate index (DICE normalisation)", ylabel="economic index", title=f"RICE-N, climate module {row['module']}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rice_n(args) -> dict:
    rows = []
    for module in args.modules:
        print(f"planner on RICE-N, climate module {module} ...", flush=True)
        rows.append(rice_row(module, args))
        p, b = rows[-1]["planner"], rows[-1]["business_as_usual"]
        print(
            f"  planner W {p['welfare']:.3f} (max projected gradient {p['max_projected_gradient']:.1e}), return/region {p['return_per_region']:.3f}, "
            f"ΔT {p['delta_t']:.2f} K, indices ({p['climate_index']:.3f}, {p['economic_index']:.3f}); "
            f"business as usual W {b['welfare']:.3f}, ΔT {b['delta_t']:.2f} K",
            flush=True,
        )
    record = {
        "protocol": "none (no trade: every entry but savings and mitigation 0, as the constant policies)",
        "welfare": "Σ_t Σ_i U_i,t / (1 + ρ)^(Δ·t), ρ = 0.015, Δ = 5",
        **_settings(args),
        "modules": rows,
    }
    path = args.out / "cooperative_optimum_rice_n.json"
    if path.exists():  # modules run earlier (with these settings) keep their rows
        earlier = json.loads(path.read_text())
        if all(earlier.get(k) == record[k] for k in ("iterations", "restarts", "learning_rate")):
            ran = {row["module"] for row in rows}
            record["modules"] = [r for r in earlier["modules"] if r["module"] not in ran] + rows
            order = {m: i for i, m in enumerate(("dice", "cicero-jax", "gru"))}
            record["modules"].sort(key=lambda r: order.get(r["module"], len(order)))
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    if not args.no_plot:
        plot_rice(record, args.out / "cooperative_optimum_rice_n.png")
    return record


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    systems = {"game": game, "rice-n": rice_n}
    return {name: systems[name](args) for name in args.systems}


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/cooperative_optimum.py"))
