"""Reproduce the climate-mitigation experiments of the CICERO-SCM surrogate paper (§4, Table 1).

* ``--experiment ii`` — scenario (ii), 10 heterogeneous countries, recurrent IPPO with the
  shipped GRU surrogate for ≥ 1M env steps, then the policy-consistency replay of N = 1000
  stored training episodes through CICERO-SCM (paper: RMSE 2.0e-4 K, τ 0.997 with its GRU).
* ``--experiment i`` — scenario (i) trained with the surrogate and with CICERO-SCM itself as
  the engine (same config and seed; the CICERO run is short because every env step is one
  oracle run), comparing the learned levers (paper Fig. 4: full energy effort everywhere).

Results go to ``baselines/results/climate_mitigation_<experiment>.json`` and the run
directories under ``--out`` (default ``runs/baselines``).

    python baselines/climate_mitigation.py --experiment ii
    python baselines/climate_mitigation.py --experiment i --cicero-updates 6
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from jaxclimate import run
from jaxclimate.envs.climate_mitigation import consistency
from jaxclimate.run import flags

RESULTS = Path(__file__).parent / "results"


def _run(args_list: list[str]) -> tuple[dict, float]:
    options = flags.build_options(args_list)
    start = time.perf_counter()
    summary = run.train(options)
    if summary.get("interrupted") or summary.get("non_finite"):  # Ctrl-C (or a failed run) ends the whole script
        raise KeyboardInterrupt if summary.get("interrupted") else FloatingPointError(summary["non_finite"])
    summary.pop("state", None)
    return summary, time.perf_counter() - start


def experiment_ii(out: Path, steps: int, n: int, workers: int) -> dict:
    run_dir = out / "scenario-ii"
    summary, wall = _run(
        [
            "--scenario",
            "ii",
            "--total-timesteps",
            str(steps),
            "--num-envs",
            "32",
            "--set",
            "num_minibatches=4",
            "--reservoir",
            "4000",
            "--run-dir",
            str(run_dir),
            "--quiet",
        ]
    )
    import numpy as np

    with np.load(run_dir / "trajectories.npz") as f:
        metrics = consistency.evaluate(f["emissions"], f["temperatures"], n=n, workers=workers)
    return {
        "experiment": "ii",
        "train_wall_seconds": wall,
        "env_steps": summary["env_steps_per_seed"],
        "env_steps_per_second": summary["env_steps_per_seed"] / wall,
        "summary": summary,
        "consistency": metrics,
    }


def experiment_i(out: Path, steps: int, cicero_updates: int) -> dict:
    common = [
        "--scenario",
        "i",
        "--network",
        "mlp",
        "--num-envs",
        "8",
        "--set",
        "num_minibatches=2",
        "--set",
        "lr=3e-3",
        "--reservoir",
        "0",
        "--chunks",
        "1",
        "--quiet",
        "--no-plots",
    ]
    surrogate, wall_s = _run(common + ["--total-timesteps", str(steps), "--run-dir", str(out / "scenario-i-gru")])
    cicero_steps = cicero_updates * 8 * 35
    cicero, wall_c = _run(
        common + ["--engine", "cicero", "--allow-host-callback", "--total-timesteps", str(cicero_steps), "--run-dir", str(out / "scenario-i-cicero")]
    )
    short, wall_ss = _run(common + ["--total-timesteps", str(cicero_steps), "--run-dir", str(out / "scenario-i-gru-short")])
    return {
        "experiment": "i",
        "surrogate": {"wall_seconds": wall_s, "summary": surrogate},
        "surrogate_same_steps_as_cicero": {"wall_seconds": wall_ss, "summary": short},
        "cicero": {"wall_seconds": wall_c, "summary": cicero},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", choices=["i", "ii"], required=True)
    parser.add_argument("--out", type=Path, default=Path("runs/baselines"))
    parser.add_argument("--steps", type=int, help="env steps with the surrogate (default 1.12M for ii, 120k for i)")
    parser.add_argument("--n", type=int, default=1000, help="episodes replayed through CICERO-SCM (ii)")
    parser.add_argument("--workers", type=int, default=2, help="oracle processes for the replay")
    parser.add_argument("--cicero-updates", type=int, default=6, help="IPPO updates with the CICERO engine (i)")
    args = parser.parse_args()
    if args.experiment == "ii":
        result = experiment_ii(args.out, args.steps or 1_120_000, args.n, args.workers)
    else:
        result = experiment_i(args.out, args.steps or 120_000, args.cicero_updates)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"climate_mitigation_{args.experiment}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "summary"}, indent=2))
    print(f"saved {path}")


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/climate_mitigation.py"))
