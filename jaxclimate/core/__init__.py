"""The environment API: base classes, spaces, wrappers and the registry."""

from jaxclimate.core import spaces, struct
from jaxclimate.core.env import Environment, EnvParams, EnvState
from jaxclimate.core.registry import make, register, registered_envs
from jaxclimate.core.wrappers import CheckedActions, EpisodeStatistics, PerAgentDictAdapter, Wrapper

__all__ = [
    "Environment",
    "EnvParams",
    "EnvState",
    "CheckedActions",
    "EpisodeStatistics",
    "PerAgentDictAdapter",
    "Wrapper",
    "make",
    "register",
    "registered_envs",
    "spaces",
    "struct",
]
