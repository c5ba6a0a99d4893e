"""Small linear algebra the physics shares."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def tridiagonal_solve(dl: jax.Array, d: jax.Array, du: jax.Array, rhs: jax.Array, fused: bool | None = None) -> jax.Array:
    """Solve the tridiagonal system row r: ``dl[r]·x[r−1] + d[r]·x[r] + du[r]·x[r+1] = rhs[r]``
    (rows along the leading axis; ``dl[0]`` and ``du[-1]`` unused) by elimination without pivoting.

        d'[0] = d[0],  b'[0] = rhs[0]
        f = dl[r] / d'[r−1],  d'[r] = d[r] − f·du[r−1],  b'[r] = rhs[r] − f·b'[r−1]
        x[n−1] = b'[n−1] / d'[n−1],  x[r] = (b'[r] − du[r]·x[r+1]) / d'[r]

    This is LAPACK ``gtsv``'s arithmetic whenever it does not pivot, which it never does on a
    strictly diagonally dominant matrix (the only kind passed here: implicit diffusion).
    ``fused=True`` unrolls the rows in Python so that XLA fuses the whole solve; ``False``
    calls ``lax.linalg.tridiagonal_solve`` (LAPACK on the CPU, cuSPARSE on a GPU); ``None``
    (default) fuses on an accelerator only. Measured (docs/gpu.md): for the EBM's 96 rows the
    fused solve made a whole ebm-v1 step 2.7× faster on an H200 (the library solve took most
    of the step) but 1.4–2.9× slower on the CPU, with a 13-s compile against 1.4 s; for
    CICERO-SCM's 40-row ocean, batched in pairs inside a sub-step scan, it is ~10× faster on
    the CPU too, so that model always fuses. The fused solve is differentiated by its tangent
    rule (one more elimination, :func:`_eliminate_jvp`), not through the unrolled rows."""
    if fused is None:
        fused = jax.default_backend() != "cpu"
    if not fused:
        if rhs.ndim != 1:
            raise ValueError(f"tridiagonal_solve(fused=False) solves one system (rows,); got rhs of shape {rhs.shape}")
        return jax.lax.linalg.tridiagonal_solve(dl, d, du, rhs[:, None])[:, 0]
    return _eliminate_differentiable(dl, d, du, rhs)


def _eliminate(dl: jax.Array, d: jax.Array, du: jax.Array, rhs: jax.Array) -> jax.Array:
    """The elimination of :func:`tridiagonal_solve`, its rows unrolled in Python."""
    n = d.shape[0]
    diag, b = [d[0]], [rhs[0]]
    for r in range(1, n):
        fact = dl[r] / diag[r - 1]
        diag.append(d[r] - fact * du[r - 1])
        b.append(rhs[r] - fact * b[r - 1])
    x = [None] * n
    x[n - 1] = b[n - 1] / diag[n - 1]
    for r in range(n - 2, -1, -1):
        x[r] = (b[r] - du[r] * x[r + 1]) / diag[r]
    return jnp.stack(x)


@jax.custom_jvp
def _eliminate_differentiable(dl: jax.Array, d: jax.Array, du: jax.Array, rhs: jax.Array) -> jax.Array:
    """:func:`_eliminate` with the tangent rule of a linear solve, so that derivatives take one
    more elimination instead of the derivative of every unrolled operation. Differentiated op
    by op, the unrolled chain is what XLA compiles badly: in reverse mode it duplicated the
    chain into each row's fusion, and CICERO-SCM's gradient became ~80,000 lines of optimised
    HLO (fusions of up to 2,000 instructions), compiling in 25 s and running in 250 ms on 2 CPU
    cores; with this rule, 7 s and 89 ms, to the same bits (docs/climate_mitigation.md §7.4)."""
    return _eliminate(dl, d, du, rhs)


@_eliminate_differentiable.defjvp
def _eliminate_jvp(primals, tangents):
    """A x = rhs gives A ẋ = ṙhs − Ȧ x: the same system with rhs ṙhs − (dl̇·x[r−1] + ḋ·x[r] +
    du̇·x[r+1]). Linear in the tangents, so JAX transposes it for reverse mode (the adjoint
    solve)."""
    dl, d, du, rhs = primals
    dl_dot, d_dot, du_dot, rhs_dot = tangents
    x = _eliminate(dl, d, du, rhs)
    zero = jnp.zeros_like(x[:1])
    x_prev, x_next = jnp.concatenate([zero, x[:-1]]), jnp.concatenate([x[1:], zero])
    return x, _eliminate(dl, d, du, rhs_dot - dl_dot * x_prev - d_dot * x - du_dot * x_next)
