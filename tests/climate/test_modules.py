"""Climate modules (jaxclimate.climate.modules): an annual engine in multi-year steps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.climate import cicero, modules
from jaxclimate.climate.engines import PrescribedEngine


class RecordingEngine:
    """Returns the CO2 it was given as its temperature and keeps every year's input."""

    start_year = 2016

    def init(self):
        return jnp.zeros((cicero.N_YEARS, 5))

    def initial_temperature(self):
        return 0.0

    def step(self, state, emissions_t):
        return state, emissions_t[0] + emissions_t[1]


def test_step_holds_the_emissions_over_its_years_and_returns_the_last_years_temperature():
    temps = np.linspace(0.0, 2.0, cicero.N_YEARS)
    module = modules.AnnualEngineModule(PrescribedEngine(temps, start_year=2016), years_per_step=5)
    assert module.initial_temperature() == pytest.approx(temps[2015 - 1900])
    state = module.init()
    emissions = jnp.ones((3, 2))
    state, T = jax.jit(module.step)(state, emissions)
    assert int(state.year) == 2021 and float(T) == pytest.approx(temps[2020 - 1900])  # years 2016..2020
    state, T = module.step(state, emissions)
    assert float(T) == pytest.approx(temps[2025 - 1900])


def test_units_and_the_baseline_past_the_scenario_table():
    # 44 GtCO2/yr of fossil CO2 over two emitters and 11 of land: 12 and 3 GtC/yr
    fossil, land = modules.co2_by_source(jnp.asarray([[22.0, 5.5], [22.0, 5.5]]))
    assert float(fossil) == pytest.approx(12.0) and float(land) == pytest.approx(3.0)
    module = modules.AnnualEngineModule(RecordingEngine(), years_per_step=5)
    assert float(module.step(module.init(), jnp.asarray([[44.0, 11.0]]))[1]) == pytest.approx(15.0)
    base = cicero.baseline_controllable()
    e = modules.annual_emissions(jnp.asarray(2100), jnp.asarray(1.0), jnp.asarray(2.0))
    np.testing.assert_allclose(np.asarray(e), [1.0, 2.0, *base[-1, 2:]], rtol=1e-6)  # held at 2075
    np.testing.assert_allclose(np.asarray(modules.baseline_row(jnp.asarray(2030), jnp.float32)), base[130], rtol=1e-6)
    with pytest.raises(ValueError, match="last axis of 2"):
        modules.co2_by_source(jnp.ones((3,)))
    with pytest.raises(ValueError, match="annual climate module must be one of"):
        modules.annual_module("fair", 5, 2015)
