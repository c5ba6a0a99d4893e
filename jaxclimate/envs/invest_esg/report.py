"""How ``python -m jaxclimate.train`` presents InvestESG: the paper's and the authors' IPPO
settings, the real-world seeding hook, the social outcome metrics (P100, W100, …) of the
training episodes, and the learned policy (docs/invest_esg.md §6, §10, §11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from jaxclimate.envs.invest_esg.env import COMPANIES, INVESTORS, START_YEAR
from jaxclimate.envs.invest_esg.rollout import RealWorldSeeding
from jaxclimate.reporting import TrainingReport, mean_and_stderr
from jaxclimate.run_options import RunOptions

#: The paper's IPPO (§4.5, Table 1) as its Stable-Baselines3 pipeline ran it: one PPO per agent,
#: separate [256, 128] tanh actor and critic MLPs with orthogonal init, 500 env steps (5
#: episodes) per update, 10 epochs of minibatches of 64, lr 3e-5 constant, entropy 0.01,
#: ratio clip 0.2, no value clipping, gradient norm 0.5, advantages standardised per minibatch,
#: 30k episodes. SB3's value loss is the plain MSE with coefficient 0.5, i.e. vf_coef = 1 with
#: our ½·MSE. Companies: Gaussian on R³ whose sample a is given to the env as
#: clip((a + 1)/2 · cap, 0, cap); investors: one Bernoulli per company.
PAPER_SB3 = dict(
    total_timesteps=3_000_000,
    num_envs=5,
    num_steps=100,
    update_epochs=10,
    minibatch_size=64,
    num_minibatches=1,
    lr=3e-5,
    anneal_lr=False,
    ent_coef=0.01,
    vf_coef=1.0,
    clip_value_loss=False,
    max_grad_norm=0.5,
    gamma=0.99,
    gae_lambda=0.95,
    clip_eps=0.2,
    network="mlp",
    hidden_sizes=(256, 128),
    activation="tanh",
    initialization="orthogonal",
    advantage_normalization="minibatch",
    continuous_actions="rescale",
)
#: The authors' later JAX pipeline (their README command): separate actor and critic
#: [256, 256] ReLU MLPs with LayerNorm and flax's default init, two Adams (lr 1e-4, gradient
#: norm 10 each), 10 envs × 100 steps per update, 4 epochs × 20 minibatches, advantages
#: standardised over the batch, 3k episodes. (Their minibatches are chunks of 10 consecutive
#: steps; here they are single samples, which a feed-forward network cannot tell apart.)
AUTHORS_JAX = dict(
    total_timesteps=300_000,
    num_envs=10,
    num_steps=100,
    update_epochs=4,
    minibatch_size=50,
    num_minibatches=1,
    lr=1e-4,
    anneal_lr=False,
    ent_coef=0.01,
    vf_coef=0.5,
    clip_value_loss=False,
    max_grad_norm=10.0,
    separate_optimizers=True,
    gamma=0.99,
    gae_lambda=0.95,
    clip_eps=0.2,
    network="mlp",
    hidden_sizes=(256, 256),
    activation="relu",
    layer_norm=True,
    initialization="lecun",
    advantage_normalization="batch",
    continuous_actions="rescale",
)
#: Metrics shown in the summary and the learning-curve figure: (key, label).
SOCIAL = (
    ("final_climate_risk", "P100: final climate risk"),
    ("final_market_wealth", "W100: final market wealth (trillion)"),
    ("total_mitigation", "cumulative mitigation (trillion)"),
    ("climate_events", "climate events per episode"),
)
SPENDING = (("total_greenwash", "cumulative greenwashing (trillion)"), ("total_resilience", "cumulative resilience (trillion)"))
ROLLOUT_OPTIONS = ("seeding", "seed_companies", "seed_years", "seed_low", "seed_high", "train_on_seeded_years")


class InvestESGReport(TrainingReport):
    def presets(self, env, algo: str) -> dict[str, dict[str, Any]]:
        if algo != "ippo":
            return {}
        starts = env.config.company_learning_starts
        extra = {"learning_starts": ((COMPANIES, starts),)} if starts else {}
        return {"paper_sb3": {**PAPER_SB3, **extra}, "authors_jax": {**AUTHORS_JAX, **extra}}

    def rollout_hook(self, env, config, options: RunOptions) -> Any:
        rollout = dict(options.rollout)
        unknown = sorted(set(rollout) - set(ROLLOUT_OPTIONS))
        if unknown:
            raise ValueError(f"invest-esg rollout options are {ROLLOUT_OPTIONS}, got {unknown}")
        if not rollout.get("seeding", any(k.startswith("seed_") for k in rollout)):
            return None
        return RealWorldSeeding(
            total_companies=env.num_companies,
            num_companies=rollout.get("seed_companies"),
            years=int(rollout.get("seed_years", 5)),
            low=float(rollout.get("seed_low", 0.005)),
            high=float(rollout.get("seed_high", 0.01)),
            train_on_seeded_years=bool(rollout.get("train_on_seeded_years", False)),
        )

    def summarize(self, env, env_params, trainer, state, rows, evaluations, options: RunOptions, run_dir: Path) -> dict[str, Any]:
        final = [{k: np.asarray(v[-1]) for k, v in e["info"]["episode_metrics"].items()} for e in evaluations]
        allowed = np.array([1.0, float(np.asarray(env_params.allow_greenwash)), float(np.asarray(env_params.allow_resilience))])
        fractions = np.stack([e["actions"][COMPANIES] for e in evaluations]) * allowed  # (seeds, T, N_C, 3) as applied
        choices = np.stack([e["actions"][INVESTORS] for e in evaluations])  # (seeds, T, N_I, N_C)
        return {
            "market": env.config.description or env.name,
            "learned_policy": {
                "final_climate_risk": float(np.mean([f["final_climate_risk"] for f in final])),
                "final_market_wealth": float(np.mean([f["final_market_wealth"] for f in final])),
                "climate_events": float(np.mean([f["climate_events"] for f in final])),
                "mean_spending_fractions": fractions.mean(axis=(0, 1)).tolist(),  # per company: mitigation, greenwash, resilience
                "spending_enabled": [bool(a) for a in allowed],
                "investment_rate": choices.mean(axis=(0, 1)).tolist(),  # per investor and company: share of years invested
                "note": "deterministic policies (Gaussian means, Bernoulli modes), one episode per seed",
            },
        }

    def summary_lines(self, summary: dict) -> list[str]:
        lines = []
        train = summary.get("final_episode_metrics", {})
        if train:
            lines.append("\ntraining episodes (stochastic policies, last updates):")
            for key, label in SOCIAL + SPENDING:
                lines.append(f"  {label:<42} {train[key]:.4f}")
        learned = summary["learned_policy"]
        lines.append(
            f"\nlearned policy: P100 {learned['final_climate_risk']:.4f}, W100 {learned['final_market_wealth']:.1f}, "
            f"{learned['climate_events']:.0f} events"
        )
        lines.append(f"{'company':>8} {'mitigation':>11} {'greenwash':>10} {'resilience':>11}")
        for i, (m, g, r) in enumerate(learned["mean_spending_fractions"]):
            lines.append(f"{i:>8} {m:>11.4f} {g:>10.4f} {r:>11.4f}")
        return lines

    def plot(self, env, rows, summary, evaluations, run_dir: Path) -> None:
        plot_learning_curves(rows, run_dir / "social.png", title=env.config.description or env.name)
        plot_policy(evaluations[0], run_dir / "policy.png", env.name, summary["learned_policy"]["spending_enabled"])


def plot_learning_curves(rows: list[dict], path: Path, title: str = "", curves: dict[str, list[dict]] | None = None) -> None:
    """The paper's learning curves: P100, W100, cumulative mitigation and events per training
    episode against env steps, mean ± standard error over seeds; ``curves`` (label -> rows)
    draws several runs into the same panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = {"": rows} if curves is None else curves
    spend = any(np.any(np.asarray([r["episode"][k] for r in rs])) for rs in curves.values() for k, _ in SPENDING)
    panels = SOCIAL + (SPENDING if spend else ())
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6))
    for label, rs in curves.items():
        steps = np.array([r["env_steps"] for r in rs])
        for ax, (key, name) in zip(axes, panels):
            mean, err = mean_and_stderr(np.array([r["episode"][key] for r in rs]), axis=1)
            (line,) = ax.plot(steps, mean, label=label or None)
            ax.fill_between(steps, mean - err, mean + err, color=line.get_color(), alpha=0.25)
            ax.set(xlabel="env steps per seed", title=name)
    if any(curves):
        axes[0].legend(fontsize=7)
    fig.suptitle(title + " (training episodes; mean ± s.e. over seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_policy(evaluation: dict, path: Path, name: str, enabled=(True, False, False)) -> None:
    """One deterministic episode of the learned policies: each company's spending fractions
    (the kinds the market enables), each investor's choices and the climate risk, by year."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fractions = evaluation["actions"][COMPANIES]  # (T, N_C, 3)
    choices = evaluation["actions"][INVESTORS]  # (T, N_I, N_C)
    years = START_YEAR + np.arange(fractions.shape[0])
    kinds = [(k, style, label) for k, style, label in ((0, "-", "mitigation"), (1, ":", "greenwash"), (2, "--", "resilience")) if enabled[k]]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for i in range(fractions.shape[1]):
        color = f"C{i % 10}"
        for k, style, _ in kinds:
            axes[0].plot(years, 100 * fractions[:, i, k], style, color=color, label=f"company {i}" if k == 0 else None)
    axes[0].set(xlabel="year", ylabel="% of capital", title="spending: " + ", ".join(f"{label} ({style})" for _, style, label in kinds))
    axes[0].legend(fontsize=7)
    im = axes[1].imshow(choices.mean(axis=0), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    axes[1].set(xlabel="company", ylabel="investor", title="share of years invested")
    axes[1].set_xticks(range(choices.shape[2]))
    axes[1].set_yticks(range(choices.shape[1]))
    fig.colorbar(im, ax=axes[1])
    axes[2].plot(years, evaluation["info"]["climate_risk"], color="tab:red", label="climate risk")
    axes[2].bar(years, evaluation["info"]["event_count"] / 3.0, color="grey", alpha=0.4, label="events / 3")
    axes[2].set(xlabel="year", ylabel="probability", title="climate risk and events")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"{name}: learned policy (deterministic)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
