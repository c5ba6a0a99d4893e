"""RICE-N's climate modules (docs/climate_modules.md): ``RiceN(climate=...)``.

* ``"dice"`` (default) — the reference's DICE-2016 boxes, :class:`~jaxclimate.envs.rice_n.dynamics.DiceClimate`;
* ``"cicero-jax"`` — CICERO-SCM 2.1.3 in JAX, multi-gas: the economy's CO2 plus the SSP2-4.5
  CH4, N2O and SO2 (and every other species) that CICERO-SCM already runs on;
* ``"gru"`` — the shipped GRU surrogate of CICERO-SCM, the same way;
* or any :class:`~jaxclimate.climate.modules.ClimateModule` object with 5-year steps from 2015.

A module other than DICE gives RICE-N its atmospheric temperature, on RICE-N's anchor:

    T_AT(t) = T_AT,0 + T_m(t) − T_m(2015)

with T_m the module's own temperature (CICERO-SCM: dT_glob_air relative to 1900; at reset its
value of 2014 on SSP2-4.5, 0.691 K, where DICE starts at T_AT,0 = 0.85 °C above
pre-industrial), so every module starts at the reference's 0.85 °C and damages, indices and
observations keep their meaning. What the observation shows besides T_AT comes from DICE's
boxes run beside the module as bookkeeping, driven by the same emissions and by the module's
T_AT: the carbon masses M (Eq. 5), the lower-ocean temperature T_LO (Eq. 34's second row,
T_LO' = Φ_T[1]·(T_AT, T_LO) + B_T[1]·F) and the exogenous-forcing schedule F_EX(t). They do
not feed back on the module's temperature.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxclimate.climate.modules import ANNUAL_MODULES, annual_module
from jaxclimate.core import struct
from jaxclimate.envs.rice_n.dynamics import DICE, DiceClimate, DiceClimateState
from jaxclimate.envs.rice_n.params import START_YEAR, YEARS_PER_STEP, RiceParams

Array = jax.Array
#: The values of ``RiceN(climate=...)`` by name.
CLIMATE_MODULES = ("dice", *ANNUAL_MODULES)


@struct.dataclass
class AnchoredClimateState:
    """A module's own state and the DICE bookkeeping boxes whose T_AT is the module's."""

    module: Any
    boxes: DiceClimateState

    @property
    def temperature(self) -> Array:
        return self.boxes.temperature

    @property
    def carbon_mass(self) -> Array:
        return self.boxes.carbon_mass

    @property
    def forcing_exogenous(self) -> Array:
        return self.boxes.forcing_exogenous


class AnchoredClimate:
    """A climate module as RICE-N's climate: its temperature on RICE-N's anchor, DICE's boxes
    as bookkeeping for the observation (module docstring). A climate module itself."""

    years_per_step = YEARS_PER_STEP
    start_year = START_YEAR

    def __init__(self, module: Any):
        for attr in ("init", "step", "initial_temperature", "years_per_step", "start_year"):
            if not hasattr(module, attr):
                raise ValueError(f"RiceN.climate: a climate module object must have {attr!r} (see jaxclimate.climate.modules)")
        if (module.years_per_step, module.start_year) != (YEARS_PER_STEP, START_YEAR):
            raise ValueError(
                f"RiceN.climate: the module must take {YEARS_PER_STEP}-year steps from {START_YEAR}, "
                f"got {module.years_per_step}-year steps from {module.start_year}"
            )
        self.module = module

    def init(self, params: RiceParams) -> AnchoredClimateState:
        return AnchoredClimateState(module=self.module.init(params), boxes=DICE.init(params))

    def initial_temperature(self, params: RiceParams) -> Array:
        return DICE.initial_temperature(params)

    def step(self, state: AnchoredClimateState, emissions: Array, params: RiceParams) -> tuple[AnchoredClimateState, Array]:
        module_state, temperature = self.module.step(state.module, emissions, params)
        t_at = params.T_0[0] + (temperature - self.module.initial_temperature(params))  # the anchor
        boxes, _ = DICE.step(state.boxes, emissions, params)  # T_LO reads the module's previous T_AT
        boxes = boxes.replace(temperature=boxes.temperature.at[0].set(t_at))
        return AnchoredClimateState(module=module_state, boxes=boxes), t_at


def climate_module(climate: Any, dtype: Any) -> Any:
    """The climate module ``RiceN(climate=...)`` names (see the module docstring)."""
    if isinstance(climate, str):
        if climate not in CLIMATE_MODULES:
            raise ValueError(f"RiceN.climate must be one of {CLIMATE_MODULES} or a climate module object, got {climate!r}")
        if climate == "dice":
            return DICE
        return AnchoredClimate(annual_module(climate, YEARS_PER_STEP, START_YEAR, jnp.dtype(dtype).name))
    if isinstance(climate, (DiceClimate, AnchoredClimate)):
        return climate
    return AnchoredClimate(climate)
