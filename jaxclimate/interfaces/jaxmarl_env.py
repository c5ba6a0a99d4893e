"""Any jaxclimate environment with JaxMARL's ``MultiAgentEnv`` API: pure JAX, jittable.

As JaxMARL: ``agents`` is a list of names (``f"{group}_{i}"``), ``num_agents``,
``observation_spaces``/``action_spaces`` dicts and ``observation_space(agent)``/``action_space(agent)``,
``reset(key) -> (obs, state)`` and ``step(key, state, actions, reset_state=None) -> (obs, state,
rewards, dones, infos)`` with per-agent dicts, ``dones["__all__"]``, an automatic reset when the
episode ends, ``get_obs(state)``, ``get_avail_actions(state)``, ``agent_classes`` and ``name``.
``reset`` and ``step`` are jitted, as JaxMARL's are.

What is ours, not JaxMARL's:

* ``state`` is the jaxclimate environment's state (its ``time`` counts steps; JaxMARL's base
  ``State`` has ``step`` and ``done``).
* spaces are jaxclimate's (``jaxclimate/core/spaces.py``: ``sample(key)``, ``contains(x)``,
  ``shape``, ``dtype``; ``MultiDiscrete`` has ``nvec`` where JaxMARL's has ``num_categories``).
* ``step`` calls the jaxclimate ``step`` with the key it is given, so the two agree step for
  step; ``infos`` is the jaxclimate step's info with ``"final_obs"`` per agent name (the
  observation the ending step produced, for bootstrapping) and ``"terminated"``/``"truncated"``
  (``dones`` is their ``or``).
* observations are flat (factored ones flattened); ``get_avail_actions`` gives flat boolean
  masks (``sum(nvec)`` entries, head after head; see ``jaxclimate/interfaces/_layout.py``).
* ``sample_actions(key)`` draws every agent's action, vectorised per group.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.core.spaces import Discrete, MultiDiscrete, Space
from jaxclimate.interfaces._layout import AgentLayout, mask_width, resolve

_jit_method = functools.partial(jax.jit, static_argnums=0)


class JaxMARLEnv:
    """A jaxclimate environment seen through JaxMARL's ``MultiAgentEnv`` API.

    Args:
        env: a registered id or a built environment.
        params: its parameters (only with a built environment; default its own). They are
            part of the view: JaxMARL's ``reset``/``step`` take none.
        **overrides: ``jaxclimate.make`` overrides for an env id.
    """

    def __init__(self, env: str | Environment, params: EnvParams | None = None, **overrides: Any):
        self.env, self.params, self._name = resolve(env, params, overrides)
        self._layout = layout = AgentLayout(self.env)
        self.agents: list[str] = list(layout.agents)
        self.num_agents = len(self.agents)
        self.observation_spaces: dict[str, Space] = {a: layout.flat_observation_spaces[layout.group_of(a)] for a in self.agents}
        self.action_spaces: dict[str, Space] = {a: layout.action_spaces[layout.group_of(a)] for a in self.agents}

    @property
    def name(self) -> str:
        return self._name

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        """Group name -> its agents' names (agents of a group share spaces and role)."""
        return {g: list(names) for g, names in self._layout.names.items()}

    def observation_space(self, agent: str) -> Space:
        self._layout.group_of(agent)  # a clear error for an unknown name
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Space:
        self._layout.group_of(agent)
        return self.action_spaces[agent]

    # --- the API -------------------------------------------------------------------------
    @_jit_method
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], Any]:
        obs, state = self.env.reset(key, self.params)
        return self._layout.split(self._layout.flatten(obs)), state

    @_jit_method
    def step(self, key: jax.Array, state: Any, actions: dict[str, jax.Array], reset_state: Any = None) -> tuple:
        """One step; where the episode ends, the returned ``obs``/``state`` are the next
        episode's: the environment's own reset, or ``reset_state`` when given (which needs
        :meth:`get_obs`)."""
        grouped = self._layout.stack(actions, f"{self.name}.step")
        obs, next_state, rewards, terminated, truncated, info = self.env.step(key, state, grouped, self.params)
        done = jnp.logical_or(terminated, truncated)
        obs = self._layout.split(self._layout.flatten(obs))
        if reset_state is not None:
            next_state = _where(done, reset_state, next_state)
            obs = _where(done, self.get_obs(reset_state), obs)
        dones = dict.fromkeys(self.agents, done)  # one episode for every agent
        dones["__all__"] = done
        infos = dict(info, terminated=terminated, truncated=truncated)
        infos["final_obs"] = self._layout.split(self._layout.flatten(info["final_obs"]))
        return obs, next_state, self._layout.split(rewards), dones, infos

    def get_obs(self, state: Any) -> dict[str, jax.Array]:
        """Observations of ``state``, per agent; for environments whose observation is a
        function of the state (``Environment.observation``: RICE-N, InvestESG)."""
        if self.env.observation is None:
            raise NotImplementedError(
                f"{self.name}: observations are not a function of the state alone, so there is no get_obs (and no step(reset_state=...))"
            )
        return self._layout.split(self._layout.flatten(self.env.observation(state, self.params)))

    def get_avail_actions(self, state: Any) -> dict[str, jax.Array]:
        """Per agent, a flat boolean mask of its action levels (True = allowed): the
        environment's masks where it has them (RICE-N), else all True for discrete actions."""
        if self._layout.has_masks:
            return self._layout.split(self._layout.flat_masks(state, self.params))
        spaces = self._layout.action_spaces
        if not all(isinstance(s, (Discrete, MultiDiscrete)) for s in spaces.values()):
            raise NotImplementedError(f"{self.name}: continuous or binary actions have no availability mask")
        return self._layout.split({g: jnp.ones((len(self._layout.names[g]), mask_width(s)), bool) for g, s in spaces.items()})

    # --- conveniences --------------------------------------------------------------------
    def sample_actions(self, key: jax.Array) -> dict[str, jax.Array]:
        """Uniformly drawn actions for every agent (one ``vmap`` per group)."""
        return self._layout.split(self.env.sample_actions(key))

    def __repr__(self) -> str:
        return f"JaxMARLEnv<{self.name}, {self.num_agents} agents>"


def _where(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
