"""A continuous relaxation of an environment with discrete levers: the ``base`` environment's
state, parameters, reset, observations and agents, with a ``Box`` action space and a step of
the subclass's own that applies the levers' values directly (so gradient-based learners can
differentiate through it). ``rice-n-rates`` and ``climate-mitigation-levers`` are two."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from jaxclimate.core.env import Capabilities, Environment
from jaxclimate.core.spaces import Box


class Relaxation(Environment):
    """Delegates everything but ``name`` and ``step_env`` to ``base``; ``action_space`` is
    ``action_space`` for every agent (one group)."""

    def __init__(self, base: Environment, action_space: Box):
        if len(base.agents) != 1:
            raise ValueError(f"a relaxation has one agent group; {base.name} has {sorted(base.agents)}")
        self.base = base
        self.agents = dict(base.agents)
        self._action_space = action_space
        self._observation_space = base.observation_space()
        self.observation = base.observation  # None where observations are not a function of the state

    @property
    def capabilities(self) -> Capabilities:
        """The base's, less its action masks (the actions are a ``Box`` now): the same
        parameters, so the same uncertainties; the same state, so the same episode metrics; the
        same engine, so the same host callback."""
        return dataclasses.replace(self.base.capabilities, action_mask=False)

    def episode_metrics(self, state: Any, params: Any) -> dict[str, jax.Array]:
        return self.base.episode_metrics(state, params)

    @property
    def default_params(self) -> Any:
        return self.base.default_params

    def agent_names(self, group: str) -> list[str]:
        return self.base.agent_names(group)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[dict, Any]:
        return self.base.reset_env(key, params)
