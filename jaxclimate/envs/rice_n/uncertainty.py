"""What RICE-N does not know about the climate and its damages, as distributions over its
parameters (docs/robustness.md): DICE-2016's equilibrium climate sensitivity and forcing of a CO₂
doubling, and the damage coefficient a₂.

DICE-2016's temperature map (Φ_T, B_T; docs/rice_n.md §4.1) holds the climate sensitivity in
one coefficient: Φ_T[0, 0] = 1 − c₁·(λ + c₃) with c₁ = B_T[0], c₃ = Φ_T[0, 1]/c₁ and the
feedback λ = F_2x/ECS (Nordhaus' DICE-2016R2 GAMS code: ``fco22x/t2xco2``). Multiplying the
ECS by m sets λ ← λ/m; multiplying F_2x by m scales the forcing and, at fixed ECS, λ ← λ·m.

Distributions (multipliers of the nominal value, median 1):

* ECS: log-normal with the spread of IPCC AR6 WG1's *very likely* range (2–5 K about a best
  estimate of 3 K, SPM A.4.4: a 5–95 % ratio of 2.5), truncated to [×0.5, ×2] (1.55–6.2 K
  about DICE-2016's 3.1 K; AR6 finds ECS below 1.5 K extremely unlikely).
* F_2x: normal with AR6's relative spread of the effective radiative forcing of a CO₂
  doubling (3.93 ± 0.47 W m⁻², 5–95 %, AR6 WG1 §7.3.2.1), truncated to ±20 %.
* a₂: log-normal whose 95th percentile is 3× the nominal value, truncated to [×0.2, ×5]:
  DICE-2016's a₂ = 0.00236 (2.1 % of output at 3 K, Nordhaus 2017, PNAS 114:1518) is near the
  low end of published estimates; meta-analyses give several times more (Howard & Sterner 2017,
  Environ. Resource Econ. 68:197). The spread is ours, stated here, not a fitted distribution.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxclimate.core.uncertainty import Factor, LogNormalFactor, NormalFactor, Uncertainty
from jaxclimate.envs.rice_n.params import RiceParams

ECS_SOURCE = "IPCC AR6 WG1 SPM A.4.4: very likely 2–5 K about 3 K"
F2X_SOURCE = "IPCC AR6 WG1 §7.3.2.1: 3.93 ± 0.47 W m⁻² (5–95 %)"
DAMAGE_SOURCE = "ours: 95th percentile 3× DICE-2016's a₂ (Nordhaus 2017) toward meta-analytic damages (Howard & Sterner 2017)"

ECS_SPREAD = LogNormalFactor.from_ratio(1.5811388300841898, 0.5, 2.0)  # √2.5: the 5–95 % ratio 2.5 split about the median
F2X_SPREAD = NormalFactor(0.47 / 1.6448536269514722 / 3.93, 0.8, 1.2)
DAMAGE_SPREAD = LogNormalFactor.from_ratio(3.0, 0.2, 5.0)


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
