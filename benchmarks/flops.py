"""Count the arithmetic a JAX function performs, each loop as many times as it runs.

XLA's cost analysis counts a loop's body once, whatever its trip count: a climate-game step
that runs the GRU surrogate's cell over 40 window rows in a ``while_loop``, or CICERO-SCM's
24 carbon-cycle and 12 ocean sub-steps per year in ``lax.scan``, is costed as one pass. For a
roofline that undercounts the work by the trip count. :func:`count_flops` instead walks the
function's jaxpr: a ``scan`` body is counted ``length`` times; where the program has a
``while_loop`` it is run on concrete inputs, op by op, and each ``while_loop`` body is counted as
often as its condition lets it run on these inputs (a ``cond`` on its taken branch there).

What counts, per output element unless said: ``dot_general`` 2·K multiply-adds per output
element (K the contracted size); elementwise arithmetic, transcendental functions,
comparisons and selects one each; reductions one per input element. Data movement (reshape,
gather, slice, broadcast, convert) and random-bit generation count zero.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import numpy as np
from jax.extend import core as jex_core

ELEMENTWISE = frozenset(
    """
add sub mul div rem neg max min abs sign floor ceil round nextafter pow integer_pow sqrt rsqrt cbrt
exp exp2 log log1p expm1 tanh logistic sin cos tan asin acos atan atan2 sinh cosh asinh acosh atanh
erf erfc erf_inv lgamma digamma square reciprocal select_n clamp eq ne lt le gt ge and or not xor
is_finite
""".split()
)
REDUCTIONS = frozenset(
    "reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or argmax argmin cumsum cumprod cummax cummin cumlogsumexp".split()
)


def count_flops(fn: Callable[..., Any], *args: Any) -> float:
    """Arithmetic operations of ``fn(*args)``. A program whose trip counts are all static
    (scans, no ``while_loop``) is counted from its jaxpr alone; one with a ``while_loop`` is run
    on these concrete ``args``, op by op, to see how often each loop turns."""
    closed = jax.make_jaxpr(fn)(*args)
    if not _has_loop(closed.jaxpr):
        return _static(closed.jaxpr)
    flops, _ = _run(closed.jaxpr, closed.consts, jax.tree_util.tree_leaves(args))
    return flops


def _static(jaxpr: Any) -> float:
    """The count of a jaxpr without ``while_loop``: scans × their length, a ``cond`` at its
    costliest branch (under ``vmap`` a ``cond`` becomes a select, so rollouts have none)."""
    total = 0.0
    for eqn in jaxpr.eqns:
        subs = _subjaxprs(eqn)
        if eqn.primitive.name == "scan":
            total += eqn.params["length"] * _static(subs[0])
        elif eqn.primitive.name == "cond":
            total += max(_static(sub) for sub in subs)
        elif subs:
            total += _static(subs[0])
        else:
            total += _cost(eqn)
    return total


def _size(aval: Any) -> int:
    return int(math.prod(getattr(aval, "shape", ())))


def _cost(eqn: Any) -> float:
    name = eqn.primitive.name
    if name == "dot_general":
        (lhs_contract, _), _ = eqn.params["dimension_numbers"]
        k = math.prod(eqn.invars[0].aval.shape[d] for d in lhs_contract)
        return 2.0 * k * _size(eqn.outvars[0].aval)
    if name in ELEMENTWISE:
        return float(sum(_size(v.aval) for v in eqn.outvars))
    if name in REDUCTIONS:
        return float(_size(eqn.invars[0].aval))
    return 0.0


def _has_loop(jaxpr: Any) -> bool:
    """Whether ``jaxpr`` holds a ``while_loop`` (whose trips depend on the data) at any depth."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "while":
            return True
        if any(_has_loop(sub) for sub in _subjaxprs(eqn)):
            return True
    return False


def _subjaxprs(eqn: Any) -> list:
    subs = []
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, jex_core.ClosedJaxpr):
                subs.append(item.jaxpr)
            elif isinstance(item, jex_core.Jaxpr):
                subs.append(item)
    return subs


def _closed(sub: Any) -> tuple[Any, list]:
    return (sub.jaxpr, list(sub.consts)) if isinstance(sub, jex_core.ClosedJaxpr) else (sub, [])


def _run(jaxpr: Any, consts: list, args: list) -> tuple[float, list]:
    env: dict = {}

    def read(v):
        return v.val if isinstance(v, jex_core.Literal) else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    total = 0.0
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        flops, outvals = _eqn(eqn, invals)
        total += flops
        if not eqn.primitive.multiple_results:
            outvals = [outvals]
        for var, value in zip(eqn.outvars, outvals):
            env[var] = value
    return total, [read(v) for v in jaxpr.outvars]


def _eqn(eqn: Any, invals: list) -> tuple[float, Any]:
    name, params = eqn.primitive.name, eqn.params
    if name == "while":
        return _while(params, invals)
    if name == "scan":
        return _scan(eqn, invals)
    if name == "cond":
        branch = params["branches"][int(np.asarray(invals[0]))]
        return _run(*_closed(branch), invals[1:])
    subs = [p for p in ("jaxpr", "call_jaxpr", "fun_jaxpr") if p in params]
    if subs:  # pjit, custom_jvp/vjp calls, remat: their body, as _static counts it
        return _run(*_closed(params[subs[0]]), invals)
    return _cost(eqn), eqn.primitive.bind(*invals, **params)


def _while(params: dict, invals: list) -> tuple[float, list]:
    cc, bc = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts, carry = invals[:cc], invals[cc : cc + bc], invals[cc + bc :]
    cond_jaxpr, cond_c = _closed(params["cond_jaxpr"])
    body_jaxpr, body_c = _closed(params["body_jaxpr"])
    total = 0.0
    while True:
        flops, (go,) = _run(cond_jaxpr, cond_c, cond_consts + carry)
        total += flops
        if not bool(np.asarray(go)):
            return total, carry
        flops, carry = _run(body_jaxpr, body_c, body_consts + carry)
        total += flops


def _scan_layout(params: dict) -> tuple[int, int]:
    """(consts, carries) of a scan's operands; a clear error where a jax version names them otherwise."""
    if "num_consts" not in params or "num_carry" not in params:
        raise NotImplementedError(
            f"flops.py reads a scan's num_consts/num_carry; this jax ({jax.__version__}) gives "
            f"{sorted(params)}: count on a jax that has them (bench_accelerator.py recount)"
        )
    return params["num_consts"], params["num_carry"]


def _scan(eqn: Any, invals: list) -> tuple[float, Any]:
    params = eqn.params
    body, body_c = _closed(params["jaxpr"])
    n_consts, n_carry = _scan_layout(params)
    if not _has_loop(body):  # the same work every iteration: count one, run the scan as compiled
        first = [x[-1 if params["reverse"] else 0] for x in invals[n_consts + n_carry :]]
        flops, _ = _run(body, body_c, invals[: n_consts + n_carry] + first)
        return flops * params["length"], eqn.primitive.bind(*invals, **params)
    length = params["length"]
    consts, carry, xs = invals[:n_consts], invals[n_consts : n_consts + n_carry], invals[n_consts + n_carry :]
    total, ys = 0.0, []
    for i in reversed(range(length)) if params["reverse"] else range(length):
        flops, outs = _run(body, body_c, consts + carry + [x[i] for x in xs])
        total += flops
        carry, y = outs[:n_carry], outs[n_carry:]
        ys.append(y)
    if params["reverse"]:
        ys.reverse()
    stacked = [np.stack([np.asarray(y[j]) for y in ys]) for j in range(len(eqn.outvars) - n_carry)]
    return total, carry + stacked
