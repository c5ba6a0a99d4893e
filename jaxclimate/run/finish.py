"""A run's records as it goes and at its end: the metric lines, the progress bar, and the
summary, evaluation and plots of a finished run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxclimate._io import atomic_write_text
from jaxclimate.reporting import agent_labels, evaluate_policies, nan_mean, plot_returns
from jaxclimate.run_options import RunOptions


def metric_lines(metrics: dict, first_update: int, steps_per_update: int) -> list[str]:
    """One JSON line per update. ``metrics[group][name]`` is (seeds, updates, ...): returns are
    kept per seed and agent, everything else averaged over seeds (and learners);
    ``metrics["episode"]`` (the environment's episode metrics) is kept per seed."""
    host = jax.tree_util.tree_map(np.asarray, metrics)
    n = jax.tree_util.tree_leaves(host)[0].shape[1]
    lines = []
    for i in range(n):
        update = first_update + i + 1
        row: dict[str, Any] = {"update": update, "env_steps": update * steps_per_update}
        for key, m in host.items():
            if key == "episode":
                row["episode"] = {name: v[:, i].tolist() for name, v in m.items()}
                continue
            row[key] = {
                "episode_return": m["episode_return"][:, i].tolist(),  # [seed][agent]
                "episode_return_mean": nan_mean(m["episode_return"][:, i]),  # NaN: no episode finished
                **{name: float(v[:, i].mean()) for name, v in m.items() if name != "episode_return"},
            }
        lines.append(json.dumps(row))
    return lines


def progress_bar(desc: str, updates: int, updates_done: int, steps_per_update: int, disable: bool):
    """The run's progress bar, in env steps over every run, starting where a resumed run
    stands; it says "compiling…" until the first chunk comes back."""
    from tqdm.auto import tqdm

    total, initial = updates * steps_per_update, updates_done * steps_per_update
    bar = tqdm(total=total, initial=initial, unit="step", unit_scale=True, desc=desc, disable=disable, smoothing=0.3)
    bar.set_postfix_str("compiling…")
    return bar


def finish(
    env, env_params, trainer, state, options: RunOptions, run_dir: Path, elapsed: float, report, devices: dict, compile_seconds: dict | None = None
) -> dict[str, Any]:
    """The finished run's summary (``summary.json``), printed, with the environment's plots.
    ``elapsed``: this session's seconds from the training program's compile to the last chunk;
    ``compile_seconds``: the two programs' compile seconds (``init``, ``training``)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    last = rows[-5:]
    summary: dict[str, Any] = {
        "env": env.name,
        "algo": options.algo,
        "preset": options.preset,
        "seeds": options.seeds,
        "uncertainty": options.uncertainty,
        "updates": len(rows),
        "env_steps_per_seed": rows[-1]["env_steps"],
        "wall_seconds_this_session": elapsed,
        "compile_seconds": compile_seconds or {},
        "device": devices["kind"],
        "devices": devices,
        "final_return": {g: nan_mean([r[g]["episode_return"] for r in last], axis=(0, 1)).tolist() for g in env.agents},
    }
    if "episode" in rows[-1]:  # the environment's episode metrics, mean over the last updates and seeds
        summary["final_episode_metrics"] = {name: nan_mean([r["episode"][name] for r in last], axis=(0, 1)).tolist() for name in rows[-1]["episode"]}
    evaluations = evaluate_policies(env, env_params, trainer, state)
    summary.update(report.summarize(env, env_params, trainer, state, rows, evaluations, options, run_dir))
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    print_summary(summary, env, report)
    if not options.no_plots:
        plot_returns(env, rows, run_dir)
        report.plot(env, rows, summary, evaluations, run_dir)
    return summary


def _compiled(summary: dict) -> str:
    seconds = summary.get("compile_seconds") or {}
    return f" (compiling: {', '.join(f'{name} {s:.1f} s' for name, s in seconds.items())})" if seconds else ""


def print_summary(summary: dict, env, report) -> None:
    trained_under = f", trained under the {summary['uncertainty']!r} uncertainty" if summary.get("uncertainty") else ""
    print(
        f"\n{summary['env']} ({summary['algo']}): {summary['updates']} updates, {summary['env_steps_per_seed']:,} env steps per "
        f"seed, {summary['seeds']} seed(s){trained_under}, {summary['wall_seconds_this_session']:.1f} s{_compiled(summary)}"
    )
    for group, returns in summary["final_return"].items():
        if np.isnan(returns).all():  # episodes longer than the updates' rollouts, or too few updates
            print(f"\n[{group}] no episode ended during the last updates: no episode return yet (train longer)")
            continue
        labels = agent_labels(env, group)
        width = max(map(len, labels))
        print(f"\n[{group}] mean episode return of the last updates\n{'agent':<{width}} {'return':>12}")
        for label, r in zip(labels, returns):
            print(f"{label:<{width}} {r:>12.4f}")
    for line in report.summary_lines(summary):
        print(line)
