"""IPPO learns on probe environments and on the climate game; seeds and settings vmap."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.algos.base import run_up_to
from jaxclimate.algos.ippo import IPPOConfig, make_train, make_trainer
from tests.algos.probe_envs import ContextualBandit, Memory


def final_returns(metrics, group, last=5):
    return np.asarray(metrics[group]["episode_return"])[-last:].mean(0)


@pytest.mark.parametrize("share", [False, True], ids=["independent", "shared"])
@pytest.mark.slow
def test_contextual_bandit_all_heads_learn(share):
    """Four groups (discrete, multi-discrete, multi-binary, continuous heads) each learn to
    answer their cue; ignoring the cue gives 0.25–0.5."""
    env = ContextualBandit()
    config = IPPOConfig(
        total_timesteps=16 * 8 * 60, num_envs=16, num_steps=8, num_minibatches=2, lr=3e-3, gamma=0.0, hidden_size=32, share_parameters=share
    )
    out = jax.jit(make_train(env, env.default_params, config))(jax.random.PRNGKey(0))
    m = out["metrics"]
    for group in ("discrete", "multi", "binary"):
        assert np.all(final_returns(m, group) > 0.95), (group, final_returns(m, group))
        assert np.all(np.asarray(m[group]["episode_return"])[0] < 0.6)
    assert np.all(final_returns(m, "continuous") > 0.7)
    params = out["runner_state"].params["discrete"]
    leaves = jax.tree_util.tree_leaves(params)
    assert leaves[0].shape[0] == (1 if share else 2)  # learners on the leading axis


@pytest.mark.parametrize("network, solves", [("mlp", False), ("lstm", True), ("gru", True)])
def test_memory_probe_needs_recurrence(network, solves):
    """The cue is visible only at step 0: recurrent policies recall it, an MLP cannot."""
    env = Memory()
    config = IPPOConfig(
        total_timesteps=16 * 8 * 100, num_envs=16, num_steps=8, num_minibatches=2, lr=3e-3, gamma=0.9, network=network, hidden_size=32
    )
    m = jax.jit(make_train(env, env.default_params, config))(jax.random.PRNGKey(0))["metrics"]
    score = final_returns(m, "agents", last=10)[0]
    assert (score > 0.9) if solves else (score < 0.7), score


@pytest.mark.slow
def test_seeds_and_hyperparameters_vmap_in_one_program():
    """jit(vmap(train)) over 4 seeds equals 4 separate runs; a vmapped lr changes the result."""
    env = Memory()
    config = IPPOConfig(total_timesteps=8 * 4 * 3, num_envs=8, num_steps=4, num_minibatches=2, hidden_size=16)
    train = make_train(env, env.default_params, config)
    keys = jax.random.split(jax.random.PRNGKey(1), 4)
    batched = jax.jit(jax.vmap(train))(keys)["metrics"]
    single = jax.jit(train)
    for i in (0, 3):
        alone = single(keys[i])["metrics"]
        np.testing.assert_allclose(batched["agents"]["loss"][i], alone["agents"]["loss"], rtol=1e-4, atol=1e-5)
    hp = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), config.hyperparams())
    hp["lr"] = jnp.array([1e-4, 1e-2])
    swept = jax.jit(jax.vmap(train, in_axes=(None, 0)))(keys[0], hp)["runner_state"].params["agents"]
    leaf = jax.tree_util.tree_leaves(swept)[0]
    assert not np.allclose(leaf[0], leaf[1])


@pytest.mark.slow
def test_chunked_run_equals_one_run():
    """init + run(1) + run(1) gives exactly the same parameters as one run of 2 updates (the
    chunk boundary carries the key, the optimiser, the GRU carry and the update counter; two
    chunk lengths, so two programs), and ``run_up_to`` runs both lengths in one."""
    env = Memory()
    config = IPPOConfig(total_timesteps=8 * 4 * 2, num_envs=8, num_steps=4, num_minibatches=2, hidden_size=16, network="gru")
    trainer = make_trainer(env, env.default_params, config)
    run = jax.jit(trainer.run, static_argnums=1)
    rs = trainer.init(jax.random.PRNGKey(2))
    whole, whole_metrics = run(rs, 2)
    first, first_metrics = run(rs, 1)
    part, _ = run(first, 1)
    for a, b in zip(jax.tree_util.tree_leaves(whole.params), jax.tree_util.tree_leaves(part.params)):
        np.testing.assert_array_equal(a, b)

    # what the CLI and sweeps compile: 1 or 2 of 2 updates in one program (``n`` traced), the
    # same parameters as ``run`` of that many updates, the metric rows past ``n`` zeros
    @jax.jit
    @chex.assert_max_traces(n=1)
    def up_to(rs, n):
        return run_up_to(trainer.run, rs, n, 2)

    for n, expected, expected_metrics in ((1, first, first_metrics), (2, whole, whole_metrics)):
        state, metrics = up_to(rs, n)
        for a, b in zip(jax.tree_util.tree_leaves(state.params), jax.tree_util.tree_leaves(expected.params)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        losses = np.asarray(metrics["agents"]["value_loss"])
        np.testing.assert_allclose(losses[:n], np.asarray(expected_metrics["agents"]["value_loss"]), rtol=1e-5)
        assert np.all(losses[n:] == 0) and np.all(losses[:n] != 0)


@pytest.mark.slow
@pytest.mark.full_opt  # run time dominates: training
def test_scenario_i_learns_full_energy_effort():
    """Paper Fig. 4: in scenario (i) every country learns full energy effort and nothing
    else (methane/agriculture levers do nothing there but cost; adaptation is pure cost)."""
    env, params = make("climate-mitigation")
    config = IPPOConfig(total_timesteps=40_000, num_envs=16, num_steps=35, lr=1e-3, gamma=0.999)
    trainer = make_trainer(env, params, config)
    rs, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.PRNGKey(0)), config.num_updates)
    returns = np.asarray(metrics["countries"]["episode_return"]).mean(-1)
    assert returns[0] < -20 and returns[-1] > -7.6, (returns[0], returns[-1])  # full energy: about −7.50
    obs, state = env.reset(jax.random.PRNGKey(1), params)
    batch = jax.tree_util.tree_map(lambda x: x[None], obs)
    carry = jax.tree_util.tree_map(lambda c: c[:, :1], rs.carry)
    levels, act, step = [], jax.jit(trainer.act), jax.jit(env.step)
    for _ in range(35):
        actions, carry = act(rs.params, batch, carry, jnp.zeros((1,), bool), jax.random.PRNGKey(0))
        levels.append(np.asarray(actions["countries"][0]))
        obs, state, *_ = step(jax.random.PRNGKey(0), state, {"countries": actions["countries"][0]}, params)
        batch = jax.tree_util.tree_map(lambda x: x[None], obs)
    levels = np.array(levels)  # (35, 4 countries, 4 levers)
    assert np.mean(levels[..., 0] == 2) > 0.95, levels[..., 0]
    assert np.mean(levels[..., 1:] == 0) > 0.95


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="IPPOConfig.network"):
        IPPOConfig(network="transformer")
    with pytest.raises(ValueError, match="IPPOConfig.gamma"):
        IPPOConfig(gamma=1.5)
    with pytest.raises(ValueError, match="num_minibatches"):
        make_trainer(ContextualBandit(), None, IPPOConfig(total_timesteps=1000, num_envs=6, num_minibatches=4))
