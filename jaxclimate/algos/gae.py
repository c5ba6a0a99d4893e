"""Generalised advantage estimation (Schulman et al. 2016), as a reverse ``lax.scan``.

    δ_t = r_t + γ·V(s_{t+1})·(1 − d_t) − V(s_t)
    Â_t = δ_t + γ·λ·(1 − d_t)·Â_{t+1}
    target_t = Â_t + V(s_t)

``d_t`` is 1 when the episode ended with step t (then nothing is bootstrapped across the
boundary; the next row belongs to a new episode). Time is the leading axis; any trailing
shape (envs, agents) is carried along.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def generalized_advantages(
    rewards: jax.Array, values: jax.Array, dones: jax.Array, last_value: jax.Array, gamma: float | jax.Array, lam: float | jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Advantages Â and value targets Â + V, both shaped like ``rewards`` (T, ...).

    ``last_value`` is V of the state after the last step (bootstrap when the rollout stops
    mid-episode)."""
    not_done = 1.0 - dones.astype(rewards.dtype)

    def backward(carry, x):
        next_advantage, next_value = carry
        reward, value, live = x
        delta = reward + gamma * next_value * live - value
        advantage = delta + gamma * lam * live * next_advantage
        return (advantage, value), advantage

    init = (jnp.zeros_like(last_value), last_value)
    _, advantages = jax.lax.scan(backward, init, (rewards, values, not_done), reverse=True)
    return advantages, advantages + values
