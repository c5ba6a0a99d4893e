"""What the climate game does not know, as distributions over its parameters
(docs/robustness.md): the damage coefficient ψ and, with CICERO-SCM in JAX as its climate engine,
the climate sensitivity.

* ψ (damages c^c·ψ·ΔT⁴·(1 − P), Eq. 30): the multiplier of RICE-N's damage coefficient,
  log-normal with its 95th percentile at 3× the nominal value, truncated to [×0.2, ×5]
  (jaxclimate/climate/uncertainty.py says where the spread comes from).
* CICERO-SCM's climate-sensitivity parameter λ (K per W m⁻²; the equilibrium warming of a CO₂
  doubling is λ·5.35·ln 2 ≈ 2.25 K at its nominal 0.606): multiplied by the same log-normal
  as DICE-2016's ECS, with IPCC AR6's relative spread, truncated to [×0.5, ×2]. The engine's
  state in 2016 (the historical run) stays the nominal model's: a draw changes how the climate
  answers the countries' emissions from then on, as if the present were observed.
"""

from __future__ import annotations

from typing import Any

from jaxclimate.climate.uncertainty import DAMAGE_SOURCE, DAMAGE_SPREAD, ECS_SOURCE, ECS_SPREAD
from jaxclimate.core.uncertainty import Factor, Uncertainty
from jaxclimate.envs.climate_mitigation.params import MitigationParams


def scale_damage(params: MitigationParams, m: Any) -> MitigationParams:
    return params.replace(damage_coefficient=params.damage_coefficient * m)


DAMAGE = Factor("damage_coefficient", DAMAGE_SPREAD, scale_damage, lambda p: float(p.damage_coefficient), DAMAGE_SOURCE)


def climate_sensitivity_factor(nominal_lambda: float) -> Factor:
    """λ × m, from the parameters' ``engine_params["lambda"]`` or the engine's nominal value."""

    def current(params: MitigationParams) -> Any:
        return (params.engine_params or {}).get("lambda", nominal_lambda)

    def scale(params: MitigationParams, m: Any) -> MitigationParams:
        return params.replace(engine_params={**(params.engine_params or {}), "lambda": current(params) * m})

    return Factor("climate_sensitivity", ECS_SPREAD, scale, lambda p: float(current(p)), ECS_SOURCE + " (CICERO-SCM's λ)")


def uncertainties(engine: Any) -> dict[str, Uncertainty]:
    """The game's uncertainties with ``engine``: the climate's only where the engine has a λ."""
    found = {"damage": Uncertainty("damage", (DAMAGE,))}
    parameters = getattr(engine, "parameters", {})
    if "lambda" in parameters:
        ecs = climate_sensitivity_factor(parameters["lambda"])
        found["climate"] = Uncertainty("climate", (ecs,))
        found["climate-damage"] = Uncertainty("climate-damage", (ecs, DAMAGE))
    return found
