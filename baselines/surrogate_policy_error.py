"""How accurate is a surrogate where the climate game goes? Error on held-out policy-induced
emission paths against CICERO-SCM (in JAX, float64 = the oracle to 1e-12 K).

    python baselines/surrogate_policy_error.py                         # the shipped GRU
    python baselines/surrogate_policy_error.py --weights DIR --name gru # exported weights
    python baselines/surrogate_policy_error.py --trajectories runs/<run>/trajectories.npz

Held-out paths: ``jaxclimate.climate.policy_data`` with a seed not used for training (default
1; the policy-data training set uses seed 0), random and scripted policies of scenarios (i)
and (ii), and optionally the episodes a trained policy visited (``trajectories.npz`` of
``python -m jaxclimate.train``). The surrogate runs as the game's engine from 2016 over each
50-year path (2016..2065). Reported per source: RMSE pooled over episode-years, RMSE of the
first and last decade, mean error of the last decade (bias), and Kendall's τ-b of the
discounted temperature returns −Σγ^t ΔT (paper Eq. 44) and −Σγ^t ΔT⁴ (the authors' code), as
in the policy-consistency test. Issue target for scenario (ii): RMSE ≤ 5e-4 K, τ ≥ 0.99.

For each trained-policy source also τ over its distinct episodes (a trained policy plays one
episode again and again, and τ over all of them counts each pair with that episode as often),
and, where it repeats one, the **response to each gas** at that usual episode:
d(−Σγ^t ΔT)/d(gas's emissions in every year 2016..2065), the surrogate's (``jax.grad``)
against CICERO-SCM's (central differences in float64), as a relative error. A trained policy's
episodes differ from its usual one by a lever or two, so their returns lie ~1e-4 to 1e-3 from
its return and their order rests on these responses: a gas whose response is off by a few %
misorders them while the RMSE stays tiny (docs/climate_mitigation.md §5.6).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.climate import cicero, cicero_jax, engines, policy_data  # noqa: E402
from jaxclimate.envs.climate_mitigation.consistency import GAMMA, consistency_metrics, discounted_temperature_returns, kendall_tau_b, oracle_inputs  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def surrogate_temperatures(engine: engines.SurrogateEngine, paths: np.ndarray, batch: int = 2000) -> np.ndarray:
    roll = jax.jit(jax.vmap(lambda e: engines.rollout(engine, e)))
    return np.concatenate([np.asarray(roll(jnp.asarray(paths[i : i + batch], jnp.float32))) for i in range(0, len(paths), batch)])


def error_metrics(T_surrogate: np.ndarray, T_cicero: np.ndarray) -> dict:
    m = consistency_metrics(T_surrogate, T_cicero)
    err = T_surrogate - T_cicero
    return {
        "episodes": m["episodes"],
        "rmse_K": m["rmse_K"],
        "rmse_first_decade_K": float(np.sqrt(np.mean(err[:, :10] ** 2))),
        "rmse_last_decade_K": float(np.sqrt(np.mean(err[:, -10:] ** 2))),
        "bias_last_decade_K": float(err[:, -10:].mean()),
        "kendall_tau_T": m["kendall_tau_T"],
        "kendall_tau_T4": m["kendall_tau_T4"],
    }


def gas_responses(engine: engines.SurrogateEngine, path: np.ndarray, gases: list[int]) -> dict[str, dict[str, float]]:
    """Per gas of ``gases`` (indices into CO2_FF, CO2_AFOLU, CH4, N2O, SO2): d(discounted
    return)/d(emissions of every year) of one (50, 5) path for the surrogate and CICERO-SCM (in
    JAX, float64, central differences of 1e-3 of the gas's mean size), and the surrogate's
    relative error."""
    discounts = GAMMA ** np.arange(path.shape[0])
    surrogate_return = lambda e: -jnp.sum(discounts * engines.rollout(engine, e))  # noqa: E731 (the same return, differentiable)
    d_surrogate = np.asarray(jax.grad(surrogate_return)(jnp.asarray(path, jnp.float32)), np.float64).sum(0)
    steps = 1e-3 * np.maximum(np.abs(path).mean(0), 1e-6)
    shifted = np.stack([path + sign * np.eye(5)[g] * steps[g] for g in range(5) for sign in (1, -1)])
    T = cicero_jax.run_batch(oracle_inputs(shifted))[:, 2016 - 1900 : 2016 - 1900 + path.shape[0]]
    R = discounted_temperature_returns(T).reshape(5, 2)
    d_cicero = (R[:, 0] - R[:, 1]) / (2 * steps)
    return {
        gas: {"surrogate": float(d_surrogate[g]), "cicero": float(d_cicero[g]), "relative_error": float(d_surrogate[g] / d_cicero[g] - 1)}
        for g, gas in enumerate(cicero.CONTROLLABLE)
        if g in gases
    }


def distinct_episodes(paths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The index of each distinct path's first occurrence among ``paths`` and how often it occurs."""
    _, first, counts = np.unique(paths.reshape(len(paths), -1), axis=0, return_index=True, return_counts=True)
    return first, counts


def most_played(paths: np.ndarray) -> tuple[np.ndarray, int]:
    """The path that occurs most often among ``paths`` (a trained policy's usual episode)."""
    first, counts = distinct_episodes(paths)
    return paths[first[np.argmax(counts)]], int(counts.max())


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", default="gru", help="surrogate name (shipped, or in --weights)")
    p.add_argument("--weights", type=Path, default=None, help="folder with exported weights (default: the shipped ones)")
    p.add_argument("--episodes", type=int, default=2500, help="held-out paths per (scenario, policy)")
    p.add_argument("--seed", type=int, default=1, help="policy-data seed of the held-out paths (training data uses 0)")
    p.add_argument("--trajectories", type=Path, nargs="*", default=[], help="trajectories.npz of trained-policy runs")
    p.add_argument("--out", type=Path, default=RESULTS / "surrogate_policy_error.json")
    args = p.parse_args(argv)
    if args.weights is not None:
        from jaxclimate.climate.weights_io import load_surrogate

        surrogate = load_surrogate(args.name, args.weights)
    else:
        surrogate = args.name
    engine = engines.SurrogateEngine(surrogate, start_year=2016)
    sources = policy_data.source_paths(args.episodes, seed=args.seed)
    for path in args.trajectories:
        with np.load(path) as f:
            sources[f"trained: {path.parent.name}"] = np.asarray(f["emissions"], np.float64)
    rows = {}
    for label, paths in sources.items():
        T_cicero = cicero_jax.run_batch(oracle_inputs(paths))[:, 2016 - 1900 : 2066 - 1900]
        T_surrogate = surrogate_temperatures(engine, paths)
        rows[label] = error_metrics(T_surrogate, T_cicero)
        r = rows[label]
        if label.startswith("trained: "):  # a trained policy repeats episodes: τ over its distinct ones too
            distinct = np.sort(distinct_episodes(paths)[0])
            r["distinct_episodes"] = int(len(distinct))
            r["kendall_tau_T_distinct"] = kendall_tau_b(*(discounted_temperature_returns(T[distinct]) for T in (T_surrogate, T_cicero)))
            usual, count = most_played(paths)
            if count > 1:  # a policy that repeats an episode (one that never does has no usual episode)
                moved = [g for g in range(5) if np.ptp(paths[:, :, g], axis=0).max() > 0]  # the gases the policy's levers move
                r["usual_episode"] = {"count": count, "gas_responses": gas_responses(engine, usual, moved)}
        print(
            f"{label:>28}: RMSE {r['rmse_K']:.2e} K (first/last decade {r['rmse_first_decade_K']:.1e}/{r['rmse_last_decade_K']:.1e}, "
            f"bias {r['bias_last_decade_K']:+.1e}), τ {r['kendall_tau_T']:.4f} / τ(T⁴) {r['kendall_tau_T4']:.4f}",
            flush=True,
        )
        if "usual_episode" in r:
            errors = ", ".join(f"{gas} {v['relative_error']:+.1%}" for gas, v in r["usual_episode"]["gas_responses"].items())
            print(f"{'':>28}  τ over its {r['distinct_episodes']} distinct episodes {r['kendall_tau_T_distinct']:.4f}", flush=True)
            print(f"{'':>28}  response to each gas at the usual episode ({r['usual_episode']['count']} of {r['episodes']}): {errors}", flush=True)
    result = {"surrogate": args.name, "weights": str(args.weights) if args.weights else "shipped", "seed": args.seed, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/surrogate_policy_error.py"))
