"""Climate modules: one protocol for the climate of every economy.

A *climate module* turns an economy's CO2 emissions over one step of ``years_per_step``
years into the global-mean surface air temperature at the end of the step:

    state = module.init(params)
    state, T = module.step(state, emissions, params)       # T in °C (K) above the module's baseline

* ``emissions`` — (..., 2) annual rates in **GtCO2/yr**, columns :data:`CO2_SOURCES`
  (fossil fuel and industry, land use), held over the step; the module sums the leading
  (emitter) axes. The economy chooses no other gas: each module supplies its own (DICE-2016
  an exogenous forcing, CICERO-SCM and its surrogate the SSP2-4.5 baseline).
* ``params`` — the economy's ``EnvParams``; a module reads the fields it documents (RICE-N's
  DICE-2016 boxes read their Φ, B and F_2x there, so a sweep over them is one ``vmap``) and
  the annual modules below ignore it.
* ``initial_temperature(params)`` — the temperature of the state :meth:`init` returns, so
  an economy can put every module on its own anchor (RICE-N: docs/climate_modules.md).

:class:`AnnualEngineModule` builds such a module from any annual climate engine of
:mod:`jaxclimate.climate.engines` (``init() -> state``, ``step(state, E_t) -> (state, dT_t)``
with E_t the five controllable emissions of CICERO-SCM): one module step is a ``lax.scan``
of ``years_per_step`` engine years, so it stays one compiled, differentiable program.
:func:`annual_module` makes the two shipped ones by name (``"cicero-jax"``, ``"gru"``).
RICE-N's own DICE-2016 boxes implement the same protocol in
:mod:`jaxclimate.envs.rice_n.dynamics`.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.climate import cicero
from jaxclimate.core import struct

Array = jax.Array

#: Columns of a module's ``emissions`` input (GtCO2/yr).
CO2_SOURCES = ("fossil", "land")
#: GtC per GtCO2: the molar masses 12/44. (DICE-2016 and RICE-N use 1/3.666 in B_M, 0.02 % less.)
GTC_PER_GTCO2 = 12.0 / 44.0
#: The annual modules :func:`annual_module` makes.
ANNUAL_MODULES = ("cicero-jax", "gru")


class ClimateModule(Protocol):
    """What an economy needs of its climate (see the module docstring)."""

    years_per_step: int
    start_year: int

    def init(self, params: Any = None) -> Any: ...

    def step(self, state: Any, emissions: Array, params: Any = None) -> tuple[Any, Array]: ...

    def initial_temperature(self, params: Any = None) -> Any: ...


def co2_by_source(emissions: Array) -> tuple[Array, Array]:
    """(fossil, land) CO2 in GtC/yr from (..., 2) emissions in GtCO2/yr, summed over emitters."""
    emissions = jnp.asarray(emissions)
    if emissions.shape[-1:] != (len(CO2_SOURCES),):
        raise ValueError(f"climate-module emissions must have a last axis of {len(CO2_SOURCES)} ({', '.join(CO2_SOURCES)}), got {emissions.shape}")
    flat = emissions.reshape(-1, len(CO2_SOURCES)).sum(axis=0) * GTC_PER_GTCO2
    return flat[0], flat[1]


def baseline_row(year: Array, dtype: Any) -> Array:
    """SSP2-4.5 controllable emissions (5,) of ``year``; years after the table's last (2075)
    hold its last row, years before 1900 its first."""
    table = jnp.asarray(cicero.baseline_controllable(), dtype)
    return table[jnp.clip(year - cicero.START_YEAR, 0, cicero.N_YEARS - 1)]


def annual_emissions(year: Array, fossil: Array, land: Array) -> Array:
    """The engine input of one year: CO2_FF = ``fossil``, CO2_AFOLU = ``land`` (GtC/yr), and
    CH4, N2O, SO2 from the SSP2-4.5 baseline of ``year`` (held at 2075 after 2075)."""
    dtype = jnp.result_type(fossil, land)
    base = baseline_row(year, dtype)
    return jnp.concatenate([jnp.stack([fossil, land]).astype(dtype), base[2:]])


@struct.dataclass
class AnnualModuleState:
    engine: Any  # the annual engine's own state
    year: Array  # int32, the next year the engine simulates


class AnnualEngineModule:
    """An annual climate engine as a climate module of ``years_per_step``-year steps.

    One step holds the step's emissions for every one of its years (piecewise-constant
    rates, so the step's cumulative CO2 is ``years_per_step``·E as in DICE-2016's carbon
    box) and returns the engine's temperature of the step's last year:

        E_y = (GtC(E_fossil), GtC(E_land), CH4_SSP245(y), N2O_SSP245(y), SO2_SSP245(y)),
              y = Y, …, Y + Δ − 1
        (s_{y+1}, dT_y) = engine.step(s_y, E_y)            a lax.scan of fixed length Δ
        T = dT_{Y+Δ−1}

    The non-CO2 baseline after 2075 (the end of CICERO-SCM's shipped scenario table) is
    held at its 2075 value (:func:`baseline_row`; CICERO-SCM in JAX holds its other
    year-indexed inputs the same way). ``dT`` is the engine's own: relative to 1900 for
    CICERO-SCM and its surrogates; an economy anchors it (``initial_temperature``).
    """

    def __init__(self, engine: Any, years_per_step: int):
        for attr in ("init", "step", "start_year", "initial_temperature"):
            if not hasattr(engine, attr):
                raise ValueError(f"AnnualEngineModule.engine must have {attr!r} (see jaxclimate.climate.engines)")
        if not isinstance(years_per_step, (int, np.integer)) or years_per_step < 1:
            raise ValueError(f"AnnualEngineModule.years_per_step must be a positive integer, got {years_per_step!r}")
        self.engine = engine
        self.years_per_step = int(years_per_step)
        self.start_year = int(engine.start_year)
        self._initial_temperature = float(engine.initial_temperature())

    def init(self, params: Any = None) -> AnnualModuleState:
        return AnnualModuleState(engine=self.engine.init(), year=jnp.asarray(self.start_year, jnp.int32))

    def initial_temperature(self, params: Any = None) -> float:
        """The engine's dT of the year before ``start_year`` (SSP2-4.5 emissions)."""
        return self._initial_temperature

    def step(self, state: AnnualModuleState, emissions: Array, params: Any = None) -> tuple[AnnualModuleState, Array]:
        fossil, land = co2_by_source(emissions)

        def year(engine_state, y):
            return self.engine.step(engine_state, annual_emissions(y, fossil, land))

        years = state.year + jnp.arange(self.years_per_step, dtype=jnp.int32)
        engine_state, temperatures = jax.lax.scan(year, state.engine, years)
        dtype = jnp.result_type(fossil)
        return AnnualModuleState(engine=engine_state, year=state.year + self.years_per_step), temperatures[-1].astype(dtype)


@functools.lru_cache(maxsize=8)
def annual_module(name: str, years_per_step: int, start_year: int, dtype: Any = "float32") -> AnnualEngineModule:
    """A shipped annual engine as a module (cached: building one runs the engine's spin-up).

    * ``"cicero-jax"`` — CICERO-SCM 2.1.3 in JAX (:class:`~jaxclimate.climate.engines.CiceroJaxEngine`),
      exact and differentiable, in ``dtype``;
    * ``"gru"`` — the shipped GRU surrogate of CICERO-SCM (float32 inside). It was trained on
      2015..2075 scenarios of SSP2-4.5 ±7.5 % and policy paths around them: later years and
      emissions far above SSP2-4.5 are extrapolation (docs/climate_modules.md).
    """
    from jaxclimate.climate.engines import CiceroJaxEngine, SurrogateEngine

    if name == "cicero-jax":
        engine = CiceroJaxEngine(start_year=start_year, dtype=jnp.dtype(dtype))
    elif name == "gru":
        engine = SurrogateEngine("gru", start_year=start_year)
    else:
        raise ValueError(f"annual climate module must be one of {ANNUAL_MODULES}, got {name!r}")
    return AnnualEngineModule(engine, years_per_step)
