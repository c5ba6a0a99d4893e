"""``make(env_id, **overrides) -> (env, params)`` and the list of registered ids.

An id is registered with its factory — a callable, or a ``"module:attribute"`` string imported
on first use (how the built-in environments are declared, in ``jaxclimate/envs/__init__.py``:
listing or looking up ids imports no environment) — its constructor defaults and optionally
its training report.

An override goes to the environment's constructor if the constructor takes an argument of
that name (static choices: number of agents, dtype), and otherwise replaces a field of the
default ``EnvParams`` (values, validated on construction); a dotted name (``negotiation.rate``)
replaces a field of a dataclass held in a parameter. Unknown names are an error.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import TYPE_CHECKING, Any, Callable, Union

import numpy as np

if TYPE_CHECKING:  # the registry loads no JAX: `import jaxclimate` declares the ids before JAX is in
    from jaxclimate.core.env import Environment, EnvParams

#: ``"package.module:Attribute"``: where a factory or a report is imported from on first use.
SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")

Factory = Union[Callable[..., "Environment"], str]

_REGISTRY: dict[str, tuple[Factory, dict[str, Any]]] = {}
_REPORTS: dict[str, str] = {}


def register(env_id: str, factory: Factory, *, report: str | None = None, **defaults: Any) -> None:
    """Register ``factory`` under ``env_id`` with constructor defaults.

    ``factory``: the environment class (or any callable returning an environment), or its
    ``"module:Class"`` path, imported only when the id is first made (so registering many
    environments imports none of them).

    ``report``: where the training CLI finds how to present this environment, as
    ``"module:attribute"`` of a ``jaxclimate.reporting.TrainingReport`` subclass (imported only
    by the reporting layer, so an environment knows nothing of reports)."""
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    if isinstance(factory, str) and not SPEC.fullmatch(factory):
        raise ValueError(f"{env_id}: a factory given by name must be 'module:attribute', got {factory!r}")
    if not isinstance(factory, str) and not callable(factory):
        raise ValueError(f"{env_id}: factory must be callable or a 'module:attribute' string, got {factory!r}")
    if report is not None and not (isinstance(report, str) and SPEC.fullmatch(report)):
        raise ValueError(f"report must be 'module:attribute', got {report!r}")
    _REGISTRY[env_id] = (factory, defaults)
    if report is not None:
        _REPORTS[env_id] = report


def load(spec: str) -> Any:
    """The object ``"package.module:attribute"`` names (the module imported now)."""
    module, _, attribute = spec.partition(":")
    obj = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def _check_id(env_id: str) -> None:
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment id {env_id!r}; registered: {', '.join(sorted(_REGISTRY))}")


def _entry(env_id: str) -> tuple[Callable[..., Environment], dict, set[str]]:
    """``env_id``'s factory (imported now if declared by name), its default options and the
    names of its constructor options."""
    _check_id(env_id)
    factory, defaults = _REGISTRY[env_id]
    if isinstance(factory, str):
        try:
            loaded = load(factory)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"{env_id}: its factory {factory!r} cannot be imported: {err}") from err
        _REGISTRY[env_id] = (loaded, defaults)
        factory = loaded
    return factory, defaults, set(inspect.signature(factory).parameters) - {"self"}


def report_path(env_id: str) -> str | None:
    """The ``"module:attribute"`` of ``env_id``'s training report, if it registered one."""
    _check_id(env_id)
    return _REPORTS.get(env_id)


def registered_envs() -> list[str]:
    """All registered environment ids, sorted (nothing of the environments is imported)."""
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
