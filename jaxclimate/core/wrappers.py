"""Wrappers: episode statistics, checked actions, and a JaxMARL-style per-agent dict adapter."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import checkify

from jaxclimate.core import struct
from jaxclimate.core.env import Environment, EnvState
from jaxclimate.core.spaces import Space


class Wrapper:
    """Delegates everything it does not override to the wrapped environment."""

    def __init__(self, env: Any):
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    @property
    def unwrapped(self) -> Environment:
        env = self._env
        while isinstance(env, Wrapper):
            env = env._env
        return env


class CheckedActions(Wrapper):
    """Every action checked against its space inside the program, naming the group, the first
    agent out of range and the space (``jax.experimental.checkify``; the unchecked ``step``
    pays nothing). Run the step under ``checkify.checkify`` and throw its error::

        env = CheckedActions(env)
        err, out = jax.jit(checkify.checkify(env.step))(key, state, actions, params)
        err.throw()   # ValueError: ... actions['countries'] of agent 2 outside MultiDiscrete([3, 3, 3, 3]) ...
    """

    def step(self, key: jax.Array, state: Any, actions: dict, params: Any = None):
        for group in self._env.agents:
            space = self._env.action_space(group)
            inside = jax.vmap(space.contains)(jnp.asarray(actions[group]))  # (agents,)
            checkify.check(
                jnp.all(inside),
                f"{self._env.name}.step: actions[{group!r}] of agent {{agent}} outside {space} (first such agent)",
                agent=jnp.argmin(inside),
            )
        return self._env.step(key, state, actions, params)


@struct.dataclass
class EpisodeStatsState:
    """Running and last-completed episode returns (per agent, per group) and lengths."""

    env_state: EnvState
    episode_returns: dict[str, jax.Array]
    episode_length: jax.Array
    returned_episode_returns: dict[str, jax.Array]
    returned_episode_length: jax.Array
    episodes_done: jax.Array


class EpisodeStatistics(Wrapper):
    """Tracks undiscounted returns per agent and episode lengths across auto-resets.

    ``info`` gains ``returned_episode`` (True on the step that ends an episode),
    ``returned_episode_returns`` (dict group -> (n_agents,), the last completed episode's
    returns, updated on that step) and ``returned_episode_length``.
    """

    def reset(self, key: jax.Array, params: Any = None) -> tuple[dict, EpisodeStatsState]:
        obs, env_state = self._env.reset(key, params)
        zeros = {g: jnp.zeros((n,), jnp.float32) for g, n in self._env.agents.items()}
        state = EpisodeStatsState(
            env_state=env_state,
            episode_returns=zeros,
            episode_length=jnp.zeros((), jnp.int32),
            returned_episode_returns=zeros,
            returned_episode_length=jnp.zeros((), jnp.int32),
            episodes_done=jnp.zeros((), jnp.int32),
        )
        return obs, state

    def step(self, key: jax.Array, state: EpisodeStatsState, actions: dict, params: Any = None):
        obs, env_state, rewards, terminated, truncated, info = self._env.step(key, state.env_state, actions, params)
        done = jnp.logical_or(terminated, truncated)
        returns = {g: state.episode_returns[g] + rewards[g].astype(jnp.float32) for g in rewards}
        length = state.episode_length + 1
        new_state = EpisodeStatsState(
            env_state=env_state,
            episode_returns={g: jnp.where(done, 0.0, r) for g, r in returns.items()},
            episode_length=jnp.where(done, 0, length),
            returned_episode_returns={g: jnp.where(done, returns[g], state.returned_episode_returns[g]) for g in returns},
            returned_episode_length=jnp.where(done, length, state.returned_episode_length),
            episodes_done=state.episodes_done + done.astype(jnp.int32),
        )
        info = dict(info)
        info["returned_episode"] = done
        info["returned_episode_returns"] = new_state.returned_episode_returns
        info["returned_episode_length"] = new_state.returned_episode_length
        return obs, new_state, rewards, terminated, truncated, info


class PerAgentDictAdapter(Wrapper):
    """JaxMARL-style view: one entry per agent, named ``"{group}_{index}"``.

    ``reset`` returns ``(obs_dict, state)``; ``step(key, state, actions_dict, params)``
    returns ``(obs_dict, state, rewards_dict, dones_dict, info)`` where ``dones_dict`` has
    one entry per agent plus ``"__all__"``, as JaxMARL's ``MultiAgentEnv`` does.
    """

    @property
    def agent_names(self) -> list[str]:
        return [f"{g}_{i}" for g, n in self._env.agents.items() for i in range(n)]

    @property
    def num_agents(self) -> int:
        return sum(self._env.agents.values())

    def observation_space(self, agent: str) -> Space:
        return self._env.observation_space(self._group_of(agent))

    def action_space(self, agent: str) -> Space:
        return self._env.action_space(self._group_of(agent))

    def reset(self, key: jax.Array, params: Any = None):
        obs, state = self._env.reset(key, params)
        return self._split(obs), state

    def step(self, key: jax.Array, state: Any, actions: dict[str, jax.Array], params: Any = None):
        missing = set(self.agent_names) - set(actions)
        if missing:
            raise ValueError(f"PerAgentDictAdapter.step: missing actions for agents {sorted(missing)}")
        grouped = {g: jnp.stack([jnp.asarray(actions[f"{g}_{i}"]) for i in range(n)]) for g, n in self._env.agents.items()}
        obs, state, rewards, terminated, truncated, info = self._env.step(key, state, grouped, params)
        done = jnp.logical_or(terminated, truncated)
        dones = {name: done for name in self.agent_names}
        dones["__all__"] = done
        info = dict(info)
        info["terminated"], info["truncated"] = terminated, truncated
        return self._split(obs), state, self._split(rewards), dones, info

    def _split(self, grouped: dict[str, jax.Array]) -> dict[str, jax.Array]:
        return {f"{g}_{i}": grouped[g][i] for g, n in self._env.agents.items() for i in range(n)}

    def _group_of(self, agent: str) -> str:
        group, _, index = agent.rpartition("_")
        if group not in self._env.agents or not index.isdigit() or int(index) >= self._env.agents[group]:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.agent_names}")
        return group
