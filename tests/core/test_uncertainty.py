"""Distributions over parameters (jaxclimate/core/uncertainty.py) and RICE-N's (DICE-2016's
climate sensitivity and forcing, the damage coefficient): draws stay in their truncation and in
the valid parameters, each factor moves what it says, and the randomised environment is the base
environment under the episode's draw."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make, train
from jaxclimate.core.uncertainty import Factor, LogNormalFactor, NormalFactor, Randomized, Uncertainty, uncertainty_of
from jaxclimate.envs.rice_n import uncertainty as rice
from jaxclimate.testing import check_env

REGIONS = [0, 9, 26]


def test_factors_are_truncated_with_median_one():
    key = jax.random.PRNGKey(0)
    lognormal = LogNormalFactor.from_ratio(3.0, 0.2, 5.0)
    m = np.asarray(lognormal.sample(key, (20_000,)))
    assert m.min() >= 0.2 and m.max() <= 5.0 and abs(np.median(m) - 1.0) < 0.02
    assert abs(np.percentile(m, 95) - 3.0) < 0.15  # the 95th percentile it was built from (the truncation barely moves it)
    normal = NormalFactor(0.1, 0.8, 1.2)
    n = np.asarray(normal.sample(key, (20_000,)))
    assert n.min() >= 0.8 and n.max() <= 1.2 and abs(n.mean() - 1.0) < 0.005
    assert 0.085 < n.std() < 0.091  # a normal truncated at ±2σ keeps 0.880σ of its spread
    with pytest.raises(ValueError, match="0 < low < 1 < high"):
        LogNormalFactor(0.3, 1.2, 2.0)


def test_dice_climate_sensitivity_and_forcing_move_what_they_say():
    _, params = make("rice-n-rates", regions=REGIONS)
    assert abs(float(rice.climate_sensitivity(params)) - 3.1) < 0.01  # DICE-2016's t2xco2 (Φ_T rounded to 4 digits)
    doubled = rice.scale_climate_sensitivity(params, jnp.asarray(2.0))
    np.testing.assert_allclose(rice.climate_sensitivity(doubled), 2 * rice.climate_sensitivity(params), rtol=1e-5)
    assert float(doubled.F_2x) == pytest.approx(params.F_2x) and float(doubled.Phi_T[0, 1]) == pytest.approx(params.Phi_T[0, 1])
    forced = rice.scale_forcing(params, jnp.asarray(1.1))
    np.testing.assert_allclose(rice.climate_sensitivity(forced), rice.climate_sensitivity(params), rtol=1e-5)
    np.testing.assert_allclose(forced.F_2x, 1.1 * params.F_2x, rtol=1e-6)
    assert float(rice.scale_damage(params, jnp.asarray(3.0)).a2) == pytest.approx(3 * params.a2)


def test_a_warmer_draw_warms_the_same_policy():
    env, params = make("rice-n-rates", regions=REGIONS)
    rates = {"regions": jnp.full((len(REGIONS), 2), 0.2).at[:, 1].set(0.0)}

    def temperature_after(p, steps=8):
        _, state = env.reset(jax.random.PRNGKey(0), p)
        for _ in range(steps):
            _, state, *_ = env.step(jax.random.PRNGKey(0), state, rates, p)
        return float(state.temperature[0])

    assert temperature_after(rice.scale_climate_sensitivity(params, jnp.asarray(1.5))) > temperature_after(params) + 0.1


def test_every_draw_is_valid_and_an_invalid_corner_is_refused():
    env, params = make("rice-n-rates", regions=REGIONS)
    for uncertainty in env.uncertainties.values():
        uncertainty.check(params)
    draws, batch = env.uncertainties["climate-damage"].sample_params(jax.random.PRNGKey(1), params, 64)
    one = env.uncertainties["climate-damage"].apply(params, {k: v[5] for k, v in draws.items()})
    np.testing.assert_allclose(batch.Phi_T[5], one.Phi_T, rtol=1e-6)
    assert np.unique(np.asarray(batch.a2)).size == 64
    runaway = Factor("runaway", LogNormalFactor(0.5, 0.5, 1.5), lambda p, m: p.replace(Phi_T=jnp.asarray(p.Phi_T) * m), lambda p: 1.0, "test")
    with pytest.raises(ValueError, match=r"uncertainty 'bad' leaves the valid parameters at its corner \(runaway ×1.5\).*Phi_T has spectral radius"):
        Uncertainty("bad", (runaway,)).check(params)


def test_the_randomised_env_is_the_base_under_the_episodes_draw():
    env, params = make("rice-n-rates", regions=REGIONS)
    randomized = Randomized(env, env.uncertainties["climate-damage"])
    assert randomized.name == "rice-n-rates[3 regions]~climate-damage" and randomized.agents == env.agents
    key = jax.random.PRNGKey(3)
    obs, state = randomized.reset(key, params)
    _, other = randomized.reset(jax.random.PRNGKey(4), params)
    assert float(state.params.a2) != float(other.params.a2)
    actions = {"regions": jnp.full((len(REGIONS), 2), 0.3)}
    _, stepped, rewards, *_ = randomized.step(key, state, actions, params)
    _, expected, expected_rewards, *_ = env.step(key, state.inner, actions, state.params)
    np.testing.assert_array_equal(rewards["regions"], expected_rewards["regions"])
    np.testing.assert_array_equal(stepped.inner.temperature, expected.temperature)
    check_env(randomized, params, num_steps=3)


def test_the_cli_names_the_uncertainties_an_env_has(capsys):
    env, _ = make("rice-n-rates", regions=REGIONS)
    with pytest.raises(ValueError, match=r"has no uncertainty 'nonsense'; it has \['climate', 'climate-damage', 'damage'\]"):
        uncertainty_of(env, "nonsense")
    with pytest.raises(SystemExit):
        train.build_options(["--env", "ebm-v1", "--algo", "apg", "--uncertainty", "climate"])
    assert "--uncertainty: ebm-v1 declares no parameter uncertainties" in capsys.readouterr().err
    other_climate, _ = make("rice-n", climate="cicero-jax", regions=REGIONS)
    assert sorted(other_climate.uncertainties) == ["damage"]  # DICE-2016's factors read its Φ_T
