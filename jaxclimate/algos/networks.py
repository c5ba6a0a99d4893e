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

from jaxclimate.algos.initializers import orthogonal
from jaxclimate.core.factored import FactoredObs

NETWORKS = ("mlp", "lstm", "gru")
ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}
INITIALIZATIONS = ("orthogonal", "lecun")


def _kernel_init(scale: float, initialization: str):
    return orthogonal(scale) if initialization == "orthogonal" else nn.initializers.lecun_normal()


def _dense(features: int, scale: float = np.sqrt(2.0), initialization: str = "orthogonal", name: str | None = None) -> nn.Dense:
    """A dense layer: orthogonal kernels of gain ``scale`` and zero biases (PPO's usual
    initialisation), or flax's default (LeCun-normal kernels, zero biases)."""
    return nn.Dense(features, kernel_init=_kernel_init(scale, initialization), bias_init=nn.initializers.zeros, name=name)


class FactoredDense(nn.Module):
    """A dense layer on factored input: ``W_own · own + repeat(W_shared · shared)``.

    For a flat vector ``x = own[:k] ‖ shared ‖ own[k:]`` this is exactly ``W x + b`` with
    ``W``'s rows split the same way, but the (Fs × H) product runs once per environment
    instead of once per agent: ``shared`` is (..., E, Fs) and ``own`` (..., E · r, Fo), row
    ``e · r + i`` being agent ``i`` of environment ``e`` (r agents per env row)."""

    features: int
    scale: float = float(np.sqrt(2.0))
    initialization: str = "orthogonal"

    @nn.compact
    def __call__(self, obs: FactoredObs) -> jax.Array:
        envs, rows = obs.shared.shape[-2], obs.own.shape[-2]
        if rows % envs:
            raise ValueError(f"FactoredDense: {rows} own rows are not a whole number per env row ({envs})")
        own = _dense(self.features, self.scale, self.initialization)(obs.own)
        shared = nn.Dense(self.features, use_bias=False, kernel_init=_kernel_init(self.scale, self.initialization))(obs.shared)
        return own + jnp.repeat(shared, rows // envs, axis=-2)


def _first_dense(features: int, x: Any, initialization: str, name: str) -> jax.Array:
    """The first layer on an observation: dense, or :class:`FactoredDense` on a factored one."""
    if isinstance(x, FactoredObs):
        return FactoredDense(features, initialization=initialization, name=name)(x)
    return _dense(features, initialization=initialization, name=name)(x)


class ScannedRNN(nn.Module):
    """An LSTM or GRU cell scanned over the leading time axis with episode resets."""

    cell_type: str
    hidden_size: int
    unroll: int = 1

    @nn.compact
    def __call__(self, carry: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
        cell_cls = nn.OptimizedLSTMCell if self.cell_type == "lstm" else nn.GRUCell
        scan = nn.scan(_RNNStep, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0, unroll=self.unroll)
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
    and critic, each an MLP of ``hidden_sizes`` (default two layers of ``hidden_size``) on the
    observation, or on the output of a shared recurrent torso (``network="lstm"``/``"gru"``:
    a dense layer of ``hidden_size`` and the cell). ``layer_norm`` normalises the last hidden
    layer of both heads; ``continuous`` adds a learned state-independent ``log_std``.

    Parameters are named by role (``actor_0``, …, ``actor_out``, ``log_std``; ``critic_0``, …,
    ``critic_out``; ``torso``, ``rnn``) so that optimisers can tell actor from critic."""

    num_outputs: int
    network: str = "mlp"
    hidden_size: int = 64
    activation: str = "tanh"
    continuous: bool = False
    hidden_sizes: tuple[int, ...] = ()
    layer_norm: bool = False
    initialization: str = "orthogonal"
    scan_unroll: int = 1

    @nn.compact
    def __call__(self, carry: Any, obs: jax.Array, resets: jax.Array):
        act = ACTIVATIONS[self.activation]
        x = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32), obs)
        if self.network in ("lstm", "gru"):
            x = act(_first_dense(self.hidden_size, x, self.initialization, "torso"))
            carry, x = ScannedRNN(self.network, self.hidden_size, self.scan_unroll, name="rnn")(carry, (x, resets))
        actor_out = _dense(self.num_outputs, 0.01, self.initialization, "actor_out")(self._mlp(x, "actor"))
        value = _dense(1, 1.0, self.initialization, "critic_out")(self._mlp(x, "critic"))[..., 0]
        log_std = self.param("log_std", nn.initializers.zeros, (self.num_outputs,)) if self.continuous else None
        return carry, actor_out, log_std, value

    def _mlp(self, x: Any, role: str) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for i, width in enumerate(self.hidden_sizes or (self.hidden_size, self.hidden_size)):
            layer = f"{role}_{i}"
            x = act(
                _first_dense(width, x, self.initialization, layer) if i == 0 else _dense(width, initialization=self.initialization, name=layer)(x)
            )
        return nn.LayerNorm(name=f"{role}_norm")(x) if self.layer_norm else x


def parameter_role(path: tuple) -> str:
    """``"actor"`` or ``"critic"`` for a parameter path of :class:`ActorCritic` (used to give
    them separate optimisers; a shared recurrent torso has no single role)."""
    name = str(getattr(path[0], "key", path[0]))
    if name == "log_std" or name.startswith("actor"):
        return "actor"
    if name.startswith("critic"):
        return "critic"
    raise ValueError(f"parameter {name!r} belongs to neither the actor nor the critic (a shared recurrent torso)")
