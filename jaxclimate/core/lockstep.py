"""``lockstep_switch``: a ``lax.switch`` that stays a real branch under ``vmap`` when every
batch element takes the same branch.

Why: under ``jax.vmap`` a switch on a batched index runs *every* branch for every element and
selects the results. Environments with a stage cycle (RICE-N's proposal → evaluation →
activity) index the branch by the env-step counter, and environments that were reset
together (the usual case: fixed-length episodes, auto-reset) are all at the same stage, so
the expensive activity branch runs on one step in three instead of every step.

How: a :func:`jax.custom_batching.custom_vmap` rule. Under a ``vmap`` level the rule hands the
operands, now carrying that level's batch axis in front, to a switch one level "deeper"; when
no ``vmap`` is left the switch checks at run time whether all indices agree:

    same  = all(index == index.flat[0])
    out   = switch(index.flat[0] if same else K,                 # K = number of branches
                   [*vmapped branches,                           # one branch runs
                    vmapped switch(index)])                      # all branches + select

so the result is always exactly ``vmap(lax.switch)``'s, and nested ``vmap``s (envs inside
seeds inside a parameter sweep) are handled: the check covers every batch level at once.
Branches must not close over batched values: pass everything they read as operands.
Reverse-mode differentiation is not supported (as for any ``custom_vmap`` function).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

# Batch levels, outermost first: for each level, the flat tuple of "is this leaf batched at
# this level" flags over (index, *operands).
_Levels = tuple[tuple[bool, ...], ...]


def lockstep_switch(index: jax.Array, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``jax.lax.switch(index, branches, *operands)``; under ``vmap`` one branch runs when all
    batch elements share the index (see module docstring). The index is clamped like
    ``lax.switch``'s."""
    return _switch(tuple(branches), ())(jnp.asarray(index, jnp.int32), *operands)


def _nested_vmap(fn: Callable[..., Any], levels: _Levels, treedef: Any) -> Callable[..., Any]:
    """``fn`` vmapped over every level (outermost first), leaf by leaf as ``levels`` says."""
    for flags in reversed(levels):  # wrap the innermost level first
        in_axes = jax.tree_util.tree_unflatten(treedef, [0 if b else None for b in flags])
        fn = jax.vmap(fn, in_axes=tuple(in_axes))
    return fn


def _switch(branches: tuple[Callable[..., Any], ...], levels: _Levels) -> Callable[..., Any]:
    @custom_vmap
    def switch(index: jax.Array, *operands: Any) -> Any:
        if not levels:
            return jax.lax.switch(index, branches, *operands)
        treedef = jax.tree_util.tree_structure((index, *operands))
        first = index.reshape(-1)[0]
        # Every batch element at the same stage: run that stage's branch once, vmapped.
        index_free = [(False,) + flags[1:] for flags in levels]  # the branch index is `first`
        lockstep = [_nested_vmap(lambda _, *ops, b=b: b(*ops), tuple(index_free), treedef) for b in branches]
        batched = _nested_vmap(lambda i, *ops: jax.lax.switch(i, branches, *ops), levels, treedef)
        # One conditional (a nested cond + switch would copy the operands twice): branch k < K
        # when every element has index k, branch K (all branches, then select) otherwise.
        same = jnp.all(index == first)
        which = jnp.where(same, jnp.clip(first, 0, len(branches) - 1), len(branches))
        return jax.lax.switch(which, [*(lambda b=b: b(first, *operands) for b in lockstep), lambda: batched(index, *operands)])

    @switch.def_vmap
    def rule(axis_size: int, in_batched: list, index: jax.Array, *operands: Any):
        flags = tuple(jax.tree_util.tree_leaves((in_batched[0], *in_batched[1:])))
        out = _switch(branches, (flags,) + levels)(index, *operands)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return switch
