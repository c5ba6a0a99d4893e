"""RICE-N's cooperative planner (planner.py): its gradient is the finite-difference one, its
optimum beats every constant policy of the paper's grid, and its projected gradient vanishes
there. Four regions and five activity steps keep the programs small."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.rice_n import RiceN
from jaxclimate.envs.rice_n import planner as P

SMALL = dict(regions=[0, 5, 12, 20], num_activity_steps=5)


def test_the_welfare_gradient_equals_central_differences(x64):
    env = RiceN(dtype="float64", **SMALL)
    params = env.default_params
    shape = (env.num_activity_steps, env.num_regions)
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(1), 4)
    rates = P.Rates(jax.random.uniform(k1, shape, jnp.float64, 0.2, 0.8), jax.random.uniform(k2, shape, jnp.float64, 0.2, 0.8))
    direction = P.Rates(jax.random.normal(k3, shape, jnp.float64), jax.random.normal(k4, shape, jnp.float64))
    W = jax.jit(lambda r: P.welfare(env, params, r))
    grad = jax.jit(jax.grad(lambda r: P.welfare(env, params, r)))(rates)
    along = sum(float(jnp.vdot(g, d)) for g, d in zip(grad, direction))
    eps = 1e-5
    central = (
        float(W(P.Rates(*(r + eps * d for r, d in zip(rates, direction))))) - float(W(P.Rates(*(r - eps * d for r, d in zip(rates, direction)))))
    ) / (2 * eps)
    assert along == pytest.approx(central, rel=1e-6)
    assert np.all(np.isfinite(np.asarray(grad.savings))) and abs(along) > 1e-3


@pytest.mark.slow
def test_the_optimum_beats_every_constant_policy_and_its_projected_gradient_vanishes():
    env = RiceN(**SMALL)
    params = env.default_params
    levels = np.arange(11) / 10
    grid = [(s, m) for s in levels for m in levels]
    constants = jax.jit(jax.vmap(lambda s, m: P.welfare(env, params, P.constant_rates(env, s, m))))(*jnp.asarray(grid, env.dtype).T)
    result = P.optimise(env, params, jax.random.PRNGKey(0), P.PlannerConfig(iterations=200, restarts=2))
    assert result["welfare"] > float(jnp.max(constants)) + 1e-3, (result["welfare"], grid[int(jnp.argmax(constants))])
    assert result["history"][-1] > result["history"][0]
    start = P.projected_gradient(env, params, P.constant_rates(env, 0.5, 0.5))
    assert result["max_projected_gradient"] < 1e-2 * max(float(jnp.max(jnp.abs(g))) for g in start)


def test_bad_planner_settings_name_the_field():
    with pytest.raises(ValueError, match="PlannerConfig.iterations"):
        P.PlannerConfig(iterations=0)
