"""InvestESG: companies and investors under ESG disclosure (Hou, Yuan & Jaques; docs/invest_esg.md)."""

from jaxclimate.envs.invest_esg.env import (
    COMPANIES,
    INVESTORS,
    REFERENCE_EVENT_UNIFORMS,
    InvestESG,
    InvestESGState,
    climate_risk,
    episode_metrics,
    hazard_probabilities,
    invest,
    market_wealth,
)
from jaxclimate.envs.invest_esg.params import ALIASES, CONFIGS, HAZARDS, InvestESGParams, MarketConfig, market_config

__all__ = [
    "ALIASES",
    "COMPANIES",
    "CONFIGS",
    "HAZARDS",
    "INVESTORS",
    "REFERENCE_EVENT_UNIFORMS",
    "InvestESG",
    "InvestESGParams",
    "InvestESGState",
    "MarketConfig",
    "climate_risk",
    "episode_metrics",
    "hazard_probabilities",
    "invest",
    "market_config",
    "market_wealth",
]
