"""What RICE-N does not know about the climate and its damages, as distributions over its
parameters (docs/robustness.md): DICE-2016's equilibrium climate sensitivity and forcing of a CO₂
doubling, and the damage coefficient a₂.

DICE-2016's temperature map (Φ_T, B_T; docs/rice_n.md §4.1) holds the climate sensitivity in
one coefficient: Φ_T[0, 0] = 1 − c₁·(λ + c₃) with c₁ = B_T[0], c₃ = Φ_T[0, 1]/c₁ and the
feedback λ = F_2x/ECS (Nordhaus' DICE-2016R2 GAMS code: ``fco22x/t2xco2``). Multiplying the
ECS by m sets λ ← λ/m; multiplying F_2x by m scales the forcing and, at fixed ECS, λ ← λ·m.

The distributions (multipliers of the nominal value, median 1) and their sources are in
:mod:`jaxclimate.climate.uncertainty`: ECS log-normal (IPCC AR6's very likely range), F_2x
normal (AR6's spread), a₂ log-normal with its 95th percentile at 3×.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxclimate.climate.uncertainty import DAMAGE_SOURCE, DAMAGE_SPREAD, ECS_SOURCE, ECS_SPREAD, F2X_SOURCE, F2X_SPREAD
from jaxclimate.core.uncertainty import Factor, Uncertainty
from jaxclimate.envs.rice_n.params import RiceParams


def feedback(params: RiceParams) -> jnp.ndarray:
    """λ = F_2x/ECS (W m⁻² K⁻¹) read from Φ_T (see the module docstring)."""
    c1 = jnp.asarray(params.B_T)[0]
    return (1.0 - jnp.asarray(params.Phi_T)[0, 0]) / c1 - jnp.asarray(params.Phi_T)[0, 1] / c1


def climate_sensitivity(params: RiceParams) -> jnp.ndarray:
    """ECS = F_2x/λ (K per CO₂ doubling): 3.1 K for DICE-2016's constants."""
    return params.F_2x / feedback(params)


def with_feedback(params: RiceParams, lam: jnp.ndarray) -> RiceParams:
    """``params`` with Φ_T[0, 0] = 1 − c₁·(λ + c₃)."""
    phi_t, c1 = jnp.asarray(params.Phi_T), jnp.asarray(params.B_T)[0]
    return params.replace(Phi_T=phi_t.at[0, 0].set(1.0 - c1 * lam - phi_t[0, 1]))


def scale_climate_sensitivity(params: RiceParams, m: jnp.ndarray) -> RiceParams:
    return with_feedback(params, feedback(params) / m)


def scale_forcing(params: RiceParams, m: jnp.ndarray) -> RiceParams:
    return with_feedback(params, feedback(params) * m).replace(F_2x=params.F_2x * m)


def scale_damage(params: RiceParams, m: jnp.ndarray) -> RiceParams:
    return params.replace(a2=params.a2 * m)


ECS = Factor("climate_sensitivity", ECS_SPREAD, scale_climate_sensitivity, lambda p: float(climate_sensitivity(p)), ECS_SOURCE)
F2X = Factor("forcing_2xco2", F2X_SPREAD, scale_forcing, lambda p: float(p.F_2x), F2X_SOURCE)
DAMAGE = Factor("damage_a2", DAMAGE_SPREAD, scale_damage, lambda p: float(p.a2), DAMAGE_SOURCE)

UNCERTAINTIES = {
    "climate": Uncertainty("climate", (ECS, F2X)),
    "damage": Uncertainty("damage", (DAMAGE,)),
    "climate-damage": Uncertainty("climate-damage", (ECS, F2X, DAMAGE)),
}
DAMAGE_ONLY = {"damage": UNCERTAINTIES["damage"]}
