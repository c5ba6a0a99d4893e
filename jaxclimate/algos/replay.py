"""A fixed-size replay buffer as device arrays (one per learner; ``vmap`` it over learners).

Transitions ``(obs, action, reward, next_obs, done)`` are written at a cyclic index; once
``capacity`` is reached the oldest are overwritten. ``sample`` draws indices uniformly **with
replacement** from the filled part, as CleanRL's buffers (and the FedRAIN-Lite originals) do.
``done`` marks a true terminal (no bootstrap); a time-limit end is stored with ``done = 0`` and
the true final observation as ``next_obs``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxclimate.core import struct


@struct.dataclass
class ReplayBuffer:
    obs: jax.Array  # (capacity, obs_dim)
    action: jax.Array  # (capacity, act_dim)
    reward: jax.Array  # (capacity,)
    next_obs: jax.Array  # (capacity, obs_dim)
    done: jax.Array  # (capacity,)
    position: jax.Array  # next write index (int32)
    size: jax.Array  # filled entries (int32)

    @classmethod
    def create(cls, capacity: int, obs_dim: int, act_dim: int) -> "ReplayBuffer":
        zeros = lambda *shape: jnp.zeros(shape, jnp.float32)  # noqa: E731
        return cls(
            obs=zeros(capacity, obs_dim),
            action=zeros(capacity, act_dim),
            reward=zeros(capacity),
            next_obs=zeros(capacity, obs_dim),
            done=zeros(capacity),
            position=jnp.zeros((), jnp.int32),
            size=jnp.zeros((), jnp.int32),
        )

    @property
    def capacity(self) -> int:
        return self.reward.shape[-1]

    def add(self, obs: jax.Array, action: jax.Array, reward: jax.Array, next_obs: jax.Array, done: jax.Array) -> "ReplayBuffer":
        """Append a batch of transitions (leading axis: how many, e.g. one per env)."""
        count = reward.shape[0]
        index = (self.position + jnp.arange(count)) % self.capacity
        put = lambda buf, x: buf.at[index].set(x.astype(jnp.float32))  # noqa: E731
        return self.replace(
            obs=put(self.obs, obs),
            action=put(self.action, action),
            reward=put(self.reward, reward),
            next_obs=put(self.next_obs, next_obs),
            done=put(self.done, done),
            position=(self.position + count) % self.capacity,
            size=jnp.minimum(self.size + count, self.capacity),
        )

    def sample(self, key: jax.Array, batch_size: int) -> dict[str, jax.Array]:
        """``batch_size`` transitions drawn uniformly with replacement from the filled part."""
        index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(self.size, 1))
        return {
            "obs": self.obs[index],
            "action": self.action[index],
            "reward": self.reward[index],
            "next_obs": self.next_obs[index],
            "done": self.done[index],
        }
