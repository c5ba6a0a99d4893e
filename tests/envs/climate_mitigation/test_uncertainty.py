"""The climate game's uncertainties (jaxclimate/envs/climate_mitigation/uncertainty.py): with
CICERO-SCM in JAX, a drawn climate-sensitivity parameter λ reaches the engine through
``engine_params`` (the nominal value reproduces the engine's own run; a larger one warms; the
return's derivative matches finite differences); an engine without parameters refuses them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.climate import cicero

LEVERS = jnp.full((10, 4), 0.3).at[:, 3].set(0.02)


def _play(env, params, years):
    _, state = env.reset(jax.random.PRNGKey(0), params)
    temperatures, total = [], 0.0
    for _ in range(years):
        _, state, rewards, *_ = env.step(jax.random.PRNGKey(0), state, {"countries": LEVERS}, params)
        temperatures.append(float(state.temperature))
        total += float(rewards["countries"].sum())
    return np.array(temperatures), total


def test_engine_params_reach_cicero_jax():
    env, params = make("climate-mitigation-levers", scenario="ii", engine="cicero-jax")
    assert sorted(env.uncertainties) == ["climate", "climate-damage", "damage"]
    nominal = cicero.PAMSET_UDM["lambda"]
    assert env.base.engine.parameters["lambda"] == pytest.approx(nominal)
    own, _ = _play(env, params, 6)
    same, _ = _play(env, params.replace(engine_params={"lambda": nominal}), 6)
    np.testing.assert_allclose(same, own, rtol=1e-5)  # the ocean's constants computed in the run instead of prepared in float64
    warmer, _ = _play(env, env.uncertainties["climate"].apply(params, {"climate_sensitivity": jnp.asarray(1.5)}), 6)
    assert np.all(warmer[1:] > own[1:])


@pytest.mark.slow  # CICERO-SCM in JAX compiled in float64 and differentiated
def test_the_returns_derivative_in_the_climate_sensitivity_matches_finite_differences(x64):
    env, params = make("climate-mitigation-levers", scenario="ii", engine="cicero-jax", dtype="float64")
    uncertainty = env.uncertainties["climate-damage"]

    def total(m):
        p = uncertainty.apply(params, {"climate_sensitivity": m, "damage_coefficient": jnp.asarray(1.0)})
        _, state = env.reset_env(jax.random.PRNGKey(0), p)

        def year(state, _):
            _, state, rewards, _, _ = env.step_env(jax.random.PRNGKey(0), state, {"countries": LEVERS.astype(jnp.float64)}, p)
            return state, rewards["countries"].sum()

        return jax.lax.scan(year, state, None, 3)[1].sum()

    m, h = jnp.asarray(1.2), 1e-4
    value = jax.jit(total)
    fd = (value(m + h) - value(m - h)) / (2 * h)
    grad = jax.jit(jax.grad(total))(m)
    np.testing.assert_allclose(grad, fd, rtol=1e-5)
    assert float(grad) < 0  # a more sensitive climate costs


def test_engine_params_are_refused_where_they_cannot_go():
    env, params = make("climate-mitigation-levers", scenario="ii")  # the GRU surrogate has no parameters
    assert sorted(env.uncertainties) == ["damage"]
    _, state = env.reset(jax.random.PRNGKey(0), params)
    with pytest.raises(
        ValueError, match="engine_params \\['lambda'\\] need an engine with parameters \\(engine='cicero-jax'\\), not SurrogateEngine"
    ):
        env.step(jax.random.PRNGKey(0), state, {"countries": LEVERS}, params.replace(engine_params={"lambda": 0.6}))
    with pytest.raises(ValueError, match="engine_params\\['lambda'\\]"):
        params.replace(engine_params={"lambda": -0.6}).validate()
    with pytest.raises(ValueError, match="the explicit ocean sub-step would oscillate"):
        params.replace(engine_params={"beto": 400.0}).validate()
    with pytest.raises(ValueError, match="\\['mixed'\\] are not engine parameters"):
        params.replace(engine_params={"mixed": 50.0}).validate()
