"""Any jaxclimate environment as a PettingZoo ``ParallelEnv`` (NumPy in, NumPy out).

Agents are named ``f"{group}_{i}"`` (``"bands_0"``, ``"companies_4"``, ``"regions_26"``). All
agents of a jaxclimate environment share one episode: on the step that ends it every agent is
terminated and/or truncated together, the observations are the ones that step produced (the
JAX environment's ``info["final_obs"]``: its auto-reset is not passed on), and ``agents``
becomes empty until ``reset``. Stepping then is an error.

Observations are flat arrays (factored ones flattened, ``FactoredBox.flatten``). Where the
environment has action masks (RICE-N) each live agent's info carries ``"action_mask"`` (not on
the step that ends the episode: nobody acts after it): int8, one
entry per action level, ``sum(nvec)`` of them in the layout of RICE-N's reference (block k holds
head k's levels); ``np.split(mask, np.cumsum(nvec)[:-1])`` is the mask
``MultiDiscrete.sample(mask=...)`` takes. Every agent's info also holds the environment's step
info (NumPy; the same arrays for every agent).
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.interfaces._host import HostRunner, entropy_seed
from jaxclimate.interfaces._layout import resolve
from jaxclimate.interfaces.spaces import checked_actions, to_gymnasium


class PettingZooEnv(ParallelEnv):
    """A jaxclimate environment as a PettingZoo ``ParallelEnv``.

    Args:
        env: a registered id (``jaxclimate.registered_envs()``) or a built environment.
        params: the environment's parameters (only with a built environment; default its own).
        render_mode: must be None (nothing to render).
        **overrides: ``jaxclimate.make`` overrides for an env id (``max_steps=10``, ``num_agents=2``, ...).

    ``reset(seed=s)`` seeds a ``jax.random`` key (see ``jaxclimate/interfaces/_host.py``);
    ``options`` is accepted for the API and ignored (jaxclimate environments take no reset
    options: their parameters are fixed at construction).
    """

    metadata = {"name": "jaxclimate", "render_modes": [], "is_parallelizable": True}

    def __init__(self, env: str | Environment, params: EnvParams | None = None, *, render_mode: str | None = None, **overrides: Any):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (jaxclimate environments have no rendering), got {render_mode!r}")
        env, params, name = resolve(env, params, overrides)
        self._runner = HostRunner(env, params)
        self._layout = layout = self._runner.layout
        self.metadata = {**type(self).metadata, "name": name}
        self.render_mode = None
        self.possible_agents: list[str] = list(layout.agents)
        self.agents: list[str] = []
        # one space object per agent (PettingZoo seeds spaces per agent); built once, returned as is
        self.observation_spaces = {a: to_gymnasium(layout.observation_spaces[layout.group_of(a)]) for a in layout.agents}
        self.action_spaces = {a: to_gymnasium(layout.action_spaces[layout.group_of(a)]) for a in layout.agents}

    # --- spaces --------------------------------------------------------------------------
    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        self._layout.group_of(agent)  # a clear error for an unknown name
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        self._layout.group_of(agent)
        return self.action_spaces[agent]

    # --- episode -------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, masks = self._runner.reset(seed, entropy_seed)
        self.agents = list(self.possible_agents)
        return self._per_agent(obs), self._infos({}, masks)

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """One step of every live agent: ``(observations, rewards, terminations, truncations, infos)``."""
        if not self.agents:
            raise RuntimeError(f"{self}: the episode is over (or was never started); call reset()")
        out = self._runner.step(self._grouped(actions))
        terminated, truncated = bool(out.terminated), bool(out.truncated)
        over = terminated or truncated
        # at the end the state (and so its masks) is already the next episode's: no masks then
        obs, infos = self._per_agent(out.final_obs), self._infos(out.info, {} if over else out.masks)
        rewards = {name: float(r) for g in self._layout.groups for name, r in zip(self._layout.names[g], out.rewards[g])}
        terminations = dict.fromkeys(self.agents, terminated)
        truncations = dict.fromkeys(self.agents, truncated)
        if over:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass

    # --- conversions ---------------------------------------------------------------------
    @property
    def jax_env(self) -> Environment:
        """The JAX environment underneath."""
        return self._runner.env

    @property
    def jax_state(self) -> Any:
        """The JAX state after the last reset or step (after the step that ended an episode:
        the fresh episode's, as the JAX environment auto-resets)."""
        return self._runner.state

    def _grouped(self, actions: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Agent name -> action to group -> (N, ...) NumPy arrays, every check naming the agent
        (:meth:`AgentLayout.check_actions`, then the discrete levels' range)."""
        caller = f"{self}.step"
        if isinstance(actions, Mapping) and set(actions) - set(self.agents):
            raise ValueError(f"{caller}: actions for agents that are not live: {sorted(set(actions) - set(self.agents))}")
        self._layout.check_actions(actions, caller)
        names, spaces = self._layout.names, self._layout.action_spaces
        return {g: checked_actions(np.stack([np.asarray(actions[n]) for n in names[g]]), spaces[g], names[g], caller) for g in self._layout.groups}

    def _per_agent(self, grouped: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: grouped[g][i] for name, (g, i) in self._layout.index.items()}

    def _infos(self, info: dict, masks: Mapping[str, np.ndarray]) -> dict[str, dict]:
        infos = {name: dict(info) for name in self.possible_agents}
        for group, mask in masks.items():
            for name, row in zip(self._layout.names[group], mask.astype(np.int8)):
                infos[name]["action_mask"] = row
        return infos
