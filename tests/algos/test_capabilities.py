"""Capabilities declared, not discovered by refusal: what each environment offers
(``env.capabilities``), what each algorithm trains (``Algorithm``), and ``why_not`` agreeing
with ``make_trainer`` and with training itself."""

import jax
import numpy as np
import pytest

import jaxclimate
from jaxclimate.algos.registry import algorithms, get_algorithm, why_not
from jaxclimate.core.env import EPISODE_METRICS, Capabilities
from jaxclimate.core.registry import registered_envs
from jaxclimate.core.uncertainty import Randomized

#: the least settings that run one update of each algorithm
TINY = {
    "ippo": dict(num_envs=2, num_steps=4, num_minibatches=1, update_epochs=1, hidden_size=8, total_timesteps=8),
    "ddpg": dict(num_steps=4, total_timesteps=4, learning_starts=1, batch_size=4, hidden_size=8, buffer_size=16),
    "td3": dict(num_steps=4, total_timesteps=4, learning_starts=1, batch_size=4, hidden_size=8, buffer_size=16),
    "tqc": dict(num_steps=4, total_timesteps=4, learning_starts=1, batch_size=4, hidden_size=8, buffer_size=16, n_quantiles=5, n_critics=2),
    "apg": dict(num_envs=2, unroll_length=4, total_timesteps=8, hidden_size=8),
}
CONTINUOUS = ("ebm-v1", "ebm-v2", "ebm-v2-a2", "ebm-v2-a6", "ebm-v3", "ebm-v3-a2", "ebm-v3-a6", "climate-mitigation-levers", "rice-n-rates")


def _pairs():
    return [(env_id, name) for env_id in registered_envs() for name in sorted(algorithms())]


def test_every_environment_declares_what_it_offers():
    for env_id in registered_envs():
        env, params = jaxclimate.make(env_id)
        capabilities = env.capabilities
        assert isinstance(capabilities, Capabilities)
        assert capabilities.action_mask == (env_id in ("rice-n", "rice-n-bilateral", "rice-n-club")), env_id
        assert bool(capabilities.episode_metrics) == (env_id == "invest-esg"), env_id
        assert (capabilities.host_callback is None) and not env.uses_host_callback and env.host_callback_advice == ""
        assert env.uncertainties == capabilities.uncertainties  # the former name reads the declaration
        _, state = jax.eval_shape(env.reset, jax.random.PRNGKey(0), params)
        assert set(jax.eval_shape(env.episode_metrics, state, params)) == set(capabilities.episode_metrics), env_id
    cicero, _ = jaxclimate.make("climate-mitigation", engine="cicero")
    assert "cicero-jax" in cicero.capabilities.host_callback and cicero.uses_host_callback
    assert cicero.host_callback_advice == cicero.capabilities.host_callback


def test_the_declared_episode_metrics_reach_the_step_info_from_the_final_state():
    env, params = jaxclimate.make("invest-esg", max_steps=3)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    actions = jax.tree_util.tree_map(np.zeros_like, env.sample_actions(jax.random.PRNGKey(1)))
    for _ in range(3):
        before = state
        obs, state, _, terminated, truncated, info = env.step(jax.random.PRNGKey(2), state, actions, params)
    assert bool(terminated | truncated) and int(state.time) == 0  # the episode ended and reset
    final, _, _ = env.transition(jax.random.split(jax.random.PRNGKey(2))[0], before, *actions.values(), params)
    assert int(info[EPISODE_METRICS]["climate_events"]) == int(env.episode_metrics(final, params)["climate_events"])
    assert float(info[EPISODE_METRICS]["final_market_wealth"]) == pytest.approx(float(env.episode_metrics(final, params)["final_market_wealth"]))
    ebm, ebm_params = jaxclimate.make("ebm-v1")
    _, ebm_state = ebm.reset(jax.random.PRNGKey(0), ebm_params)
    assert EPISODE_METRICS not in ebm.step(jax.random.PRNGKey(0), ebm_state, ebm.sample_actions(jax.random.PRNGKey(0)), ebm_params)[-1]


def test_wrappers_and_relaxations_declare_what_their_base_offers():
    rice, params = jaxclimate.make("rice-n-bilateral")
    randomized = Randomized(rice, rice.uncertainties["damage"])
    assert randomized.capabilities == rice.capabilities and randomized.capabilities.action_mask
    _, state = randomized.reset(jax.random.PRNGKey(0), params)
    np.testing.assert_array_equal(randomized.action_mask("regions", state, params), rice.action_mask("regions", state.inner, state.params))
    rates, _ = jaxclimate.make("rice-n-rates")
    assert not rates.capabilities.action_mask and sorted(rates.capabilities.uncertainties) == sorted(rice.capabilities.uncertainties)
    levers, _ = jaxclimate.make("climate-mitigation-levers", engine="cicero")
    assert levers.capabilities.host_callback  # the same engine calls the host: refused unless asked for, as the game


def test_algorithms_state_what_they_train():
    ippo, ddpg, apg = (get_algorithm(n) for n in ("ippo", "ddpg", "apg"))
    assert ippo.max_groups is None and "multi-discrete" in ippo.action_kinds and ippo.factored_observations
    assert ddpg.action_kinds == ("box",) and ddpg.max_groups == 1 and not ddpg.rollout_extras
    assert "one agent group acting in a bounded 1-D Box" in ddpg.requires and "any action space" in ippo.requires
    assert ippo.min_timesteps() == 16 * 35 and ippo.min_timesteps({"num_envs": 2, "num_steps": 4}) == 8
    assert ddpg.min_timesteps() == 200 and apg.min_timesteps() == 8 * 200


@pytest.mark.parametrize("env_id", registered_envs())
def test_why_not_is_what_make_trainer_says(env_id):
    """Every pair: ``why_not`` None -> ``make_trainer`` builds; otherwise it refuses with the same line."""
    env, params = jaxclimate.make(env_id)
    for name, algorithm in sorted(algorithms().items()):
        reason = why_not(name, env, params)
        assert (reason is None) == (name == "ippo" or env_id in CONTINUOUS), (env_id, name, reason)
        config = algorithm.config_cls(**TINY[name])
        if reason is None:
            algorithm.make_trainer(env, params, config)
        else:
            assert "\n" not in reason and reason.startswith(name + " ")
            with pytest.raises(ValueError) as refused:
                algorithm.make_trainer(env, params, config)
            assert str(refused.value) == reason


def test_the_capability_refusal_comes_before_the_budget():
    env, params = jaxclimate.make("climate-mitigation-i")
    assert why_not("apg", env, params, {"total_timesteps": 1000}).startswith("apg differentiates the return through continuous actions;")
    levers, levers_params = jaxclimate.make("climate-mitigation-levers")
    assert why_not("apg", levers, levers_params, {"total_timesteps": 1000}) == (
        "apg needs total_timesteps >= 1,600 (one update with these settings), got 1,000"
    )
    assert why_not("apg", levers, levers_params, {"total_timesteps": 1000, "unroll_length": 35}) is None
    assert why_not("ddpg", levers, levers_params, {"federation_period": 1, "num_steps": 20}).endswith("must be a multiple of num_steps = 20")
    assert "must divide" in why_not("ippo", levers, levers_params, {"num_envs": 3, "num_minibatches": 2})
    assert why_not("ddpg", levers, levers_params, get_algorithm("ddpg").config_cls(**TINY["ddpg"])) is None
    assert "recorders" in pytest.raises(ValueError, get_algorithm("apg").check, levers, recorder=object()).value.args[0]


def _train_one_update(env_id, name):
    env, params = jaxclimate.make(env_id)
    assert why_not(name, env, params, TINY[name]) is None
    algorithm = get_algorithm(name)
    trainer = algorithm.make_trainer(env, params, algorithm.config_cls(**TINY[name]))
    state, metrics = jax.jit(lambda k: trainer.run(trainer.init(k), 1))(jax.random.PRNGKey(0))
    for group in env.agents:
        assert np.shape(metrics[group]["episode_return"]) == (1, env.agents[group])


@pytest.mark.parametrize(("env_id", "name"), [("climate-mitigation-levers", "ddpg"), ("ebm-v3", "apg"), ("invest-esg", "ippo")])
def test_a_few_listed_pairs_train(env_id, name):
    _train_one_update(env_id, name)


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "name"), [p for p in _pairs() if p[1] == "ippo" or p[0] in CONTINUOUS])
def test_every_listed_pair_trains_one_update(env_id, name):
    """Every pair ``why_not`` lets through builds, initialises and runs one update."""
    _train_one_update(env_id, name)
