"""jaxclimate: JAX-native multi-agent climate-policy and climate-model environments.

The names below are imported on first use, so ``python -m jaxclimate.<command>`` starts its
Ctrl-C guard before JAX loads (jaxclimate/_cli.py)."""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Environment": "jaxclimate.core",
    "EnvParams": "jaxclimate.core",
    "EnvState": "jaxclimate.core",
    "make": "jaxclimate.core",
    "registered_envs": "jaxclimate.core",
    "load_policy": "jaxclimate.policy",  # brings the trainers and orbax
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'jaxclimate' has no attribute {name!r}")
