"""What the literature says of the climate's and the damages' uncertain numbers, as spreads of
multipliers of a nominal value (median 1; docs/robustness.md), shared by the games that draw
them (RICE-N: ``jaxclimate/envs/rice_n/uncertainty.py``; the climate game:
``jaxclimate/envs/climate_mitigation/uncertainty.py``).

* ECS: log-normal with the spread of IPCC AR6 WG1's *very likely* range (2–5 K about a best
  estimate of 3 K, SPM A.4.4: a 5–95 % ratio of 2.5), truncated to [×0.5, ×2] (1.55–6.2 K
  about DICE-2016's 3.1 K; AR6 finds ECS below 1.5 K extremely unlikely).
* F_2x: normal with AR6's relative spread of the effective radiative forcing of a CO₂
  doubling (3.93 ± 0.47 W m⁻², 5–95 %, AR6 WG1 §7.3.2.1), truncated to ±20 %.
* damages: log-normal whose 95th percentile is 3× the nominal value, truncated to [×0.2, ×5]:
  DICE-2016's a₂ = 0.00236 (2.1 % of output at 3 K, Nordhaus 2017, PNAS 114:1518) is near the
  low end of published estimates; meta-analyses give several times more (Howard & Sterner 2017,
  Environ. Resource Econ. 68:197). The spread is ours, stated here, not a fitted distribution.
"""

from __future__ import annotations

from jaxclimate.core.uncertainty import LogNormalFactor, NormalFactor

ECS_SOURCE = "IPCC AR6 WG1 SPM A.4.4: very likely 2–5 K about 3 K"
F2X_SOURCE = "IPCC AR6 WG1 §7.3.2.1: 3.93 ± 0.47 W m⁻² (5–95 %)"
DAMAGE_SOURCE = "ours: 95th percentile 3× DICE-2016's a₂ (Nordhaus 2017) toward meta-analytic damages (Howard & Sterner 2017)"

ECS_SPREAD = LogNormalFactor.from_ratio(1.5811388300841898, 0.5, 2.0)  # √2.5: the 5–95 % ratio 2.5 split about the median
F2X_SPREAD = NormalFactor(0.47 / 1.6448536269514722 / 3.93, 0.8, 1.2)
DAMAGE_SPREAD = LogNormalFactor.from_ratio(3.0, 0.2, 5.0)
