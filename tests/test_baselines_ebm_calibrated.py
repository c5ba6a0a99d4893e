"""The calibrated static column (``jaxclimate.envs.ebm.evaluation.calibrate_static``, used by
``baselines/ebm_calibrated.py``; docs/ebm_calibrated.md): on ebm-v1 with a short episode (50
steps), a short fit and two restarts it beats climlab's default column, it stops at a first-order (KKT) point of the
box-constrained problem, and its gradient is the objective's (central differences in float64)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.envs.ebm import area_weighted_rmse_bands, static_baseline
from jaxclimate.envs.ebm.evaluation import action_box, calibrate_static, calibration_objective, held_action_profile

ITERATIONS = 1000  # one run serves the first two checks: enough for the KKT tolerance below
STEPS = 50  # a quarter of the paper's episode keeps the fit a few seconds under the suite's compile flags


@pytest.fixture(scope="module")
def fitted():
    """ebm-v1 (albedo actions acting) evaluated after ``STEPS`` steps, 2 restarts × ``ITERATIONS``
    projected-Adam steps, one program."""
    env, params = make("ebm-v1", max_steps=STEPS)
    result = jax.jit(lambda key: calibrate_static(env, params, key, iterations=ITERATIONS, restarts=2))(jax.random.PRNGKey(0))
    return env, params, result


def normalised_gradient(env, params):
    """action -> ∇_u J there, u the action mapped to [0, 1] per component (as calibrate_static reports it)."""
    low, high = action_box(env)
    return jax.jit(lambda action: jax.grad(lambda a: calibration_objective(env, params, a))(action) * (high - low))


def test_calibrated_column_beats_climlabs_default(fitted):
    env, params, result = fitted
    low, high = action_box(env)
    assert bool(jnp.all((result.action >= low) & (result.action <= high))), "the fitted action leaves the action box"
    calibrated = jax.jit(lambda a: area_weighted_rmse_bands(held_action_profile(env, params, a), params.target))(result.action)
    default = static_baseline(params, n_steps=STEPS)[1]
    assert float(jnp.sum(calibrated**2)) == pytest.approx(float(result.objective), rel=1e-5)
    assert float(jnp.sum(calibrated**2)) < float(jnp.sum(default**2))
    assert result.objectives.shape == (2,) and float(result.objective) == float(jnp.min(result.objectives))


def test_the_fit_stops_at_a_first_order_point_of_the_box(fitted):
    """KKT for min J(u), 0 ≤ u ≤ 1: ∂J/∂u_i ≈ 0 inside the box, ≥ 0 on the lower bound, ≤ 0 on the upper,
    small against the gradient at climlab's reference action; the bounds are active (the plain gradient
    is not small), which is why the fit projects."""
    env, params, result = fitted
    low, high = action_box(env)
    u = (result.action - low) / (high - low)
    gradient_at = normalised_gradient(env, params)
    grad = gradient_at(result.action)
    np.testing.assert_allclose(grad, result.gradient, rtol=1e-3, atol=1e-3 * float(jnp.max(jnp.abs(grad))))
    tol = 2e-4 * float(jnp.max(jnp.abs(gradient_at(env.reference_action()))))  # ≈ 0.3 °C² per range; the fit reaches ≈ 0.02
    assert bool(jnp.all(jnp.where(u <= 0, grad >= -tol, True))), "a component on its lower bound would descend inwards"
    assert bool(jnp.all(jnp.where(u >= 1, grad <= tol, True))), "a component on its upper bound would descend inwards"
    interior = (u > 0) & (u < 1)
    assert float(jnp.max(jnp.where(interior, jnp.abs(grad), 0.0))) <= tol
    assert float(jnp.linalg.norm(result.projected_gradient)) < 0.05 * float(jnp.linalg.norm(result.gradient))


def test_objective_gradient_matches_central_differences(x64):
    """Float64 physics at a random interior action, along three random directions and the D and a0
    axes. The environment rounds actions to float32 (docs/ebm.md §3.1), so the difference step is
    1 % of each range (rounding then perturbs the quotient by ~1e-5 relative; the O(h²) term less)."""
    env, params = make("ebm-v1", dtype="float64")
    low, high = (jnp.asarray(x, jnp.float64) for x in action_box(env))
    objective = lambda u: calibration_objective(env, params, low + (high - low) * u)  # noqa: E731
    u = jax.random.uniform(jax.random.PRNGKey(1), low.shape, jnp.float64, 0.05, 0.95)
    random = jax.random.normal(jax.random.PRNGKey(2), (3, *low.shape), jnp.float64)
    axes = jnp.zeros((2, *low.shape), jnp.float64).at[0, 0, 0].set(1.0).at[1, 0, -2].set(1.0)  # D, a0
    directions = jnp.concatenate([random / jnp.linalg.norm(random.reshape(3, -1), axis=1)[:, None, None], axes])
    h = 1e-2

    @jax.jit
    def both(u):
        grad = jax.grad(objective)(u)
        central = jax.vmap(lambda d: (objective(u + h * d) - objective(u - h * d)) / (2 * h))(directions)
        return jnp.einsum("kij,ij->k", directions, grad), central

    analytic, central = both(u)
    np.testing.assert_allclose(analytic, central, rtol=1e-3)


def test_docs_table_matches_the_record(table_generator):
    """docs/ebm_calibrated.md's generated tables are the ones baselines/results/ebm_calibrated.json gives."""
    generator = table_generator
    page, tables = generator.CALIBRATED_PAGE, generator.CALIBRATED_TABLES
    assert not generator.stale(page.read_text(), tables), "run python docs/generate_tables.py"
