import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete

SPACES = [
    Discrete(5),
    MultiDiscrete([2, 3, 10]),
    MultiBinary(4),
    Box(-1.0, 2.0, (3,)),
    Box(np.array([0.0, -5.0]), np.array([1.0, 5.0])),
    Box(-np.inf, np.inf, (2,)),
    Box(np.array([0.0, -np.inf]), np.array([np.inf, 0.0])),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_samples_are_contained_under_jit_and_vmap(space):
    keys = jax.random.split(jax.random.PRNGKey(0), 256)
    samples = jax.jit(jax.vmap(space.sample))(keys)
    assert samples.shape == (256, *space.shape)
    assert samples.dtype == space.dtype
    assert bool(jnp.all(jax.jit(jax.vmap(space.contains))(samples)))


def test_discrete_covers_all_values_and_rejects_others():
    space = Discrete(3)
    samples = jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(1), 300))
    assert set(np.asarray(samples).tolist()) == {0, 1, 2}
    assert not bool(space.contains(jnp.asarray(3)))
    assert not bool(space.contains(jnp.asarray(-1)))
    assert not bool(space.contains(jnp.asarray(1.5)))
    assert not bool(space.contains(jnp.asarray([1])))  # wrong shape


def test_multidiscrete_respects_each_component():
    space = MultiDiscrete([2, 10])
    samples = np.asarray(jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(2), 500)))
    assert samples[:, 0].max() == 1 and samples[:, 1].max() == 9
    assert bool(space.contains(jnp.asarray([1, 9])))
    assert not bool(space.contains(jnp.asarray([2, 0])))
    assert not bool(space.contains(jnp.asarray([0, 10])))


def test_box_bounds_and_unbounded_directions():
    space = Box(np.array([0.0, -np.inf]), np.array([np.inf, 0.0]))
    samples = np.asarray(jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(3), 500)))
    assert samples[:, 0].min() >= 0 and samples[:, 1].max() <= 0
    assert samples[:, 0].max() > 1.0  # exponential tail, not stuck at the bound
    bounded = Box(-1.0, 2.0, (3,))
    assert not bool(bounded.contains(jnp.asarray([0.0, 2.5, 0.0])))
    assert not bool(bounded.contains(jnp.zeros(4)))


def test_multibinary():
    space = MultiBinary(3)
    assert bool(space.contains(jnp.asarray([0, 1, 1])))
    assert not bool(space.contains(jnp.asarray([0, 2, 1])))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Discrete(0), "Discrete.n must be >= 1"),
        (lambda: MultiDiscrete([3, 0]), "MultiDiscrete.nvec"),
        (lambda: MultiBinary(0), "MultiBinary.n"),
        (lambda: Box(1.0, 0.0, (2,)), "low <= high"),
        (lambda: Box(np.zeros(3), np.ones(2)), "do not fit"),
    ],
)
def test_invalid_spaces(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_factored_box_flattens_in_the_declared_column_order():
    from jaxclimate.core.factored import FactoredBox, FactoredObs

    space = FactoredBox(shared_dim=3, own_dim=4, insert_at=1)
    assert space.shape == (7,) and space.flat_space.shape == (7,)
    shared = jnp.array([10.0, 11.0, 12.0])
    own = jnp.arange(8.0).reshape(2, 4)  # two agents
    flat = space.flatten(FactoredObs(shared, own))
    np.testing.assert_array_equal(flat, [[0, 10, 11, 12, 1, 2, 3], [4, 10, 11, 12, 5, 6, 7]])
    # leading batch axes are kept
    batched = space.flatten(FactoredObs(jnp.stack([shared, shared + 1]), jnp.stack([own, own])))
    assert batched.shape == (2, 2, 7) and float(batched[1, 0, 1]) == 11.0
    one = space.sample(jax.random.PRNGKey(0))
    assert bool(space.contains(one)) and not bool(space.contains(jnp.zeros(7)))
    assert not bool(space.contains(FactoredObs(jnp.zeros(2), jnp.zeros(4))))
    with pytest.raises(ValueError, match="insert_at"):
        FactoredBox(3, 4, insert_at=5)
