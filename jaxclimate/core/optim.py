"""Gradient optimisation in a box, as the baselines that optimise through an environment use it
(the EBM's calibrated static column, the climate game's and RICE-N's cooperative planners).

Projected Adam minimises f over low ≤ x ≤ high (any pytree x, bounds alike or broadcastable):

    m_k, v_k = Adam moments of ∇f(x_k)  (β = 0.9, 0.999)
    x_{k+1} = clip(x_k − η_k · m̂_k / (√v̂_k + ε), low, high)
    η_k = η_0 · (cosine decay to ``final_fraction``·η_0 over the iterations)

Projection rather than a squashing map (x = σ(z)): optima of these problems often sit on a
bound, which projection reaches exactly and a sigmoid only approaches as its gradient vanishes.
First-order optimality (KKT) is a vanishing projected gradient: ∇f with the components that sit
on a bound and point out of the box set to zero.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np


def projected_gradient(x: Any, grad: Any, low: Any, high: Any) -> Any:
    """``grad`` of a minimisation with the components on a bound that point out of the box
    zeroed (a descent step would leave the box there): zero at a KKT point."""

    def one(x, g, lo, hi):
        outward = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
        return jnp.where(outward, 0.0, g)

    return jax.tree_util.tree_map(one, x, grad, low, high)


def minimise_in_box(
    objective: Callable[[Any], jax.Array], start: Any, low: Any, high: Any, *, iterations: int, learning_rate: float, final_fraction: float = 1e-3
) -> tuple[Any, jax.Array]:
    """Projected Adam from ``start`` for ``iterations`` steps (a ``lax.scan``: traceable, so it
    ``vmap``s over starts and compiles into one program). Returns the last point and f before
    each update."""
    import optax  # the environments that import this module do not need it to step

    optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, iterations, alpha=final_fraction))
    value_and_grad = jax.value_and_grad(objective)
    clip = lambda x: jax.tree_util.tree_map(jnp.clip, x, low, high)  # noqa: E731

    def iteration(carry, _):
        x, opt_state = carry
        value, grad = value_and_grad(x)
        updates, opt_state = optimizer.update(grad, opt_state, x)
        return (clip(optax.apply_updates(x, updates)), opt_state), value

    (x, _), history = jax.lax.scan(iteration, (start, optimizer.init(start)), None, length=iterations)
    return x, history


def maximise_from_restarts(
    objective: Callable[[Any], jax.Array], key: jax.Array, low: Any, high: Any, *, restarts: int, iterations: int, learning_rate: float
) -> dict[str, Any]:
    """Maximise ``objective`` over the box by :func:`minimise_in_box` on its negative, from
    ``restarts`` uniform random starts ``vmap``ped in one compiled program. Returns the best
    point ``x``, its value, every restart's value, the best run's history (objective before each
    update) and the projected gradient of −objective at ``x`` (zero at a maximum)."""
    leaves, tree = jax.tree_util.tree_flatten(high)

    def start(k):
        keys = jax.random.split(k, len(leaves))
        return jax.tree_util.tree_map(
            lambda lo, hi, kk: lo + (hi - lo) * jax.random.uniform(kk, hi.shape, hi.dtype), low, high, jax.tree_util.tree_unflatten(tree, list(keys))
        )

    def ascend(k):
        x, history = minimise_in_box(lambda x: -objective(x), start(k), low, high, iterations=iterations, learning_rate=learning_rate)
        return x, -history, objective(x)

    found, histories, values = jax.jit(jax.vmap(ascend))(jax.random.split(key, restarts))
    best = int(jnp.argmax(values))
    x = jax.tree_util.tree_map(lambda v: v[best], found)
    gradient = jax.jit(lambda x: projected_gradient(x, jax.grad(lambda y: -objective(y))(x), low, high))(x)
    return {
        "x": x,
        "value": float(values[best]),
        "values": np.asarray(values),
        "history": np.asarray(histories[best]),
        "projected_gradient": gradient,
        "max_projected_gradient": float(max(jnp.max(jnp.abs(g)) for g in jax.tree_util.tree_leaves(gradient))),
    }
