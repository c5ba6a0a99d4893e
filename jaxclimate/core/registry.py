"""``make(env_id, **overrides) -> (env, params)`` and the list of registered ids.

An override goes to the environment's constructor if the constructor takes an argument of
that name (static choices: number of agents, dtype), and otherwise replaces a field of the
default ``EnvParams`` (values, validated on construction). Unknown names are an error.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from jaxclimate.core.env import Environment, EnvParams

_REGISTRY: dict[str, tuple[Callable[..., Environment], dict[str, Any]]] = {}


def register(env_id: str, factory: Callable[..., Environment], **defaults: Any) -> None:
    """Register ``factory`` (usually the env class) under ``env_id`` with constructor defaults."""
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    _REGISTRY[env_id] = (factory, defaults)


def registered_envs() -> list[str]:
    """All registered environment ids, sorted."""
    _load_builtin_envs()
    return sorted(_REGISTRY)


def make(env_id: str, **overrides: Any) -> tuple[Environment, EnvParams]:
    """Build a registered environment and its parameters.

    >>> env, params = make("ebm-v2", num_agents=6, D=0.62)   # doctest: +SKIP
    """
    _load_builtin_envs()
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment id {env_id!r}; registered: {', '.join(sorted(_REGISTRY))}")
    factory, defaults = _REGISTRY[env_id]
    ctor_names = set(inspect.signature(factory).parameters) - {"self"}
    ctor_kwargs = dict(defaults)
    param_overrides = {}
    for name, value in overrides.items():
        if name in ctor_names:
            ctor_kwargs[name] = value
        else:
            param_overrides[name] = value
    env = factory(**ctor_kwargs)
    params = env.default_params
    field_names = {f.name for f in dataclasses.fields(params)}
    unknown = sorted(set(param_overrides) - field_names)
    if unknown:
        raise ValueError(
            f"{env_id}: unknown option(s) {unknown}; constructor options: {sorted(ctor_names)}; "
            f"parameters: {sorted(field_names)}"
        )
    if param_overrides:
        params = params.replace(**param_overrides)
    return env, params


def _load_builtin_envs() -> None:
    import jaxclimate.envs  # noqa: F401  (registers the built-in environments)
