"""Gradients through each family's dynamics agree with central finite differences, in float64
(docs/apg.md §2): what the analytic-policy-gradient learner and the planners descend is the
derivative of what the environment computes. The EBM's is in tests/algos/test_apg.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.climate_mitigation import planner as game_planner
from jaxclimate.envs.climate_mitigation.env import ClimateMitigation
from jaxclimate.envs.rice_n import planner as rice_planner
from jaxclimate.envs.rice_n.env import RiceN


def directional(f, x, direction, h):
    """(jax.grad(f)(x) · v, (f(x + hv) − f(x − hv)) / 2h) for pytrees x, v."""
    analytic = sum(jnp.vdot(g, v) for g, v in zip(jax.tree.leaves(jax.grad(f)(x)), jax.tree.leaves(direction)))
    shift = lambda s: jax.tree.map(lambda a, v: a + s * h * v, x, direction)  # noqa: E731
    return float(analytic), float((f(shift(1.0)) - f(shift(-1.0))) / (2 * h))


def random_like(key, tree, scale):
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [scale * jax.random.uniform(k, x.shape, x.dtype, -1, 1) for k, x in zip(keys, leaves)])


def test_rice_n_welfare_gradient_matches_finite_differences(x64):
    """Global welfare over 20 activity steps (savings and mitigation rates of 4 regions, DICE
    climate), from interior rates."""
    env = RiceN(regions=[0, 5, 11, 20], dtype="float64")
    params = env.default_params
    rates = rice_planner.Rates(*(jnp.full((env.num_activity_steps, env.num_regions), v, jnp.float64) for v in (0.25, 0.4)))
    direction = random_like(jax.random.key(0), rates, 0.1)
    analytic, numeric = directional(lambda r: rice_planner.welfare(env, params, r), rates, direction, 1e-5)
    assert abs(analytic) > 1e-3
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


@pytest.mark.slow  # CICERO-SCM in JAX compiled in float64 and differentiated: ~30 s on 2 cores
def test_climate_game_welfare_gradient_matches_finite_differences(x64):
    """The game's welfare through CICERO-SCM in JAX (35 years and the 15-year look-ahead), from
    interior levers."""
    env = ClimateMitigation("ii", engine="cicero-jax", dtype="float64")
    params = env.default_params
    low, high = game_planner.bounds(env, params)
    levers = jax.tree.map(lambda a, b: 0.5 * (a + b), low, high)
    direction = random_like(jax.random.key(1), jax.tree.map(lambda a, b: b - a, low, high), 0.1)
    direction = jax.tree.map(lambda v, a, b: v * (b - a), direction, low, high)
    analytic, numeric = directional(lambda x: game_planner.welfare(env, params, x, 0.999), levers, direction, 1e-5)
    assert abs(analytic) > 1e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5)


def test_invest_esg_company_return_gradient_matches_finite_differences(x64):
    """The companies' summed return over 6 years with respect to their continuous spending
    (mitigation, greenwashing, resilience in [0, 0.05]), the investors' choices and the climate
    events held fixed (one key): InvestESG's market, capital and hazard updates."""
    from jaxclimate import make

    env, params = make("invest-esg", dtype="float64")
    investors = jnp.ones((3, 5), jnp.int32)
    spending = jnp.full((6, 5, 3), 0.02, jnp.float64)

    def companies_return(spend):
        _, state = env.reset(jax.random.key(3), params)

        def year(state, a):
            _, state, rewards, *_ = env.step(jax.random.key(4), state, {"companies": a, "investors": investors}, params)
            return state, rewards["companies"].sum()

        return jax.lax.scan(year, state, spend)[1].sum()

    direction = random_like(jax.random.key(2), spending, 0.01)
    analytic, numeric = directional(companies_return, spending, direction, 1e-6)
    assert abs(analytic) > 1e-4
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)
