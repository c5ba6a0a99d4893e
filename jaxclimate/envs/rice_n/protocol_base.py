"""The negotiation-protocol interface of RICE-N without its registry: :class:`Protocol`,
:class:`Levers` and what the environment does with a protocol's levers. Documented, with the
registry, in :mod:`jaxclimate.envs.rice_n.protocol` (which re-exports all of it); the built-in
protocols (``negotiation.py``) and users' protocols build on this module, so the registry
can import them without either importing it back."""

from __future__ import annotations

import functools
import inspect
import os
import re
import traceback
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np

from jaxclimate.core import struct
from jaxclimate.envs.rice_n.params import NUM_LEVELS

Array = jax.Array

#: The activity step's levers a protocol may restrict: name -> (first head, heads): one head
#: per region for savings, mitigation and the export limit; N heads (one per partner) for
#: tariffs and import bids (docs/rice_n.md §5.1).
LEVERS = ("savings", "mitigation", "export_limit", "tariffs", "bids")

#: A protocol's name: it names the environment, ``rice-n-<name>``.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


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


# --- a Python value asked of a traced one, reported where it happened ----------------------------

#: JAX's errors for a traced value used as a Python one (``if x``, ``int(x)``, ``np.asarray(x)``).
TRACER_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError, jax.errors.TracerIntegerConversionError)
#: The methods the environment traces (a stage's method too, named by ``stages``).
TRACED_METHODS = ("update", "init", "floors", "enforced", "features")
_JAX_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (jax, jaxlib))


class ProtocolTraceError(TypeError):
    """A protocol's method used a traced value as a Python value (an ``if`` on an array, a
    ``float()``, ``np.asarray``): one line naming the protocol, the stage or method and the
    file:line (JAX's own error is its ``__cause__``)."""


def _user_line(err: BaseException) -> str:
    """``file:line`` of the innermost frame of ``err``'s traceback outside JAX: where the
    protocol's code asked for the value."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not f.filename.startswith(_JAX_DIRS)]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def _trace_error(protocol: Any, where: str, err: BaseException) -> ProtocolTraceError:
    kind = {
        jax.errors.TracerBoolConversionError: "a Python if/and/or/not (bool) on a traced array",
        jax.errors.TracerIntegerConversionError: "int() or an index from a traced array",
        jax.errors.TracerArrayConversionError: "a NumPy array from a traced array",
    }.get(type(err), "a Python value from a traced array")
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
    return ProtocolTraceError(
        f"rice-n protocol {getattr(protocol, 'name', '?')!r}: {where} ({_user_line(err)}): {kind}; the environment runs it under jit, "
        f"so take both branches with jnp.where (or jax.lax.cond) instead [JAX: {first}]"
    )


def _stage_or_method(name: str, args: tuple) -> str:
    if name == "update" and args and isinstance(args[0], str):
        return f"stage {args[0]!r}"
    return f"{name}()"


def _reporting_trace_errors(name: str, method: Callable) -> Callable:
    """``method`` with JAX's tracer errors re-raised as :class:`ProtocolTraceError`."""
    where = f"stage {name!r}" if name not in TRACED_METHODS else None

    @functools.wraps(method)
    def reporting(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except TRACER_ERRORS as err:
            raise _trace_error(self, where or _stage_or_method(name, args), err) from err

    reporting._reports_trace_errors = True
    return reporting


class Protocol:
    """Base class of negotiation protocols (see :mod:`jaxclimate.envs.rice_n.protocol`): no
    stages, no heads, no state, no floors, nothing enforced, no features — which is protocol
    ``"none"``. Subclass it and override what your protocol needs; ``name`` appears in the
    environment's name.

    A Python ``if`` (or ``float()``, ``np.asarray``) on a traced value in a subclass's stage,
    ``update``, ``init``, ``floors``, ``enforced`` or ``features`` is reported naming the
    protocol, the stage and the file:line (:class:`ProtocolTraceError`)."""

    name: str = "protocol"
    stages: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        stages = cls.__dict__.get("stages", getattr(cls, "stages", ()))
        stages = tuple(s for s in stages if isinstance(s, str)) if isinstance(stages, (tuple, list)) else ()
        for name in TRACED_METHODS + stages:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and not getattr(method, "_reports_trace_errors", False):
                setattr(cls, name, _reporting_trace_errors(name, method))

    def heads(self, n: int) -> Mapping[str, Sequence[int]]:
        return {}

    def init(self, n: int, dtype: Any) -> Any:
        return ()

    def default_params(self) -> Any:
        return None

    def update(self, stage: str, pstate: Any, levels: Array, state: Any, params: Any) -> Any:
        """Stage ``stage``'s update: the method of that name."""
        try:
            return getattr(self, stage)(pstate, levels, state, params)
        except TRACER_ERRORS as err:
            raise _trace_error(self, f"stage {stage!r}", err) from err

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


def check_traced_shapes(env: Any) -> None:
    """Each stage, ``floors``, ``enforced`` and ``features`` of ``env.protocol`` evaluated
    abstractly (``jax.eval_shape``: traced, nothing runs; milliseconds) on ``env``'s state:
    stage updates keep the state's structure, shapes and dtypes; features are (N, F); levers
    have their shapes. Raises ``ValueError`` naming the protocol and what is wrong, or
    :class:`ProtocolTraceError` for Python control flow on a traced value — at construction
    rather than at the first step. ``env``: a :class:`~jaxclimate.envs.rice_n.RiceN`."""
    protocol, n = env.protocol, env.num_regions
    who = f"rice-n protocol {protocol.name!r}"
    params = env.default_params
    state = jax.eval_shape(env._initial_state, params)
    want = jax.tree_util.tree_structure(state.negotiation), [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(state.negotiation)]
    for name in protocol.stages:
        start, stop = env.stage_slices[name]
        levels = jax.ShapeDtypeStruct((n, stop - start), jnp.int32)
        new = jax.eval_shape(lambda s, lv, p, name=name: protocol.update(name, s.negotiation, lv, s, p), state, levels, params)
        got = jax.tree_util.tree_structure(new), [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(new)]
        if got != want:
            raise ValueError(f"{who}: stage {name!r} returns a state of another structure, shape or dtype than init(): {got} != {want}")
    features = jax.eval_shape(protocol.features, state.negotiation)
    if features is not None and (features.ndim != 2 or features.shape[0] != n):
        raise ValueError(f"{who}: features must be (N, F) = ({n}, F), got {features.shape}")
    for what in ("floors", "enforced"):
        levers = jax.eval_shape(getattr(protocol, what), state.negotiation, params)
        if not isinstance(levers, Levers):
            raise ValueError(f"{who}: {what}() must return a Levers, got {type(levers).__name__}")
        for lever, floor in levers.items():
            shape = (n,) if lever_heads(n)[lever][1] == 1 else (n, n)
            if floor.shape != shape:
                raise ValueError(f"{who}: {what}().{lever} must have shape {shape}, got {floor.shape}")


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
