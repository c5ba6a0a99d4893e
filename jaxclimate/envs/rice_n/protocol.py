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

:func:`jaxclimate.envs.rice_n.check_protocol` checks a protocol against these rules.

Levers are rates on the 0.1 grid of the action levels: masks read a floor as the level
round(10·floor). A floor computed from continuous quantities should be put on the grid first
(:func:`up_to_level`), or the mask would allow a level below what is enforced.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.envs.rice_n.params import NUM_LEVELS

Array = jax.Array

#: The activity step's levers a protocol may restrict: name -> (first head, heads): one head
#: per region for savings, mitigation and the export limit; N heads (one per partner) for
#: tariffs and import bids (docs/rice_n.md §5.1).
LEVERS = ("savings", "mitigation", "export_limit", "tariffs", "bids")


def lever_heads(n: int) -> dict[str, tuple[int, int]]:
    """Each lever's (first head, number of heads) in the activity action vector."""
    return {"savings": (0, 1), "mitigation": (1, 1), "export_limit": (2, 1), "tariffs": (3, n), "bids": (3 + n, n)}


@struct.dataclass
class Levers:
    """Floors on the activity step's rates: (N,) for ``savings``, ``mitigation`` and
    ``export_limit`` (region i's own rate), (N, N) for ``tariffs`` and ``bids`` (row i, the
    rate region i applies to partner j). ``None``: no floor on that lever."""

    savings: Any = None
    mitigation: Any = None
    export_limit: Any = None
    tariffs: Any = None
    bids: Any = None

    def items(self) -> list[tuple[str, Array]]:
        """The levers that carry a floor, in :data:`LEVERS` order."""
        return [(name, getattr(self, name)) for name in LEVERS if getattr(self, name) is not None]


def up_to_level(rate: Array) -> Array:
    """The lowest rate on the action grid (level/10) at or above ``rate``: ceil(10·rate)/10,
    with a 1e-6 tolerance so a rate already on the grid (0.3 = 3/10 in floating point) stays."""
    return jnp.ceil(rate * NUM_LEVELS - 1e-6) / NUM_LEVELS


class Protocol:
    """Base class of negotiation protocols (see the module docstring): no stages, no heads, no
    state, no floors, nothing enforced, no features — which is protocol ``"none"``. Subclass it
    and override what your protocol needs; ``name`` appears in the environment's name."""

    name: str = "protocol"
    stages: tuple[str, ...] = ()

    def heads(self, n: int) -> Mapping[str, Sequence[int]]:
        return {}

    def init(self, n: int, dtype: Any) -> Any:
        return ()

    def default_params(self) -> Any:
        return None

    def update(self, stage: str, pstate: Any, levels: Array, state: Any, params: Any) -> Any:
        """Stage ``stage``'s update: the method of that name."""
        return getattr(self, stage)(pstate, levels, state, params)

    def floors(self, pstate: Any, params: Any) -> Levers:
        return Levers()

    def enforced(self, pstate: Any, params: Any) -> Levers:
        return Levers()

    def features(self, pstate: Any) -> Array | None:
        return None

    def state_from_record(self, get: Callable[[str], np.ndarray], n: int, dtype: Any) -> Any:
        """The protocol state of a row of a recorded episode (``get(key)`` reads a record key);
        by default the initial state."""
        return self.init(n, dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


# --- the registry ---------------------------------------------------------------------------------

_PROTOCOLS: dict[str, Callable[[], Protocol]] = {}


#: A protocol's name: it names the environment, ``rice-n-<name>``.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def register_protocol(name: str, factory: Callable[[], Protocol]) -> None:
    """Make ``protocol=name`` build ``factory()`` (a class or a function of no arguments). The
    same code registered again (a user's file loaded once more) replaces the earlier entry."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"a protocol name must be letters, digits, '_', '.' or '-', starting with a letter or digit; got {name!r}")
    if name in _PROTOCOLS and not _same_code(_PROTOCOLS[name], factory):
        raise ValueError(f"rice-n protocol {name!r} is already registered")
    _PROTOCOLS[name] = factory


def _same_code(a: Any, b: Any) -> bool:
    """The same class or function, or the same one defined again (its module executed anew)."""
    return a is b or (getattr(a, "__module__", None), getattr(a, "__qualname__", None)) == (
        getattr(b, "__module__", object()),
        getattr(b, "__qualname__", object()),
    )


def registered_protocols() -> list[str]:
    """The registered protocol names (the built-ins first)."""
    _load_builtin_protocols()
    return list(_PROTOCOLS)


def _load_builtin_protocols() -> None:
    """The built-ins register themselves when their module is imported."""
    importlib.import_module("jaxclimate.envs.rice_n.negotiation")


def resolve_protocol(spec: Any) -> Protocol:
    """A :class:`Protocol` from ``spec``: a protocol object; a registered name; or
    ``"package.module:Name"`` / ``"path/to/file.py:Name"`` naming a protocol class (built with
    no arguments), factory or object in the user's own code."""
    _load_builtin_protocols()
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
            module_spec = importlib.util.spec_from_file_location(f"_rice_n_protocol_{path.stem}", path)
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


def stage_heads(protocol: Protocol, n: int) -> list[np.ndarray]:
    """The levels of each stage's heads, in stage order, checked (2..10 levels per head)."""
    heads = dict(protocol.heads(n))
    who = f"rice-n protocol {protocol.name!r}"
    if set(heads) != set(protocol.stages):
        raise ValueError(f"{who}: heads(n) must name exactly the stages {list(protocol.stages)}, got {sorted(heads)}")
    out = []
    for stage in protocol.stages:
        levels = np.asarray(heads[stage], dtype=np.int64).reshape(-1)
        if levels.size == 0 or levels.min() < 2 or levels.max() > NUM_LEVELS:
            raise ValueError(f"{who}: stage {stage!r} needs at least one head with 2..{NUM_LEVELS} levels each, got {levels.tolist()}")
        out.append(levels)
    return out


# --- what the environment does with a protocol's levers ------------------------------------------


def level_of(rate: Array) -> Array:
    """The level of a rate, round(10·rate), as an integer."""
    return jnp.round(rate * NUM_LEVELS).astype(jnp.int32)


def lowest_levels(floors: Levers, n: int, num_heads: int) -> Array | None:
    """(N, A, 1) lowest allowed level per region and head from ``floors`` (``None`` without
    floors). Built as broadcast selections by head index, not a scatter: cheap to fuse into
    the (N, A, 10) mask."""
    head = jnp.arange(num_heads)[:, None]  # (A, 1)
    lowest = None
    for name, floor in floors.items():
        start, width = lever_heads(n)[name]
        level = level_of(floor)
        if width == 1:
            value, where = level[:, None, None], head == start
        else:
            value, where = jnp.pad(level, ((0, 0), (start, num_heads - start - width)))[..., None], (head >= start) & (head < start + width)
        lowest = jnp.where(where, value, 0 if lowest is None else lowest)
    return lowest


def apply_levers(rates: dict[str, Array], enforced: Levers) -> dict[str, Array]:
    """rate ← max(rate, floor) for every enforced lever."""
    return dict(rates, **{name: jnp.maximum(rates[name], floor) for name, floor in enforced.items()})
