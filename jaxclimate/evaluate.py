"""``python -m jaxclimate.evaluate RUN_DIR``: roll out a trained run's policies and report them.

Every seed's policy from the run's latest checkpoint, ``--episodes`` episodes each, in one
compiled program (``vmap`` over seeds and episodes), under the parameters the run trained with
or others (``--env-set``: generalisation). The policies play their most likely actions, or with
``--sample`` actions drawn from them. Writes ``evaluation.json`` (each agent's return,
mean and standard deviation over episodes, per seed and overall, and the environment's own
summary of one episode per seed, as ``summary.json`` has it) and the
environment's plots into ``--out`` (default ``RUN_DIR/evaluation``, or
``RUN_DIR/evaluation-<k>=<v>`` under changed parameters, ``...-sampled`` with ``--sample``).
``--uncertainty NAME --draws K`` scores the policies over K draws of one of the environment's
parameter distributions (docs/robustness.md) beside the nominal parameters:
``RUN_DIR/evaluation-uncertainty-NAME/uncertainty.json``.

Several run directories are each evaluated, then compared by the environment's report into
``--out`` (default ``./comparison``): ``comparison.json`` and its plots (for RICE-N, a team's
submissions: each run's point on the index plane and the hypervolume they enclose).

Examples::

    python -m jaxclimate.evaluate runs/climate-mitigation-i-ippo-20261126-030000 --episodes 32
    python -m jaxclimate.evaluate runs/climate-mitigation-i-ippo-20261126-030000 --env-set damage_coefficient=0.006
    python -m jaxclimate.evaluate runs/rice-n-ippo-20261126-030000 --uncertainty climate-damage --draws 64
    python -m jaxclimate.evaluate runs/rice-n-* --out runs/team   # competition metrics, hypervolume
    python -m jaxclimate.evaluate runs/rice-n-club-bca-run --env-set negotiation.bca_rate=0 --sample
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

from jaxclimate._cli import OneLineParser, add_key_value_flag, guarded

PROG = "python -m jaxclimate.evaluate"


def evaluate(policy, episodes: int, out: Path, plots: bool = True, sample: bool = False) -> dict[str, Any]:
    """Returns over ``episodes`` episodes per seed and the environment's summary of one episode
    per seed, written to ``out``: the policies' most likely actions, or with ``sample`` actions
    drawn from them (each episode its own key)."""
    import jax
    import numpy as np

    from jaxclimate._io import atomic_write_text
    from jaxclimate.reporting import evaluate_policies, report_for

    env, params, options = policy.env, policy.env_params, policy.options
    key = jax.random.PRNGKey(options.seed)
    returns = policy.episode_returns(episodes, key, deterministic=not sample, env_params=params)
    report = report_for(options.env)
    # the most likely actions from the key summary.json's episode had; sampled ones from the run's seed
    evaluations = evaluate_policies(env, params, policy.trainer, policy.state, key if sample else None, deterministic=not sample)
    out.mkdir(parents=True, exist_ok=True)
    rows_file = Path(options.run_dir) / "metrics.jsonl"
    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()] if rows_file.exists() else []
    summary = report.summarize(env, params, policy.trainer, policy.state, rows, evaluations, options, out)
    totals = {g: r.sum(-1) for g, r in returns.items()}  # each episode's return summed over agents: (seeds, episodes)
    record = {
        "run_dir": options.run_dir,
        "env": env.name,
        "algo": options.algo,
        "seeds": policy.seeds,
        "chunks_trained": policy.chunks_done,
        "episodes_per_seed": episodes,
        "actions": "sampled" if sample else "most likely",
        # exact comparison: a float32 standard deviation of equal values need not be 0
        "identical_episodes": all(bool(np.all(t.max(axis=1) == t.min(axis=1))) for t in totals.values()),
        "returns": {
            g: {
                "mean": float(r.mean()),
                "std_over_episodes": float(totals[g].std(axis=1).mean()),
                "per_agent": r.mean(axis=(0, 1)).tolist(),
                "per_seed": totals[g].mean(axis=1).tolist(),
            }
            for g, r in returns.items()
        },
        "summary": summary,
    }
    atomic_write_text(out / "evaluation.json", json.dumps(_plain(record), indent=2) + "\n")
    if plots:
        report.plot(env, rows, summary, evaluations, out)
    return record


def evaluate_uncertainty(policy, name: str, draws: int, out: Path, sample: bool = False) -> dict[str, Any]:
    """The policies' returns (summed over agents) under ``draws`` draws of the environment's
    uncertainty ``name``, beside the nominal parameters': mean, spread and the 5th percentile
    over draws, per group, written to ``out/uncertainty.json``."""
    import jax
    import numpy as np

    from jaxclimate._io import atomic_write_text
    from jaxclimate.core.uncertainty import uncertainty_of

    uncertainty = uncertainty_of(policy.env, name)
    key = jax.random.PRNGKey(policy.options.seed)
    factors, params_batch = uncertainty.sample_params(key, policy.env_params, draws)
    under = policy.returns_under(params_batch, key, deterministic=not sample)  # group -> (draws, seeds, N)
    nominal = policy.episode_returns(1, key, deterministic=not sample)  # group -> (seeds, 1, N)
    record = {
        "run_dir": policy.options.run_dir,
        "uncertainty": name,
        "draws": draws,
        "actions": "sampled" if sample else "most likely",
        "returns": {
            g: {
                "nominal": float(nominal[g].sum(-1).mean()),
                "mean": float(r.sum(-1).mean()),
                "std_over_draws": float(r.sum(-1).mean(axis=1).std()),
                "p05": float(np.percentile(r.sum(-1).mean(axis=1), 5)),
                "per_draw": r.sum(-1).mean(axis=1).tolist(),
            }
            for g, r in under.items()
        },
        "factors": {k: np.asarray(v).tolist() for k, v in factors.items()},
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "uncertainty.json", json.dumps(record, indent=2) + "\n")
    return record


def _plain(tree: Any) -> Any:
    import jax
    import numpy as np

    return jax.tree_util.tree_map(lambda x: np.asarray(x).tolist() if isinstance(x, (np.ndarray, np.generic, jax.Array)) else x, tree)


def make_parser() -> OneLineParser:
    parser = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0], formatter_class=_raw(), epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR", help="run directories of python -m jaxclimate.train")
    parser.add_argument("--episodes", type=int, default=8, help="episodes per seed (default 8)")
    add_key_value_flag(parser, "--env-set", "an environment parameter to change (dotted for a nested one, e.g. negotiation.bca_rate=0.5)")
    parser.add_argument(
        "--sample",
        action="store_true",
        help="draw actions from the policies (default: their most likely actions, so in a deterministic environment "
        "such as RICE-N every episode is the same)",
    )
    parser.add_argument(
        "--uncertainty", metavar="NAME", help="also score the policies over draws of this parameter distribution (docs/robustness.md)"
    )
    parser.add_argument("--draws", type=int, default=32, help="draws of --uncertainty (default 32)")
    parser.add_argument(
        "--out", type=Path, help="output folder (default RUN_DIR/evaluation[-changes][-sampled]; with several runs, the comparison's: ./comparison)"
    )
    parser.add_argument("--no-plots", action="store_true")
    return parser


def _raw():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    if args.draws < 1:
        parser.error(f"--draws must be >= 1, got {args.draws}")
    from jaxclimate.policy import UntrainedPolicyWarning, load_policy
    from jaxclimate.reporting import report_for
    from jaxclimate.run.values import parse_value

    overrides = {k: parse_value(v) for k, v in dict(args.env_set).items()}
    policies = []
    for run_dir in args.run_dirs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UntrainedPolicyWarning)
            try:
                policies.append(load_policy(run_dir, **overrides))
            except (FileNotFoundError, ValueError, TypeError) as err:
                parser.error(f"{run_dir}: {err}")
        for warning in caught:
            print(f"warning: {warning.message}", file=sys.stderr)
    env_ids = sorted({p.options.env for p in policies})
    if len(env_ids) > 1:
        parser.error(f"runs of one environment id can be compared, got {env_ids}")
    if args.uncertainty is not None and args.uncertainty not in policies[0].env.capabilities.uncertainties:
        parser.error(
            f"--uncertainty: {env_ids[0]} has {sorted(policies[0].env.capabilities.uncertainties) or 'no'} uncertainties, got {args.uncertainty!r}"
        )
    tag = "-".join([f"{k}={v}" for k, v in overrides.items()] + (["sampled"] if args.sample else []))
    several = len(policies) > 1
    records = []
    for run_dir, policy in zip(args.run_dirs, policies):
        out = (args.out if not several else None) or run_dir / ("evaluation" + (f"-{tag}" if tag else ""))
        record = evaluate(policy, args.episodes, out, plots=not args.no_plots, sample=args.sample)
        records.append(record)
        print(f"{run_dir}:" + (" (untrained: stopped before its first chunk)" if policy.chunks_done == 0 else ""))
        actions = "sampled actions" if args.sample else "most likely actions"
        for group, r in record["returns"].items():
            print(f"  [{group}] return {r['mean']:.4f} per agent (mean over {policy.seeds} seed(s) × {args.episodes} episodes, {actions})")
        if args.episodes > 1 and not args.sample and record["identical_episodes"]:
            print("  note: every episode was the same (most likely actions in a deterministic environment); --sample draws them")
        for line in report_for(policy.options.env).summary_lines(record["summary"]):
            print("  " + line)
        print(f"  wrote {out / 'evaluation.json'}")
        if args.uncertainty is not None:
            _report_uncertainty(
                policy, args, out.parent / f"{out.name}-uncertainty-{args.uncertainty}" if not args.out else out / f"uncertainty-{args.uncertainty}"
            )
    if several:
        compare(records, report_for(env_ids[0]), args.out or Path("comparison"))
    return 0


def _report_uncertainty(policy, args, out: Path) -> None:
    record = evaluate_uncertainty(policy, args.uncertainty, args.draws, out, sample=args.sample)
    for group, r in record["returns"].items():
        print(
            f"  [{group}] under {args.draws} draws of {args.uncertainty!r}: return {r['mean']:.4f} ± {r['std_over_draws']:.4f} "
            f"(5th percentile {r['p05']:.4f}; nominal {r['nominal']:.4f}), summed over agents"
        )
    print(f"  wrote {out / 'uncertainty.json'}")


def compare(records: list[dict], report, out: Path) -> dict[str, Any]:
    """Several runs' records side by side, as the environment's report compares them."""
    from jaxclimate._io import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    result = report.compare(records, out)
    atomic_write_text(out / "comparison.json", json.dumps(_plain(result), indent=2) + "\n")
    for line in report.compare_lines(result):
        print(line)
    print(f"wrote {out / 'comparison.json'}")
    return result


if __name__ == "__main__":
    sys.exit(guarded(main, PROG))
