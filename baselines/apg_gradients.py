"""How the gradient through each family's dynamics grows with the horizon (docs/apg.md §2).

Backpropagating a return through T steps multiplies T Jacobians: where the dynamics expand,
the gradient explodes with T and a learner must cut the horizon into short windows (SHAC); where
they contract, the influence of an action on the distant future vanishes and long windows
cost compute without signal. Measured here, per family, at a fixed reference trajectory:

* **sensitivity** ‖∂R_T/∂a_0‖: the return of the first T steps against the first step's
  continuous action (the other steps' actions held) — how far an action's effect reaches;
* for the EBM also **‖∇θ L_T‖**, the APG learner's own gradient (per-step mean loss of a window
  of T steps, ``jaxclimate.algos.apg``) at its initial actor, mean over 4 seeds.

Families and reference trajectories: ebm-v1 (its reference parameters as the action);
RICE-N, 27 regions, DICE-2016 climate, every region at savings 0.25 and mitigation 0.1 (the
planner's relaxation: ``jaxclimate.envs.rice_n.planner``); the climate game (ii), GRU
surrogate, every lever at the middle of its range (``jaxclimate.envs.climate_mitigation.planner``);
InvestESG, the companies' summed return against their first year's continuous spending
(mitigation, greenwashing, resilience at 0.02 each), every investor investing in every company
and the climate events of one key held (its investors' choices are binary, so ``apg`` refuses it).

    python baselines/apg_gradients.py        # baselines/results/apg_gradients.{json,png}
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from apg_common import RESULTS, finish_figure, provenance, save

from jaxclimate import make
from jaxclimate.algos.apg import APGConfig, make_trainer
from jaxclimate.envs.climate_mitigation import planner as game_planner
from jaxclimate.envs.rice_n import planner as rice_planner


def norm(tree) -> float:
    return float(jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree))))


def ebm_sensitivity(horizons: list[int]) -> list[float]:
    env, params = make("ebm-v1")
    reference = env.reference_action()

    def partial_return(first, horizon):
        _, state = env.reset(jax.random.key(0), params)

        def body(state, t):
            action = jnp.where(t == 0, first, reference)
            _, state, r, *_ = env.step(jax.random.key(0), state, {"bands": action}, params)
            return state, r["bands"].sum()

        return jax.lax.scan(body, state, jnp.arange(horizon))[1].sum()

    return [norm(jax.jit(jax.grad(lambda a, h=h: partial_return(a, h)))(reference)) for h in horizons]


def ebm_policy_gradient(horizons: list[int], seeds: int = 4) -> list[float]:
    env, params = make("ebm-v1")
    out = []
    for horizon in horizons:
        trainer = make_trainer(env, params, APGConfig(total_timesteps=horizon, num_envs=1, unroll_length=horizon, max_grad_norm=1e30))
        norms = []
        for seed in range(seeds):
            state = jax.jit(trainer.init)(jax.random.key(seed))
            _, metrics = jax.jit(trainer.run, static_argnums=1)(state, 1)
            norms.append(float(metrics["bands"]["grad_norm"][0, 0]))
        out.append(float(np.mean(norms)))
    return out


def rice_sensitivity(horizons: list[int]) -> list[float]:
    env, params = make("rice-n")
    rates = rice_planner.constant_rates(env, 0.25, 0.1)

    def first_steps(first, horizon):
        r = rice_planner.Rates(rates.savings.at[0].set(first[0]), rates.mitigation.at[0].set(first[1]))
        return jnp.sum(rice_planner.episode(env, params, r)["welfare"][:horizon])

    first = (rates.savings[0], rates.mitigation[0])
    return [norm(jax.jit(jax.grad(lambda f, h=h: first_steps(f, h)))(first)) for h in horizons]


def game_sensitivity(horizons: list[int]) -> list[float]:
    env, params = make("climate-mitigation-ii")
    low, high = game_planner.bounds(env, params)
    levers = jax.tree.map(lambda a, b: 0.5 * (a + b), low, high)

    def first_years(first, horizon):
        x = game_planner.Levers(levers.efforts.at[0].set(first[0]), levers.adaptation.at[0].set(first[1]))
        return jnp.sum(game_planner.episode(env, params, x)["rewards"][:horizon])

    first = (levers.efforts[0], levers.adaptation[0])
    return [norm(jax.jit(jax.grad(lambda f, h=h: first_years(f, h)))(first)) for h in horizons]


def invest_esg_sensitivity(horizons: list[int]) -> list[float]:
    env, params = make("invest-esg")
    investors = jnp.ones((env.agents["investors"], env.agents["companies"]), jnp.int32)
    spending = jnp.full((max(horizons), env.agents["companies"], 3), 0.02)

    def first_years(first, horizon):
        _, state = env.reset(jax.random.key(3), params)

        def year(state, a):
            _, state, rewards, *_ = env.step(jax.random.key(4), state, {"companies": a, "investors": investors}, params)
            return state, rewards["companies"].sum()

        return jax.lax.scan(year, state, spending.at[0].set(first)[:horizon])[1].sum()

    return [norm(jax.jit(jax.grad(lambda f, h=h: first_years(f, h)))(spending[0])) for h in horizons]


def plot(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, row in record["rows"].items():
        values = np.asarray(row["norms"]) / row["norms"][0]
        ax.plot(row["horizons"], values, "o-", label=f"{name} ({row['unit']})")
    ax.set(xscale="log", yscale="log", xlabel="horizon T (steps)", ylabel="gradient norm / its value at T = 1")
    finish_figure(fig, path, ax)


def main() -> int:
    rows = {}
    ebm_h = [1, 2, 5, 10, 20, 50, 100, 199]
    rows["ebm-v1 sensitivity"] = {"horizons": ebm_h, "norms": ebm_sensitivity(ebm_h), "unit": "‖∂R_T/∂a_0‖"}
    rows["ebm-v1 APG ∇θ"] = {"horizons": ebm_h, "norms": ebm_policy_gradient(ebm_h), "unit": "‖∇θ L_T‖, per-step mean"}
    rice_h = [1, 2, 3, 5, 10, 15, 20]
    rows["rice-n sensitivity"] = {"horizons": rice_h, "norms": rice_sensitivity(rice_h), "unit": "‖∂W_T/∂(s_0, μ_0)‖"}
    game_h = [1, 2, 5, 10, 20, 35]
    rows["climate game (ii) sensitivity"] = {"horizons": game_h, "norms": game_sensitivity(game_h), "unit": "‖∂R_T/∂levers_0‖"}
    esg_h = [1, 2, 5, 10, 20, 50, 100]
    rows["invest-esg sensitivity"] = {"horizons": esg_h, "norms": invest_esg_sensitivity(esg_h), "unit": "‖∂R_T/∂spending_0‖ (companies)"}
    for name, row in rows.items():
        print(name, [f"{v:.3g}" for v in row["norms"]])
    record = {
        "what": "gradient norms against the horizon T, per family (baselines/apg_gradients.py docstring)",
        **provenance("apg_gradients.py", []),
        "rows": rows,
    }
    save(record, RESULTS / "apg_gradients.json", plot)
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/apg_gradients.py"))
