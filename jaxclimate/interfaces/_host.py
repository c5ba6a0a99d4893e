"""The jitted reset and step behind the NumPy interfaces (PettingZoo, Gymnasium), and their keys.

Each runner jits its two functions once, when it is built; they take the key, the state,
the actions and the parameters as arguments (the parameters are put on the device once), so
no call re-traces them (``traces`` counts the traces, for the tests).

Key schedule: ``reset(seed=s)`` sets ``key = jax.random.key(s)``; every reset and every step
then splits ``key, sub = jax.random.split(key)`` and hands ``sub`` to ``env.reset`` /
``env.step``. A ``reset()`` without a seed carries on from the current key (the very first one
draws a seed). A vector runner does the same per copy, copy ``i`` seeded with ``s + i``, so
copy ``i`` replays a single environment reset with seed ``s + i``.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.interfaces._layout import AgentLayout, check_seed


class StepOut(NamedTuple):
    """One step as the NumPy interfaces need it (group-keyed, flat observations)."""

    obs: dict | None  # vector runners: the observation after the step, the fresh episode's where it ended (auto-reset)
    final_obs: dict  # the observation the step produced, before any auto-reset
    rewards: dict
    terminated: Any
    truncated: Any
    info: dict  # the environment's info, without ``final_obs``
    masks: dict  # group -> flat action masks of the state after the step; {} without masks


class HostRunner:
    """Drives one environment (or, with ``num_envs``, that many copies under ``vmap``) from the host."""

    def __init__(self, env: Environment, params: EnvParams, num_envs: int | None = None):
        self.env = env
        self.layout = AgentLayout(env)
        self.params = jax.device_put(params)  # once, rather than copied in on every call
        self.num_envs = num_envs
        self.traces: collections.Counter = collections.Counter()
        # with num_envs, every copy has its own key, state and actions; the parameters are shared
        self._reset = jax.jit(jax.vmap(self._reset_fn, in_axes=(0, None)) if num_envs else self._reset_fn)
        self._step = jax.jit(jax.vmap(self._step_fn, in_axes=(0, 0, 0, None)) if num_envs else self._step_fn)
        self.key: jax.Array | None = None
        self.state: Any = None

    # --- traced --------------------------------------------------------------------------
    def _reset_fn(self, key: jax.Array, params: EnvParams) -> tuple:
        self.traces["reset"] += 1  # runs only while tracing
        key, sub = jax.random.split(key)
        obs, state = self.env.reset(sub, params)
        return key, self.layout.flatten(obs), state, self.layout.flat_masks(state, params)

    def _step_fn(self, key: jax.Array, state: Any, actions: dict, params: EnvParams) -> tuple:
        self.traces["step"] += 1
        key, sub = jax.random.split(key)
        obs, state, rewards, terminated, truncated, info = self.env.step(sub, state, actions, params)
        info = dict(info)
        final_obs = info.pop("final_obs")
        # A single environment's wrappers end the episode and hand out final_obs: left out of
        # the outputs, the reset observation is never computed (XLA drops it).
        obs = self.layout.flatten(obs) if self.num_envs else None
        out = StepOut(obs, self.layout.flatten(final_obs), rewards, terminated, truncated, info, self.layout.flat_masks(state, params))
        return key, state, out

    # --- host ----------------------------------------------------------------------------
    def reset(self, seed: Any, draw_seed: Callable[[], int]) -> tuple[dict, dict]:
        """(flat observations, flat masks) as NumPy, after seeding as the module docstring says."""
        if seed is not None:
            self.key = self._keys(seed)
        elif self.key is None:
            self.key = self._keys(draw_seed())
        self.key, obs, self.state, masks = self._reset(self.key, self.params)
        return to_numpy((obs, masks))

    def step(self, actions: dict) -> StepOut:
        """One step of NumPy actions (group -> array); the result as NumPy."""
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        self.key, self.state, out = self._step(self.key, self.state, actions, self.params)
        return to_numpy(out)

    def _keys(self, seed: Any) -> jax.Array:
        """One key, or with ``num_envs`` one per copy: seed ``s`` gives copy ``i`` the seed
        ``s + i``; a list gives each copy its own."""
        if not self.num_envs:
            return jax.random.key(check_seed(seed))
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"reset: {len(seed)} seeds for {self.num_envs} environments")
            seeds = [check_seed(s) for s in seed]
        else:
            seeds = [check_seed(check_seed(seed) + i) for i in range(self.num_envs)]
        return jax.vmap(jax.random.key)(np.asarray(seeds, np.uint32))


def to_numpy(tree: Any) -> Any:
    """Every leaf as a fresh, writable NumPy array (a caller may keep or modify what it gets)."""
    return jax.tree_util.tree_map(np.array, jax.device_get(tree))


def entropy_seed() -> int:
    """A seed from the operating system's entropy, for a first reset without one."""
    return int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
