"""Time the original InvestESG NumPy/PettingZoo environment (not part of this project).

Run with an interpreter that has the original's dependencies (numpy 1.26, pettingzoo 1.24.3,
gym 0.23.1, matplotlib) and a checkout of github.com/yuanjiayiy/InvestESG::

    python benchmarks/reference_invest_esg.py --repo PATH --companies 5 --company-capital 10 \\
        --investors 3 --investor-capital 16.7

Prints one JSON line: env-steps/s (median of ``--repeats`` runs of ``--episodes`` episodes),
random actions drawn with NumPy (fractions uniform in [0, 0.05], bits 0/1), dict in and out,
a reset after every 100-step episode. ``bench_invest_esg.py --reference-repo`` calls this.
The original imports ``wandb`` and ``seaborn`` for logging and plots that a step never uses;
stand-ins are put in their place when they are not installed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import types


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repo", required=True)
    p.add_argument("--companies", type=int, default=5)
    p.add_argument("--company-capital", type=float, default=10.0)
    p.add_argument("--investors", type=int, default=3)
    p.add_argument("--investor-capital", type=float, default=16.7)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    for name in ("wandb", "seaborn"):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    sys.path.insert(0, args.repo)
    import numpy as np
    from env.pettingzoo.investesg import InvestESG

    env = InvestESG(
        company_attributes=[{"capital": args.company_capital, "climate_risk_exposure": 0.07, "beta": 0}] * args.companies,
        investor_attributes=[{"capital": args.investor_capital, "esg_preference": 0}] * args.investors,
        max_steps=100,
        market_performance_baseline=1.1,
        market_performance_variance=0,
        action_capping=0.05,
    )
    rng = np.random.default_rng(0)
    companies = [f"company_{i}" for i in range(args.companies)]
    investors = [f"investor_{i}" for i in range(args.investors)]

    def episodes() -> int:
        steps = 0
        for _ in range(args.episodes):
            env.reset()
            while env.agents:
                actions = {a: rng.uniform(0.0, 0.05, 3) for a in companies}
                actions.update({a: rng.integers(0, 2, args.companies) for a in investors})
                env.step(actions)
                steps += 1
        return steps

    episodes()  # warm-up
    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        steps = episodes()
        rates.append(steps / (time.perf_counter() - start))
    print(
        json.dumps(
            {"env_steps_per_s": statistics.median(rates), "runs_env_steps_per_s": rates, "numpy": np.__version__, "python": sys.version.split()[0]}
        )
    )


if __name__ == "__main__":
    main()
