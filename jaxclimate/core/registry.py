"""``make(env_id, **overrides) -> (env, params)`` and the list of registered ids.

An override goes to the environment's constructor if the constructor takes an argument of
that name (static choices: number of agents, dtype), and otherwise replaces a field of the
default ``EnvParams`` (values, validated on construction); a dotted name (``negotiation.rate``)
replaces a field of a dataclass held in a parameter. Unknown names are an error.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

import numpy as np

from jaxclimate.core.env import Environment, EnvParams

_REGISTRY: dict[str, tuple[Callable[..., Environment], dict[str, Any]]] = {}
_REPORTS: dict[str, str] = {}


def register(env_id: str, factory: Callable[..., Environment], *, report: str | None = None, **defaults: Any) -> None:
    """Register ``factory`` (usually the env class) under ``env_id`` with constructor defaults.

    ``report``: where the training CLI finds how to present this environment, as
    ``"module:attribute"`` of a ``jaxclimate.reporting.TrainingReport`` subclass (imported only
    by the reporting layer, so an environment knows nothing of reports)."""
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    if report is not None and report.count(":") != 1:
        raise ValueError(f"report must be 'module:attribute', got {report!r}")
    _REGISTRY[env_id] = (factory, defaults)
    if report is not None:
        _REPORTS[env_id] = report


def _entry(env_id: str) -> tuple[Callable[..., Environment], dict, set[str]]:
    """``env_id``'s factory, its default options and the names of its constructor options."""
    _load_builtin_envs()
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment id {env_id!r}; registered: {', '.join(sorted(_REGISTRY))}")
    factory, defaults = _REGISTRY[env_id]
    return factory, defaults, set(inspect.signature(factory).parameters) - {"self"}


def report_path(env_id: str) -> str | None:
    """The ``"module:attribute"`` of ``env_id``'s training report, if it registered one."""
    _entry(env_id)
    return _REPORTS.get(env_id)


def registered_envs() -> list[str]:
    """All registered environment ids, sorted."""
    _load_builtin_envs()
    return sorted(_REGISTRY)


def make(env_id: str, **overrides: Any) -> tuple[Environment, EnvParams]:
    """Build a registered environment and its parameters.

    >>> env, params = make("ebm-v2", num_agents=6, D=0.62)   # doctest: +SKIP
    """
    factory, defaults, ctor_names = _entry(env_id)
    ctor_kwargs = dict(defaults)
    param_overrides = {}
    for name, value in overrides.items():
        if name in ctor_names:
            ctor_kwargs[name] = value
        else:
            param_overrides[name] = value
    env = factory(**ctor_kwargs)
    params = env.default_params
    for name, value in param_overrides.items():
        params = _replace_field(env_id, params, name, value, ctor_names, name)
    return env, params


def override_params(env_id: str, params: Any, overrides: dict[str, Any]) -> Any:
    """``params`` of ``env_id`` with ``overrides`` set as :func:`make` sets them (dotted names for
    nested fields, numbers checked), for an environment already built: a constructor option
    is refused, naming it, since it would build another environment."""
    ctor_names = _entry(env_id)[2]
    for name, value in overrides.items():
        if name in ctor_names:
            raise ValueError(f"{env_id}: {name!r} is a constructor option, not a parameter (it builds another environment: train a run with it)")
        params = _replace_field(env_id, params, name, value, ctor_names, name)
    return params


def _replace_field(env_id: str, params: Any, name: str, value: Any, ctor_names: set[str], full: str) -> Any:
    """``params`` with field ``name`` (dotted: a field of a nested dataclass) set to ``value``;
    ``full`` is the option as the user gave it."""
    head, _, rest = name.partition(".")
    fields = {f.name for f in dataclasses.fields(params)} if dataclasses.is_dataclass(params) else set()
    if head not in fields:
        where = f"parameters: {sorted(fields)}" if fields else "that parameter holds no fields"
        raise ValueError(f"{env_id}: unknown option {full!r}; constructor options: {sorted(ctor_names)}; {where}")
    current = getattr(params, head)
    if rest:
        return params.replace(**{head: _replace_field(env_id, current, rest, value, ctor_names, full)})
    _check_numeric(env_id, full, value, current)
    return params.replace(**{head: value})


def _check_numeric(env_id: str, name: str, value: Any, default: Any) -> None:
    """A numeric parameter takes numbers (a string from the command line, say, is refused here,
    naming the field, rather than deep inside JAX)."""
    if _is_numeric(default) and not _is_numeric(value):
        raise ValueError(f"{env_id}: parameter {name} must be a number or an array of numbers, got {value!r}")


def _is_numeric(x: Any) -> bool:
    try:
        return np.asarray(x).dtype.kind in "biuf"
    except (TypeError, ValueError):  # ragged or otherwise not an array
        return False


def _load_builtin_envs() -> None:
    import jaxclimate.envs  # noqa: F401  (registers the built-in environments)
