"""The negotiation-protocol interface of RICE-N (docs/protocols.md).

RICE-N was built to compare agreements (paper §4): a protocol is a plug-in, an object that
declares everything the environment needs to know of it, so a new agreement is written in the
user's own file and the environment has no branch on any protocol's name.

A protocol declares

* ``stages``: the names of the negotiation stages that precede each activity step, in order.
  With S stages an episode cycles ``stage 1, …, stage S, activity`` (env step k is at stage
  k mod (S + 1), 0 being the activity step), so it lasts ``(S + 1)·num_activity_steps`` steps;
* ``heads(n)``: for each stage, the levels of each action head it reads (2..10 levels; value =
  level as an integer). Every region submits the whole action vector at every step: the 3 + 2N
  activity heads (savings, mitigation, export limit, tariffs, import bids; 10 levels each),
  then each stage's heads in stage order; a stage reads its own slice only;
* ``init(n, dtype)``: its own state, a pytree carried in ``RiceState.negotiation``;
* one method per stage, named after it, ``stage(pstate, levels, state, params) -> pstate``: the
  update from the regions' (N, width) levels of that stage's heads. It sees the whole
  environment state (read-only) and returns only its own state: a protocol cannot change the
  economy except through the levers below;
* ``floors(pstate, params) -> Levers``: the lowest rates the next activity step's action masks
  allow, per lever (a lever left ``None`` is unrestricted);
* ``enforced(pstate, params) -> Levers``: what the activity step imposes whatever the regions
  chose, rate ← max(rate, floor) per lever. Whatever it enforces, the masks must allow
  (an enforced floor at or below the mask's lowest level), so a masked policy's choice is
  applied unchanged;
* ``features(pstate) -> (N, F)``: the protocol's per-region observation features (or ``None``);
* ``default_params()``: optional numbers of its own (a pytree, ``RiceParams.negotiation``:
  ``vmap``-able like every parameter; ``--env-set negotiation.<field>=…``).

:func:`jaxclimate.envs.rice_n.check_protocol` checks a protocol against these rules
(``python -m jaxclimate.check_protocol SPEC`` from a shell). A Python ``if`` on a traced value
in a stage is reported naming the protocol, the stage and the file:line.

Levers are rates on the 0.1 grid of the action levels: masks read a floor as the level
round(10·floor). A floor computed from continuous quantities should be put on the grid first
(:func:`up_to_level`), or the mask would allow a level below what is enforced.

This module is also the registry of protocol names: the built-ins of ``negotiation.py``
(:data:`BUILTIN_PROTOCOLS`), then the users' (:func:`register_protocol`). The interface
itself lives in ``protocol_base.py``, re-exported here, so that ``negotiation.py`` and users'
protocols build on it without importing the registry.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable

from jaxclimate.envs.rice_n.negotiation import Bilateral, Club, NoNegotiation
from jaxclimate.envs.rice_n.protocol_base import (
    LEVERS,
    NAME,
    Levers,
    Protocol,
    ProtocolTraceError,
    apply_levers,
    check_traced_shapes,
    level_of,
    lever_heads,
    lowest_levels,
    stage_heads,
    up_to_level,
)

__all__ = [
    "BUILTIN_PROTOCOLS",
    "LEVERS",
    "NAME",
    "Levers",
    "Protocol",
    "ProtocolTraceError",
    "apply_levers",
    "check_traced_shapes",
    "is_builtin",
    "level_of",
    "lever_heads",
    "lowest_levels",
    "register_protocol",
    "registered_protocols",
    "resolve_protocol",
    "stage_heads",
    "up_to_level",
]

# --- the registry ---------------------------------------------------------------------------------

#: The built-in protocols (docs/rice_n.md §7), by name: listed first by :func:`registered_protocols`.
BUILTIN_PROTOCOLS: dict[str, Callable[[], Protocol]] = {"none": NoNegotiation, "bilateral": Bilateral, "club": Club}

_PROTOCOLS: dict[str, Callable[[], Protocol]] = dict(BUILTIN_PROTOCOLS)


def register_protocol(name: str, factory: Callable[[], Protocol]) -> None:
    """Make ``protocol=name`` build ``factory()`` (a class or a function of no arguments). The
    same code registered again (a user's file loaded once more, or by path) replaces the
    earlier entry."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"a protocol name must be letters, digits, '_', '.' or '-', starting with a letter or digit; got {name!r}")
    if name in _PROTOCOLS and not _same_code(_PROTOCOLS[name], factory):
        raise ValueError(f"rice-n protocol {name!r} is already registered")
    _PROTOCOLS[name] = factory


def _code_identity(obj: Any) -> tuple[str | None, str | None]:
    """Where ``obj`` (a class or function) is defined: its module's file (resolved; the
    module's name if it has no file) and its qualified name. A file loaded by path
    (``"file.py:Name"``) is imported under a module name of its own, so the file, not the
    module's name, tells that it is the code a user registered after importing it."""
    module_name = getattr(obj, "__module__", None)
    file = getattr(sys.modules.get(module_name), "__file__", None) if module_name else None
    where = str(Path(file).resolve()) if file else module_name
    return where, getattr(obj, "__qualname__", None)


def _same_code(a: Any, b: Any) -> bool:
    """The same class or function, or the same one defined again (its module executed anew,
    or its file loaded by path under another module name)."""
    if a is b:
        return True
    identity = _code_identity(a)
    return None not in identity and identity == _code_identity(b)


def registered_protocols() -> list[str]:
    """The registered protocol names (the built-ins first)."""
    return list(_PROTOCOLS)


def is_builtin(spec: Any) -> bool:
    """Whether ``spec`` names (or is an instance of) one of :data:`BUILTIN_PROTOCOLS`."""
    if isinstance(spec, str):
        return spec in BUILTIN_PROTOCOLS
    return type(spec) in BUILTIN_PROTOCOLS.values()


def resolve_protocol(spec: Any) -> Protocol:
    """A :class:`Protocol` from ``spec``: a protocol object; a registered name; or
    ``"package.module:Name"`` / ``"path/to/file.py:Name"`` naming a protocol class (built with
    no arguments), factory or object in the user's own code."""
    if isinstance(spec, Protocol):
        protocol = spec
    elif isinstance(spec, str) and spec in _PROTOCOLS:
        protocol = _PROTOCOLS[spec]()
    elif isinstance(spec, str) and spec.count(":") == 1:
        protocol = _load(spec)
    else:
        raise ValueError(
            f"rice-n protocol must be one of {registered_protocols()}, a Protocol object, or 'package.module:Name' / "
            f"'file.py:Name' of one; got {spec!r}"
        )
    _check_declaration(protocol)
    return protocol


def _load(spec: str) -> Protocol:
    """Import ``module:Name`` (or ``file.py:Name``) and build the protocol it names."""
    where, attribute = spec.split(":")
    try:
        if where.endswith(".py"):
            path = Path(where).expanduser().resolve()
            # a module name of its own per file (two files may share a stem): the file tells the code apart
            digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
            module_spec = importlib.util.spec_from_file_location(f"_rice_n_protocol_{path.stem}_{digest}", path)
            if module_spec is None or not path.exists():
                raise FileNotFoundError(f"no file {path}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_spec.name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
        obj = getattr(module, attribute)
    except (ImportError, AttributeError, FileNotFoundError) as err:
        raise ValueError(f"rice-n protocol {spec!r} cannot be loaded: {err}") from err
    try:
        protocol = obj if isinstance(obj, Protocol) or not callable(obj) else obj()
    except TypeError as err:
        raise ValueError(f"rice-n protocol {spec!r} cannot be built with no arguments: {err}") from err
    if not isinstance(protocol, Protocol):
        raise ValueError(f"rice-n protocol {spec!r} is a {type(protocol).__name__}, not a jaxclimate.envs.rice_n.Protocol")
    return protocol


def _check_declaration(protocol: Protocol) -> None:
    """The static declarations: a name of its own (it names the environment, ``rice-n-<name>``,
    in reports and results), stage names with a method each, heads for exactly those stages."""
    who = f"rice-n protocol {protocol.name!r}"
    if not isinstance(protocol.name, str) or not NAME.fullmatch(protocol.name):
        raise ValueError(
            f"{who}: name must be letters, digits, '_', '.' or '-', starting with a letter or digit (it names the environment rice-n-<name>)"
        )
    registered = type(_PROTOCOLS[protocol.name]()) if protocol.name in _PROTOCOLS else None
    if registered is not None and not _same_code(registered, type(protocol)):
        raise ValueError(
            f"{who}: that name is the registered {registered.__name__}'s; give {type(protocol).__name__} a name of its own "
            "so that its runs and results are not taken for the registered protocol's"
        )
    stages = tuple(protocol.stages)
    if len(set(stages)) != len(stages) or not all(isinstance(s, str) and s.isidentifier() for s in stages):
        raise ValueError(f"{who}: stages must be distinct identifiers, got {stages!r}")
    if "activity" in stages:
        raise ValueError(f"{who}: 'activity' is the environment's stage; name the negotiation stages otherwise")
    missing = [s for s in stages if not callable(getattr(protocol, s, None))]
    if missing and type(protocol).update is Protocol.update:
        raise ValueError(f"{who}: no method for stage(s) {missing} (one method per stage, or override update)")
