"""lockstep_switch: the same values as vmap(lax.switch) in every batching pattern, and only
one branch runs when every batch element shares the index."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.core.lockstep import lockstep_switch


def _branches(log=None):
    def tagged(k, fn):
        def branch(x, p):
            if log is not None:
                jax.debug.callback(lambda: log.append(k))
            return fn(x, p)

        return branch

    return (tagged(0, lambda x, p: 2.0 * x + p), tagged(1, lambda x, p: x - p), tagged(2, lambda x, p: jnp.sin(x) * p))


def _reference(index, x, p):
    return jax.lax.switch(index, _branches(), x, p)


def _lockstep(index, x, p, log=None):
    return lockstep_switch(index, _branches(log), x, p)


X = jnp.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("index", [[1, 1, 1], [0, 2, 1], [2, 2, 0], [5, 5, 5], [-1, 0, 0]])
@pytest.mark.parametrize("p_axis", [None, 0])
def test_matches_vmapped_switch(index, p_axis):
    """Same and mixed indices, out-of-range indices (clamped), shared or batched operand."""
    index = jnp.asarray(index)
    p = jnp.array([1.0, 2.0, 3.0]) if p_axis == 0 else jnp.asarray(1.5)
    got = jax.jit(jax.vmap(_lockstep, in_axes=(0, 0, p_axis)))(index, X, p)
    want = jax.vmap(_reference, in_axes=(0, 0, p_axis))(index, X, p)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("index", [[[2, 2, 2], [2, 2, 2]], [[2, 2, 2], [0, 0, 0]], [[1, 0, 1], [1, 1, 1]]])
def test_nested_vmaps(index):
    """vmap over seeds of vmap over envs: the index check covers both levels."""
    index = jnp.asarray(index)
    xs = jnp.arange(24.0).reshape(2, 3, 4)
    ps = jnp.array([1.0, 2.0])
    inner = (0, 0, None)
    got = jax.jit(jax.vmap(jax.vmap(_lockstep, in_axes=inner)))(index, xs, ps)
    want = jax.vmap(jax.vmap(_reference, in_axes=inner))(index, xs, ps)
    np.testing.assert_array_equal(got, want)


def test_unbatched_index_and_no_vmap():
    np.testing.assert_array_equal(jax.vmap(_lockstep, in_axes=(None, 0, None))(2, X, 1.5), jax.vmap(_reference, in_axes=(None, 0, None))(2, X, 1.5))
    np.testing.assert_array_equal(jax.jit(_lockstep)(1, X, 2.0), _reference(1, X, 2.0))


def test_only_the_shared_branch_runs():
    """The point of the function: a shared index runs one branch; mixed indices run all."""
    log = []
    run = jax.jit(jax.vmap(lambda i, x: _lockstep(i, x, 1.0, log)))
    jax.block_until_ready(run(jnp.array([1, 1, 1]), X))
    jax.effects_barrier()
    assert sorted(set(log)) == [1]
    log.clear()
    jax.block_until_ready(run(jnp.array([1, 0, 1]), X))
    jax.effects_barrier()
    assert sorted(set(log)) == [0, 1, 2]
