"""Matrix-product precision, chosen in one place.

With no precision set, float32 matrix products on Ampere and Hopper GPUs may run as TF32
(a 10-bit mantissa, ~1e-3 relative error), while XLA:CPU always computes them in full float32.
Physics, climate engines and the climate surrogate (forward, fit and evaluation) must not
depend on the backend: they are traced under :func:`at_physics_precision`, which gives every
``dot_general`` and convolution they contain ``Precision.HIGHEST`` (full float32; float64
is unaffected). Policy and value networks keep the backend's fast default
(``POLICY_PRECISION``).

JAX reads ``jax_default_matmul_precision`` when a product is *traced* and stores it in the
product's ``precision`` parameter, so the choice travels with the environment's step into
whatever program a user builds around it (``jit(vmap(train))`` included), and a test can
read it from the jaxpr (``tests/core/test_precision.py``).

Divisions are the other backend-dependent operation: :func:`exact_divide` gives the correctly
rounded quotient the golden-trajectory parity needs, on any backend where 64-bit JAX is on.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp

#: Every contraction of physics, climate engines and surrogates.
PHYSICS_PRECISION = "highest"
#: Policy and value networks: the backend's default (TF32 where the GPU has it).
POLICY_PRECISION = None


def at_physics_precision(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: ``fn``'s products traced (or run eagerly) at :data:`PHYSICS_PRECISION`."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with jax.default_matmul_precision(PHYSICS_PRECISION):
            return fn(*args, **kwargs)

    return wrapped


def exact_divide(x: jax.Array, divisor: Any) -> jax.Array:
    """``x / divisor`` correctly rounded in ``x``'s dtype.

    * **64-bit JAX on** (parity runs): a float32 quotient is computed in float64 and rounded
      once. Every backend divides float64 correctly rounded, and for float32 operands the
      double rounding is innocuous (the float64 quotient carries more than 2·24 + 2 bits;
      S. A. Figueroa, "When is double rounding innocuous?", SIGNUM Newsletter 30(3), 1995).
      Exact on any backend.
    * **64-bit JAX off** (training): XLA's float32 division. XLA:CPU's is correctly rounded,
      provided the divisor is not a constant or a broadcast scalar, which XLA rewrites into a
      multiplication by the reciprocal (1 ulp off for about a third of values); so the divisor
      is made to depend on ``x`` (``x·0 + divisor``, which also keeps it batched under
      ``vmap``) and hidden behind an optimisation barrier. A GPU's float32 division is
      approximate: within 2 ulp, 1 ulp off for 20 % of random values on an H200
      (docs/gpu.md).

    A non-finite ``x`` gives a non-finite quotient (±inf becomes NaN through ``x·0``)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"exact_divide divides floating-point arrays, got {x.dtype}")
    divisor = jnp.asarray(divisor, x.dtype)  # the divisor as the dividend's dtype holds it
    if x.dtype == jnp.float32 and jax.config.jax_enable_x64:
        wide = x.astype(jnp.float64)
        return (wide / jax.lax.optimization_barrier(wide * 0 + divisor.astype(jnp.float64))).astype(jnp.float32)
    return x / jax.lax.optimization_barrier(x * 0 + divisor)
