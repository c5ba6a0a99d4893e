"""Policies robust to the climate we do not know: APG trained on the nominal model against APG
trained over a distribution of climate sensitivity, forcing and damages, both evaluated on the
same held-out draws (docs/robustness.md).

For each case — RICE-N's relaxation on DICE-2016 (``rice-n-rates``; ECS, F_2x, a₂) and the
climate game (ii) on CICERO-SCM in JAX (``climate-mitigation-levers``; λ, ψ) — the script trains
``python -m jaxclimate.train --algo apg`` twice with the same budget and seeds: as is (the nominal
model) and with ``--uncertainty climate-damage`` (every training episode under its own draw).
It then plays each seed's deterministic policy, the open-loop planner optimised on the nominal
model, and business as usual, on ``--draws`` draws of the same distribution from a key no
training used (one compiled ``vmap`` over the draws per policy), and records per policy the
mean and the worst decile (mean of the lowest 10 %) of the score — global discounted welfare W
for RICE-N, the summed return for the game — and the temperature at the horizon (2100 for
RICE-N, 2050 for the game): mean and 90th percentile.

    python baselines/apg_robust.py                        # baselines/results/apg_robust.{json,png}
    python baselines/apg_robust.py --cases rice-n --steps 16000 --seeds 1 --draws 64
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from apg_common import RESULTS, finish_figure, provenance, save, train_apg

from jaxclimate import load_policy, make
from jaxclimate.envs.climate_mitigation import planner as game_planner
from jaxclimate.envs.rice_n import planner as rice_planner

UNCERTAINTY = "climate-damage"
HELD_OUT_KEY = 20261128  # the draws every policy is scored on; training draws come from the run's own keys


@dataclasses.dataclass(frozen=True)
class Case:
    env_id: str
    make_kwargs: dict[str, Any]
    flags: list[str]
    steps: int
    score: str  # what the score is, for tables
    horizon: str  # the year the temperature is read
    measure: Callable[[Any, Any], tuple[Any, Any]]  # (state after a step, rewards) -> (score increment, temperature)
    horizon_index: int  # the step after which the temperature is read (−1: the last)
    plan: Callable[[Any, Any], Callable[[int], jax.Array]]  # (env, nominal params) -> t -> (N, A) actions of the open-loop planner
    business_as_usual: Callable[[Any], jax.Array]  # env -> (N, A)


def _rice_plan(env, params):
    rates = rice_planner.optimise(env.base, params, jax.random.PRNGKey(0))["rates"]
    schedule = jnp.stack([rates.savings, rates.mitigation], axis=-1)  # (steps, N, 2)
    return lambda t: schedule[t]


def _game_plan(env, params):
    levers = game_planner.optimise(env.base, params, jax.random.PRNGKey(0))["levers"]
    schedule = jnp.concatenate([levers.efforts, levers.adaptation[..., None]], axis=-1)  # (35, N, 4)
    return lambda t: schedule[t]


CASES = {
    "rice-n": Case(
        env_id="rice-n-rates",
        make_kwargs={},
        flags=["--env", "rice-n-rates", "--set", "unroll_length=20", "--set", f"gamma={round(1.015**-5, 6)}", "--set", "share_parameters=true"],
        steps=64_000,
        score="global discounted welfare W",
        horizon="2100",
        measure=lambda state, rewards: (state.social_welfare.sum(), state.temperature[0]),
        horizon_index=16,  # activity step k ends in 2015 + 5(k + 1)
        plan=_rice_plan,
        business_as_usual=lambda env: jnp.tile(jnp.asarray([0.2, 0.0]), (env.num_regions, 1)),
    ),
    "climate-game": Case(
        env_id="climate-mitigation-levers",
        make_kwargs={"scenario": "ii", "engine": "cicero-jax"},
        flags=["--env", "climate-mitigation-levers", "--scenario", "ii", "--engine", "cicero-jax", "--set", "unroll_length=35"],
        steps=28_000,
        score="summed return of the 10 countries",
        horizon="2050",
        measure=lambda state, rewards: (rewards.sum(), state.temperature),
        horizon_index=-1,
        plan=_game_plan,
        business_as_usual=lambda env: jnp.zeros((env.num_agents, 4)),
    ),
}


def play(env, case: Case, batch_params: Any, act: Callable[[dict, int], jax.Array]) -> tuple[np.ndarray, np.ndarray]:
    """Score and horizon temperature of one episode per draw (leading axis of ``batch_params``):
    ``act(obs, t)`` -> (draws, N, A). No auto-reset: the episode's own steps."""
    group = next(iter(env.agents))
    steps = int(env.default_params.max_steps)  # both environments' episode length

    @jax.jit
    def run(batch):
        keys = jax.random.split(jax.random.PRNGKey(0), jax.tree_util.tree_leaves(batch)[0].shape[0])
        obs, state = jax.vmap(env.reset_env)(keys, batch)

        def body(carry, t):
            obs, state, score = carry
            actions = act(obs, t)
            obs, state, rewards, _, _ = jax.vmap(lambda k, s, a, p: env.step_env(k, s, {group: a}, p))(keys, state, actions, batch)
            increment, temperature = jax.vmap(case.measure)(state, rewards[group])
            return (obs, state, score + increment), temperature

        (_, _, score), temperatures = jax.lax.scan(body, (obs, state, jnp.zeros(keys.shape[0])), jnp.arange(steps))
        return score, temperatures[case.horizon_index]

    score, temperature = run(batch_params)
    return np.asarray(score, np.float64), np.asarray(temperature, np.float64)


def summarize(score: np.ndarray, temperature: np.ndarray) -> dict[str, float]:
    worst = np.sort(score)[: max(1, len(score) // 10)]
    return {
        "score_mean": float(score.mean()),
        "score_worst_decile": float(worst.mean()),
        "temperature_mean": float(temperature.mean()),
        "temperature_p90": float(np.percentile(temperature, 90)),
    }


def run_case(name: str, case: Case, steps: int, seeds: int, draws: int, tmp: Path) -> dict:
    env, params = make(case.env_id, **case.make_kwargs)
    uncertainty = env.uncertainties[UNCERTAINTY]
    multipliers, batch = uncertainty.sample_params(jax.random.PRNGKey(HELD_OUT_KEY), params, draws)
    group = next(iter(env.agents))
    acts, trained = {}, {}
    for label, extra in (("APG, nominal model", []), ("APG, over the distribution", ["--uncertainty", UNCERTAINTY])):
        run_dir = tmp / f"{name}-{len(trained)}"
        summary, wall, command = train_apg([*case.flags, "--seeds", str(seeds), "--total-timesteps", str(steps), *extra], run_dir)
        policy = load_policy(run_dir)
        acts[label] = [lambda obs, t, s=seed, p=policy: p.act(jax.random.PRNGKey(0), obs, seed=s)[0][group] for seed in range(seeds)]
        trained[label] = {"wall_s": wall, "command": command, "env_steps_per_seed": summary["env_steps_per_seed"]}
    plan, bau = case.plan(env, params), case.business_as_usual(env)
    acts["planner, open loop, nominal model"] = [lambda obs, t: jnp.broadcast_to(plan(t), (obs[group].shape[0], *plan(0).shape))]
    acts["business as usual"] = [lambda obs, t: jnp.broadcast_to(bau, (obs[group].shape[0], *bau.shape))]
    nominal_batch = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], params)
    rows = []
    for label, per_seed in acts.items():
        played = [play(env, case, batch, act) for act in per_seed]
        seed_rows = [summarize(score, temperature) for score, temperature in played]
        row = {
            "policy": label,
            **{k: float(np.mean([r[k] for r in seed_rows])) for k in seed_rows[0]},
            "score_nominal": float(np.mean([play(env, case, nominal_batch, act)[0][0] for act in per_seed])),
            "per_seed": seed_rows,
            "scores": [score.tolist() for score, _ in played],
            **trained.get(label, {}),
        }
        rows.append(row)
        print(
            f"{name}: {label}: mean {row['score_mean']:.4g}, worst decile {row['score_worst_decile']:.4g}, nominal {row['score_nominal']:.4g}, "
            f"T{case.horizon} {row['temperature_mean']:.3f} (p90 {row['temperature_p90']:.3f})",
            flush=True,
        )
    nominal, robust = (np.mean(np.asarray(r["scores"]), axis=0) for r in rows[:2])  # per draw, mean over seeds
    paired = {"mean_gain": float(np.mean(robust - nominal)), "share_of_draws_better": float(np.mean(robust > nominal))}
    return {
        "case": name,
        "robust_minus_nominal": paired,
        "env": env.name,
        "score": case.score,
        "horizon": case.horizon,
        "draws": draws,
        "uncertainty": uncertainty.name,
        "distribution": uncertainty.describe(params),
        "multipliers": {k: np.asarray(v).tolist() for k, v in multipliers.items()},
        "rows": rows,
    }


def plot(record: dict, path: Path) -> None:
    """Top: each policy's score over the held-out draws (ECDF). Bottom: per draw, each policy's
    score minus the nominal-trained APG's (seeds averaged), where the game's differences show."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = record["cases"]
    fig, axes = plt.subplots(2, len(cases), figsize=(5.5 * len(cases), 7), squeeze=False)
    for column, case in enumerate(cases):
        per_draw = {row["policy"]: np.mean(np.asarray(row["scores"]), axis=0) for row in case["rows"]}
        reference = per_draw[case["rows"][0]["policy"]]
        share = np.arange(1, len(reference) + 1) / len(reference)
        for colour, (label, scores) in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], per_draw.items()):
            axes[0, column].plot(np.sort(scores), share, color=colour, label=label)
            if label != case["rows"][0]["policy"] and label != "business as usual":
                axes[1, column].plot(np.sort(scores - reference), share, color=colour, label=label)
        axes[0, column].axhline(0.1, color="grey", lw=0.8, ls=":")
        axes[0, column].set(xlabel=case["score"], ylabel="share of draws ≤ x", title=f"{case['env']}, {case['draws']} held-out draws")
        axes[1, column].axvline(0.0, color="grey", lw=0.8)
        axes[1, column].set(xlabel="difference to APG (nominal model), per draw", ylabel="share of draws ≤ x")
    finish_figure(fig, path, axes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--steps", type=int, help="env steps per seed (default: each case's)")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--draws", type=int, default=256)
    parser.add_argument("--out", default=str(RESULTS / "apg_robust.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [run_case(name, CASES[name], args.steps or CASES[name].steps, args.seeds, args.draws, Path(tmp)) for name in args.cases]
    record = {
        "what": "APG trained on the nominal model vs over the distribution (--uncertainty climate-damage), scored on held-out draws",
        **provenance("apg_robust.py", argv),
        "seeds": args.seeds,
        "held_out_key": HELD_OUT_KEY,
        "cases": cases,
    }
    save(record, args.out, plot)
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/apg_robust.py"))
