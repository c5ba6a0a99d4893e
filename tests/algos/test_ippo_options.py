"""IPPO's options, each checked alone or on a tiny two-group run (continuous companies and
binary investors of InvestESG)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxclimate
from jaxclimate.algos.ippo import IPPOConfig, _optimizer, make_trainer, sample_minibatch_layout
from jaxclimate.algos.losses import ppo_loss
from jaxclimate.envs.invest_esg import COMPANIES, INVESTORS
from tests.algos.probe_envs import Memory

TINY = dict(total_timesteps=2 * 10 * 2, num_envs=2, num_steps=10, update_epochs=1, num_minibatches=1, hidden_sizes=(8,), continuous_actions="rescale")


def invest_esg():
    return jaxclimate.make("invest-esg", event_mode="reference_events")


def test_weighted_loss_drops_zero_weight_samples():
    rng = np.random.default_rng(0)
    args = [jnp.asarray(rng.normal(size=6)) for _ in range(7)]
    weights = jnp.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    keep = np.asarray(weights) > 0
    full, aux = ppo_loss(*args, 0.2, 0.5, 0.01, True, False, weights)
    subset, aux_subset = ppo_loss(*[a[keep] for a in args], 0.2, 0.5, 0.01, True, False)
    np.testing.assert_allclose(full, subset, rtol=1e-6)
    np.testing.assert_allclose(aux["value_loss"], 0.5 * np.mean((np.asarray(args[3]) - np.asarray(args[5]))[keep] ** 2), rtol=1e-6)
    clipped, aux_clipped = ppo_loss(*args, 0.2, 0.5, 0.01, True, True, weights)
    assert aux_clipped["value_loss"] >= aux["value_loss"]


def test_sample_minibatches_cover_every_sample_once():
    order, weight = sample_minibatch_layout(jax.random.PRNGKey(0), 500, 64)
    assert order.shape == (8, 64)
    np.testing.assert_array_equal(np.asarray(weight).sum(axis=1), [64] * 7 + [52])  # SB3: 7 × 64 + 52
    np.testing.assert_array_equal(np.sort(np.asarray(order)[np.asarray(weight) > 0]), np.arange(500))


def test_separate_optimizers_clip_actor_and_critic_alone():
    params = {"actor_0": {"kernel": jnp.ones((2, 2))}, "log_std": jnp.zeros(2), "critic_0": {"kernel": jnp.ones((2, 2))}}
    grads = {"actor_0": {"kernel": jnp.full((2, 2), 100.0)}, "log_std": jnp.full(2, 100.0), "critic_0": {"kernel": jnp.full((2, 2), 0.1)}}
    config = IPPOConfig(separate_optimizers=True, max_grad_norm=0.5)
    tx = _optimizer(config)
    updates, _ = tx.update(grads, tx.init(params), params)
    alone = optax.chain(optax.clip_by_global_norm(0.5), optax.scale_by_adam(eps=1e-5))
    critic_alone, _ = alone.update(grads["critic_0"], alone.init(params["critic_0"]), params["critic_0"])
    np.testing.assert_allclose(updates["critic_0"]["kernel"], critic_alone["kernel"], rtol=1e-6)
    joint, _ = _optimizer(IPPOConfig(max_grad_norm=0.5)).update(grads, _optimizer(IPPOConfig()).init(params), params)
    assert not np.allclose(joint["critic_0"]["kernel"], critic_alone["kernel"])  # one clip over both shrinks the critic's step
    with pytest.raises(ValueError, match="separate_optimizers"):
        IPPOConfig(separate_optimizers=True, network="lstm")


@pytest.mark.slow
def test_identical_init_and_learning_starts():
    env, params = invest_esg()
    config = IPPOConfig(**TINY, identical_init=True, learning_starts={"companies": 20})
    trainer = make_trainer(env, params, config)
    rs = jax.jit(trainer.init)(jax.random.PRNGKey(0))
    for leaf in jax.tree_util.tree_leaves(rs.params[COMPANIES]):
        np.testing.assert_array_equal(leaf[0], leaf[-1])
    run = jax.jit(lambda r: trainer.run(r, 1)[0])
    first = run(rs)  # 20 env steps collected: not more than 20, companies wait
    second = run(first)
    same = lambda a, b: all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))  # noqa: E731
    assert same(first.params[COMPANIES], rs.params[COMPANIES]) and not same(second.params[COMPANIES], rs.params[COMPANIES])
    assert not same(first.params[INVESTORS], rs.params[INVESTORS])
    with pytest.raises(ValueError, match="learning_starts names groups"):
        make_trainer(env, params, IPPOConfig(**TINY, learning_starts={"banks": 5}))


class RecordCompanyActions:
    """A rollout hook that records the env actions of every step and gives every step the
    weight held in its state (0 at init: trains on none)."""

    def __init__(self, steps):
        self.steps = steps

    def init(self, key):
        return {"actions": jnp.zeros((self.steps, 2, 5, 3)), "t": jnp.zeros((), jnp.int32), "weight": jnp.zeros(())}

    def apply(self, state, key, env_state, actions):
        log = state["actions"].at[state["t"]].set(actions[COMPANIES])
        return {**state, "actions": log, "t": state["t"] + 1}, actions, jnp.full(env_state.time.shape, state["weight"])


@pytest.mark.slow
def test_lock_in_repeats_decisions_and_zero_weights_train_nothing():
    env, params = invest_esg()
    trainer = make_trainer(env, params, IPPOConfig(**TINY, lock_in_period=5), rollout_hook=RecordCompanyActions(10))
    rs = jax.jit(trainer.init)(jax.random.PRNGKey(1))
    run = jax.jit(lambda r: trainer.run(r, 1))
    out, metrics = run(rs)
    actions = np.asarray(out.hook["actions"])  # (10 steps, 2 envs, 5 companies, 3)
    for block in (actions[:5], actions[5:]):
        assert (block == block[0]).all()
    assert not np.array_equal(actions[0], actions[5])
    for a, b in zip(jax.tree_util.tree_leaves(out.params), jax.tree_util.tree_leaves(rs.params)):
        np.testing.assert_array_equal(a, b)  # every step had weight 0
    trained, _ = run(rs.replace(hook={**rs.hook, "weight": jnp.ones(())}))  # the control: weight 1 trains
    assert not np.array_equal(np.asarray(trained.params[COMPANIES]["actor_out"]["kernel"]), np.asarray(rs.params[COMPANIES]["actor_out"]["kernel"]))


@pytest.mark.slow
def test_episode_metrics_reach_the_update_metrics():
    env, params = invest_esg()
    config = IPPOConfig(**{**TINY, "num_steps": 100, "total_timesteps": 200, "minibatch_size": 50})
    trainer = make_trainer(env, params, config)
    _, metrics = jax.jit(lambda k: trainer.run(trainer.init(k), 1))(jax.random.PRNGKey(0))
    episode = metrics["episode"]
    assert float(metrics[COMPANIES]["episodes"][0]) == 2.0
    assert 0.4 < float(episode["final_climate_risk"][0]) < 1.1 and float(episode["final_market_wealth"][0]) > 100
    assert episode["investment_shares"].shape == (1, 3, 5)


def test_scan_unroll_changes_loop_shape_not_results():
    """scan_unroll packs several steps into one loop iteration (rollout and LSTM over time):
    the same arithmetic, so one update lands on the same parameters."""
    env = Memory()
    params = env.default_params
    base = dict(total_timesteps=40, num_envs=2, num_steps=10, update_epochs=1, num_minibatches=1, network="lstm", hidden_size=8)
    after = {}
    for unroll in (1, 5):
        trainer = make_trainer(env, params, IPPOConfig(**base, scan_unroll=unroll))
        run = lambda r, t=trainer: t.run(t.init(r), 1)[0]  # noqa: E731
        rs = jax.jit(run)(jax.random.PRNGKey(0))
        after[unroll] = jax.tree_util.tree_leaves(rs.params)
        unrolled = [
            e
            for e in _equations(jax.make_jaxpr(run)(jax.random.PRNGKey(0)).jaxpr)
            if e.primitive.name == "scan" and e.params["length"] == 10 and e.params["unroll"] == unroll
        ]
        assert len(unrolled) >= 3  # the rollout, the LSTM in the rollout's policy and in the loss
    for a, b in zip(after[1], after[5]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="scan_unroll"):
        IPPOConfig(scan_unroll=-1)


def _equations(jaxpr):
    for e in jaxpr.eqns:
        yield e
        for value in e.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                sub = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's jaxpr
                if hasattr(sub, "eqns"):
                    yield from _equations(sub)
