"""Frozen pytree dataclasses for environment states and parameters.

``dataclass`` works like :func:`flax.struct.dataclass` (fields are pytree leaves unless
declared with ``field(static=True)``; ``.replace(**changes)`` returns a copy) with one
addition: a class may define ``validate(self)``, which runs when a user constructs or
``replace``s an instance. It does **not** run when JAX rebuilds the pytree (``vmap``
in_axes specs, ``tree_map``, outputs of ``jit``), because then leaves are tracers, axis
numbers or placeholders rather than parameter values. Validation therefore checks only
concrete host values and skips traced ones (see :func:`concrete_value`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax
import numpy as np

T = TypeVar("T")

_STATIC = "jaxclimate_static"


def field(*, static: bool = False, **kwargs: Any) -> Any:
    """A dataclass field; ``static=True`` keeps it out of the pytree leaves (a hashable
    compile-time constant: a shape, a mode name)."""
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata[_STATIC] = static
    return dataclasses.field(metadata=metadata, **kwargs)


def dataclass(cls: type[T]) -> type[T]:
    """Register ``cls`` as a frozen dataclass and a JAX pytree (see module docstring)."""
    user_post_init = cls.__dict__.get("__post_init__")
    validate = getattr(cls, "validate", None)

    def __post_init__(self: Any) -> None:
        if user_post_init is not None:
            user_post_init(self)
        if validate is not None:
            self.validate()

    if validate is not None or user_post_init is not None:
        cls.__post_init__ = __post_init__  # type: ignore[attr-defined]

    data_clz = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(data_clz)
    data_names = tuple(f.name for f in fields if not f.metadata.get(_STATIC, False))
    meta_names = tuple(f.name for f in fields if f.metadata.get(_STATIC, False))

    def flatten_with_keys(obj: Any):
        children = tuple((jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in data_names)
        return children, tuple(getattr(obj, n) for n in meta_names)

    def flatten(obj: Any):
        return tuple(getattr(obj, n) for n in data_names), tuple(getattr(obj, n) for n in meta_names)

    def unflatten(meta: tuple, children: tuple) -> Any:
        # Bypass __init__ so validation does not see tracers or in_axes placeholders.
        obj = object.__new__(data_clz)
        for name, value in zip(meta_names, meta):
            object.__setattr__(obj, name, value)
        for name, value in zip(data_names, children):
            object.__setattr__(obj, name, value)
        return obj

    jax.tree_util.register_pytree_with_keys(data_clz, flatten_with_keys, unflatten, flatten)
    data_clz.replace = lambda self, **changes: dataclasses.replace(self, **changes)  # type: ignore[attr-defined]
    return data_clz


def concrete_value(x: Any) -> np.ndarray | None:
    """``x`` as a NumPy array if it is a concrete host or device value, else ``None``
    (tracers, ``None`` and other placeholders are not validated)."""
    if isinstance(x, jax.core.Tracer):
        return None
    if isinstance(x, (bool, int, float, np.ndarray, np.generic, jax.Array)):
        return np.asarray(x)
    return None


def check_range(
    owner: str,
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    shape: tuple[int, ...] | None = None,
) -> None:
    """Raise ``ValueError`` naming ``owner.name``, the offending value and the valid range
    if a concrete ``value`` is non-finite, out of range, or (trailing) shape-mismatched.

    Leading batch axes are allowed (a stacked batch of parameters for ``vmap``)."""
    arr = concrete_value(value)
    if arr is None:
        return
    label = f"{owner}.{name}"
    if shape is not None:
        trailing = arr.shape[arr.ndim - len(shape) :] if arr.ndim >= len(shape) else arr.shape
        if tuple(trailing) != tuple(shape):
            raise ValueError(f"{label} must have shape {shape} (optionally with leading batch axes), got {arr.shape}")
    if arr.dtype == bool:
        return
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label} must be finite, got {_show(arr)}")
    lo_ok = True if low is None else np.all(arr >= low) if low_inclusive else np.all(arr > low)
    hi_ok = True if high is None else np.all(arr <= high) if high_inclusive else np.all(arr < high)
    if not (lo_ok and hi_ok):
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        bracket = ("[" if low_inclusive and low is not None else "(") + f"{lo}, {hi}" + ("]" if high_inclusive and high is not None else ")")
        raise ValueError(f"{label} must lie in {bracket}, got {_show(arr)}")


def _show(arr: np.ndarray) -> str:
    if arr.size == 1:
        return f"{arr.reshape(()).item()!r}"
    flat = arr.reshape(-1)
    n_bad = int(np.sum(~np.isfinite(flat)))
    if n_bad:
        return f"array of shape {arr.shape} with {n_bad} non-finite value(s)"
    return f"array of shape {arr.shape} (min {flat.min():g}, max {flat.max():g})"


def cast_numeric(tree: Any, dtype: Any) -> Any:
    """Every integer or floating leaf of ``tree`` as ``dtype`` (booleans stay booleans): how an
    environment brings its parameters to its working precision inside a step."""
    import jax.numpy as jnp

    def cast(x: Any) -> Any:
        x = jnp.asarray(x)
        numeric = jnp.issubdtype(x.dtype, jnp.floating) or jnp.issubdtype(x.dtype, jnp.integer)
        return x.astype(dtype) if numeric else x

    return jax.tree_util.tree_map(cast, tree)


def check_env_dtype(owner: str, dtype: Any) -> Any:
    """An environment's working dtype: float32 or float64 (the latter needs 64-bit JAX)."""
    import jax.numpy as jnp

    dtype = jnp.dtype(dtype)
    if dtype not in (jnp.dtype("float32"), jnp.dtype("float64")):
        raise ValueError(f"{owner}.dtype must be float32 or float64, got {dtype}")
    if dtype == jnp.float64 and not jax.config.jax_enable_x64:
        raise ValueError(f"{owner}.dtype float64 needs 64-bit JAX: call jax.config.update('jax_enable_x64', True) first")
    return dtype
