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
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax

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
