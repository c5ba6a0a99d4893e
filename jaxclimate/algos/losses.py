"""The PPO clipped surrogate objective with an optionally clipped value loss (Schulman et al. 2017).

    ρ = exp(log π(a|s) − log π_old(a|s))
    L_actor  = −E[min(ρ·Â, clip(ρ, 1 − ε, 1 + ε)·Â)]
    L_value  = ½·E[max((V − G)², (V_old + clip(V − V_old, −ε, ε) − G)²)]   (clipped)
             = ½·E[(V − G)²]                                              (unclipped)
    L        = L_actor + c_v·L_value − c_e·E[H(π)]

Advantages are standardised per minibatch unless told otherwise. ``weights`` (same shape as
the samples, ≥ 0) turn every E[·] into a weighted mean: a weight of 0 removes a sample (a
padded minibatch slot, a step excluded from training) without changing the array shapes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def weighted_mean(x: jax.Array, weights: jax.Array | None) -> jax.Array:
    """``mean(x)``, or Σ w·x / Σ w (0 when every weight is 0)."""
    if weights is None:
        return jnp.mean(x)
    return jnp.sum(weights * x) / jnp.maximum(jnp.sum(weights), 1e-12)


def standardize(x: jax.Array, weights: jax.Array | None = None) -> jax.Array:
    """(x − mean) / (std + 1e-8), moments weighted by ``weights`` when given."""
    if weights is None:
        return (x - x.mean()) / (x.std() + 1e-8)
    mean = weighted_mean(x, weights)
    return (x - mean) / (jnp.sqrt(weighted_mean((x - mean) ** 2, weights)) + 1e-8)


def ppo_loss(
    log_prob: jax.Array,
    old_log_prob: jax.Array,
    advantages: jax.Array,
    value: jax.Array,
    old_value: jax.Array,
    targets: jax.Array,
    entropy: jax.Array,
    clip_eps: float | jax.Array,
    vf_coef: float | jax.Array,
    ent_coef: float | jax.Array,
    normalize_advantages: bool = True,
    clip_value_loss: bool = True,
    weights: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Total loss and its parts (``actor_loss``, ``value_loss``, ``entropy``,
    ``approx_kl``, ``clip_fraction``)."""
    mean = lambda x: weighted_mean(x, weights)  # noqa: E731
    if normalize_advantages:
        advantages = standardize(advantages, weights)
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    actor_loss = -mean(jnp.minimum(unclipped, clipped))
    squared_error = (value - targets) ** 2
    if clip_value_loss:
        value_clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
        squared_error = jnp.maximum(squared_error, (value_clipped - targets) ** 2)
    value_loss = 0.5 * mean(squared_error)
    mean_entropy = mean(entropy)
    total = actor_loss + vf_coef * value_loss - ent_coef * mean_entropy
    aux = {
        "actor_loss": actor_loss,
        "value_loss": value_loss,
        "entropy": mean_entropy,
        "approx_kl": mean((ratio - 1.0) - log_ratio),  # the k3 estimator, ≥ 0
        "clip_fraction": mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32)),
    }
    return total, aux
