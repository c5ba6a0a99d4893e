"""How ``python -m jaxclimate.train`` and ``python -m jaxclimate.evaluate`` present RICE-N: the
competition's eight metrics and the paper's indices of each seed's deterministic episode
(docs/rice_n.md §11, §18), the index plane, and — for several runs, a team's submissions — the
hypervolume they enclose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from jaxclimate.envs.rice_n import evaluation, scoring
from jaxclimate.envs.rice_n.env import GROUP, replay
from jaxclimate.envs.rice_n.relaxed import history
from jaxclimate.reporting import TrainingReport
from jaxclimate.run_options import RunOptions


def seed_histories(env, env_params, evaluations: list[dict]) -> list[dict[str, np.ndarray]]:
    """Each seed's evaluation episode replayed into a full history (its actions, one compiled
    program per environment)."""
    return [replay(env, np.asarray(e["actions"][GROUP]), env_params) for e in evaluations]


class RiceNReport(TrainingReport):
    def preflight(self, env, env_overrides: dict[str, Any]) -> list[str]:
        """A user's protocol passes the quick protocol check before a run trains on it (one line)."""
        from jaxclimate.envs.rice_n.protocol_check import ProtocolError, quick_check

        try:
            line = quick_check(env_overrides.get("protocol", "none"))
        except ProtocolError as error:
            raise ValueError(str(error)) from None
        return [] if line is None else [line]

    def env_defaults(self, algo) -> dict[str, Any]:
        """The factored observation for a learner that takes it: the same information and the
        same policy class, its shared features multiplied once per environment. Trained both
        ways (IPPO, 3 seeds × 20k env steps) the outcome is the same and the factored run 1.34×
        faster end to end (docs/results.md, "Training on the factored observation");
        ``--env-set observation=flat`` keeps the reference's layout."""
        return {"observation": "factored"} if algo.factored_observations else {}

    def histories(self, env, env_params, evaluations: list[dict]) -> list[dict[str, np.ndarray]]:
        """Each seed's evaluation episode as a :func:`replay` history."""
        return seed_histories(env, env_params, evaluations)

    def protocol(self, env) -> str:
        return env.protocol.name

    def summarize(self, env, env_params, trainer, state, rows, evaluations, options: RunOptions, run_dir: Path) -> dict[str, Any]:
        histories = self.histories(env, env_params, evaluations)
        metrics = [evaluation.episode_metrics(h) for h in histories]  # unrounded indices: the points
        points = [[m["climate_index"], m["economic_index"]] for m in metrics]
        return {
            "protocol": self.protocol(env),
            "competition": scoring.score(histories),
            "competition_per_seed": [scoring.competition_metrics(h) for h in histories],
            "index_points": points,
            "hypervolume": evaluation.hypervolume(points),
            "temperature_2100": [m["temperature_2100"] for m in metrics],
            **self.extra_metrics(histories),
        }

    def extra_metrics(self, histories: list[dict[str, np.ndarray]]) -> dict[str, Any]:
        return {}

    def summary_lines(self, summary: dict) -> list[str]:
        if "competition" not in summary:
            return []
        seeds = len(summary["index_points"])
        lines = [f"competition metrics ({summary['protocol']}; mean of {seeds} seed(s)' deterministic episodes, the original's rounding):"]
        lines += ["  " + line for line in scoring.format_table(summary["competition"]).splitlines()]
        points = " ".join(f"({c:.3f}, {e:.3f})" for c, e in summary["index_points"])
        lines.append(f"index points (climate, economic) per seed: {points}; hypervolume {summary['hypervolume']:.3f}")
        return lines

    def plot(self, env, rows, summary, evaluations, run_dir: Path) -> None:
        if "index_points" in summary:
            plot_index_plane({summary["protocol"]: summary["index_points"]}, run_dir / "index_plane.png", title=env.name)

    def compare(self, records: list[dict], out: Path) -> dict[str, Any]:
        """Several runs (a team's submissions, oldest first): each run's point (its seeds' mean
        indices), the hypervolume of the 10 most recent as the competition scored a team, and
        the index plane."""
        runs = [r for r in records if "index_points" in r.get("summary", {})]
        points = [np.mean(r["summary"]["index_points"], axis=0).tolist() for r in runs]
        result = {
            "runs": [r["run_dir"] for r in runs],
            "points": points,
            "team_hypervolume": scoring.team_hypervolume(points) if points else 0.0,
            "hypervolume_all": evaluation.hypervolume(points) if points else 0.0,
        }
        labels = {f"{Path(r['run_dir']).name} ({r['summary']['protocol']})": r["summary"]["index_points"] for r in runs}
        plot_index_plane(labels, out / "index_plane.png", title=f"{len(runs)} runs: hypervolume {result['team_hypervolume']:.3f}")
        return result

    def compare_lines(self, result: dict) -> list[str]:
        lines = [f"{'run':<48} {'climate':>8} {'economic':>9}"]
        lines += [f"{run[-48:]:<48} {c:8.3f} {e:9.3f}" for run, (c, e) in zip(result["runs"], result["points"])]
        lines.append(f"hypervolume of the 10 most recent runs (the competition's team score): {result['team_hypervolume']:.3f}")
        return lines


class RiceNRatesReport(RiceNReport):
    """RICE-N's report, each seed's history rebuilt from its continuous evaluation actions,
    with the planner's measure W (global discounted welfare) beside it."""

    def env_defaults(self, algo) -> dict[str, Any]:
        return {}  # one flat layout only

    def histories(self, env, env_params, evaluations: list[dict]) -> list[dict[str, np.ndarray]]:
        return [history(env, env_params, np.asarray(e["actions"][GROUP])[: env.episode_length]) for e in evaluations]

    def protocol(self, env) -> str:
        return "none (continuous rates, no trade)"

    def extra_metrics(self, histories: list[dict[str, np.ndarray]]) -> dict[str, Any]:
        return {"welfare": [float(h["welfare"].sum(dtype=np.float64)) for h in histories]}

    def summary_lines(self, summary: dict) -> list[str]:
        lines = super().summary_lines(summary)
        if "welfare" in summary:
            lines.append("global discounted welfare W per seed: " + " ".join(f"{w:.2f}" for w in summary["welfare"]))
        return lines


def plot_index_plane(groups: dict[str, list], path: Path, title: str = "", reference: dict[str, Any] | None = None) -> None:
    """Points on the (climate index, economic index) plane, one colour per group with its
    Pareto front and hypervolume (reference point (0, 0), docs/rice_n.md §11.4); ``reference``
    may add ``constants`` (a list of points, grey) and ``planner`` (one point, a star)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    reference = reference or {}
    if reference.get("constants"):
        c = np.asarray(reference["constants"], float)
        ax.scatter(c[:, 0], c[:, 1], s=8, color="0.75", label="constant policies")
    if reference.get("planner") is not None:
        ax.scatter(*reference["planner"], marker="*", s=220, color="k", label="welfare-maximising planner", zorder=5)
    for name, points in groups.items():
        points = np.asarray(points, float).reshape(-1, 2)
        (dots,) = ax.plot(points[:, 0], points[:, 1], "o", ms=6, alpha=0.8, label=f"{name}: HV {evaluation.hypervolume(points):.3f}")
        ax.plot(*_staircase(points), color=dots.get_color(), lw=0.8, alpha=0.6)
    ax.set(xlabel="climate index (1 = best)", ylabel="economic index (1 = best)", title=title or "RICE-N index plane")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _staircase(points: np.ndarray) -> tuple[list[float], list[float]]:
    """The boundary of the area the points dominate above (0, 0): its hypervolume."""
    front = evaluation.pareto_front(np.maximum(points, 0.0))  # x descending, y ascending
    xs, ys, previous = [], [], 0.0
    for x, y in front:
        xs += [x, x]
        ys += [previous, y]
        previous = y
    return xs + [0.0], ys + [previous]
