"""A closed-loop RICE-N policy learned by analytic policy gradients, beside the open-loop
cooperative planner (docs/apg.md §3).

``python -m jaxclimate.train --env rice-n-rates --algo apg`` — the continuous relaxation
(savings and mitigation rates in [0, 1], no trade; ``jaxclimate/envs/rice_n/relaxed.py``), one
actor shared by the 27 regions acting on each region's own observation, trained on the summed
return discounted per 5-year step as the planner's welfare is (γ = 1.015⁻⁵) — at growing budgets,
``--seeds`` seeds each. Each run's evaluation (one deterministic episode per seed) gives global
discounted welfare W and the paper's indices; they are set beside
``baselines/results/cooperative_optimum_rice_n.json`` (DICE-2016 climate): the planner's
optimum (every region's rates at every step, by projected Adam), business as usual
(s 0.2, μ 0) and the best of the 11 × 11 constant policies.

    python baselines/apg_rice_n.py                     # baselines/results/apg_rice_n.{json,png}
    python baselines/apg_rice_n.py --budgets 32000 --seeds 1
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from apg_common import RESULTS, finish_figure, provenance, save, train_apg

GAMMA = round(1.015**-5, 6)  # the planner's discount per 5-year activity step, (1 + ρ)^−Δ
SETTINGS = ["--set", "unroll_length=20", "--set", f"gamma={GAMMA}", "--set", "share_parameters=true"]


def train(steps: int, seeds: int, run_dir: Path) -> dict:
    summary, wall, command = train_apg(["--env", "rice-n-rates", "--seeds", str(seeds), "--total-timesteps", str(steps), *SETTINGS], run_dir)
    keep = ("env_steps_per_seed", "welfare", "index_points", "temperature_2100")
    return {**{k: summary[k] for k in keep}, "wall_s": wall, "command": command}


def reference() -> dict:
    (dice,) = [m for m in json.loads((RESULTS / "cooperative_optimum_rice_n.json").read_text())["modules"] if m["module"] == "dice"]
    pick = lambda row: {k: row[k] for k in ("welfare", "climate_index", "economic_index", "delta_t")}  # noqa: E731
    return {"planner": pick(dice["planner"]), "business_as_usual": pick(dice["business_as_usual"]), "best_constant": pick(dice["best_constant"])}


def plot(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    ref = record["reference"]
    steps = [r["env_steps_per_seed"] for r in record["apg"]]
    for name, style in (("planner", "k--"), ("business_as_usual", "r:"), ("best_constant", "g-.")):
        left.axhline(ref[name]["welfare"], ls=style[1:], color=style[0], label=name.replace("_", " "))
        right.scatter([ref[name]["climate_index"]], [ref[name]["economic_index"]], color=style[0], marker="*", s=90, label=name.replace("_", " "))
    left.errorbar(
        steps, [np.mean(r["welfare"]) for r in record["apg"]], [np.std(r["welfare"]) for r in record["apg"]], fmt="o-", label="APG, closed loop"
    )
    left.set(xscale="log", xlabel="env steps per seed", ylabel="global discounted welfare W", title="rice-n-rates (DICE-2016)")
    last = np.asarray(record["apg"][-1]["index_points"])
    right.scatter(last[:, 0], last[:, 1], label=f"APG, {steps[-1]:,} steps")
    right.set(xlabel="climate index", ylabel="economic index", title="index plane")
    finish_figure(fig, path, (left, right))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", nargs="+", type=int, default=[16_000, 64_000, 160_000], help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "apg_rice_n.json"))
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for steps in args.budgets:
            runs.append(train(steps, args.seeds, Path(tmp) / str(steps)))
            print(
                f"{steps:,} env steps: W {np.mean(runs[-1]['welfare']):.3f} ± {np.std(runs[-1]['welfare']):.3f} ({runs[-1]['wall_s']:.0f} s)",
                flush=True,
            )
    record = {
        "what": "APG on rice-n-rates (closed loop, one shared actor, team objective, γ = 1.015^-5 per step) against the open-loop planner, DICE-2016",
        **provenance("apg_rice_n.py", argv),
        "seeds": args.seeds,
        "apg": runs,
        "reference": reference(),
    }
    save(record, args.out, plot)
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/apg_rice_n.py"))
