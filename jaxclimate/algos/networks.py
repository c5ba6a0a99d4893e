"""Actor-critics for IPPO: feed-forward (MLP) or recurrent (LSTM / GRU scanned over time).

Every network maps ``(carry, obs (T, B, d), resets (T, B))`` to ``(carry, actor_out (T, B,
k), log_std, value (T, B))``. ``resets[t]`` marks ``obs[t]`` as the first observation of an
episode: the recurrent carry is zeroed before that step, so the hidden state lives exactly
one episode. The MLP ignores carry and resets (its carry is a dummy, so one code path serves
both). Actor and critic have separate MLP heads; the recurrent cell is a shared torso.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

NETWORKS = ("mlp", "lstm", "gru")
ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}


def _dense(features: int, scale: float = np.sqrt(2.0)) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(scale), bias_init=nn.initializers.zeros)


class ScannedRNN(nn.Module):
    """An LSTM or GRU cell scanned over the leading time axis with episode resets."""

    cell_type: str
    hidden_size: int

    @nn.compact
    def __call__(self, carry: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
        cell_cls = nn.OptimizedLSTMCell if self.cell_type == "lstm" else nn.GRUCell
        scan = nn.scan(
            _RNNStep, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0
        )
        return scan(cell_cls, self.hidden_size)(carry, inputs)


class _RNNStep(nn.Module):
    cell_cls: Any
    hidden_size: int

    @nn.compact
    def __call__(self, carry: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
        x, reset = inputs
        carry = jax.tree_util.tree_map(lambda c: jnp.where(reset[:, None], jnp.zeros_like(c), c), carry)
        carry, y = self.cell_cls(features=self.hidden_size)(carry, x)
        return carry, y


def initial_carry(network: str, hidden_size: int, batch: int) -> Any:
    """Zero carry for ``batch`` sequences (a (batch, 1) dummy for the MLP)."""
    if network == "lstm":
        return (jnp.zeros((batch, hidden_size)), jnp.zeros((batch, hidden_size)))
    if network == "gru":
        return jnp.zeros((batch, hidden_size))
    return jnp.zeros((batch, 1))


class ActorCritic(nn.Module):
    """Actor (``num_outputs`` raw outputs for an :class:`~jaxclimate.algos.distributions.ActionHead`)
    and critic. ``continuous`` adds a learned state-independent ``log_std``."""

    num_outputs: int
    network: str = "mlp"
    hidden_size: int = 64
    activation: str = "tanh"
    continuous: bool = False

    @nn.compact
    def __call__(self, carry: Any, obs: jax.Array, resets: jax.Array):
        act = ACTIVATIONS[self.activation]
        x = obs.astype(jnp.float32)
        if self.network in ("lstm", "gru"):
            x = act(_dense(self.hidden_size)(x))
            carry, x = ScannedRNN(self.network, self.hidden_size)(carry, (x, resets))
        actor = act(_dense(self.hidden_size)(x))
        actor = act(_dense(self.hidden_size)(actor))
        actor_out = _dense(self.num_outputs, scale=0.01)(actor)
        critic = act(_dense(self.hidden_size)(x))
        critic = act(_dense(self.hidden_size)(critic))
        value = _dense(1, scale=1.0)(critic)[..., 0]
        log_std = self.param("log_std", nn.initializers.zeros, (self.num_outputs,)) if self.continuous else None
        return carry, actor_out, log_std, value
