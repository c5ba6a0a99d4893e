"""Evaluation metrics shared across environments."""

from jaxclimate.envs.ebm.evaluation import BAND_NAMES as EBM_BAND_NAMES
from jaxclimate.envs.ebm.evaluation import area_weighted_rmse_bands

__all__ = ["EBM_BAND_NAMES", "area_weighted_rmse_bands"]
