"""DDPG / TD3 / TQC with FedAvg: the pieces alone (buffer, averaging, target smoothing,
truncation, quantile loss, init), the federation schedule, the stored transitions at time
limits, and learning."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxclimate
from jaxclimate.algos.networks import TorchDense
from jaxclimate.algos.off_policy import (
    DDPGConfig,
    TD3Config,
    TQCConfig,
    _DeterministicLearner,
    _soft_update,
    deterministic_update_flops,
    federated_average,
    local_policy,
    make_trainer,
    quantile_huber_loss,
    smoothed_target_action,
    truncated_atoms,
)
from jaxclimate.algos.replay import ReplayBuffer
from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.core.spaces import Box
from tests.algos.probe_envs import CueState

TINY = dict(hidden_size=16, learning_starts=5, batch_size=8, num_steps=10)


def test_replay_buffer_writes_cyclically_and_samples_the_filled_part():
    buf = ReplayBuffer.create(capacity=5, obs_dim=2, act_dim=1)
    for i in range(3):
        buf = buf.add(jnp.full((2, 2), i), jnp.full((2, 1), i), jnp.array([i, i + 0.5]), jnp.full((2, 2), i + 1), jnp.zeros(2))
    assert int(buf.size) == 5 and int(buf.position) == 1  # 6 transitions into 5 slots: the first was overwritten
    np.testing.assert_array_equal(buf.reward, [2.5, 0.5, 1.0, 1.5, 2.0])
    partial = ReplayBuffer.create(capacity=100, obs_dim=2, act_dim=1).add(
        jnp.ones((3, 2)), jnp.ones((3, 1)), jnp.arange(3.0) + 1, jnp.ones((3, 2)), jnp.zeros(3)
    )
    drawn = partial.sample(jax.random.PRNGKey(0), 500)["reward"]
    assert set(np.asarray(drawn).tolist()) == {1.0, 2.0, 3.0}  # with replacement, only filled slots


def test_federated_average_is_the_mean_for_every_agent():
    params = {"w": jnp.arange(12.0).reshape(3, 4), "b": jnp.array([1.0, 2.0, 6.0])}
    avg = federated_average(params)
    np.testing.assert_allclose(avg["w"], np.broadcast_to(np.arange(12.0).reshape(3, 4).mean(0), (3, 4)))
    np.testing.assert_allclose(avg["b"], 3.0)


def test_td3_target_smoothing_clips_each_dimension_to_its_own_bounds():
    low, high = jnp.array([0.55, 1.4, 1.95]), jnp.array([0.65, 4.2, 2.05])
    scale = (high - low) / 2
    action = jnp.broadcast_to(jnp.array([0.6, 2.8, 2.0]), (4000, 3))
    smoothed = np.asarray(smoothed_target_action(action, jax.random.PRNGKey(0), 0.5, 0.8, scale, low, high))
    assert (smoothed >= np.asarray(low)).all() and (smoothed <= np.asarray(high)).all()
    assert smoothed[:, 1].max() > 3.5 and smoothed[:, 1].min() < 2.1  # A spreads over its own box, not D's
    np.testing.assert_allclose(np.abs(smoothed - np.asarray(action)).max(axis=0), 0.8 * np.asarray(scale), rtol=1e-5)


def test_tqc_truncation_drops_the_largest_pooled_atoms():
    z = jnp.array([[[1.0, 5.0, 3.0]], [[2.0, 9.0, 4.0]]])  # (critics 2, batch 1, quantiles 3)
    np.testing.assert_array_equal(truncated_atoms(z, 1), [[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(truncated_atoms(z, 0), [[1.0, 2.0, 3.0, 4.0, 5.0, 9.0]])


def test_soft_target_update_by_hand():
    target, online = {"w": jnp.array([0.0, 10.0])}, {"w": jnp.array([1.0, 0.0])}
    np.testing.assert_allclose(_soft_update(target, online, 0.1)["w"], [0.1, 9.0], rtol=1e-6)


def test_exploration_noise_has_std_sigma_times_scale_per_dimension():
    low, high = jnp.array([0.55, 1.4]), jnp.array([0.65, 4.2])
    scale, offset = (high - low) / 2, (high + low) / 2
    learner = _DeterministicLearner(DDPGConfig(hidden_size=8), 3, 2, scale, offset, -jnp.inf * jnp.ones(2), jnp.inf * jnp.ones(2))
    state = learner.init(jax.random.PRNGKey(0))
    obs = jnp.zeros((20000, 3))
    noise = np.asarray(learner.explore(state, obs, jax.random.PRNGKey(1)) - learner.mean_action(state.actor, obs))
    np.testing.assert_allclose(noise.std(axis=0), 0.21660831219393845 * np.asarray(scale), rtol=0.03)
    np.testing.assert_allclose(noise.mean(axis=0) / np.asarray(scale), 0.0, atol=0.01)


def test_quantile_huber_loss_by_hand():
    z = jnp.array([[[0.0, 2.0]]])  # one critic, one sample, quantiles τ = 1/4, 3/4
    target = jnp.array([[1.0, 4.0]])
    taus = jnp.array([0.25, 0.75])
    # u = target − z: quantile 0: (1, 4); quantile 1: (−1, 2). Huber(1)=0.5, Huber(4)=3.5, Huber(-1)=0.5, Huber(2)=1.5
    expected = np.mean([0.25 * 0.5, 0.25 * 3.5, (1 - 0.75) * 0.5, 0.75 * 1.5])
    np.testing.assert_allclose(quantile_huber_loss(z, target, taus), expected, rtol=1e-6)


def test_layers_start_as_pytorch_linear():
    params = TorchDense(256).init(jax.random.PRNGKey(0), jnp.zeros((1, 100)))["params"]
    for leaf in (params["kernel"], params["bias"]):
        assert np.abs(leaf).max() <= 0.1 and np.abs(leaf).max() > 0.099  # U(±1/√fan_in), fan_in = 100


@pytest.mark.parametrize("config, obs_dim, act_dim", [(DDPGConfig(), 96, 195), (TD3Config(), 16, 35)])
def test_hand_counted_update_flops_match_xla_cost_analysis(config, obs_dim, act_dim):
    """The hand count of the matrix products (the work a training row cannot avoid) against
    XLA's count of the compiled update, critic alone and critic + actor; XLA also counts the
    elementwise work (Adam, activations), a few per cent at width 256, more at 64."""
    ones = jnp.ones(act_dim)
    learner = _DeterministicLearner(config, obs_dim, act_dim, ones, 0 * ones, -ones, ones)
    state = learner.init(jax.random.PRNGKey(0))
    B = config.batch_size
    batch = {
        "obs": jnp.ones((B, obs_dim)),
        "action": jnp.ones((B, act_dim)),
        "reward": jnp.ones(B),
        "next_obs": jnp.ones((B, obs_dim)),
        "done": jnp.zeros(B),
    }

    def xla_flops(with_actor: bool) -> float:
        gate = jnp.asarray(with_actor)  # a constant gate: XLA keeps only the branch taken
        compiled = jax.jit(lambda s, b, k: learner.update(s, b, k, gate, gate)).lower(state, batch, jax.random.PRNGKey(1)).compile()
        cost = compiled.cost_analysis()
        return (cost[0] if isinstance(cost, list) else cost)["flops"]

    count = deterministic_update_flops(config, obs_dim, act_dim)
    critic_only, both = xla_flops(False), xla_flops(True)
    elementwise = 1.03 if config.hidden_size == 256 else 1.12
    assert count["critic_update"] <= critic_only <= elementwise * count["critic_update"]
    assert count["actor_update"] <= both - critic_only <= elementwise * count["actor_update"]
    per_step = count["critic_update"] + count["actor_update"] / config.policy_frequency + count["act"]
    assert count["per_agent_step"] == pytest.approx(per_step)


def _equal_across_agents(tree) -> bool:
    return all(np.allclose(x[0], x[i]) for x in jax.tree_util.tree_leaves(tree) for i in range(1, x.shape[0]))


@pytest.mark.parametrize("period, average_critics", [(2, False), (0, False), (2, True)])
def test_federation_happens_at_exactly_the_scheduled_steps(period, average_critics):
    """10-step episodes, averaging every 2 episodes: after steps 20, 40 and 60 every agent holds
    the same actor; after steps 10, 30, 50 they differ (independent keys). nofed never averages."""
    env, params = jaxclimate.make("ebm-v3-a2", max_steps=10)
    config = DDPGConfig(total_timesteps=60, federation_period=period, average_critics=average_critics, **TINY)
    trainer = make_trainer(env, params, config)
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0))
    assert _equal_across_agents(state.learners.actor) and _equal_across_agents(state.learners.critic)  # common start
    run = jax.jit(lambda s: trainer.run(s, 1)[0])
    for iteration in range(1, 7):
        state = run(state)
        averaged = period and (10 * iteration) % (10 * period) == 0
        assert _equal_across_agents(state.learners.actor) == bool(averaged), iteration
        assert _equal_across_agents(state.learners.critic) == bool(averaged and average_critics), iteration
        assert not _equal_across_agents(state.learners.actor_target)  # targets stay local
        if averaged:
            assert not _equal_across_agents(local_policy(state))  # the agents' own actors before the round


def test_time_limit_transitions_keep_the_true_final_observation():
    env, params = jaxclimate.make("ebm-v1", max_steps=10)
    trainer = make_trainer(env, params, DDPGConfig(total_timesteps=20, **TINY))
    state = jax.jit(lambda k: trainer.run(trainer.init(k), 2)[0])(jax.random.PRNGKey(1))
    buf = jax.tree_util.tree_map(lambda x: np.asarray(x[0]), state.buffers)
    np.testing.assert_array_equal(buf.next_obs[:9], buf.obs[1:10])  # within an episode s′ is the next s
    np.testing.assert_array_equal(buf.obs[10], np.full(96, 50.0))  # the next episode starts from the reset state
    assert not np.allclose(buf.next_obs[9], 50.0)  # … but the stored s′ of step 10 is where the episode ended
    np.testing.assert_array_equal(buf.done[:20], 0.0)  # a time limit is not a terminal: values bootstrap


class ContinuousCue(Environment):
    """One-step episodes for two agents: a cue c ∈ {0..3} (one-hot) and reward
    1 − mean((a − target(c))²), target (c/3 − 0.5, 0.5 − c/3) in Box(−1, 1, (2,)). Ignoring the
    cue earns about 0.85 at best; the optimum is 1."""

    agents = {"agents": 2}

    @property
    def default_params(self):
        return EnvParams(max_steps=1)

    def reset_env(self, key, params):
        cue = jax.random.randint(key, (), 0, 4)
        return {"agents": jnp.broadcast_to(jax.nn.one_hot(cue, 4), (2, 4))}, CueState(time=jnp.zeros((), jnp.int32), cue=cue)

    def step_env(self, key, state, actions, params):
        c = state.cue
        target = jnp.array([c / 3 - 0.5, 0.5 - c / 3])
        reward = 1.0 - jnp.mean((actions["agents"] - target) ** 2, axis=-1)
        obs = {"agents": jnp.broadcast_to(jax.nn.one_hot(c, 4), (2, 4))}
        return obs, CueState(time=state.time + 1, cue=c), {"agents": reward}, jnp.asarray(True), {}

    def observation_space(self, group=None):
        return Box(0.0, 1.0, (4,))

    def action_space(self, group=None):
        return Box(-1.0, 1.0, (2,))


@pytest.mark.parametrize(
    "config_cls, extra",
    [
        (DDPGConfig, {}),
        (TD3Config, {"policy_frequency": 2}),
        # TQC's tuned critic learning rate (1.2e-4) is too slow for 1,500 steps; 1e-3 learns the probe
        (TQCConfig, {"n_quantiles": 5, "n_critics": 2, "policy_frequency": 2, "target_network_frequency": 2, "critic_lr": 1e-3}),
    ],
)
def test_learners_learn_a_continuous_contextual_bandit(config_cls, extra):
    env = ContinuousCue()
    config = config_cls(
        total_timesteps=1500, num_steps=50, learning_starts=100, hidden_size=32, batch_size=32, federation_period=0, **{"gamma": 0.0, **extra}
    )
    trainer = make_trainer(env, env.default_params, config)
    state = jax.jit(lambda k: trainer.run(trainer.init(k), config.num_updates)[0])(jax.random.PRNGKey(0))
    obs = {"agents": jnp.broadcast_to(jnp.eye(4)[:, None], (4, 2, 4))}
    actions, _ = trainer.act(trainer.policy(state), obs, None, None, jax.random.PRNGKey(0))
    targets = np.stack([[c / 3 - 0.5, 0.5 - c / 3] for c in range(4)])[:, None]
    reward = 1.0 - np.mean((np.asarray(actions["agents"]) - targets) ** 2, axis=-1)
    assert reward.mean() > 0.97, reward  # ignoring the cue: <= 0.86


def test_config_and_env_errors():
    with pytest.raises(ValueError, match="federation_period"):
        DDPGConfig(federation_period=-1)
    with pytest.raises(ValueError, match="quantiles_to_drop"):
        TQCConfig(quantiles_to_drop=45)
    env, params = jaxclimate.make("ebm-v1")
    with pytest.raises(ValueError, match="multiple of num_steps"):
        make_trainer(env, params, DDPGConfig(federation_period=1, num_steps=300, total_timesteps=600))
    env, params = jaxclimate.make("invest-esg")
    with pytest.raises(ValueError, match="one agent group"):
        make_trainer(env, params, DDPGConfig())
