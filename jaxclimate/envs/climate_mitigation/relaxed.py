"""The climate game's continuous relaxation (``climate-mitigation-levers``): each country sets
its three mitigation efforts k ∈ [0, 1] and its adaptation spending p ∈ [0, 0.08] directly,
every year — the cooperative planner's levers (``jaxclimate.envs.climate_mitigation.planner``),
as a closed-loop environment that gradient-based learners (``--algo apg``) differentiate.

The game's three levels per lever (efforts 0 / 0.5 / 1, adaptation 0 / 0.03 / 0.08) become the
interval between the lowest and the highest, so every discrete policy is one of these. The
state, the year's dynamics (``ClimateMitigation.year``, with the chosen climate engine), the
look-ahead in the last year's reward (Eq. 32), the observation and the 35-year episode are the
game's. Levers outside their range are clipped. The look-ahead runs as a ``lax.cond`` (the
game's ``while_loop`` cannot be reverse-differentiated); under ``vmap`` it is computed every
year and kept in the last.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.relaxation import Relaxation
from jaxclimate.core.spaces import Box
from jaxclimate.envs.climate_mitigation.env import GROUP, HORIZON, NUM_LEVERS, ClimateMitigation, MitigationParams, MitigationState


class ClimateMitigationLevers(Relaxation):
    """The climate game with continuous levers, (N, 4) = (3 efforts, adaptation); see the
    module docstring. ``scenario``, ``engine`` and ``dtype`` are :class:`ClimateMitigation`'s."""

    def __init__(self, scenario: str = "i", engine: Any = "gru", dtype: Any = "float32"):
        base = ClimateMitigation(scenario=scenario, engine=engine, dtype=dtype)
        params = base.default_params
        efforts, adaptation = np.asarray(params.effort_levels), np.asarray(params.adaptation_levels)
        low = np.append(np.full(NUM_LEVERS, efforts.min()), adaptation.min())
        high = np.append(np.full(NUM_LEVERS, efforts.max()), adaptation.max())
        super().__init__(base, Box(low, high, dtype=jnp.float32))
        self.scenario, self.dtype, self.num_agents = base.scenario, base.dtype, base.num_agents

    @property
    def name(self) -> str:
        return f"climate-mitigation-levers-{self.scenario}"

    def step_env(self, key: jax.Array, state: MitigationState, actions: dict, params: MitigationParams):
        params = struct.cast_numeric(params, self.dtype)
        levers = jnp.clip(jnp.asarray(actions[GROUP], self.dtype), self._action_space.low, self._action_space.high)
        new_state, cost, global_emissions = self.base.year(state, levers[:, :NUM_LEVERS], levers[:, NUM_LEVERS], params)
        terminated = new_state.time >= HORIZON
        ahead = lambda s: {k: self.base.lookahead(s, params)[k] for k in ("cost", "temperatures")}  # noqa: E731
        blank = lambda s: jax.tree_util.tree_map(jnp.zeros_like, jax.eval_shape(ahead, s))  # noqa: E731
        lookahead = jax.lax.cond(terminated, ahead, blank, new_state)
        rewards = -(cost + lookahead["cost"])  # Eq. 32: the look-ahead sits inside r(2050)
        # the game's info keys, so its training report (levers, temperatures) reads both alike
        info = {"temperature": new_state.temperature, "global_emissions": global_emissions, "lookahead_temperatures": lookahead["temperatures"]}
        return self.base._observe(new_state, params), new_state, {GROUP: rewards}, terminated, info
