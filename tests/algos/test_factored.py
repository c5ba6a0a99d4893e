"""Factored observations in the learner: the first layer computes what a dense layer on the
flat vector computes, and IPPO trained on a factored env equals IPPO trained on the flat
one from the same weights."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.algos.ippo import IPPOConfig, _Group, make_trainer
from jaxclimate.algos.networks import ActorCritic, FactoredDense, initial_carry
from jaxclimate.core.factored import FactoredBox, FactoredObs
from jaxclimate.envs.rice_n import RiceN

SMALL = [0, 5, 12, 20]


def _merge(factored: dict, insert_at: int) -> dict:
    """FactoredDense parameters -> the flat Dense with the shared rows inserted at ``insert_at``."""
    own, shared = factored["Dense_0"]["kernel"], factored["Dense_1"]["kernel"]
    kernel = jnp.concatenate([own[:insert_at], shared, own[insert_at:]], axis=0)
    return {"kernel": kernel, "bias": factored["Dense_0"]["bias"]}


def flat_params(params: dict, insert_at: int) -> dict:
    """ActorCritic parameters on factored input -> the same network on flat input: the first
    layers (``FactoredDense``: own rows ``Dense_0``, shared rows ``Dense_1``) become dense
    layers of the same name; every other layer is the same."""
    return {name: _merge(p, insert_at) if "Dense_1" in p else p for name, p in params.items()}


def test_factored_dense_equals_dense_on_the_flat_vector():
    space = FactoredBox(shared_dim=5, own_dim=3, insert_at=2)
    obs = FactoredObs(
        jax.random.normal(jax.random.PRNGKey(0), (2, 4, 5)),  # (T, E, Fs)
        jax.random.normal(jax.random.PRNGKey(1), (2, 12, 3)),
    )  # (T, E·3 agents, Fo)
    layer = FactoredDense(6)
    params = layer.init(jax.random.PRNGKey(2), obs)["params"]
    flat = space.flatten(FactoredObs(obs.shared, obs.own.reshape(2, 4, 3, 3))).reshape(2, 12, 8)
    merged = _merge(params, 2)
    expected = flat @ merged["kernel"] + merged["bias"]
    np.testing.assert_allclose(layer.apply({"params": params}, obs), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="whole number per env"):
        layer.apply({"params": params}, FactoredObs(obs.shared, obs.own[:, :10]))


@pytest.mark.parametrize("network", ["mlp", "gru"])
def test_actor_critic_on_factored_obs_equals_flat(network):
    net = ActorCritic(num_outputs=7, network=network, hidden_size=16)
    space = FactoredBox(shared_dim=9, own_dim=4, insert_at=1)
    shared = jax.random.normal(jax.random.PRNGKey(0), (3, 2, 9))
    own = jax.random.normal(jax.random.PRNGKey(1), (3, 2, 5, 4))  # (T, E, N, Fo)
    resets = jnp.zeros((3, 10), bool).at[1, 3].set(True)
    factored = FactoredObs(shared, own.reshape(3, 10, 4))
    carry = initial_carry(network, 16, 10)
    params = net.init(jax.random.PRNGKey(2), carry, factored, resets)["params"]
    out_f = net.apply({"params": params}, carry, factored, resets)
    flat = space.flatten(FactoredObs(shared, own)).reshape(3, 10, 13)
    out = net.apply({"params": flat_params(params, 1)}, carry, flat, resets)
    for a, b in zip(jax.tree_util.tree_leaves(out_f), jax.tree_util.tree_leaves(out)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_factored_minibatches_take_whole_environments():
    env = RiceN(regions=SMALL, num_activity_steps=2, observation="factored")
    group = _Group(env, "regions", IPPOConfig(num_envs=6, num_minibatches=3, share_parameters=True))
    order, envs = group.batch_permutation(jax.random.PRNGKey(0), 6)
    assert sorted(np.asarray(envs).tolist()) == list(range(6))
    np.testing.assert_array_equal(np.asarray(order).reshape(6, 4) // 4, np.repeat(np.asarray(envs)[:, None], 4, 1))
    with pytest.raises(ValueError, match="must divide num_envs"):
        _Group(env, "regions", IPPOConfig(num_envs=6, num_minibatches=4, share_parameters=True))


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.slow
def test_ippo_on_factored_env_equals_ippo_on_flat_env(share):
    # One minibatch per epoch: the minibatch order is then only a summation order, so both
    # layouts take the same gradient steps from the same weights (float32 rounding apart).
    config = IPPOConfig(num_envs=2, num_steps=6, update_epochs=2, num_minibatches=1, hidden_size=16, share_parameters=share, total_timesteps=24)
    flat_env = RiceN(regions=SMALL, num_activity_steps=2)
    factored_env = RiceN(regions=SMALL, num_activity_steps=2, observation="factored")
    params = flat_env.default_params
    flat, factored = make_trainer(flat_env, params, config), make_trainer(factored_env, params, config)
    rs_f = factored.init(jax.random.PRNGKey(0))
    rs = flat.init(jax.random.PRNGKey(0))
    insert_at = len(SMALL)
    as_flat = jax.vmap(lambda p: flat_params(p, insert_at))(rs_f.params["regions"])
    rs = rs.replace(params={"regions": as_flat})  # Adam's initial state is zeros either way
    run = jax.jit(lambda t, r: t.run(r, 2), static_argnums=0)
    rs_f, metrics_f = run(factored, rs_f)
    rs, metrics = run(flat, rs)
    np.testing.assert_allclose(metrics_f["regions"]["episode_return"], metrics["regions"]["episode_return"], rtol=1e-5)
    trained = jax.vmap(lambda p: flat_params(p, insert_at))(rs_f.params["regions"])
    for a, b in zip(jax.tree_util.tree_leaves(trained), jax.tree_util.tree_leaves(rs.params["regions"])):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    assert not np.allclose(np.asarray(trained["actor_0"]["kernel"]), np.asarray(as_flat["actor_0"]["kernel"]))
