"""The environment API: base classes, spaces, wrappers and the registry (each name imported on
first use: ``import jaxclimate`` declares the built-in ids before JAX loads)."""

import importlib

_EXPORTS = {
    "Environment": "jaxclimate.core.env",
    "EnvParams": "jaxclimate.core.env",
    "EnvState": "jaxclimate.core.env",
    "CheckedActions": "jaxclimate.core.wrappers",
    "EpisodeStatistics": "jaxclimate.core.wrappers",
    "PerAgentDictAdapter": "jaxclimate.core.wrappers",
    "Wrapper": "jaxclimate.core.wrappers",
    "make": "jaxclimate.core.registry",
    "register": "jaxclimate.core.registry",
    "registered_envs": "jaxclimate.core.registry",
}
_SUBMODULES = ("spaces", "struct")

__all__ = [*_EXPORTS, *_SUBMODULES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"jaxclimate.core.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'jaxclimate.core' has no attribute {name!r}")
