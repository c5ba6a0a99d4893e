"""Bad actions get a clear error: keys, shapes and kinds when step is traced; values out of
their space's range in the opt-in checked mode, naming the group, the agent and the space."""

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import checkify

import jaxclimate
from jaxclimate.core import CheckedActions


@pytest.fixture(scope="module")
def game():
    env, params = jaxclimate.make("climate-mitigation")  # 4 countries, 4 levers of 3 levels
    _, state = env.reset(jax.random.PRNGKey(0), params)
    return env, params, state


def test_a_bare_array_is_refused_naming_the_groups(game):
    env, params, state = game
    with pytest.raises(TypeError, match=r"actions must be a dict of group -> array \(\['countries'\]\)"):
        env.step(jax.random.PRNGKey(1), state, jnp.zeros((4, 4), jnp.int32), params)


def test_floats_for_discrete_levers_are_refused(game):
    env, params, state = game
    with pytest.raises(TypeError, match=r"actions\['countries'\] must be integers \(MultiDiscrete"):
        env.step(jax.random.PRNGKey(1), state, {"countries": jnp.full((4, 4), 0.7)}, params)


def test_checked_mode_names_the_agent_out_of_range(game):
    env, params, state = game
    checked = jax.jit(checkify.checkify(CheckedActions(env).step))
    good = {"countries": jnp.ones((4, 4), jnp.int32)}
    err, _ = checked(jax.random.PRNGKey(1), state, good, params)
    err.throw()  # nothing to report
    bad = {"countries": good["countries"].at[2, 1].set(7)}  # level 7 of a 3-level lever, agent 2
    err, _ = checked(jax.random.PRNGKey(1), state, bad, params)
    with pytest.raises(checkify.JaxRuntimeError, match=r"actions\['countries'\] of agent 2 outside MultiDiscrete\(\[3, 3, 3, 3\]\)"):
        err.throw()
    err, _ = checked(jax.random.PRNGKey(1), state, {"countries": good["countries"].at[0, 0].set(-1)}, params)
    with pytest.raises(checkify.JaxRuntimeError, match="of agent 0 outside"):
        err.throw()
