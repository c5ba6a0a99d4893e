"""RICE-N under its climate modules (docs/climate_modules.md). The default, DICE-2016, is
covered bit for bit by the golden tests (test_parity.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.climate import cicero, cicero_jax, modules
from jaxclimate.core import struct
from jaxclimate.envs.rice_n import RiceN, replay
from jaxclimate.envs.rice_n.dynamics import activity_step, initial_state

BAU = {"savings": 2, "mitigation": 0}  # business as usual: no abatement, 20 % savings


def bau_history(env: RiceN, steps: int | None = None) -> dict:
    steps = env.episode_length if steps is None else steps
    actions = np.broadcast_to(np.asarray(env.constant_actions(**BAU)), (steps, env.num_regions, env.nvec.size))
    return replay(env, actions)


@functools.lru_cache(maxsize=None)
def env_for(climate: str, dtype: str = "float32") -> RiceN:
    return RiceN(climate=climate, dtype=dtype)


def annual_co2_from_history(h: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each year's (fossil, land) CO2 in GtC/yr, rebuilt from the recorded economy:
    Σ_i σ_i(t−1)·(1 − μ_i(t))·P_i(t) and N·E_L(t), held over the step's five years."""
    sigma, mu, P = h["state__intensity_all_regions"], h["state__mitigation_rate_all_regions"], h["state__production_all_regions"]
    fossil = (sigma[:-1] * (1.0 - mu[1:]) * P[1:]).sum(axis=1)
    land = h["state__global_land_emissions"][1:, 0] * P.shape[1]
    return np.repeat(fossil, 5) * 12 / 44, np.repeat(land, 5) * 12 / 44


def test_bad_climate_value_names_the_field_and_the_choices():
    with pytest.raises(ValueError, match=r"RiceN\.climate must be one of \('dice', 'cicero-jax', 'gru'\).*'fair'"):
        make("rice-n", climate="fair")
    with pytest.raises(ValueError, match="RiceN.climate: a climate module object must have 'init'"):
        RiceN(climate=object())


@pytest.mark.slow
def test_cicero_jax_bau_temperature_equals_cicero_scm_run_directly(x64):
    """The episode's T_AT equals CICERO-SCM in JAX run from 1900 on SSP2-4.5 with the economy's
    CO2 from 2015 (rebuilt from the recorded state, not by the environment's code path),
    anchored at T_AT(2015) = 0.85 °C: T_AT(2015 + 5k) = 0.85 + dT(2014 + 5k) − dT(2014)."""
    h = bau_history(env_for("cicero-jax", "float64"))
    fossil, land = annual_co2_from_history(h)
    years = np.arange(2015, 2115)
    scenario = cicero.baseline_controllable()[np.minimum(years - 1900, cicero.N_YEARS - 1)]  # held at 2075
    scenario[:, 0], scenario[:, 1] = fossil, land
    emissions = np.concatenate([cicero.baseline_controllable()[: 2015 - 1900], scenario])
    model = cicero_jax.CiceroJAX(dtype=jnp.float64)
    dT = np.asarray(jax.jit(model.run_years)(model.zero_state(), jnp.asarray(emissions))[1]["dT_glob_air"])
    expected = 0.85 + dT[2019 - 1900 :: 5] - dT[2014 - 1900]
    np.testing.assert_allclose(h["state__global_temperature"][1:, 0], expected, rtol=0, atol=1e-10)
    assert h["state__global_temperature"][0, 0] == 0.85
    # the observation's carbon masses are DICE's boxes on the same emissions (docs/climate_modules.md)
    np.testing.assert_allclose(h["state__global_carbon_mass"], bau_history(env_for("dice", "float64"))["state__global_carbon_mass"], rtol=2e-2)


@pytest.mark.slow
def test_gru_tracks_cicero_jax_inside_its_training_range():
    """Business as usual, 2015–2050: the GRU surrogate within 0.05 K of CICERO-SCM. (Later, and
    for emissions far from SSP2-4.5, the surrogate extrapolates and does not track it:
    docs/climate_modules.md.)"""
    gru = bau_history(env_for("gru"), steps=7)["state__global_temperature"][:, 0]
    exact = bau_history(env_for("cicero-jax"), steps=7)["state__global_temperature"][:, 0]
    np.testing.assert_allclose(gru, exact, rtol=0, atol=0.05)
    assert exact[-1] > exact[0] + 1.0  # a warming path, not a flat one


@pytest.mark.slow
@pytest.mark.parametrize("climate", ["cicero-jax", "gru"])
def test_temperature_2100_falls_with_mitigation_and_the_derivative_flows(climate):
    """d T_AT(2100) / d μ through 17 activity steps, the climate module included: finite and
    negative. CICERO-SCM in forward mode (its reverse mode gives the same number but compiles
    for ~45 s on two CPU cores), the GRU in reverse mode."""
    env = env_for(climate)
    params = struct.cast_numeric(env.default_params, jnp.float32)
    n = env.num_regions

    def temperature_2100(mu):
        zeros = jnp.zeros((n,))
        rates = {"savings": zeros + 0.2, "mitigation": zeros + mu, "export_limit": zeros, "tariffs": jnp.zeros((n, n)), "bids": jnp.zeros((n, n))}
        state = initial_state(params, env.dtype, env.climate)
        state, _ = jax.lax.scan(lambda s, _: (activity_step(s, rates, params, env.climate), None), state, None, length=17)
        return state.temperature[0]

    if climate == "cicero-jax":
        _, slope = jax.jit(lambda mu: jax.jvp(temperature_2100, (mu,), (jnp.ones(()),)))(jnp.float32(0.5))
    else:
        slope = jax.jit(jax.grad(temperature_2100))(jnp.float32(0.5))
    assert np.isfinite(float(slope)) and float(slope) < -1.0  # K per unit of mitigation rate


def test_module_protocol_attributes():
    module = env_for("dice").climate
    assert (module.years_per_step, module.start_year) == (5, 2015)
    assert modules.ANNUAL_MODULES == ("cicero-jax", "gru")
