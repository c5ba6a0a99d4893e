"""Calibrated static baselines for the EBM environments (docs/ebm_calibrated.md).

    python baselines/ebm_calibrated.py                                   # every env, both conditions
    python baselines/ebm_calibrated.py --envs ebm-v1 --conditions default --iterations 500
    python baselines/ebm_calibrated.py --lbfgs-check ebm-v1              # + a float64 L-BFGS-B solve of ebm-v1
    python baselines/ebm_calibrated.py --learned-only                    # refresh the DDPG/TD3 columns and the figure

The strongest non-learning answer to FedRAIN-Lite's question: the parameters the agents act on,
per agent, held constant over the episode and fitted to the NCEP target by gradient descent through
the differentiable EBM (``jaxclimate.envs.ebm.evaluation.calibrate_static``: projected Adam on the
summed squared areaWRMSE of the six 30° bands of the profile after 200 steps from the reset
state; restarts ``vmap``ped, the whole fit one compiled program per environment). Both conditions
of the paper's tables: ``paper`` (``ignore_albedo_actions=True``: a0/a2 have no effect, as under
climlab 0.8.2) and ``default`` (albedo actions act). Each row records the fitted parameters, the
calibrated band errors beside climlab's default column and the DDPG/TD3 rows of
``baselines/results/fedrain_{ddpg,td3}_{condition}.json`` (where present), the final gradient
norms, iterations, compile and run seconds. Results: ``baselines/results/ebm_calibrated.json`` and
``ebm_calibrated.png``.
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
from jaxclimate.envs.ebm import BAND_NAMES, area_weighted_rmse_bands, static_baseline  # noqa: E402
from jaxclimate.envs.ebm.evaluation import calibrate_static, calibration_objective, held_action_profile, held_model_parameters  # noqa: E402

RESULTS = Path(__file__).parent / "results"
ENVS = ("ebm-v1", "ebm-v2-a2", "ebm-v2-a6", "ebm-v3-a2", "ebm-v3-a6")
CONDITIONS = ("paper", "default")
ALGOS = ("ddpg", "td3")
HISTORY_POINTS = 100  # the best restart's J, sampled this many times over the iterations


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    p.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=list(CONDITIONS))
    p.add_argument("--iterations", type=int, default=5000)
    p.add_argument("--restarts", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=0.5, help="Adam's initial step in normalised action units")
    p.add_argument("--seed", type=int, default=0, help="key of the restarts' starting actions")
    p.add_argument("--lbfgs-check", nargs="*", default=[], choices=list(ENVS), help="also solve these envs with float64 L-BFGS-B (scipy)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--learned-only", action="store_true", help="no calibration: refresh the DDPG/TD3 columns and the figure from the records")
    return p.parse_args(argv)


def fit(env, params, args) -> tuple:
    """The calibration as one compiled program: (result, compile seconds, run seconds)."""
    program = jax.jit(
        lambda key: calibrate_static(env, params, key, iterations=args.iterations, restarts=args.restarts, learning_rate=args.learning_rate)
    )
    key = jax.random.PRNGKey(args.seed)
    start = time.perf_counter()
    compiled = program.lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(compiled(key))
    return result, compile_s, time.perf_counter() - start


def rounded(x, digits: int = 5) -> list:
    return np.round(np.asarray(x, np.float64), digits).tolist()


def fitted_parameters(env, params, action) -> dict:
    """The held parameters in model units (A in W m⁻²), one row per model, and where the action sits on its bounds."""
    low, high = (np.asarray(b) for b in (env.action_space("bands").low, env.action_space("bands").high))
    a = np.asarray(action)
    model = {k: rounded(v, 4) for k, v in held_model_parameters(env, params, action).items()}
    return {
        "action": rounded(a, 5),
        "model_parameters": model,
        "albedo_acts": not bool(params.ignore_albedo_actions),
        "at_lower_bound": int((a <= low).sum()),
        "at_upper_bound": int((a >= high).sum()),
        "components": int(a.size),
    }


def learned_rows(env_id: str, condition: str, calibrated: list[float]) -> dict:
    """The DDPG/TD3 rows of ``env_id`` from the FedRAIN-Lite records (every regime; local and, for
    fed05/fed10, global actors) against the calibrated band errors ``calibrated``."""
    learned = {}
    for algo in ALGOS:
        path = RESULTS / f"fedrain_{algo}_{condition}.json"
        if not path.exists():
            continue
        records = json.loads(path.read_text())["rows"]
        stats = {
            f"{key} ({actors})": row[actors]
            for key, row in records.items()
            if row["env"] == env_id
            for actors in ("local", "global")
            if actors in row
        }
        if stats:
            learned[algo] = summarise_rows(stats, np.asarray(calibrated))
    return learned


def summarise_rows(stats: dict, calibrated: np.ndarray) -> dict:
    """Each row's band means; the best row by the calibration's objective (Σ of squared band means); per
    band the lowest mean over rows and how many rows' means, and how many single seeds' errors, are
    below the calibrated error."""
    means = {k: np.asarray(s["mean"]) for k, s in stats.items()}
    objective = {k: float(np.sum(m**2)) for k, m in means.items()}
    best = min(objective, key=objective.get)
    table, seeds = np.stack(list(means.values())), np.concatenate([np.asarray(s["per_seed"]) for s in stats.values()])
    return {
        "rows": {k: rounded(m, 4) for k, m in means.items()},
        "best_row": {"row": best, "band_mean": rounded(means[best], 4), "objective": round(objective[best], 4)},
        "band_min": rounded(table.min(axis=0), 4),
        "band_min_row": [list(means)[i] for i in table.argmin(axis=0)],
        "rows_below_calibrated": (table < calibrated).sum(axis=0).tolist(),
        "seed_evaluations": len(seeds),
        "seeds_below_calibrated": (seeds < calibrated).sum(axis=0).tolist(),
        "best_seed": rounded(seeds.min(axis=0), 4),
    }


def lbfgs_reference(env_id: str, condition: str, start: np.ndarray) -> dict:
    """A float64 L-BFGS-B solve (scipy) of the same objective in the normalised action, started from
    the calibrated action: how far projected Adam stopped from a local optimum."""
    import scipy.optimize

    with jax.enable_x64(True):
        env, params = make(env_id, dtype="float64", ignore_albedo_actions=condition == "paper")
        low, high = (np.asarray(b, np.float64) for b in (env.action_space("bands").low, env.action_space("bands").high))
        shape = (env.num_agents, low.size)
        value_and_grad = jax.jit(jax.value_and_grad(lambda u: calibration_objective(env, params, low + (high - low) * u.reshape(shape))))
        u0 = np.clip(((start - low) / (high - low)).ravel(), 0.0, 1.0)
        solution = scipy.optimize.minimize(
            lambda u: tuple(np.asarray(x, np.float64) for x in value_and_grad(jnp.asarray(u))),
            u0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, 1.0)] * u0.size,
            options={"maxiter": 20_000, "maxfun": 40_000, "ftol": 1e-15, "gtol": 1e-10},
        )
        start_value = float(value_and_grad(jnp.asarray(u0))[0])
    return {
        "objective_float64_at_calibrated": start_value,
        "objective": float(solution.fun),
        "iterations": int(solution.nit),
        "message": str(solution.message),
    }


def sampled_history(result, iterations: int) -> dict:
    """The kept restart's J before update k, for ``HISTORY_POINTS`` values of k."""
    steps = list(range(0, iterations, max(1, iterations // HISTORY_POINTS)))
    history = np.asarray(result.history)[int(np.argmin(result.objectives))]
    return {"iteration": steps, "objective": rounded(history[steps], 4)}


def calibrate_row(env_id: str, condition: str, args) -> dict:
    env, params = make(env_id, ignore_albedo_actions=condition == "paper")
    result, compile_s, run_s = fit(env, params, args)
    profile = held_action_profile(env, params, result.action)
    bands = np.asarray(area_weighted_rmse_bands(profile, params.target))
    default = np.asarray(static_baseline(params)[1])
    row = {
        "env": env_id,
        "condition": condition,
        "agents": env.num_agents,
        "fitted": fitted_parameters(env, params, result.action),
        "calibrated": {"band_rmse": rounded(bands), "objective": float(result.objective), "profile": rounded(profile, 4)},
        "climlab_default": {"band_rmse": rounded(default), "objective": float(np.sum(default**2))},
        "restart_objectives": rounded(result.objectives),
        "history": sampled_history(result, args.iterations),
        "gradient_norm": float(jnp.linalg.norm(result.gradient)),
        "projected_gradient_norm": float(jnp.linalg.norm(result.projected_gradient)),
        "iterations": args.iterations,
        "restarts": args.restarts,
        "compile_s": compile_s,
        "run_s": run_s,
    }
    if env_id in args.lbfgs_check:
        row["lbfgs_check"] = lbfgs_reference(env_id, condition, np.asarray(result.action, np.float64))
    return row


def print_row(row: dict) -> None:
    cells = lambda values: " ".join(f"{v:>8.2f}" for v in values)  # noqa: E731
    print(
        f"\n{row['env']} ({row['condition']}): J = {row['calibrated']['objective']:.3f} °C², |P grad| = {row['projected_gradient_norm']:.2g}, "
        f"compile {row['compile_s']:.1f} s, run {row['run_s']:.1f} s"
    )
    print(f"{'':>30} " + " ".join(f"{b:>8}" for b in BAND_NAMES))
    print(f"{'climlab default':>30} {cells(row['climlab_default']['band_rmse'])}")
    print(f"{'calibrated static':>30} {cells(row['calibrated']['band_rmse'])}")
    for algo, learned in row["learned"].items():
        print(f"{algo.upper() + ' ' + learned['best_row']['row']:>30} {cells(learned['best_row']['band_mean'])}")


def plot(rows: dict, path: Path) -> None:
    """One panel per (condition, env): band errors of climlab's default column, the calibrated static
    column and the DDPG/TD3 rows that are best by the same objective (band means over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conditions = [c for c in CONDITIONS if any(r["condition"] == c for r in rows.values())]
    envs = [e for e in ENVS if any(r["env"] == e for r in rows.values())]
    fig, axes = plt.subplots(len(conditions), len(envs), figsize=(3.6 * len(envs), 4.4 * len(conditions)), squeeze=False, sharey=True)
    x = np.arange(6)
    for i, condition in enumerate(conditions):
        for j, env_id in enumerate(envs):
            plot_panel(axes[i][j], rows.get(f"{env_id}/{condition}"), x)
            axes[i][j].set_title(f"{env_id}, {condition} conditions", fontsize=9)
    fig.suptitle(
        "EBM: areaWRMSE per 30° band after 200 steps (log scale): climlab's default parameters, the calibrated static\n"
        "parameters (held constant, fitted to NCEP by projected Adam through the model) and the best DDPG / TD3 rows (band means over 10 seeds)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_panel(ax, row: dict | None, x: np.ndarray) -> None:
    ax.set_yscale("log")
    ax.set_xticks(x, [b.replace("-", "–") for b in BAND_NAMES], rotation=35, fontsize=7)
    if row is None:
        return
    ax.plot(x, row["climlab_default"]["band_rmse"], "k--o", ms=3, label="climlab default")
    ax.plot(x, row["calibrated"]["band_rmse"], "-o", color="tab:green", lw=2, ms=4, label="calibrated static")
    for (algo, learned), marker in zip(row["learned"].items(), ("s", "^")):
        ax.plot(x, learned["best_row"]["band_mean"], ":" + marker, ms=5, label=f"{algo.upper()} {learned['best_row']['row']}")
    ax.set_ylabel("areaWRMSE (°C)", fontsize=8)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)  # below the panel: the lines fill it


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "ebm_calibrated.json"
    record = json.loads(path.read_text()) if path.exists() else {"rows": {}}
    record.update(
        objective="sum over the six 30° bands of areaWRMSE² of the profile after 200 steps of a held action from the reset state (°C²)",
        method={
            "optimiser": "projected Adam on the normalised action u in [0, 1]",
            "schedule": "cosine decay to 1e-3",
            "learning_rate": args.learning_rate,
        },
        bands=list(BAND_NAMES),
        device=jax.devices()[0].device_kind,
        jax=jax.__version__,
    )
    for condition in [] if args.learned_only else args.conditions:
        for env_id in args.envs:
            print(f"calibrating {env_id} ({condition}) ...", flush=True)
            row = calibrate_row(env_id, condition, args)
            row["learned"] = learned_rows(env_id, condition, row["calibrated"]["band_rmse"])
            record["rows"][f"{env_id}/{condition}"] = row
            atomic_write_text(path, json.dumps(record, indent=1) + "\n")
            print_row(row)
    for row in record["rows"].values():  # the FedRAIN-Lite records may have changed since a row was calibrated
        row["learned"] = learned_rows(row["env"], row["condition"], row["calibrated"]["band_rmse"])
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    if not args.no_plot:
        plot(record["rows"], args.out / "ebm_calibrated.png")
    return record


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/ebm_calibrated.py"))
