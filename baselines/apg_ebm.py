"""Analytic policy gradients on the EBM beside the calibrated static column and FedRAIN-Lite's
DDPG/TD3 rows (docs/apg.md §3).

For each environment and condition (the paper's: the agents' albedo actions ignored; ours:
they act), ``python -m jaxclimate.train --algo apg`` — the command a user runs — at growing
budgets of env steps, each with ``--seeds`` seeds; the run's own evaluation (one deterministic
episode per seed, area-weighted RMSE per 30° band of the final profile) is compared with
``baselines/results/ebm_calibrated.json``: the static model calibrated by gradient (the column
no DDPG/TD3 row beats) and the best DDPG/TD3 row of the same environment and condition, which
trained 20,000 env steps per seed. The objective is the tables' Σ band² (°C²).

    python baselines/apg_ebm.py                         # ebm-v1 and ebm-v3-a6, both conditions
    python baselines/apg_ebm.py --envs ebm-v1 --conditions default --budgets 16000 320000

Writes ``baselines/results/apg_ebm.json`` and ``apg_ebm.png``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from apg_common import RESULTS, finish_figure, provenance, save, train_apg

CONDITIONS = {"paper": ["--env-set", "ignore_albedo_actions=true"], "default": []}


def train(env_id: str, condition: str, steps: int, seeds: int, run_dir: Path) -> dict:
    """One training run; its evaluation's band RMSE per seed and the wall time."""
    flags = ["--env", env_id, "--seeds", str(seeds), "--total-timesteps", str(steps), *CONDITIONS[condition]]
    summary, wall, command = train_apg(flags, run_dir)
    per_seed = np.asarray(summary["band_rmse"]["per_seed"])
    objective = (per_seed**2).sum(1)
    return {
        "env_steps_per_seed": summary["env_steps_per_seed"],
        "band_rmse": per_seed.mean(0).tolist(),
        "band_rmse_std": per_seed.std(0).tolist(),
        "objective": float(objective.mean()),
        "objective_per_seed": objective.tolist(),
        "wall_s": wall,
        "command": command,
    }


def reference(env_id: str, condition: str) -> dict:
    """The calibrated static column and the best DDPG/TD3 rows for this env and condition."""
    row = json.loads((RESULTS / "ebm_calibrated.json").read_text())["rows"][f"{env_id}/{condition}"]
    learned = {
        algo: {"row": r["best_row"]["row"], "band_rmse": r["best_row"]["band_mean"], "objective": r["best_row"]["objective"]}
        for algo, r in row["learned"].items()
    }
    return {
        "calibrated": {"band_rmse": row["calibrated"]["band_rmse"], "objective": row["calibrated"]["objective"]},
        "learned": learned,
        "learned_env_steps_per_seed": 20_000,
    }


def plot(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(record["rows"])
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        row = record["rows"][key]
        steps = [r["env_steps_per_seed"] for r in row["apg"]]
        ax.plot(steps, [r["objective"] for r in row["apg"]], "o-", label="APG (closed loop)")
        ax.axhline(row["reference"]["calibrated"]["objective"], color="k", ls="--", label="calibrated static")
        for algo, learned in row["reference"]["learned"].items():
            ax.scatter([row["reference"]["learned_env_steps_per_seed"]], [learned["objective"]], marker="x", s=50, label=f"best {algo.upper()} row")
        ax.set(xscale="log", yscale="log", xlabel="env steps per seed", title=key)
    axes[0][0].set_ylabel("Σ band² (°C²)")
    axes[0][0].legend(fontsize=8)
    finish_figure(fig, path, axes, legend=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=["ebm-v1", "ebm-v3-a6"])
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=list(CONDITIONS))
    parser.add_argument("--budgets", nargs="+", type=int, default=[16_000, 48_000, 160_000, 320_000], help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "apg_ebm.json"))
    args = parser.parse_args(argv)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for env_id in args.envs:
            for condition in args.conditions:
                key = f"{env_id}/{condition}"
                runs = []
                for steps in args.budgets:
                    runs.append(train(env_id, condition, steps, args.seeds, Path(tmp) / f"{env_id}-{condition}-{steps}"))
                    print(f"{key}: {steps:,} env steps -> Σ band² {runs[-1]['objective']:.2f} ({runs[-1]['wall_s']:.0f} s)", flush=True)
                rows[key] = {"env": env_id, "condition": condition, "apg": runs, "reference": reference(env_id, condition)}
    record = {
        "what": "APG (python -m jaxclimate.train --algo apg, APGConfig defaults) on the EBM: areaWRMSE per band of one deterministic episode per seed, against the calibrated static column and the best DDPG/TD3 rows",
        **provenance("apg_ebm.py", argv),
        "seeds": args.seeds,
        "bands": ["90S-60S", "60S-30S", "30S-0", "0-30N", "30N-60N", "60N-90N"],
        "rows": rows,
    }
    save(record, args.out, plot)
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/apg_ebm.py"))
