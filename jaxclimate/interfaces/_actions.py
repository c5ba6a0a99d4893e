"""How an interface may present a group's actions differently from the environment.

Learners written for other libraries assume conventions our spaces do not follow: JaxMARL's
and Brax's continuous learners draw Gaussian actions around 0 for boxes of ``[-1, 1]``, and
JaxMARL's feed-forward IPPO scripts know one categorical head (``Discrete``) only. Each class
here is one group's *view* of its actions: the space the learner sees (``space``) and the pure
JAX map from the learner's actions to the environment's (``to_env``, on ``(N, ...)`` group
arrays), so the environment itself is unchanged.

* :class:`RawActions` — the environment's own space (the identity).
* :class:`UnitBoxActions` — a finite ``Box(low, high)`` seen as ``Box(-1, 1)``:
  ``a_env = low + (clip(a, -1, 1) + 1) / 2 · (high - low)``.
* :class:`JointDiscreteActions` — ``MultiDiscrete(nvec)`` (or ``MultiBinary(n)``, i.e.
  ``nvec = 2``) seen as one ``Discrete(prod(nvec))``: the joint index ``k`` enumerates the
  heads' levels in row-major order, head ``h`` taking ``(k // prod(nvec[h+1:])) % nvec[h]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space

#: The most joint actions :class:`JointDiscreteActions` makes (one logit each in the learner).
MAX_JOINT_ACTIONS = 65_536


class RawActions:
    """The environment's own action space."""

    def __init__(self, env_space: Space):
        self.env_space = self.space = env_space

    def to_env(self, actions: jax.Array) -> jax.Array:
        return actions

    def joint_mask(self, flat_mask: jax.Array) -> jax.Array:
        """The view's flat mask from the environment's (``(N, sum(nvec))`` booleans)."""
        return flat_mask


class UnitBoxActions(RawActions):
    """A finite box seen as ``[-1, 1]`` per component; out-of-range actions are clipped
    (as the environments clip their own)."""

    def __init__(self, env_space: Space, where: str):
        if not isinstance(env_space, Box):
            raise TypeError(f"{where}: rescaling applies to Box actions, not {env_space}")
        if not (np.all(np.isfinite(env_space.low)) and np.all(np.isfinite(env_space.high))):
            raise ValueError(f"{where}: a Box with infinite bounds cannot be rescaled to [-1, 1]")
        self.env_space = env_space
        self.space = Box(-1.0, 1.0, env_space.shape, env_space.dtype)
        self._low = np.asarray(env_space.low)
        self._half_width = 0.5 * (np.asarray(env_space.high) - self._low)

    def to_env(self, actions: jax.Array) -> jax.Array:
        unit = jnp.clip(actions, -1.0, 1.0)
        return (self._low + (unit + 1.0) * self._half_width).astype(self.env_space.dtype)


class JointDiscreteActions(RawActions):
    """Discrete heads seen as one categorical over all their combinations."""

    def __init__(self, env_space: Space, where: str):
        if isinstance(env_space, MultiBinary):
            nvec = np.full(env_space.n, 2)
        elif isinstance(env_space, MultiDiscrete):
            nvec = env_space.nvec.reshape(-1)
        else:
            raise TypeError(f"{where}: joint actions apply to MultiDiscrete or MultiBinary actions, not {env_space}")
        joint = float(np.prod(nvec.astype(float)))  # float: RICE-N's 10**57 overflows int64
        if joint > MAX_JOINT_ACTIONS:
            sizes, counts = np.unique(nvec, return_counts=True)
            heads = " + ".join(f"{c} of {v}" for v, c in zip(sizes[::-1], counts[::-1]))
            raise ValueError(
                f"{where}: {nvec.size} discrete heads ({heads} levels) make {joint:.3g} joint actions, more than "
                f"{MAX_JOINT_ACTIONS} (one logit each); use per-head categoricals (docs/interfaces.md §4.3)"
            )
        self.env_space = env_space
        count = int(joint)
        self.space = Discrete(count)
        self._nvec = nvec
        self._strides = np.concatenate([np.cumprod(nvec[::-1])[::-1][1:], [1]])
        # digits[k, h]: head h's level in joint action k; offsets place it in the flat mask
        digits = (np.arange(count)[:, None] // self._strides) % nvec
        self._flat_index = digits + np.concatenate([[0], np.cumsum(nvec)[:-1]])

    def to_env(self, actions: jax.Array) -> jax.Array:
        digits = (jnp.asarray(actions)[..., None] // self._strides) % self._nvec
        return digits.reshape(jnp.shape(actions) + self.env_space.shape).astype(self.env_space.dtype)

    def from_env(self, actions: jax.Array) -> jax.Array:
        """The joint index of the environment's actions (the inverse of :meth:`to_env`)."""
        heads = jnp.asarray(actions).reshape(jnp.shape(actions)[: jnp.ndim(actions) - 1] + (-1,))
        return jnp.sum(heads * self._strides, axis=-1).astype(self.space.dtype)

    def joint_mask(self, flat_mask: jax.Array) -> jax.Array:
        """A joint action is allowed where every head's level is."""
        return jnp.all(flat_mask[:, self._flat_index], axis=-1)
