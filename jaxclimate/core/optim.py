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
