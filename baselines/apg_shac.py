"""When SHAC's critic helps APG (docs/apg.md §1.1): short windows with and without the critic's
bootstrap, against whole-episode windows, at the same budget.

``python -m jaxclimate.train --algo apg --set unroll_length=T [--set critic=true]`` on ebm-v1
(200-step episodes) and rice-n-rates (20 steps, the shared actor and discount of
``apg_rice_n.py``), ``--seeds`` seeds each; the score is each seed's deterministic evaluation
episode: the summed return for the EBM, global discounted welfare W for RICE-N.

    python baselines/apg_shac.py                       # baselines/results/apg_shac.{json,png}
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from apg_common import RESULTS, provenance, save, train_apg

from jaxclimate import load_policy

RICE = ["--set", f"gamma={round(1.015**-5, 6)}", "--set", "share_parameters=true"]
CASES = {
    "ebm-v1": {"flags": ["--env", "ebm-v1"], "windows": [5, 20, 200], "steps": 64_000, "score": "return"},
    "rice-n-rates": {"flags": ["--env", "rice-n-rates", *RICE], "windows": [5, 20], "steps": 32_000, "score": "W"},
}


def score(case: str, run_dir: Path, summary: dict) -> list[float]:
    if case == "rice-n-rates":
        return [float(w) for w in summary["welfare"]]
    return [float(r.sum()) for r in load_policy(run_dir).episode_returns()["bands"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "apg_shac.json"))
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            spec = CASES[case]
            for window in spec["windows"]:
                for critic in (False, True) if window < max(spec["windows"]) else (False,):
                    run_dir = Path(tmp) / f"{case}-{window}-{critic}"
                    flags = [*spec["flags"], "--seeds", str(args.seeds), "--total-timesteps", str(spec["steps"]), "--set", f"unroll_length={window}"]
                    summary, wall, command = train_apg([*flags, "--set", f"critic={str(critic).lower()}"], run_dir)
                    values = score(case, run_dir, summary)
                    rows.append(
                        {
                            "env": case,
                            "unroll_length": window,
                            "critic": critic,
                            "score": spec["score"],
                            "per_seed": values,
                            "mean": float(np.mean(values)),
                            "env_steps_per_seed": summary["env_steps_per_seed"],
                            "wall_s": wall,
                            "command": command,
                        }
                    )
                    print(f"{case} T={window} critic={critic}: {np.mean(values):.6g} ± {np.std(values):.3g} ({wall:.0f} s)", flush=True)
    record = {
        "what": "APG with short windows, with and without SHAC's critic, against whole-episode windows, same budget",
        **provenance("apg_shac.py", argv),
        "seeds": args.seeds,
        "rows": rows,
    }
    save(record, args.out)
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/apg_shac.py"))
