"""RICE-N's continuous relaxation (``rice-n-rates``): each region sets its savings rate s and
mitigation rate μ directly, in [0, 1], at every activity step — the levers of the cooperative
planner (``jaxclimate.envs.rice_n.planner``), as a closed-loop environment that gradient-based
learners (``--algo apg``) can differentiate through.

What it keeps of RICE-N: the state, the dynamics of one activity step (``dynamics.activity_step``
with the chosen climate module), the observation (the flat layout of protocol ``none``, or the
compact one: ``observation="compact"``), the
reward U_i and the 20-step episode. What it relaxes: the 10 discrete levels of s and μ become
the interval [0, 1] (level k of RICE-N is the rate k/10, so every discrete policy is one of
these). What it drops: trade and tariffs — every export limit, import bid and tariff is 0, as
in the paper's constant policies and the planner (docs/rice_n.md §11.3) — and negotiation.
Rates outside [0, 1] are clipped.

Its training report is RICE-N's (competition metrics, indices, index plane), from the history
of each seed's evaluation episode (:func:`history`; ``report.RiceNRatesReport``).
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.relaxation import Relaxation
from jaxclimate.core.spaces import Box
from jaxclimate.envs.rice_n.dynamics import RiceState, activity_step
from jaxclimate.envs.rice_n.env import GROUP, RiceN
from jaxclimate.envs.rice_n.evaluation import history_arrays
from jaxclimate.envs.rice_n.params import RiceParams

#: The observation layouts of the relaxation: per-region arrays (its learners take no factored ones).
RATES_OBSERVATION_LAYOUTS = ("flat", "compact")


class RiceNRates(Relaxation):
    """RICE-N with continuous (s, μ) actions, (N, 2) in [0, 1]; see the module docstring.
    ``regions``, ``dtype``, ``num_activity_steps`` and ``climate`` are :class:`RiceN`'s, and
    ``observation`` its ``"flat"`` (default) or ``"compact"`` layout (docs/rice_n.md §9.3)."""

    def __init__(
        self,
        regions: Sequence[int] | str | None = None,
        dtype: Any = "float32",
        num_activity_steps: int = 20,
        climate: Any = "dice",
        observation: str = "flat",
    ):
        if observation not in RATES_OBSERVATION_LAYOUTS:
            raise ValueError(f"RiceNRates.observation must be one of {RATES_OBSERVATION_LAYOUTS}, got {observation!r}")
        base = RiceN(regions=regions, dtype=dtype, num_activity_steps=num_activity_steps, climate=climate, observation=observation)
        super().__init__(base, Box(0.0, 1.0, (2,), dtype=jnp.float32))
        self.regions, self.num_regions, self.dtype = self.base.regions, self.base.num_regions, self.base.dtype
        self.num_activity_steps = self.episode_length = self.base.num_activity_steps
        self.climate, self.climate_name = self.base.climate, self.base.climate_name

    @property
    def name(self) -> str:
        return self.base.name.replace("rice-n", "rice-n-rates", 1)

    def transition(self, state: RiceState, rates: jax.Array, params: RiceParams) -> RiceState:
        """One activity step with (s, μ) = ``rates`` (N, 2), no trade, no tariffs."""
        params = struct.cast_numeric(params, self.dtype)
        n = self.num_regions
        rates = jnp.clip(jnp.asarray(rates, self.dtype), 0.0, 1.0)
        square = jnp.zeros((n, n), self.dtype)
        levers = {"savings": rates[:, 0], "mitigation": rates[:, 1], "export_limit": jnp.zeros(n, self.dtype), "tariffs": square, "bids": square}
        return activity_step(state.replace(time=state.time + 1), levers, params, self.climate)

    def step_env(self, key: jax.Array, state: RiceState, actions: dict, params: RiceParams):
        state = self.transition(state, actions[GROUP], params)
        done = state.activity_step >= self.num_activity_steps
        info = {"temperature": state.temperature[0], "gross_output": state.gross_output}
        return self.observation(state, params), state, {GROUP: state.reward}, done, info


def history(env: RiceNRates, params: RiceParams, rates: np.ndarray) -> dict[str, np.ndarray]:
    """The episode played with ``rates`` (E, N, 2), in the layout of RICE-N's :func:`replay`
    (``state__*`` rows 0..E, ``rewards``; ``evaluation.history_arrays``) with each step's
    discounted welfare (``welfare``): what :mod:`~jaxclimate.envs.rice_n.evaluation` and
    :mod:`~jaxclimate.envs.rice_n.scoring` read."""
    return jax.tree_util.tree_map(np.asarray, _history(env, params, jnp.asarray(rates)))


@functools.partial(jax.jit, static_argnums=0)  # compiled once per environment (hashed by identity)
def _history(env: RiceNRates, params: RiceParams, rates: jax.Array) -> dict[str, jax.Array]:
    _, first = env.reset(jax.random.key(0), params)
    _, states = jax.lax.scan(lambda s, r: (env.transition(s, r, params),) * 2, first, rates)
    return {**history_arrays(first, states, states.reward), "welfare": states.social_welfare}
