"""Distributions over an environment's parameters: train and evaluate a policy over what we do
not know about the climate (docs/robustness.md).

An :class:`Uncertainty` is a few scalar *factors* — the climate sensitivity, a damage
coefficient — each a multiplier ``m`` of the parameters' own (nominal) value with a truncated
distribution of median 1, and a function that sets it in the parameters (one factor may move
several fields: DICE-2016's climate sensitivity is a coefficient of Φ_T). Since parameters are
pytree leaves, a batch of draws is one ``vmap``:

>>> draws = uncertainty.sample(key, (256,))                          # doctest: +SKIP
>>> batch = jax.vmap(uncertainty.apply, in_axes=(None, 0))(params, draws)

:class:`Randomized` is the environment whose every episode draws its parameters afresh at
reset (domain randomisation): any learner trains over the distribution unchanged
(``python -m jaxclimate.train --uncertainty NAME``). The truncation keeps every draw inside
the set the family's ``validate`` accepts; :meth:`Uncertainty.check` proves it at the corners
of the factors' box (each field is monotone in its factor).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp

from jaxclimate.core import struct
from jaxclimate.core.env import Capabilities, Environment, EnvState

Z95 = 1.6448536269514722  # the standard normal's 95th percentile


@dataclasses.dataclass(frozen=True)
class LogNormalFactor:
    """A multiplier ``m = exp(σ·z)``, z standard normal truncated so that ``low <= m <= high``
    (median 1: the nominal value is the distribution's median)."""

    sigma: float
    low: float
    high: float

    def __post_init__(self) -> None:
        if not (self.sigma > 0 and 0 < self.low < 1 < self.high):
            raise ValueError(f"LogNormalFactor needs sigma > 0 and 0 < low < 1 < high, got {self}")

    @classmethod
    def from_ratio(cls, ratio_95: float, low: float, high: float) -> LogNormalFactor:
        """The log-normal whose 95th percentile is ``ratio_95`` times its median."""
        return cls(math.log(ratio_95) / Z95, low, high)

    def sample(self, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        z = jax.random.truncated_normal(key, math.log(self.low) / self.sigma, math.log(self.high) / self.sigma, shape)
        return jnp.exp(self.sigma * z)

    def describe(self) -> str:
        p5, p95 = math.exp(-Z95 * self.sigma), math.exp(Z95 * self.sigma)
        return f"log-normal, median ×1, 5–95 % ×{p5:.3g}–×{p95:.3g}, truncated to [×{self.low:g}, ×{self.high:g}]"


@dataclasses.dataclass(frozen=True)
class NormalFactor:
    """A multiplier ``m = 1 + rel_std·z``, z standard normal truncated so that ``low <= m <= high``."""

    rel_std: float
    low: float
    high: float

    def __post_init__(self) -> None:
        if not (self.rel_std > 0 and 0 < self.low < 1 < self.high):
            raise ValueError(f"NormalFactor needs rel_std > 0 and 0 < low < 1 < high, got {self}")

    def sample(self, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        z = jax.random.truncated_normal(key, (self.low - 1) / self.rel_std, (self.high - 1) / self.rel_std, shape)
        return 1.0 + self.rel_std * z

    def describe(self) -> str:
        return f"normal, mean ×1, σ {self.rel_std:.3g} (5–95 % ×{1 - Z95 * self.rel_std:.3g}–×{1 + Z95 * self.rel_std:.3g}), truncated to [×{self.low:g}, ×{self.high:g}]"


@dataclasses.dataclass(frozen=True)
class Factor:
    """One uncertain quantity: its distribution (a multiplier), ``apply(params, m)`` -> the
    parameters with the quantity multiplied by ``m`` (traceable), ``nominal(params)`` -> its
    value in ``params`` (for tables), and where the distribution comes from."""

    name: str
    distribution: LogNormalFactor | NormalFactor
    apply: Callable[[Any, jax.Array], Any]
    nominal: Callable[[Any], float]
    source: str


@dataclasses.dataclass(frozen=True)
class Uncertainty:
    """Independent factors; a draw is ``{factor name: multiplier}`` (a pytree)."""

    name: str
    factors: tuple[Factor, ...]

    def sample(self, key: jax.Array, shape: tuple[int, ...] = ()) -> dict[str, jax.Array]:
        keys = jax.random.split(key, len(self.factors))
        return {f.name: f.distribution.sample(k, shape) for f, k in zip(self.factors, keys)}

    def apply(self, params: Any, draw: dict[str, jax.Array]) -> Any:
        for factor in self.factors:
            params = factor.apply(params, draw[factor.name])
        return params

    def sample_params(self, key: jax.Array, params: Any, n: int) -> tuple[dict[str, jax.Array], Any]:
        """``n`` draws and the parameters under each (leaves stacked on a leading axis)."""
        draws = self.sample(key, (n,))
        return draws, jax.vmap(self.apply, in_axes=(None, 0))(params, draws)

    def check(self, params: Any) -> None:
        """Every corner of the factors' truncation box passes ``params.validate()``; otherwise a
        ``ValueError`` naming the uncertainty, the corner and what the family refuses."""
        bounds = [(f.distribution.low, f.distribution.high) for f in self.factors]
        for corner in itertools.product(*bounds):
            draw = {f.name: jnp.asarray(m) for f, m in zip(self.factors, corner)}
            try:
                self.apply(params, draw).validate()
            except ValueError as error:
                at = ", ".join(f"{f.name} ×{m:g}" for f, m in zip(self.factors, corner))
                raise ValueError(f"uncertainty {self.name!r} leaves the valid parameters at its corner ({at}): {error}") from None

    def describe(self, params: Any) -> list[dict[str, str]]:
        """One row per factor: name, nominal value, distribution, source (docs and records)."""
        return [
            {"factor": f.name, "nominal": f"{f.nominal(params):.6g}", "distribution": f.distribution.describe(), "source": f.source}
            for f in self.factors
        ]


@struct.dataclass
class RandomizedState(EnvState):
    """The base environment's state and the parameters drawn for this episode."""

    inner: Any
    params: Any


class Randomized(Environment):
    """``base`` whose every episode runs under parameters drawn from ``uncertainty`` at reset
    (around the parameters ``reset`` is given). Observations, actions, rewards and agents are
    the base's; so a policy trained on it runs on the base environment as it is."""

    def __init__(self, base: Environment, uncertainty: Uncertainty, params: Any = None):
        """``params``: the parameters the draws will be made around (checked to stay valid;
        default the base's own)."""
        self.base = base
        self.uncertainty = uncertainty
        uncertainty.check(base.default_params if params is None else params)
        self.agents = dict(base.agents)
        if base.observation is not None:
            self.observation = lambda state, params: base.observation(state.inner, state.params)

    @property
    def name(self) -> str:
        return f"{self.base.name}~{self.uncertainty.name}"

    @property
    def default_params(self) -> Any:
        return self.base.default_params

    @property
    def capabilities(self) -> Capabilities:
        """The base's: its action masks and episode metrics read the inner state under the
        drawn parameters; its uncertainties and host callback are the same."""
        return self.base.capabilities

    def action_mask(self, group: str, state: RandomizedState, params: Any = None) -> jax.Array:
        return self.base.action_mask(group, state.inner, state.params)

    def episode_metrics(self, state: RandomizedState, params: Any) -> dict[str, jax.Array]:
        return self.base.episode_metrics(state.inner, state.params)

    def agent_names(self, group: str) -> list[str]:
        return self.base.agent_names(group)

    def observation_space(self, group: str | None = None):
        return self.base.observation_space(group)

    def action_space(self, group: str | None = None):
        return self.base.action_space(group)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[dict, RandomizedState]:
        key_draw, key_reset = jax.random.split(key)
        drawn = self.uncertainty.apply(params, self.uncertainty.sample(key_draw))
        obs, inner = self.base.reset_env(key_reset, drawn)
        return obs, RandomizedState(time=inner.time, inner=inner, params=drawn)

    def step_env(self, key: jax.Array, state: RandomizedState, actions: dict, params: Any):
        obs, inner, rewards, terminated, info = self.base.step_env(key, state.inner, actions, state.params)
        return obs, RandomizedState(time=inner.time, inner=inner, params=state.params), rewards, terminated, info


def uncertainty_of(env: Environment, name: str) -> Uncertainty:
    """``env``'s uncertainty called ``name``, or one line listing those it has."""
    known = env.capabilities.uncertainties
    if name not in known:
        if not known:
            raise ValueError(f"{env.name} declares no parameter uncertainties (an environment lists them in its `uncertainties`)")
        raise ValueError(f"{env.name} has no uncertainty {name!r}; it has {sorted(known)}")
    return known[name]
