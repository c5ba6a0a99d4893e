"""EBM physics against climlab's constants (docs/ebm.md §2) and analytic properties."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.ebm import physics
from tests.conftest import load_golden

CONST = load_golden("constants")


def test_grid_matches_climlab():
    np.testing.assert_array_equal(physics.LAT_DEG, CONST["lat"])
    np.testing.assert_array_equal(physics.LAT_BOUNDS_DEG, CONST["lat_bounds"])
    assert physics.HEAT_CAPACITY == CONST["heat_capacity"]
    assert physics.TIMESTEP == CONST["timestep"]


def test_insolation_formula_matches_climlab():
    # docs/ebm.md §2.4: ≤ 1e-9 W m⁻²; check values at the poles and the equator.
    assert np.max(np.abs(physics.INSOLATION - CONST["insolation"])) <= 1e-9
    assert physics.INSOLATION[0] == pytest.approx(172.976417, abs=1e-6)
    assert physics.INSOLATION[-1] == pytest.approx(172.976418, abs=1e-6)
    assert physics.INSOLATION[47] == pytest.approx(416.821349, abs=1e-6)
    w = np.cos(physics.LAT_RAD)
    assert np.sum(w * physics.INSOLATION) / np.sum(w) == pytest.approx(341.343036, abs=1e-6)


def test_diffusion_operator_matches_climlab():
    L = physics.diffusion_operator(0.6)
    assert np.max(np.abs(L - CONST["diffusion_matrix_D0p6"])) <= 1e-18


def test_diffusion_conserves_cos_weighted_energy():
    rng = np.random.default_rng(0)
    T = rng.normal(10, 20, physics.NUM_LAT)
    L = physics.diffusion_operator(0.6)
    w = np.cos(physics.LAT_RAD)
    assert abs(np.sum(w * (L @ T))) < 1e-17


@pytest.mark.parametrize("n, tolerance", [(1, 2.5e-4), (2, 6.5e-4), (3, 1.15e-3), (4, 1.85e-3)])
def test_legendre_modes_are_near_eigenvectors(n, tolerance):
    # Rayleigh quotient of L for P_n(sin φ) ≈ −(D/C)·n(n+1) (paper Eq. 7–8, docs/ebm.md §2.6).
    x = np.sin(physics.LAT_RAD)
    p = np.polynomial.legendre.legval(x, [0] * n + [1])
    w = np.cos(physics.LAT_RAD)
    L = physics.diffusion_operator(0.6)
    quotient = np.sum(w * p * (L @ p)) / np.sum(w * p * p)
    continuous = -(0.6 / physics.HEAT_CAPACITY) * n * (n + 1)
    assert abs(quotient / continuous - 1) <= tolerance  # docs/ebm.md §2.6: 0.02 %, 0.06 %, 0.11 %, 0.18 % (rounded)


def test_one_step_check_value(x64):
    T0 = jnp.full(physics.NUM_LAT, 50.0)
    T1 = physics.ebm_step(T0, 0.6, 210.0, 2.0, 0.354, 0.25, insolation=physics.INSOLATION)
    assert T1.dtype == jnp.float64
    assert float(T1[0]) == pytest.approx(47.99973418825764, abs=1e-12)


def test_implicit_step_preserves_cos_weighted_mean(x64):
    # The diffusion solve alone must not create or destroy energy.
    rng = np.random.default_rng(1)
    T_star = jnp.asarray(rng.normal(0, 30, physics.NUM_LAT))
    T_new = physics.implicit_diffusion(T_star, jnp.asarray(0.6), physics.TIMESTEP, physics.HEAT_CAPACITY)
    assert float(physics.cos_weighted_mean(T_new)) == pytest.approx(float(physics.cos_weighted_mean(T_star)), abs=1e-12)
    # and it smooths: the profile's spread shrinks
    assert float(jnp.std(T_new)) < float(jnp.std(T_star))


def test_implicit_solve_matches_dense_solve(x64):
    rng = np.random.default_rng(2)
    T_star = rng.normal(0, 30, physics.NUM_LAT)
    D = 0.63
    M = np.eye(physics.NUM_LAT) - physics.TIMESTEP * physics.diffusion_operator(D)
    expected = np.linalg.solve(M, T_star)
    got = physics.implicit_diffusion(jnp.asarray(T_star), jnp.asarray(D), physics.TIMESTEP, physics.HEAT_CAPACITY)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=0, atol=1e-11)


def test_step_is_differentiable(x64):
    # Gradients through the tridiagonal solve (useful for differentiable calibration).
    T0 = jnp.full(physics.NUM_LAT, 50.0)

    def loss(D):
        return jnp.sum(physics.ebm_step(T0 - physics.P2_SIN_LAT * 10, D, 210.0, 2.0, 0.354, 0.25, insolation=physics.INSOLATION) ** 2)

    g = jax.grad(loss)(0.6)
    eps = 1e-6
    fd = (loss(0.6 + eps) - loss(0.6 - eps)) / (2 * eps)
    assert float(g) == pytest.approx(float(fd), rel=1e-5)
