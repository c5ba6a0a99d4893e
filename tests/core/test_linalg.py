"""The tridiagonal solve: fused elimination and LAPACK agree, and both solve the system."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.core.linalg import tridiagonal_solve


def _diffusion_like(n: int, dtype):
    rng = np.random.default_rng(0)
    off = -rng.uniform(0.1, 1.0, size=(2, n))
    dl, du = off[0], off[1]
    d = 1.0 - dl - du + rng.uniform(0, 0.5, n)  # strictly diagonally dominant, as implicit diffusion is
    rhs = rng.normal(size=n)
    return [jnp.asarray(x, dtype) for x in (dl, d, du, rhs)], (dl, d, du, rhs)


@pytest.mark.parametrize("fused", [True, False])
def test_solves_the_system_in_float64(fused, x64):
    args, (dl, d, du, rhs) = _diffusion_like(96, jnp.float64)
    x = np.asarray(jax.jit(lambda *a: tridiagonal_solve(*a, fused=fused))(*args))
    matrix = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    np.testing.assert_allclose(matrix @ x, rhs, atol=1e-13)


def test_fused_and_lapack_agree_in_float32_and_the_default_is_lapack_on_the_cpu():
    args, _ = _diffusion_like(96, jnp.float32)
    fused, lapack, default = (np.asarray(jax.jit(lambda *a, f=f: tridiagonal_solve(*a, fused=f))(*args)) for f in (True, False, None))
    np.testing.assert_allclose(fused, lapack, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(default, lapack)
    with pytest.raises(ValueError, match="one system"):
        tridiagonal_solve(*args[:3], jnp.stack([args[3]] * 2, axis=1), fused=False)


def test_derivatives_of_the_fused_solve_are_those_of_the_dense_solve(x64):
    """Its tangent rule (one more elimination) against autodiff of ``jnp.linalg.solve`` on the
    dense matrix, in both modes and for all four inputs; ``dl[0]`` and ``du[-1]`` are unused
    and get zero derivatives."""
    args, _ = _diffusion_like(12, jnp.float64)
    weights = jnp.asarray(np.random.default_rng(1).normal(size=12))

    def dense(dl, d, du, rhs):
        matrix = jnp.diag(d) + jnp.diag(dl[1:], -1) + jnp.diag(du[:-1], 1)
        return jnp.linalg.solve(matrix, rhs)

    def loss(solve):
        return lambda *a: weights @ solve(*a)

    fused_grads = jax.jit(jax.grad(loss(lambda *a: tridiagonal_solve(*a, fused=True)), argnums=(0, 1, 2, 3)))(*args)
    dense_grads = jax.grad(loss(dense), argnums=(0, 1, 2, 3))(*args)
    for got, want in zip(fused_grads, dense_grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert fused_grads[0][0] == 0 and fused_grads[2][-1] == 0
    tangents = [jnp.asarray(np.random.default_rng(2 + i).normal(size=12)) for i in range(4)]
    fused_tangent = jax.jvp(lambda *a: tridiagonal_solve(*a, fused=True), args, tangents)[1]
    np.testing.assert_allclose(fused_tangent, jax.jvp(dense, args, tangents)[1], rtol=1e-10, atol=1e-12)
