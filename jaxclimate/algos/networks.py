"""Actor-critics for IPPO: feed-forward (MLP) or recurrent (LSTM / GRU scanned over time).

Every network maps ``(carry, obs (T, B, d), resets (T, B))`` to ``(carry, actor_out (T, B,
k), log_std, value (T, B))``. ``resets[t]`` marks ``obs[t]`` as the first observation of an
episode: the recurrent carry is zeroed before that step, so the hidden state lives exactly
one episode. The MLP ignores carry and resets (its carry is a dummy, so one code path serves
both). Actor and critic have separate MLP heads; the recurrent cell is a shared torso.

``obs`` may also be a :class:`~jaxclimate.core.factored.FactoredObs` with ``shared`` (T, E, Fs)
once per environment and ``own`` (T, B, Fo) per agent, B = E · r: every first layer is then a
:class:`FactoredDense`, which multiplies the shared features once per environment.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.factored import FactoredObs

NETWORKS = ("mlp", "lstm", "gru")
ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}


def _dense(features: int, scale: float = np.sqrt(2.0)) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(scale), bias_init=nn.initializers.zeros)


class FactoredDense(nn.Module):
    """A dense layer on factored input: ``W_own · own + repeat(W_shared · shared)``.

    For a flat vector ``x = own[:k] ‖ shared ‖ own[k:]`` this is exactly ``W x + b`` with
    ``W``'s rows split the same way, but the (Fs × H) product runs once per environment
    instead of once per agent: ``shared`` is (..., E, Fs) and ``own`` (..., E · r, Fo), row
    ``e · r + i`` being agent ``i`` of environment ``e`` (r agents per env row)."""

    features: int
    scale: float = float(np.sqrt(2.0))

    @nn.compact
    def __call__(self, obs: FactoredObs) -> jax.Array:
        envs, rows = obs.shared.shape[-2], obs.own.shape[-2]
        if rows % envs:
            raise ValueError(f"FactoredDense: {rows} own rows are not a whole number per env row ({envs})")
        own = _dense(self.features, self.scale)(obs.own)
        shared = nn.Dense(self.features, use_bias=False, kernel_init=nn.initializers.orthogonal(self.scale))(obs.shared)
        return own + jnp.repeat(shared, rows // envs, axis=-2)


def _first_dense(features: int, x: Any) -> jax.Array:
    """The first layer on an observation: dense, or :class:`FactoredDense` on a factored one."""
    return FactoredDense(features)(x) if isinstance(x, FactoredObs) else _dense(features)(x)


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
        x = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32), obs)
        if self.network in ("lstm", "gru"):
            x = act(_first_dense(self.hidden_size, x))
            carry, x = ScannedRNN(self.network, self.hidden_size)(carry, (x, resets))
        actor = act(_first_dense(self.hidden_size, x))
        actor = act(_dense(self.hidden_size)(actor))
        actor_out = _dense(self.num_outputs, scale=0.01)(actor)
        critic = act(_first_dense(self.hidden_size, x))
        critic = act(_dense(self.hidden_size)(critic))
        value = _dense(1, scale=1.0)(critic)[..., 0]
        log_std = self.param("log_std", nn.initializers.zeros, (self.num_outputs,)) if self.continuous else None
        return carry, actor_out, log_std, value
