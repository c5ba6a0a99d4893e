"""The paper's two game configurations (Appendix D, Tables A.3/A.4; docs/climate_mitigation.md §3.3, §3.7).

Scenario (i) "tractable": four identical countries, energy lever only, adaptation is pure
cost (Pmax = 0). Scenario (ii) "intractable": ten heterogeneous countries, the full policy
matrix, adaptation prevents up to half of the damage (Pmax = 0.5).
"""

from __future__ import annotations

import numpy as np

#: Policy matrix M (levers × gases): change in annual growth per unit effort (docs/climate_mitigation.md §3.3).
#: Rows energy, methane, agriculture; columns CO2_FF, CO2_AFOLU, CH4, N2O, SO2.
POLICY_MATRIX_FULL = np.array([[-0.05, 0.0, -0.005, -0.005, -0.05], [0.0, 0.0, -0.04, 0.0, 0.0], [0.0, -0.04, -0.005, -0.03, 0.0]])
POLICY_MATRIX_ENERGY_ONLY = POLICY_MATRIX_FULL * np.array([[1.0], [0.0], [0.0]])

SCENARIOS: dict[str, dict[str, np.ndarray | float]] = {
    "i": {
        "shares": np.full(4, 0.25),
        "damage_cost": np.full(4, 100.0),
        # columns: energy, methane, agriculture
        "lever_cost": np.tile([0.001, 10.0, 10.0], (4, 1)),
        "adaptation_cost": np.full(4, 10.0),
        "max_prevention": 0.0,
        "policy_matrix": POLICY_MATRIX_ENERGY_ONLY,
    },
    "ii": {
        "shares": np.array([0.35, 0.15, 0.10, 0.05, 0.02, 0.01, 0.03, 0.14, 0.10, 0.05]),
        "damage_cost": np.array([50, 50, 100, 100, 10, 25, 50, 1000, 1, 15], dtype=float),
        "lever_cost": np.stack(
            [
                [0.001, 0.01, 0.1, 10, 0.1, 0.001, 0.01, 0.1, 10, 0.1],  # energy
                [0.001, 0.01, 10, 0.1, 0.1, 0.2, 0.05, 0.1, 10, 0.1],  # methane
                [0.1, 10, 0.01, 0.001, 0.1, 0.001, 10, 100, 10, 0.1],  # agriculture
            ],
            axis=1,
        ).astype(float),
        "adaptation_cost": np.array([10, 0.1, 0.01, 0.001, 0.1, 0.001, 0.01, 0.1, 10, 0.1], dtype=float),
        "max_prevention": 0.5,
        "policy_matrix": POLICY_MATRIX_FULL,
    },
}


def scenario_preset(name: str) -> dict[str, np.ndarray | float]:
    """A copy of the preset arrays for scenario ``"i"`` or ``"ii"``."""
    if name not in SCENARIOS:
        raise ValueError(f"climate-mitigation scenario must be one of {sorted(SCENARIOS)}, got {name!r}")
    return {k: np.array(v, dtype=float) for k, v in SCENARIOS[name].items()}
