"""The climate-mitigation game of the CICERO-SCM surrogate paper (docs/climate_mitigation.md §3)."""

from jaxclimate.envs.climate_mitigation.env import GROUP, HORIZON, LOOKAHEAD, ClimateMitigation, MitigationParams, MitigationState, baseline_arrays
from jaxclimate.envs.climate_mitigation.presets import SCENARIOS, scenario_preset

__all__ = [
    "GROUP",
    "HORIZON",
    "LOOKAHEAD",
    "ClimateMitigation",
    "MitigationParams",
    "MitigationState",
    "SCENARIOS",
    "baseline_arrays",
    "scenario_preset",
]
