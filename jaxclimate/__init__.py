"""jaxclimate: JAX-native multi-agent climate-policy and climate-model environments."""

from jaxclimate import envs as _envs  # noqa: F401  (declares the built-in environment ids; imports none of them)
from jaxclimate.core import Environment, EnvParams, EnvState, make, registered_envs

__version__ = "0.1.0"

__all__ = ["Environment", "EnvParams", "EnvState", "make", "registered_envs", "load_policy", "__version__"]


def __getattr__(name: str):
    if name == "load_policy":  # imported on first use: it brings the trainers and orbax
        from jaxclimate.policy import load_policy

        return load_policy
    raise AttributeError(f"module 'jaxclimate' has no attribute {name!r}")
