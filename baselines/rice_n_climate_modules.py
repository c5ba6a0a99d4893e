"""RICE-N under its three climate modules (docs/climate_modules.md): DICE-2016 (the
reference), CICERO-SCM in JAX (multi-gas) and the shipped GRU surrogate of CICERO-SCM.

For business as usual and a few constant policies (docs/rice_n.md §11.3) it records the
atmospheric temperature 2015–2115 (the 2100 value is the reference's "2100", after activity
step 17), the climate and economic indices on the paper's index plane (normalised by the
reference's DICE-2016 extremal policies, docs/rice_n.md §11.2) and, for comparison, by each
module's own extremal policies, and the global welfare (the undiscounted return Σ U and the
discounted Σ U/(1+ρ)^(5t)). Results: ``baselines/results/rice_n_climate_modules.json`` and
``.png``.

    python baselines/rice_n_climate_modules.py
    python baselines/rice_n_climate_modules.py --modules dice cicero-jax

Policies are action sequences (steps, regions, entries) played by :func:`evaluate_policy`;
a learned policy (e.g. a ``--trained RUN_DIR`` option training the bilateral protocol under
each module) plugs in as one more entry of :func:`policies`' dictionary through
``evaluation.rollout_histories``. The learned bilateral policy's temperatures, trained by
``baselines/rice_n.py`` under DICE-2016 and CICERO-SCM, are drawn beside business as usual by

    python baselines/rice_n_climate_modules.py --learned-figure   # rice_n_learned_temperature.png
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
import numpy as np  # noqa: E402

from jaxclimate import make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.envs.rice_n import evaluation as ev  # noqa: E402
from jaxclimate.envs.rice_n.climate import CLIMATE_MODULES  # noqa: E402
from jaxclimate.envs.rice_n.env import replay  # noqa: E402

RESULTS = Path(__file__).parent / "results"
YEARS = np.arange(2015, 2120, 5)  # the state after activity step k is the year 2015 + 5k
#: Constant policies as (savings level, mitigation level); 10 = rate 1.0 (docs/rice_n.md §11.3).
POLICIES = {
    "business as usual (s 0.2, μ 0)": (2, 0),
    "mid mitigation (s 0.2, μ 0.5)": (2, 5),
    "high mitigation (s 0.2, μ 0.9)": (2, 9),
    "best climate (s 0, μ 1.0)": (0, 10),
    "best economy (s 1.0, μ 0)": (10, 0),
}
BEST_CLIMATE, BEST_ECONOMY = "best climate (s 0, μ 1.0)", "best economy (s 1.0, μ 0)"
#: The last year inside the GRU surrogate's training scenarios (2015..2075).
GRU_TRAINING_END = 2075
#: baselines/rice_n.py's records of the learned policies per module (the GRU is not trained on: it is
#: no climate for RICE-N after 2075, docs/climate_modules.md §5) and the figure drawn from them.
LEARNED_RECORDS = {"dice": RESULTS / "rice_n.json", "cicero-jax": RESULTS / "rice_n_cicero_jax.json"}
LEARNED_FIGURE = RESULTS / "rice_n_learned_temperature.png"
STYLES = {"dice": ("k", "o", "DICE-2016 (reference)"), "cicero-jax": ("C3", "s", "CICERO-SCM (JAX)"), "gru": ("C0", "^", "GRU surrogate")}


def policies(env) -> dict[str, np.ndarray]:
    """Name -> action levels (episode_length, N, A) for every policy evaluated."""
    shape = (env.episode_length, env.num_regions, env.nvec.size)
    return {name: np.broadcast_to(np.asarray(env.constant_actions(savings=s, mitigation=m)), shape) for name, (s, m) in POLICIES.items()}


def evaluate_policy(env, params, actions: np.ndarray) -> dict:
    """One episode: temperatures by year, the indices and the welfare."""
    history = replay(env, actions, params)
    metrics = ev.episode_metrics(history)
    t_at = np.asarray(history["state__global_temperature"], np.float64)[:, 0]
    welfare = float(np.asarray(history["state__social_welfare_all_regions"], np.float64)[1:].sum())
    return {
        "temperature": {int(y): float(t) for y, t in zip(YEARS, t_at)},
        "temperature_2050": float(t_at[list(YEARS).index(2050)]),
        "temperature_2100": metrics["temperature_2100"],
        "temperature_2115": metrics["temperature_2115"],
        "delta_t_2115": metrics["delta_t"],
        "total_output": metrics["total_output"],
        "total_reward": metrics["total_reward"],
        "discounted_welfare": welfare,
        "climate_index": metrics["climate_index"],
        "economic_index": metrics["economic_index"],
    }


def own_indices(rows: dict[str, dict]) -> None:
    """Add each policy's climate index on the module's own extremal ΔT (the economic constants
    barely move: the economy is the same)."""
    worst, best = rows[BEST_ECONOMY]["delta_t_2115"], rows[BEST_CLIMATE]["delta_t_2115"]
    for row in rows.values():
        row["climate_index_own_extremes"] = (row["delta_t_2115"] - worst) / (best - worst)


def run_module(climate: str) -> dict:
    start = time.perf_counter()
    env, params = make("rice-n", climate=climate)
    rows = {name: evaluate_policy(env, params, actions) for name, actions in policies(env).items()}
    own_indices(rows)
    return {"module": climate, "env": env.name, "wall_seconds": time.perf_counter() - start, "policies": rows}


def gru_error(results: dict) -> dict | None:
    """|GRU − CICERO-SCM| in T_AT per policy, inside and after the surrogate's training years."""
    if not {"gru", "cicero-jax"} <= set(results):
        return None
    out = {}
    for name in POLICIES:
        gru, exact = (np.asarray(list(results[m]["policies"][name]["temperature"].values())) for m in ("gru", "cicero-jax"))
        inside = YEARS <= GRU_TRAINING_END
        out[name] = {"max_abs_to_2075": float(np.abs(gru - exact)[inside].max()), "max_abs_after_2075": float(np.abs(gru - exact)[~inside].max())}
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {name: f"C{i}" for i, name in enumerate(POLICIES)}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    bau = next(iter(POLICIES))
    for m, res in results.items():
        c, marker, label = STYLES[m]
        temps = res["policies"][bau]["temperature"]
        axes[0].plot(list(temps), list(temps.values()), color=c, marker=marker, ms=3, label=label)
    axes[0].axvspan(GRU_TRAINING_END, YEARS[-1], color="0.9", zorder=0, label="GRU extrapolates")
    axes[0].set(xlabel="year", ylabel="T_AT (°C above pre-industrial)", title=f"{bau}")
    axes[0].legend(fontsize=8)
    for m, ls in (("dice", "-"), ("cicero-jax", "--")):
        if m not in results:
            continue
        for name, row in results[m]["policies"].items():
            axes[1].plot(list(row["temperature"]), list(row["temperature"].values()), ls, color=colours[name], label=name if m == "dice" else None)
    axes[1].set(xlabel="year", ylabel="T_AT (°C)", title="constant policies: DICE-2016 (solid), CICERO-SCM (dashed)")
    axes[1].legend(fontsize=7)
    for m, res in results.items():
        c, marker, label = STYLES[m]
        for name, row in res["policies"].items():
            axes[2].scatter(row["climate_index"], row["economic_index"], color=colours[name], marker=marker, edgecolor=c, s=50)
        axes[2].scatter([], [], color="w", marker=marker, edgecolor=c, label=label)
    axes[2].set(xlabel="climate index (paper's DICE normalisation)", ylabel="economic index", title="index plane (colour: policy)")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def learned_temperatures(record: dict, source: str, protocol: str = "bilateral") -> tuple[np.ndarray, np.ndarray]:
    """(years, T_AT (seeds, years)) of one protocol's row of a baselines/rice_n.py record."""
    rows = [r for r in record["results"] if r["protocol"] == protocol]
    if not rows:
        raise ValueError(f"{source}: no {protocol!r} row (protocols {[r['protocol'] for r in record['results']]})")
    if "temperature_path" not in rows[0] or "years" not in rows[0]:
        raise ValueError(
            f"{source}: the {protocol!r} row has no temperature_path/years (recorded before baselines/rice_n.py kept them); "
            f"train it again with: python baselines/rice_n.py --protocols {protocol} --merge --out {source} (and its --climate)"
        )
    return np.asarray(rows[0]["years"]), np.asarray(rows[0]["temperature_path"], np.float64)


def learned_figure(modules_path: Path, learned: dict[str, Path], path: Path, protocol: str = "bilateral") -> dict:
    """T_AT 2015–2115: business as usual under every module of ``modules_path`` (this script's
    record) and the learned ``protocol`` policy per module of ``learned`` (seed mean, seeds' range
    shaded). Reads the records, trains nothing; returns the 2100 temperatures shown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modules = json.loads(Path(modules_path).read_text())["results"]
    paths = {m: learned_temperatures(json.loads(Path(f).read_text()), str(f), protocol) for m, f in learned.items()}
    bau = next(iter(POLICIES))
    shown = {"business as usual": {}, f"learned {protocol} (seed mean, min, max)": {}}
    fig, ax = plt.subplots(figsize=(8.5, 5))
    ax.axvspan(GRU_TRAINING_END, YEARS[-1], color="0.92", zorder=0, label=f"beyond the GRU surrogate's training years (after {GRU_TRAINING_END})")
    ax.axhline(2.0, color="0.4", ls=":", lw=1, label="2 °C")
    for m, res in modules.items():
        c, marker, name = STYLES[m]
        temps = {int(y): t for y, t in res["policies"][bau]["temperature"].items()}
        shown["business as usual"][m] = temps[2100]
        label = f"business as usual, {name}: {temps[2100]:.2f} °C in 2100"
        ax.plot(list(temps), list(temps.values()), "--", color=c, marker=marker, ms=3, label=label)
    for m, (years, temps) in paths.items():
        c, marker, name = STYLES[m]
        mean, at_2100 = temps.mean(axis=0), temps[:, list(years).index(2100)]
        shown[f"learned {protocol} (seed mean, min, max)"][m] = [float(at_2100.mean()), float(at_2100.min()), float(at_2100.max())]
        ax.fill_between(years, temps.min(axis=0), temps.max(axis=0), color=c, alpha=0.25, lw=0)
        label = f"learned {protocol} policy, {name}: {at_2100.mean():.2f} °C in 2100 (mean of {len(temps)} seeds, range shaded)"
        ax.plot(years, mean, "-", color=c, marker=marker, ms=4, lw=2, label=label)
    if "gru" in modules and "gru" not in paths:
        ax.plot([], [], " ", label="(no learned policy under the GRU: it is no climate for RICE-N after 2075)")
    ax.set(xlabel="year", ylabel="T_AT (°C above pre-industrial)", xlim=(YEARS[0], YEARS[-1]))
    ax.set_title(f"RICE-N: business as usual and the learned {protocol} policy")
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return shown


def print_table(results: dict) -> None:
    print(f"\n{'module':>11} {'policy':<33} {'T2050':>6} {'T2100':>6} {'ΔT2115':>7} {'CI':>6} {'CI own':>7} {'EI':>6} {'Σ U':>7} {'Σ W':>7}")
    for m, res in results.items():
        for name, r in res["policies"].items():
            print(
                f"{m:>11} {name:<33} {r['temperature_2050']:6.2f} {r['temperature_2100']:6.2f} {r['delta_t_2115']:7.2f} "
                f"{r['climate_index']:6.3f} {r['climate_index_own_extremes']:7.3f} {r['economic_index']:6.3f} "
                f"{r['total_reward']:7.2f} {r['discounted_welfare']:7.2f}"
            )


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modules", nargs="+", default=list(CLIMATE_MODULES), choices=CLIMATE_MODULES)
    p.add_argument("--out", type=Path, default=RESULTS / "rice_n_climate_modules.json")
    p.add_argument(
        "--learned-figure",
        type=Path,
        nargs="?",
        const=LEARNED_FIGURE,
        help=f"only draw T_AT of business as usual (--out's record) and of the learned bilateral policy "
        f"({', '.join(str(f.name) for f in LEARNED_RECORDS.values())}) to this PNG (default {LEARNED_FIGURE.name}); trains nothing",
    )
    args = p.parse_args(argv)
    if args.learned_figure:
        shown = learned_figure(args.out, LEARNED_RECORDS, args.learned_figure)
        print(f"T_AT 2100 (°C): {json.dumps(shown, ensure_ascii=False)}\nsaved {args.learned_figure}")
        return shown
    results = {}
    for climate in args.modules:
        print(f"rice-n under {climate} ...", flush=True)
        results[climate] = run_module(climate)
    payload = {
        "config": {"modules": args.modules, "policies": {k: {"savings_level": s, "mitigation_level": m} for k, (s, m) in POLICIES.items()}},
        "device": jax.devices()[0].device_kind,
        "notes": [
            "temperature: T_AT after each activity step, on RICE-N's anchor T_AT(2015) = 0.85 °C (docs/climate_modules.md)",
            "climate_index / economic_index: the paper's index plane, normalised by the reference's DICE-2016 extremal policies",
            "climate_index_own_extremes: the climate index normalised by the same extremal policies under this module",
            f"gru: trained on 2015..{GRU_TRAINING_END} scenarios near SSP2-4.5; later years and far higher or lower CO2 are extrapolation",
        ],
        "results": results,
        "gru_minus_cicero": gru_error(results),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    plot(results, args.out.with_suffix(".png"))
    print_table(results)
    if payload["gru_minus_cicero"]:
        print("\n|GRU − CICERO-SCM| (K):", {k: {a: round(b, 3) for a, b in v.items()} for k, v in payload["gru_minus_cicero"].items()})
    print(f"saved {args.out} and {args.out.with_suffix('.png')}")
    return payload


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/rice_n_climate_modules.py"))
