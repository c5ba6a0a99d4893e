"""Factored observations: what every agent of a group sees, stored once, plus each agent's own.

In RICE-N 1007 of an agent's 1043 features (the climate, every region's public economy, the
tariff matrix) are the same for all 27 regions. Writing them 27 times per step is most of a
step's memory traffic, and a policy's first layer multiplies them 27 times. A factored
observation keeps them once per environment::

    FactoredObs(shared=(..., Fs), own=(..., N, Fo))

and the flat per-agent layout is ``own[:, :insert_at] ‖ shared ‖ own[:, insert_at:]``
(:meth:`FactoredBox.flatten`), so nothing is lost: a factored observation flattens to the
flat one exactly. A linear layer on the flat vector splits the same way,
``W x = W_own · own + W_shared · shared``, and the shared product is computed once per
environment (:class:`jaxclimate.algos.networks.FactoredDense`); IPPO does this when a group's
observation space is a :class:`FactoredBox`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.spaces import Box, Space


@struct.dataclass
class FactoredObs:
    """A group's observation: ``shared`` (..., Fs) once for the group, ``own`` (..., N, Fo)
    per agent (for one agent, as a space describes it: ``shared`` (Fs,), ``own`` (Fo,))."""

    shared: jax.Array
    own: jax.Array


class FactoredBox(Space):
    """One agent's factored observation: ``shared_dim`` group-wide and ``own_dim`` own features,
    unbounded. ``shape`` is the flat per-agent shape ``(shared_dim + own_dim,)`` and
    ``insert_at`` the column of the flat vector where the shared block starts."""

    def __init__(self, shared_dim: int, own_dim: int, insert_at: int, dtype: jnp.dtype = jnp.float32):
        if min(int(shared_dim), int(own_dim)) < 0 or not 0 <= int(insert_at) <= int(own_dim):
            raise ValueError(
                f"FactoredBox needs dims >= 0 and 0 <= insert_at <= own_dim, got shared_dim={shared_dim}, own_dim={own_dim}, insert_at={insert_at}"
            )
        self.shared = Box(-np.inf, np.inf, (int(shared_dim),), dtype)
        self.own = Box(-np.inf, np.inf, (int(own_dim),), dtype)
        self.insert_at = int(insert_at)
        self.shape = (int(shared_dim) + int(own_dim),)
        self.dtype = dtype

    @property
    def flat_space(self) -> Box:
        """The :class:`Box` of the flat per-agent vectors :meth:`flatten` produces."""
        k = self.insert_at
        low = np.concatenate([self.own.low[:k], self.shared.low, self.own.low[k:]])
        high = np.concatenate([self.own.high[:k], self.shared.high, self.own.high[k:]])
        return Box(low, high, self.shape, self.dtype)

    def sample(self, key: jax.Array) -> FactoredObs:
        k_shared, k_own = jax.random.split(key)
        return FactoredObs(self.shared.sample(k_shared), self.own.sample(k_own))

    def contains(self, x) -> jax.Array:
        if not isinstance(x, FactoredObs):
            return jnp.asarray(False)
        return jnp.logical_and(self.shared.contains(x.shared), self.own.contains(x.own))

    def flatten(self, obs: FactoredObs) -> jax.Array:
        """(..., N, shared_dim + own_dim): the flat per-agent observations, column for column."""
        own = obs.own
        shared = jnp.broadcast_to(obs.shared[..., None, :], (*own.shape[:-1], obs.shared.shape[-1]))
        return jnp.concatenate([own[..., : self.insert_at], shared.astype(own.dtype), own[..., self.insert_at :]], -1)

    def __repr__(self) -> str:
        return (
            f"FactoredBox(shared_dim={self.shared.shape[0]}, own_dim={self.own.shape[0]}, "
            f"insert_at={self.insert_at}, dtype={jnp.dtype(self.dtype).name})"
        )
