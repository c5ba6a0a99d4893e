"""jaxclimate: JAX-native multi-agent climate-policy and climate-model environments."""

from jaxclimate.core import Environment, EnvParams, EnvState, make, registered_envs

__version__ = "0.1.0"

__all__ = ["Environment", "EnvParams", "EnvState", "make", "registered_envs", "__version__"]
