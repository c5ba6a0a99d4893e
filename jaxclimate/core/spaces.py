"""Action and observation spaces with jittable ``sample`` and ``contains``.

A space describes **one agent**; a group of ``n`` agents carries arrays of shape
``(n, *space.shape)``. ``sample(key)`` and ``contains(x)`` are pure JAX functions, so they
work under ``jit`` and ``vmap`` (vmap ``sample`` over keys to draw for a whole group).
Shapes and bounds are fixed at construction: they decide network sizes, so they are not
pytree leaves.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np


class Space:
    """Base class: ``shape``, ``dtype``, ``sample(key)``, ``contains(x)``."""

    shape: tuple[int, ...]
    dtype: jnp.dtype

    def sample(self, key: jax.Array) -> jax.Array:
        raise NotImplementedError

    def contains(self, x: jax.Array) -> jax.Array:
        raise NotImplementedError

    def _shape_matches(self, x: jax.Array) -> bool:
        return tuple(jnp.shape(x)) == tuple(self.shape)


class Discrete(Space):
    """Integers ``0 .. n-1``."""

    def __init__(self, n: int, dtype: jnp.dtype = jnp.int32):
        if int(n) < 1:
            raise ValueError(f"Discrete.n must be >= 1, got {n!r}")
        self.n = int(n)
        self.shape = ()
        self.dtype = dtype

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        if not self._shape_matches(x):
            return jnp.asarray(False)
        x = jnp.asarray(x)
        return jnp.logical_and(x >= 0, x < self.n) & _is_integral(x)

    def __repr__(self) -> str:
        return f"Discrete({self.n})"


class MultiDiscrete(Space):
    """One categorical per component: component ``i`` takes integers ``0 .. nvec[i]-1``."""

    def __init__(self, nvec: Sequence[int] | np.ndarray, dtype: jnp.dtype = jnp.int32):
        nvec = np.asarray(nvec, dtype=np.int64)
        if nvec.ndim == 0 or nvec.size == 0 or np.any(nvec < 1):
            raise ValueError(f"MultiDiscrete.nvec must be a non-empty array of integers >= 1, got {nvec.tolist()!r}")
        self.nvec = nvec
        self.shape = tuple(nvec.shape)
        self.dtype = dtype

    @property
    def num_categories(self) -> np.ndarray:
        """``nvec`` under JaxMARL's name for it."""
        return self.nvec

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, jnp.asarray(self.nvec, dtype=self.dtype), dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        if not self._shape_matches(x):
            return jnp.asarray(False)
        x = jnp.asarray(x)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.nvec))) & _is_integral(x)

    def __repr__(self) -> str:
        values = self.nvec.reshape(-1).tolist()
        if len(values) <= 8:
            return f"MultiDiscrete({self.nvec.tolist()})"
        runs: list[list[int]] = []  # RICE-N's 57 (to 138) heads, written as runs: [10] * 59 + [2] * 27
        for v in values:
            if runs and runs[-1][0] == v:
                runs[-1][1] += 1
            else:
                runs.append([v, 1])
        return "MultiDiscrete(" + " + ".join(f"[{v}] * {n}" if n > 1 else f"[{v}]" for v, n in runs) + ")"


class MultiBinary(Space):
    """``n`` independent bits (0 or 1)."""

    def __init__(self, n: int, dtype: jnp.dtype = jnp.int32):
        if int(n) < 1:
            raise ValueError(f"MultiBinary.n must be >= 1, got {n!r}")
        self.n = int(n)
        self.shape = (self.n,)
        self.dtype = dtype

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.bernoulli(key, 0.5, self.shape).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        if not self._shape_matches(x):
            return jnp.asarray(False)
        x = jnp.asarray(x)
        return jnp.all((x == 0) | (x == 1))

    def __repr__(self) -> str:
        return f"MultiBinary({self.n})"


class Box(Space):
    """A (possibly unbounded) box ``low <= x <= high`` with per-component bounds.

    ``sample`` draws uniformly where both bounds are finite, from a standard normal where
    both are infinite, and ``bound ± Exponential(1)`` where only one is finite.
    """

    def __init__(self, low: float | np.ndarray, high: float | np.ndarray, shape: Sequence[int] | None = None, dtype: jnp.dtype = jnp.float32):
        low_arr, high_arr = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        try:
            if shape is None:
                shape = np.broadcast_shapes(low_arr.shape, high_arr.shape)
            self.shape = tuple(int(s) for s in shape)
            self.low = np.broadcast_to(low_arr, self.shape).astype(dtype)
            self.high = np.broadcast_to(high_arr, self.shape).astype(dtype)
        except ValueError as err:
            raise ValueError(f"Box bounds of shapes {low_arr.shape}, {high_arr.shape} do not fit shape {shape}") from err
        if np.any(np.isnan(self.low)) or np.any(np.isnan(self.high)) or np.any(self.low > self.high):
            raise ValueError("Box requires low <= high everywhere (and no NaN bounds)")
        self.dtype = dtype

    def sample(self, key: jax.Array) -> jax.Array:
        k_uniform, k_normal, k_exp = jax.random.split(key, 3)
        low, high = jnp.asarray(self.low), jnp.asarray(self.high)
        finite_low, finite_high = jnp.isfinite(low), jnp.isfinite(high)
        safe_low = jnp.where(finite_low, low, 0.0)
        safe_high = jnp.where(finite_high, high, 0.0)
        uniform = jax.random.uniform(k_uniform, self.shape, self.dtype, 0.0, 1.0)
        bounded = safe_low + uniform * (safe_high - safe_low)
        normal = jax.random.normal(k_normal, self.shape, self.dtype)
        expo = jax.random.exponential(k_exp, self.shape, self.dtype)
        x = jnp.where(finite_low & finite_high, bounded, jnp.where(finite_low, safe_low + expo, jnp.where(finite_high, safe_high - expo, normal)))
        # Rounding in low + u*(high-low) can overshoot high by one ulp.
        return jnp.clip(x, low, high).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        if not self._shape_matches(x):
            return jnp.asarray(False)
        x = jnp.asarray(x)
        return jnp.all((x >= jnp.asarray(self.low)) & (x <= jnp.asarray(self.high)))

    def __repr__(self) -> str:
        lo, hi = np.min(self.low), np.max(self.high)
        return f"Box(low={lo:g}.., high=..{hi:g}, shape={self.shape}, dtype={jnp.dtype(self.dtype).name})"


def _is_integral(x: jax.Array) -> jax.Array:
    if jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_:
        return jnp.asarray(True)
    return jnp.all(x == jnp.round(x))
