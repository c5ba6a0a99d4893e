"""Action distributions for the four head types, in plain ``jax.numpy``.

Each distribution is a small pytree-free object built from network outputs with
``sample(key)``, ``log_prob(action)``, ``entropy()`` and ``mode()``; the log-probability and
entropy of a multi-component action are sums over its components (independent heads). Kept
behind this one module so the policy code does not depend on a distributions library.

* :class:`Categorical` — ``Discrete(n)``.
* :class:`MultiCategorical` — ``MultiDiscrete(nvec)``: one categorical per component, logits
  padded to ``max(nvec)``; padded and masked entries get probability 0.
* :class:`DiagGaussian` — ``Box``: mean and a state-independent log standard deviation.
* :class:`Bernoulli` — ``MultiBinary(n)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space

_MASKED = -1e9  # logit of an impossible choice (finite: keeps gradients and entropies finite)


class Categorical:
    """Categorical over the last axis of ``logits``."""

    def __init__(self, logits: jax.Array):
        self.logits = jax.nn.log_softmax(logits, axis=-1)

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.categorical(key, self.logits, axis=-1)

    def log_prob(self, action: jax.Array) -> jax.Array:
        action = jnp.asarray(action, jnp.int32)
        return jnp.take_along_axis(self.logits, action[..., None], axis=-1)[..., 0]

    def entropy(self) -> jax.Array:
        p = jnp.exp(self.logits)
        return -jnp.sum(jnp.where(p > 0, p * self.logits, 0.0), axis=-1)

    def mode(self) -> jax.Array:
        return jnp.argmax(self.logits, axis=-1)


class MultiCategorical(Categorical):
    """Independent categoricals, ``logits`` (..., k, max_n); sums over the k components."""

    def log_prob(self, action: jax.Array) -> jax.Array:
        return jnp.sum(super().log_prob(action), axis=-1)

    def entropy(self) -> jax.Array:
        return jnp.sum(super().entropy(), axis=-1)


class DiagGaussian:
    """Independent Gaussians with ``mean`` (..., d) and ``log_std`` (d,) or (..., d)."""

    def __init__(self, mean: jax.Array, log_std: jax.Array):
        self.mean = mean
        self.log_std = jnp.broadcast_to(log_std, mean.shape)

    def sample(self, key: jax.Array) -> jax.Array:
        return self.mean + jnp.exp(self.log_std) * jax.random.normal(key, self.mean.shape, self.mean.dtype)

    def log_prob(self, action: jax.Array) -> jax.Array:
        z = (action - self.mean) * jnp.exp(-self.log_std)
        return jnp.sum(-0.5 * z**2 - self.log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)

    def entropy(self) -> jax.Array:
        return jnp.sum(self.log_std + 0.5 * (1.0 + jnp.log(2 * jnp.pi)), axis=-1)

    def mode(self) -> jax.Array:
        return self.mean


class Bernoulli:
    """Independent bits with ``logits`` (..., n)."""

    def __init__(self, logits: jax.Array):
        self.logits = logits

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.bernoulli(key, jax.nn.sigmoid(self.logits)).astype(jnp.int32)

    def log_prob(self, action: jax.Array) -> jax.Array:
        a = jnp.asarray(action, self.logits.dtype)
        return jnp.sum(a * jax.nn.log_sigmoid(self.logits) + (1 - a) * jax.nn.log_sigmoid(-self.logits), axis=-1)

    def entropy(self) -> jax.Array:
        p = jax.nn.sigmoid(self.logits)
        return jnp.sum(-p * jax.nn.log_sigmoid(self.logits) - (1 - p) * jax.nn.log_sigmoid(-self.logits), axis=-1)

    def mode(self) -> jax.Array:
        return (self.logits > 0).astype(jnp.int32)


class ActionHead:
    """Maps a flat network output to the distribution of one agent's action in ``space``.

    ``num_outputs`` is the size of the actor's last layer. ``distribution(out, log_std,
    mask)`` builds the distribution; ``mask`` (boolean, same shape as the padded logits:
    (n,) for Discrete, (k, max_n) for MultiDiscrete) removes invalid choices.
    """

    #: How a continuous sample becomes an env action: ``"clip"`` to the box, or ``"rescale"``
    #: the affine map of [−1, 1] onto [low, high] and then the clip (SB3's and the InvestESG
    #: authors' ``clip((a + 1)/2 · (high − low) + low)``). Either way the log-probability is
    #: that of the raw sample.
    CONTINUOUS_TRANSFORMS = ("clip", "rescale")

    def __init__(self, space: Space, continuous_transform: str = "clip"):
        if continuous_transform not in self.CONTINUOUS_TRANSFORMS:
            raise ValueError(f"ActionHead.continuous_transform must be one of {self.CONTINUOUS_TRANSFORMS}, got {continuous_transform!r}")
        self.space = space
        self.continuous_transform = continuous_transform
        if isinstance(space, MultiDiscrete):
            nvec = np.asarray(space.nvec).reshape(-1)
            self.kind, self.max_n = "multi_discrete", int(nvec.max())
            self.num_outputs = int(nvec.size * self.max_n)
            self.padding = np.arange(self.max_n)[None, :] < nvec[:, None]  # (k, max_n) valid entries
        elif isinstance(space, Discrete):
            self.kind, self.num_outputs = "discrete", space.n
        elif isinstance(space, Box):
            if len(space.shape) != 1:
                raise ValueError(f"ActionHead supports 1-D Box action spaces, got shape {space.shape}")
            self.kind, self.num_outputs = "continuous", space.shape[0]
        elif isinstance(space, MultiBinary):
            self.kind, self.num_outputs = "multi_binary", space.n
        else:
            raise ValueError(f"no action head for space {space!r}")

    @property
    def continuous(self) -> bool:
        return self.kind == "continuous"

    def distribution(self, out: jax.Array, log_std: jax.Array | None = None, mask: jax.Array | None = None):
        if self.kind == "multi_discrete":
            logits = out.reshape(*out.shape[:-1], *self.padding.shape)
            valid = jnp.asarray(self.padding) if mask is None else jnp.logical_and(self.padding, mask)
            return MultiCategorical(jnp.where(valid, logits, _MASKED))
        if self.kind == "discrete":
            return Categorical(out if mask is None else jnp.where(mask, out, _MASKED))
        if self.kind == "continuous":
            return DiagGaussian(out, log_std)
        return Bernoulli(out)

    def to_env(self, action: jax.Array) -> jax.Array:
        """Policy sample -> what the env takes: integers for discrete kinds, continuous
        actions clipped (or rescaled, see ``continuous_transform``) to the box."""
        if self.kind == "continuous":
            low, high = jnp.asarray(self.space.low), jnp.asarray(self.space.high)
            if self.continuous_transform == "rescale":
                action = low + (action.astype(low.dtype) + 1.0) / 2.0 * (high - low)
            return jnp.clip(action, low, high).astype(self.space.dtype)
        return action.astype(self.space.dtype)
