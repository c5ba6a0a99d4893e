"""A closed-loop climate-game policy learned by analytic policy gradients, beside IPPO and the
open-loop planner (docs/apg.md §3).

``python -m jaxclimate.train --env climate-mitigation-levers --scenario ii --algo apg`` — the
game's continuous relaxation (``jaxclimate/envs/climate_mitigation/relaxed.py``), its GRU
surrogate, the summed return of the 10 countries as the objective — for each setting
(one actor shared by the countries, or one per country) and budget, ``--seeds`` seeds each.
The undiscounted summed return of each seed's deterministic evaluation episode is set beside
``baselines/results/cooperative_optimum_climate_game.json`` (GRU engine): the planner, business
as usual (no lever), the best constant discrete policy and the paper's IPPO learners, with the
share of the gap from business as usual to the planner each closes.

    python baselines/apg_climate_game.py          # baselines/results/apg_climate_game.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from apg_common import RESULTS, provenance, save, train_apg

from jaxclimate import load_policy

SETTINGS = {"shared": ["--set", "share_parameters=true"], "per country": ["--set", "share_parameters=false"]}


def train(setting: str, steps: int, seeds: int, run_dir: Path) -> dict:
    flags = ["--env", "climate-mitigation-levers", "--scenario", "ii", "--seeds", str(seeds), "--total-timesteps", str(steps)]
    summary, wall, command = train_apg([*flags, "--set", "unroll_length=35", *SETTINGS[setting]], run_dir)
    per_seed = load_policy(run_dir).episode_returns(episodes=1)["countries"]  # (seeds, 1, N), deterministic
    returns = [float(r.sum()) for r in per_seed]
    return {"setting": setting, "env_steps_per_seed": summary["env_steps_per_seed"], "total_return": returns, "wall_s": wall, "command": command}


def reference() -> dict:
    (gru,) = [e for e in json.loads((RESULTS / "cooperative_optimum_climate_game.json").read_text())["engines"] if e["engine"] == "gru"]
    return {name: {"total_return": gru[name]["total_return"]} for name in ("planner", "business_as_usual", "best_constant", "ippo")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", nargs="+", type=int, default=[28_000], help="env steps per seed")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "apg_climate_game.json"))
    args = parser.parse_args(argv)
    ref = reference()
    low, high = ref["business_as_usual"]["total_return"], ref["planner"]["total_return"]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for setting in args.settings:
            for steps in args.budgets:
                run = train(setting, steps, args.seeds, Path(tmp) / f"{setting}-{steps}".replace(" ", "-"))
                run["gap_closed"] = float((np.mean(run["total_return"]) - low) / (high - low))
                runs.append(run)
                print(
                    f"{setting}, {steps:,} env steps: {np.mean(run['total_return']):.2f} ({run['gap_closed']:.0%} of the gap; {run['wall_s']:.0f} s)",
                    flush=True,
                )
    record = {
        "what": "APG on climate-mitigation-levers (ii), GRU surrogate: undiscounted summed return of deterministic episodes against the planner, IPPO and the constant policies",
        **provenance("apg_climate_game.py", argv),
        "seeds": args.seeds,
        "apg": runs,
        "reference": ref,
    }
    save(record, args.out)
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/apg_climate_game.py"))
