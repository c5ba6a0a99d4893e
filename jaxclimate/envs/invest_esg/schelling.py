"""Schelling diagrams of InvestESG (paper Fig. 2; procedure in docs/invest_esg.md §12).

A focal company (company 0) cooperates — spends 0.5 % of its capital on mitigation every
year — or defects (spends nothing) while k of the other four companies cooperate (companies
1..k). Investors are scripted, all three alike:

* ``"esg"`` (the paper's "3/3 ESG-conscious", α → ∞): each year invest equally in the
  companies with the highest ESG score — the cooperators, known from year 0 since scores are
  constant under these policies —, in all five when nobody cooperates;
* ``"greedy"`` ("0/3", margin-chasing): invest equally in the companies with the highest
  margin of the previous year (all five in year 0);
* ``"passive"`` ("0/3", buy and hold): all five every year;
* ``"none"``: investors without capital.

The payoff is the focal company's episode return Σ_t g_0 (also discounted with 0.99), as a
Monte-Carlo mean over episodes that share their event uniforms across every cell (common
random numbers). Everything runs as one vectorised program: (modes × k × C/D × episodes).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.envs.invest_esg.env import COMPANIES, InvestESG

MODES = ("esg", "greedy", "passive", "none")
COOPERATE = 0.005
GAMMA = 0.99


def episode_uniforms(episodes: int = 200, seed: int = 2024, years: int = 100) -> np.ndarray:
    """(episodes, years, 3) i.i.d. U(0, 1) event uniforms from ``numpy.random.default_rng(seed)``,
    one (years, 3) array per episode drawn in turn."""
    return np.random.default_rng(seed).random((episodes, years, 3))


def focal_returns(uniforms: np.ndarray, dtype: str = "float32") -> dict[str, np.ndarray]:
    """The focal company's undiscounted and discounted returns for every investor mode, k and
    focal choice: arrays (modes, 5 values of k, 2 choices [cooperate, defect], episodes)."""
    env = InvestESG(config="exp_default", event_mode="injected", dtype=dtype)
    base = env.default_params
    nc = env.num_companies
    years = uniforms.shape[1]

    def episode(mode: jax.Array, k: jax.Array, focal_cooperates: jax.Array, table: jax.Array):
        params = base.replace(event_uniforms=table, max_steps=years, investor_capital=jnp.where(mode == 3, 0.0, jnp.asarray(base.investor_capital)))
        cooperators = (jnp.arange(nc) >= 1) & (jnp.arange(nc) <= k)
        cooperators = cooperators.at[0].set(focal_cooperates)
        actions = jnp.zeros((nc, 3)).at[:, 0].set(jnp.where(cooperators, COOPERATE, 0.0))
        esg_choice = jnp.where(jnp.any(cooperators), cooperators, True)

        def year(state, t):
            top_margin = state.margin >= jnp.max(state.margin) - 1e-9 * jnp.abs(jnp.max(state.margin))
            greedy_choice = jnp.where(t == 0, True, top_margin)
            choice = jnp.select([mode == 0, mode == 1], [esg_choice, greedy_choice], jnp.ones((nc,), bool))
            bits = jnp.broadcast_to(choice, (env.num_investors, nc)).astype(jnp.int32)
            state, rewards, _ = env.transition(jax.random.PRNGKey(0), state, actions, bits, params)
            return state, rewards[COMPANIES][0]

        _, gains = jax.lax.scan(year, env.initial_state(params), jnp.arange(years))
        return gains.sum(), jnp.sum(gains * GAMMA ** jnp.arange(years))

    over_episodes = jax.vmap(episode, in_axes=(None, None, None, 0))
    over_choices = jax.vmap(over_episodes, in_axes=(None, None, 0, None))
    over_k = jax.vmap(over_choices, in_axes=(None, 0, None, None))
    over_modes = jax.vmap(over_k, in_axes=(0, None, None, None))
    run = jax.jit(over_modes)
    total, discounted = run(jnp.arange(len(MODES)), jnp.arange(nc), jnp.array([True, False]), jnp.asarray(uniforms, env.dtype))
    return {"return": np.asarray(total, np.float64), "discounted_return": np.asarray(discounted, np.float64)}


def schelling_table(returns: dict[str, np.ndarray]) -> dict:
    """Mean ± standard error over episodes per (mode, k, choice), and Δ = C − D."""
    out = {}
    for key, values in returns.items():
        mean = values.mean(axis=-1)
        stderr = values.std(axis=-1, ddof=1) / np.sqrt(values.shape[-1])
        out[key] = {
            mode: {
                "cooperate": mean[m, :, 0].tolist(),
                "defect": mean[m, :, 1].tolist(),
                "cooperate_stderr": stderr[m, :, 0].tolist(),
                "defect_stderr": stderr[m, :, 1].tolist(),
                "difference": (mean[m, :, 0] - mean[m, :, 1]).tolist(),
            }
            for m, mode in enumerate(MODES)
        }
    return out
