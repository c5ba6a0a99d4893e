"""Validated pytree dataclasses: errors at construction, none while JAX rebuilds pytrees."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.core import struct


@struct.dataclass
class Params:
    rate: float = 1.0
    profile: object = struct.field(default_factory=lambda: np.zeros(4))
    mode: str = struct.field(static=True, default="a")

    def validate(self):
        struct.check_range("Params", "rate", self.rate, low=0.0, low_inclusive=False)
        struct.check_range("Params", "profile", self.profile, shape=(4,))


def test_construction_and_replace_validate():
    with pytest.raises(ValueError, match=r"Params.rate must lie in \(0, inf\), got -1"):
        Params(rate=-1.0)
    with pytest.raises(ValueError, match=r"Params.rate must be finite"):
        Params().replace(rate=float("nan"))
    with pytest.raises(ValueError, match=r"Params.profile must have shape \(4,\)"):
        Params(profile=np.zeros(3))


def test_static_fields_are_not_leaves():
    p = Params(mode="b")
    leaves, treedef = jax.tree_util.tree_flatten(p)
    assert len(leaves) == 2
    assert jax.tree_util.tree_unflatten(treedef, leaves).mode == "b"


def test_pytree_rebuilds_skip_validation():
    # in_axes specs (0 for rate), tree_map placeholders and tracers must not be validated
    p = Params()
    axes = jax.tree_util.tree_map(lambda _: 0, p)
    assert axes.rate == 0
    batch = Params(rate=np.array([1.0, 2.0]), profile=np.ones((2, 4)))
    out = jax.vmap(lambda q: q.rate * q.profile.sum(), in_axes=(axes,))(batch)
    np.testing.assert_allclose(np.asarray(out), [4.0, 8.0])
    traced = jax.jit(lambda r: Params(rate=r).rate * 2)(jnp.asarray(3.0))
    assert float(traced) == 6.0


def test_batched_values_are_checked_elementwise():
    Params(rate=np.array([1.0, 2.0]), profile=np.ones((2, 4)))
    with pytest.raises(ValueError, match="Params.rate"):
        Params(rate=np.array([1.0, -2.0]))
