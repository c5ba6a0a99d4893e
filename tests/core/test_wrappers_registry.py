import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make, registered_envs
from jaxclimate.core import EpisodeStatistics, PerAgentDictAdapter
from tests.core import toy_envs


def test_episode_statistics_sum_rewards_per_agent():
    env = EpisodeStatistics(toy_envs.ToyEnv())
    params = env.default_params.replace(max_steps=4)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    totals = {"movers": np.zeros(2), "pusher": np.zeros(1)}
    for t in range(6):
        k = jax.random.PRNGKey(t + 1)
        obs, state, rewards, term, trunc, info = step(k, state, env.sample_actions(k), params)
        if t < 4:
            for g in totals:
                totals[g] += np.asarray(rewards[g])
        if t == 3:
            assert bool(info["returned_episode"]) and int(info["returned_episode_length"]) == 4
            for g in totals:
                np.testing.assert_allclose(np.asarray(info["returned_episode_returns"][g]), totals[g], rtol=1e-6)
        else:
            assert not bool(info["returned_episode"])
    assert int(state.episodes_done) == 1
    assert int(state.episode_length) == 2  # two steps into the second episode


def test_per_agent_adapter_matches_grouped_env():
    base = toy_envs.ToyEnv()
    env = PerAgentDictAdapter(base)
    assert env.agent_names == ["movers_0", "movers_1", "pusher_0"]
    assert env.num_agents == 3
    key = jax.random.PRNGKey(0)
    obs, state = env.reset(key)
    obs_g, state_g = base.reset(key)
    np.testing.assert_array_equal(np.asarray(obs["movers_1"]), np.asarray(obs_g["movers"][1]))
    actions = {"movers_0": jnp.asarray(2), "movers_1": jnp.asarray(0), "pusher_0": jnp.asarray([0.5, 0.5])}
    obs, state, rewards, dones, info = env.step(key, state, actions)
    grouped = {"movers": jnp.asarray([2, 0]), "pusher": jnp.asarray([[0.5, 0.5]])}
    _, _, rewards_g, _, truncated, _ = base.step(key, state_g, grouped)
    assert float(rewards["movers_1"]) == float(rewards_g["movers"][1])
    assert set(dones) == {"movers_0", "movers_1", "pusher_0", "__all__"}
    assert env.action_space("pusher_0").shape == (2,)
    with pytest.raises(ValueError, match="unknown agent"):
        env.action_space("pusher_1")
    with pytest.raises(ValueError, match="missing actions"):
        env.step(key, state, {"movers_0": jnp.asarray(1)})


def test_registry_lists_ebm_envs():
    ids = registered_envs()
    for env_id in ["ebm-v1", "ebm-v2", "ebm-v3", "ebm-v2-a2", "ebm-v2-a6", "ebm-v3-a2", "ebm-v3-a6"]:
        assert env_id in ids
    env, params = make("ebm-v2")
    assert env.num_agents == 6
