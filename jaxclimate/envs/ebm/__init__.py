"""Budyko–Sellers energy balance model and the FedRAIN-Lite environments ebm-v1/v2/v3."""

from jaxclimate.envs.ebm.env import ACTION_BOUNDS, GROUP, TARGET, EBMEnv, EBMParams, EBMState, load_target, model_step, simulate
from jaxclimate.envs.ebm.evaluation import BAND_NAMES, area_weighted_rmse_bands, static_baseline
from jaxclimate.envs.ebm.physics import ebm_step

__all__ = [
    "ACTION_BOUNDS",
    "BAND_NAMES",
    "GROUP",
    "TARGET",
    "EBMEnv",
    "EBMParams",
    "EBMState",
    "area_weighted_rmse_bands",
    "ebm_step",
    "load_target",
    "model_step",
    "simulate",
    "static_baseline",
]
