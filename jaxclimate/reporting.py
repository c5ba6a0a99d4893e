"""What the training CLI asks of an environment beyond the environment API.

``report_for(env_id)`` returns a :class:`TrainingReport`. The base class gives every
environment presets-free training with returns per agent; an environment package subclasses
it for the pieces it needs (``jaxclimate/envs/<env>/report.py``) and registers it beside its
ids (``register(env_id, Env, report="module:Class")``), so the environment itself imports
nothing of this layer:

* ``env_defaults(algo)`` — environment settings the CLI uses unless ``--env-set`` names
  them, e.g. an observation layout the algorithm trains on faster with the same results;
* ``presets(env, algo)`` — named hyper-parameter sets for an algorithm (the first is the
  default), e.g. the papers' settings;
* ``recorder(env, config, options)`` / ``rollout_hook(env, config, options)`` — optional
  objects that ride inside the compiled rollout (a reservoir of episodes; scripted steps);
* ``summarize(...)`` — entries added to ``summary.json`` (and files written next to it) from
  the finished run, the metric rows and deterministic evaluation episodes;
* ``summary_lines(summary)`` — what to print after the run;
* ``plot(rows, summary, evaluations, run_dir)`` — figures beyond the returns per agent;
* ``compare(records, out)`` / ``compare_lines(result)`` — several evaluated runs side by side
  (``python -m jaxclimate.evaluate RUN_DIR RUN_DIR …``), e.g. a team's submissions.

So the CLI never branches on an environment's name.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from typing import Any

import numpy as np

# the evaluation rollout lives in the acting layer; callers have long imported it from here
from jaxclimate.algos.acting import episode_program, evaluate_policies, evaluate_policy  # noqa: F401
from jaxclimate.run_options import RunOptions


def report_for(env_id: str) -> "TrainingReport":
    """The training report registered with ``env_id`` (the base :class:`TrainingReport` if none)."""
    from jaxclimate.core.registry import report_path

    path = report_path(env_id)
    if path is None:
        return TrainingReport()
    module, attribute = path.split(":")
    return getattr(importlib.import_module(module), attribute)()


class TrainingReport:
    """Defaults: no presets, no recorder or hook, nothing beyond returns per agent."""

    def env_defaults(self, algo) -> dict[str, Any]:
        """Environment overrides for training with ``algo`` (an ``Algorithm``) that the user's
        ``--env-set`` values replace; none by default."""
        return {}

    def presets(self, env, algo: str) -> dict[str, dict[str, Any]]:
        return {}

    def recorder(self, env, config, options: RunOptions) -> Any:
        return None

    def rollout_hook(self, env, config, options: RunOptions) -> Any:
        rollout = options.rollout
        if rollout:
            raise ValueError(f"{env.name} takes no rollout options, got {sorted(rollout)}")
        return None

    def summarize(
        self, env, env_params, trainer, state, rows: list[dict], evaluations: list[dict], options: RunOptions, run_dir: Path
    ) -> dict[str, Any]:
        return {}

    def summary_lines(self, summary: dict) -> list[str]:
        return []

    def plot(self, env, rows: list[dict], summary: dict, evaluations: list[dict], run_dir: Path) -> None:
        return None

    def compare(self, records: list[dict], out: Path) -> dict[str, Any]:
        """Several runs' evaluation records (``jaxclimate.evaluate``): by default each run's mean
        return per agent and group."""
        return {"runs": [r["run_dir"] for r in records], "mean_return": [{g: v["mean"] for g, v in r["returns"].items()} for r in records]}

    def compare_lines(self, result: dict) -> list[str]:
        return [f"{run}: " + ", ".join(f"[{g}] {v:.4f}" for g, v in means.items()) for run, means in zip(result["runs"], result["mean_return"])]


def nan_mean(values: Any, axis: Any = None) -> Any:
    """Mean ignoring NaN entries: NaN marks an update in which no episode ended,
    and stays NaN only where every entry is one (quietly: a gap is not an error)."""
    values = np.asarray(values, float)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = np.nanmean(values, axis=axis)
    return result  # a NumPy float (a Python float too: JSON takes it) or an array; both have .tolist()


def mean_and_stderr(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error (std with ddof = 1 over √n; 0 for a single value) along ``axis``."""
    values = np.asarray(values, float)
    n = values.shape[axis]
    stderr = values.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(values.mean(axis=axis))
    return values.mean(axis=axis), stderr


def over_seeds(seeds: int, what: str = "mean ± std") -> str:
    """How a table or figure aggregates seeds: ``"<what> over N seeds"``, or ``"one seed"``
    (a single seed has no spread to show, so none is drawn or printed)."""
    return f"{what} over {seeds} seeds" if seeds > 1 else "one seed"


#: above this many agents a returns plot shows their mean, the best and the worst, the rest in grey
MANY_AGENTS = 10


def agent_labels(env, group: str) -> list[str]:
    """How tables and plots name each agent of ``group``: its interface name ``f"{group}_{i}"``
    (PettingZoo, Gymnasium and JaxMARL views name agents so) and, where the environment names
    its agents itself (RICE-N's region IDs, the EBM's bands), that name beside it."""
    from jaxclimate.core.env import Environment

    own, generic = env.agent_names(group), Environment.agent_names(env, group)
    return [f"{group}_{i}" + (f" ({name})" if name != plain else "") for i, (name, plain) in enumerate(zip(own, generic))]


def plot_returns(env, rows: list[dict], run_dir: Path) -> None:
    """``returns.png`` (one group) or ``returns-<group>.png``: each agent's return (mean over
    seeds, the seeds' range shaded where there are several), agents named as the environment
    names them; with more than ``MANY_AGENTS`` agents, their mean with the best and worst final
    agent highlighted and the others in grey. Updates in which no episode ended are gaps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r["env_steps"] for r in rows])
    for group in env.agents:
        returns = np.array([r[group]["episode_return"] for r in rows], dtype=float)  # (updates, seeds, agents)
        names, seeds = agent_labels(env, group), returns.shape[1]
        fig, ax = plt.subplots(figsize=(7, 4.4))
        means = nan_mean(returns, axis=1)  # (updates, agents)
        if len(names) > MANY_AGENTS:
            _plot_many(ax, steps, means, names)
        else:
            for i, name in enumerate(names):
                ax.plot(steps, means[:, i], label=name)
                if seeds > 1:
                    ax.fill_between(steps, np.nanmin(returns[:, :, i], 1), np.nanmax(returns[:, :, i], 1), alpha=0.2)
        ax.set(xlabel="env steps per seed", ylabel="episode return", title=f"{env.name}: return per agent ({group})")
        ax.legend(fontsize=7, ncol=2)
        caption = f"lines: {over_seeds(seeds, 'mean')}" + ("; shaded: the seeds' range" if seeds > 1 else "")
        fig.text(0.01, 0.01, caption + "; gaps: updates in which no episode ended", fontsize=7, color="0.35")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        fig.savefig(run_dir / ("returns.png" if len(env.agents) == 1 else f"returns-{group}.png"), dpi=120)
        plt.close(fig)


def _plot_many(ax, steps: np.ndarray, means: np.ndarray, names: list[str]) -> None:
    """Every agent thin and grey, their mean bold, the best and worst final agent in colour."""
    finite = np.where(np.isfinite(means).any(axis=1))[0]
    final = means[finite[-1]] if finite.size else np.zeros(len(names))
    ax.plot(steps, means, color="0.75", lw=0.6)
    ax.plot(steps, nan_mean(means, axis=1), color="k", lw=2, label=f"mean over {len(names)} agents")
    for i, role in ((int(np.nanargmax(final)), "best"), (int(np.nanargmin(final)), "worst")):
        ax.plot(steps, means[:, i], lw=1.5, label=f"{names[i]} ({role} at the end)")
