"""The PPO clipped surrogate objective with a clipped value loss (Schulman et al. 2017).

    ρ = exp(log π(a|s) − log π_old(a|s))
    L_actor  = −E[min(ρ·Â, clip(ρ, 1 − ε, 1 + ε)·Â)]
    L_value  = ½·E[max((V − G)², (V_old + clip(V − V_old, −ε, ε) − G)²)]
    L        = L_actor + c_v·L_value − c_e·E[H(π)]

Advantages are standardised per minibatch unless told otherwise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


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
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Total loss and its parts (``actor_loss``, ``value_loss``, ``entropy``,
    ``approx_kl``, ``clip_fraction``)."""
    if normalize_advantages:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    actor_loss = -jnp.mean(jnp.minimum(unclipped, clipped))
    value_clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
    value_loss = 0.5 * jnp.mean(jnp.maximum((value - targets) ** 2, (value_clipped - targets) ** 2))
    mean_entropy = jnp.mean(entropy)
    total = actor_loss + vf_coef * value_loss - ent_coef * mean_entropy
    aux = {
        "actor_loss": actor_loss,
        "value_loss": value_loss,
        "entropy": mean_entropy,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),  # the k3 estimator, ≥ 0
        "clip_fraction": jnp.mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32)),
    }
    return total, aux
