"""InvestESG experiments (paper §2, Figs. 2–8): learning curves of the social outcome metrics
under ESG disclosure and ESG-conscious investors, and the Schelling diagrams.

    python baselines/invest_esg.py                              # Fig. 3 sweep + extra rows, 3 seeds
    python baselines/invest_esg.py --settings fig3 --steps 300000 --preset authors_jax
    python baselines/invest_esg.py --experiment schelling       # seconds

Sweep. Every setting is a parameter set of the same 5 × 3 market (ESG disclosure, α per
investor, β, greenwashing / resilience switches and climate information are all parameter
leaves), so the whole sweep — settings × seeds — is one ``vmap``ped IPPO program, trained in
compiled chunks under a progress bar. Settings (the original's experiment files):
``status_quo`` (exp_default), ``mandate`` (…_company_esg_score), ``alpha0.5`` … ``alpha100``
(exp_a1–a4) form Fig. 3; ``--settings all`` adds ``heterogeneous`` (exp_b1, α = 0/10/10),
``greenwash_beta10`` (exp_e1_2), ``climate_info`` (exp_c1) and ``resilience`` (exp_e3).
Training uses the ``--preset`` (default ``authors_jax``: the authors' JAX settings and
their 3k-episode budget; ``paper_sb3`` is the paper's Stable-Baselines3 setting, which on
this CPU costs ~30 min per 1M env steps of a 10-setting × 3-seed sweep). Events come from
the key (``--event-mode reference_events`` replays the authors' fixed calendar). As in the
paper, the curves are the training episodes (stochastic actions), mean ± standard error over
seeds; the table reports the mean of the last 10 % of updates and a deterministic evaluation
episode per seed.

Schelling. See :mod:`jaxclimate.envs.invest_esg.schelling`: 4 investor modes × k = 0..4 × C/D ×
200 Monte-Carlo episodes with common random numbers.

Outputs: ``baselines/results/invest_esg_<preset>.json``, ``invest_esg_<preset>.png``,
``invest_esg_schelling.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate import make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.algos.ippo import IPPOConfig, make_trainer  # noqa: E402
from jaxclimate.envs.invest_esg import COMPANIES, INVESTORS, market_config, schelling  # noqa: E402
from jaxclimate.envs.invest_esg.report import AUTHORS_JAX, PAPER_SB3  # noqa: E402
from jaxclimate.reporting import mean_and_stderr  # noqa: E402

RESULTS = Path(__file__).parent / "results"
FIG3 = {
    "status_quo": "exp_default",
    "mandate": "exp_5*10+3*16.7_company_esg_score",
    "alpha0.5": "exp_a1",
    "alpha1": "exp_a2",
    "alpha10": "exp_a3",
    "alpha100": "exp_a4",
}
EXTRA = {"heterogeneous": "exp_b1", "greenwash_beta10": "exp_e1_2", "climate_info": "exp_c1", "resilience": "exp_e3"}
PRESETS = {"authors_jax": AUTHORS_JAX, "paper_sb3": PAPER_SB3}
METRICS = (
    "final_climate_risk",
    "final_market_wealth",
    "total_mitigation",
    "total_greenwash",
    "total_resilience",
    "climate_events",
    "cumulative_climate_risk",
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", choices=["sweep", "schelling", "both"], default="both")
    p.add_argument("--settings", choices=["fig3", "all"], default="all")
    p.add_argument("--preset", choices=sorted(PRESETS), default="authors_jax")
    p.add_argument("--steps", type=int, help="env steps per run (default: the preset's budget)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--event-mode", choices=["key", "reference_events"], default="key")
    p.add_argument("--chunks", type=int, default=20)
    p.add_argument("--hidden", type=int, nargs="+", help="override the preset's layer widths (quick runs)")
    p.add_argument("--episodes", type=int, default=200, help="Monte-Carlo episodes per Schelling cell")
    p.add_argument("--out", type=Path, default=RESULTS)
    return p.parse_args(argv)


def sweep(args) -> dict:
    from tqdm.auto import tqdm

    names = {**FIG3, **(EXTRA if args.settings == "all" else {})}
    env, _ = make("invest-esg", event_mode=args.event_mode)
    params = [market_config(config).params() for config in names.values()]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *params)
    preset = dict(PRESETS[args.preset])
    if args.steps:
        preset["total_timesteps"] = args.steps
    if args.hidden:
        preset["hidden_sizes"] = tuple(args.hidden)
    config = IPPOConfig(**preset)
    trainer = make_trainer(env, params[0], config)
    n_settings, n_seeds = len(names), args.seeds
    keys = jax.random.split(jax.random.PRNGKey(0), n_settings * n_seeds).reshape(n_settings, n_seeds, 2)
    init = jax.vmap(jax.vmap(trainer.init, in_axes=(0, None)), in_axes=(0, 0))
    state = jax.jit(init)(keys, stacked)
    chunk = max(1, config.num_updates // args.chunks)
    run = jax.jit(jax.vmap(jax.vmap(lambda s, p: trainer.run(s, chunk, None, p), in_axes=(0, None)), in_axes=(0, 0)))
    curves = []
    start = time.perf_counter()
    with tqdm(
        total=config.num_updates * config.steps_per_update * n_settings * n_seeds,
        unit="step",
        unit_scale=True,
        desc=f"IPPO {args.preset} × {n_settings} settings × {n_seeds} seeds",
    ) as bar:
        for _ in range(config.num_updates // chunk):
            state, metrics = run(state, stacked)
            curves.append(jax.tree_util.tree_map(np.asarray, metrics))
            bar.update(chunk * config.steps_per_update * n_settings * n_seeds)
    wall = time.perf_counter() - start
    curves = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=2), *curves)  # (settings, seeds, updates, ...)
    updates = curves["episode"]["final_climate_risk"].shape[2]
    steps = (np.arange(updates) + 1) * config.steps_per_update
    tail = max(1, updates // 10)
    evaluation = evaluate(env, trainer, state, stacked, n_settings, n_seeds)
    result = {
        "preset": args.preset,
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in preset.items()},
        "event_mode": args.event_mode,
        "seeds": n_seeds,
        "env_steps_per_run": int(steps[-1]),
        "wall_seconds": wall,
        "env_steps_per_s": float(steps[-1] * n_settings * n_seeds / wall),
        "device": jax.devices()[0].device_kind,
        "env_steps": steps.tolist(),
        "settings": {},
    }
    for i, (name, config_name) in enumerate(names.items()):
        entry = {"config": config_name, "description": market_config(config_name).description, "curves": {}, "final": {}}
        for metric in METRICS:
            values = curves["episode"][metric][i]  # (seeds, updates)
            mean, err = mean_and_stderr(values, axis=0)
            entry["curves"][metric] = {"mean": mean.tolist(), "stderr": err.tolist()}
            final_mean, final_err = mean_and_stderr(values[:, -tail:].mean(axis=1))
            entry["final"][metric] = {"mean": float(final_mean), "stderr": float(final_err)}
        shares = curves["episode"]["investment_shares"][i][:, -tail:].mean(axis=1)  # (seeds, N_I, N_C)
        entry["final"]["top_company_share"] = float(np.sort(shares, axis=-1)[..., -1].mean())
        entry["final"]["company_return"] = float(curves[COMPANIES]["episode_return"][i][:, -tail:].mean())
        entry["final"]["investor_return"] = float(curves[INVESTORS]["episode_return"][i][:, -tail:].mean())
        entry["evaluation"] = {k: v[i] for k, v in evaluation.items()}
        result["settings"][name] = entry
    return result


def evaluate(env, trainer, state, stacked, n_settings, n_seeds) -> dict:
    """One deterministic episode per setting and seed: P100, W100, mitigation, mean spending."""

    def one(rs, params, key):
        policy, carry = rs.params, trainer.initial_carry(1)
        obs, env_state = env.reset(key, params)

        def year(carry_state, k):
            obs, env_state, carry = carry_state
            actions, carry = trainer.act(policy, jax.tree_util.tree_map(lambda x: x[None], obs), carry, jnp.zeros((1,), bool), k)
            actions = jax.tree_util.tree_map(lambda x: x[0], actions)
            new_state, _, info = env.transition(k, env_state, actions[COMPANIES], actions[INVESTORS], params)
            return (env.observation(new_state, params), new_state, carry), actions[COMPANIES][:, 0]

        (_, final, _), mitigation = jax.lax.scan(year, (obs, env_state, carry), jax.random.split(key, 100))
        metrics = {
            "final_climate_risk": final.climate_risk,
            "final_market_wealth": final.capital.sum() + final.cash.sum(),
            "total_mitigation": final.cumulative[:, 0].sum(),
        }
        return {**metrics, "mean_mitigation_fraction": mitigation.mean()}

    run = jax.jit(jax.vmap(jax.vmap(one, in_axes=(0, None, None)), in_axes=(0, 0, None)))
    out = run(state, stacked, jax.random.PRNGKey(123))
    return {k: [float(x) for x in np.asarray(v).mean(axis=1)] for k, v in out.items()}


def plot_sweep(result: dict, path: Path) -> None:
    """The paper's Fig. 3 panels, one line per setting with its standard-error band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("final_climate_risk", "P100: final climate risk"),
        ("final_market_wealth", "W100: final market wealth"),
        ("total_mitigation", "cumulative mitigation (trillion)"),
        ("climate_events", "climate events per episode"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(18, 4.2))
    steps = np.asarray(result["env_steps"])
    for name, entry in result["settings"].items():
        for ax, (metric, title) in zip(axes, panels):
            mean, err = np.asarray(entry["curves"][metric]["mean"]), np.asarray(entry["curves"][metric]["stderr"])
            (line,) = ax.plot(steps, mean, label=name, lw=1.2)
            ax.fill_between(steps, mean - err, mean + err, color=line.get_color(), alpha=0.2)
            ax.set(xlabel="env steps per run", title=title)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(
        f"InvestESG, IPPO ({result['preset']}, {result['seeds']} seeds, events: {result['event_mode']}): training episodes, mean ± s.e.", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_schelling(table: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {
        "esg": "3/3 ESG-conscious investors",
        "greedy": "0/3: margin-chasing investors",
        "passive": "0/3: passive investors",
        "none": "no investors",
    }
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    k = np.arange(5)
    for ax, mode in zip(axes, schelling.MODES):
        cell = table["return"][mode]
        for choice, color in (("cooperate", "tab:green"), ("defect", "tab:red")):
            mean, err = np.asarray(cell[choice]), np.asarray(cell[f"{choice}_stderr"])
            ax.errorbar(k, mean, yerr=err, marker="o", color=color, capsize=3, label=f"focal company {choice}s")
        ax.set(xlabel="other companies cooperating (k)", ylabel="focal company's return (trillion)", title=titles[mode])
        ax.set_xticks(k)
    axes[0].legend(fontsize=8)
    fig.suptitle("Schelling diagrams: cooperate = 0.5 % of capital on mitigation every year (200 Monte-Carlo episodes, mean ± s.e.)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    out = {}
    if args.experiment in ("schelling", "both"):
        start = time.perf_counter()
        table = schelling.schelling_table(schelling.focal_returns(schelling.episode_uniforms(args.episodes)))
        table.update(episodes=args.episodes, seconds=time.perf_counter() - start, k=list(range(5)))
        atomic_write_text(args.out / "invest_esg_schelling.json", json.dumps(table, indent=1) + "\n")
        plot_schelling(table, args.out / "invest_esg_schelling.png")
        out["schelling"] = table
        print(f"Schelling table ({args.episodes} episodes per cell, {table['seconds']:.1f} s): C − D per k")
        for mode in schelling.MODES:
            print(f"  {mode:>8}: " + " ".join(f"{d:+8.1f}" for d in table["return"][mode]["difference"]))
    if args.experiment in ("sweep", "both"):
        result = sweep(args)
        tag = f"invest_esg_{args.preset}" + ("" if args.event_mode == "key" else f"_{args.event_mode}")
        atomic_write_text(args.out / f"{tag}.json", json.dumps(result, indent=1) + "\n")
        plot_sweep(result, args.out / f"{tag}.png")
        out["sweep"] = result
        print(
            f"\n{result['preset']}: {result['env_steps_per_run']:,} env steps per run, {len(result['settings'])} settings × "
            f"{result['seeds']} seeds in {result['wall_seconds']:.0f} s ({result['env_steps_per_s']:,.0f} env-steps/s)"
        )
        print(f"{'setting':>18} {'P100':>14} {'W100':>16} {'mitigation':>16} {'top share':>10} {'eval P100':>10}")
        for name, e in result["settings"].items():
            f = e["final"]
            print(
                f"{name:>18} {f['final_climate_risk']['mean']:>8.4f}±{f['final_climate_risk']['stderr']:.4f} "
                f"{f['final_market_wealth']['mean']:>10.1f}±{f['final_market_wealth']['stderr']:<5.1f} "
                f"{f['total_mitigation']['mean']:>10.1f}±{f['total_mitigation']['stderr']:<5.1f} {f['top_company_share']:>10.2f} "
                f"{e['evaluation']['final_climate_risk']:>10.4f}"
            )
    return out


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/invest_esg.py"))
