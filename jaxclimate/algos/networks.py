"""The networks of every algorithm in ``jaxclimate.algos``, in one module.

IPPO's actor-critics (:class:`ActorCritic`): feed-forward (MLP) or recurrent (LSTM / GRU
scanned over time). Every network maps ``(carry, obs (T, B, d), resets (T, B))`` to ``(carry, actor_out (T, B,
k), log_std, value (T, B))``. ``resets[t]`` marks ``obs[t]`` as the first observation of an
episode: the recurrent carry is zeroed before that step, so the hidden state lives exactly
one episode. The MLP ignores carry and resets (its carry is a dummy, so one code path serves
both). Actor and critic have separate MLP heads; the recurrent cell is a shared torso.

``obs`` may also be a :class:`~jaxclimate.core.factored.FactoredObs` with ``shared`` (T, E, Fs)
once per environment and ``own`` (T, B, Fo) per agent, B = E · r: every first layer is then a
:class:`FactoredDense`, which multiplies the shared features once per environment.

The off-policy learners' (DDPG, TD3, TQC) actors and critics, initialised as PyTorch does
(:class:`TorchDense`): :class:`DeterministicActor`, :class:`SquashedGaussianActor`,
:class:`QCritic`. APG's actor and SHAC value (flax's default initialisation):
:class:`TanhActor`, :class:`ValueCritic`.
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


# --- the off-policy learners (PyTorch's default initialisation: weights and biases uniform in ±1/√fan_in) ---


class TorchDense(nn.Module):
    """A linear layer initialised as ``torch.nn.Linear``."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        bound = 1.0 / np.sqrt(x.shape[-1])
        init = lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)  # noqa: E731
        kernel = self.param("kernel", init, (x.shape[-1], self.features))
        bias = self.param("bias", init, (self.features,))
        return x @ kernel + bias


class DeterministicActor(nn.Module):
    """obs → ReLU MLP → tanh: an action in [−1, 1] (scaled to the box outside); DDPG and TD3."""

    act_dim: int
    hidden: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = nn.relu(TorchDense(self.hidden)(obs))
        x = nn.relu(TorchDense(self.hidden)(x))
        return jnp.tanh(TorchDense(self.act_dim)(x))


class SquashedGaussianActor(nn.Module):
    """obs → ReLU MLP → (mean, log std), log std mapped into [−5, 2] through a tanh (SAC/TQC)."""

    act_dim: int
    hidden: int
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = nn.relu(TorchDense(self.hidden)(obs))
        x = nn.relu(TorchDense(self.hidden)(x))
        mean = TorchDense(self.act_dim)(x)
        log_std = jnp.tanh(TorchDense(self.act_dim)(x))
        return mean, self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (log_std + 1.0)


class QCritic(nn.Module):
    """(obs, action) → ReLU MLP → ``outputs`` values (1 for Q, the quantiles for TQC)."""

    hidden: int
    outputs: int = 1

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        x = nn.relu(TorchDense(self.hidden)(x))
        x = nn.relu(TorchDense(self.hidden)(x))
        return TorchDense(self.outputs)(x)


# --- APG (flax's default initialisation) ----------------------------------------------------------


class TanhActor(nn.Module):
    """ô → tanh MLP → tanh: an action in [−1, 1] per dimension (mapped onto the box outside);
    the last layer starts small (variance scaling 0.01), so the first actions sit mid-box."""

    act_dim: int
    hidden: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = nn.tanh(nn.Dense(self.hidden)(obs))
        x = nn.tanh(nn.Dense(self.hidden)(x))
        return jnp.tanh(nn.Dense(self.act_dim, kernel_init=nn.initializers.variance_scaling(0.01, "fan_in", "truncated_normal"))(x))


class ValueCritic(nn.Module):
    """ô → tanh MLP → one value (SHAC's critic; in units of the returns' running statistics)."""

    hidden: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = nn.tanh(nn.Dense(self.hidden)(obs))
        x = nn.tanh(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(x)[..., 0]
