"""Rollout-level extensions of InvestESG (paper appendix; docs/invest_esg.md §11): they act on
the agents' actions inside the training rollout, not on the market.

* :class:`RealWorldSeeding` — "seeding with real-world actions" (paper Fig. 8d–f): for the
  first ``years`` years of every episode a fixed set of companies spends a uniform 0.5–1 % of
  its capital on mitigation, whatever its policy says, and those years are left out of every
  agent's PPO batch (as the authors' JAX trainer does).
* The 5-year lock-in (Fig. 8g–i) is IPPO's ``lock_in_period`` option.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from jaxclimate.envs.invest_esg.env import COMPANIES


@dataclasses.dataclass(frozen=True)
class RealWorldSeeding:
    """A :class:`jaxclimate.algos.ippo.RolloutHook`.

    ``num_companies`` of the market's ``total_companies`` (default ⌈N_C / 2⌉, the authors'
    choice) are drawn once per run from the run key and stay fixed; in years
    ``t < years`` of every episode each of them plays (v, 0, 0) with v ~ U(``low``, ``high``)
    drawn per company, environment and year. ``train_on_seeded_years=False`` (the authors')
    gives those years weight 0 in every agent's loss."""

    total_companies: int
    num_companies: int | None = None
    years: int = 5
    low: float = 0.005
    high: float = 0.01
    train_on_seeded_years: bool = False

    def __post_init__(self) -> None:
        n = math.ceil(self.total_companies / 2) if self.num_companies is None else self.num_companies
        object.__setattr__(self, "num_companies", int(n))
        if not 0 <= self.num_companies <= self.total_companies:
            raise ValueError(f"RealWorldSeeding.num_companies must lie in [0, {self.total_companies}], got {self.num_companies}")
        if self.years < 0:
            raise ValueError(f"RealWorldSeeding.years must be >= 0, got {self.years}")
        if not 0.0 <= self.low <= self.high:
            raise ValueError(f"RealWorldSeeding needs 0 <= low <= high, got {self.low}, {self.high}")

    def init(self, key: jax.Array) -> jax.Array:
        """Which companies are seeded (N_C,) bool: fixed for the run."""
        order = jax.random.permutation(key, self.total_companies)
        return jnp.zeros((self.total_companies,), bool).at[order[: self.num_companies]].set(True)

    def apply(self, seeded: jax.Array, key: jax.Array, env_state, actions: dict):
        early = env_state.time < self.years  # (E,)
        spend = jax.random.uniform(key, early.shape + seeded.shape, minval=self.low, maxval=self.high)
        scripted = jnp.stack([spend, jnp.zeros_like(spend), jnp.zeros_like(spend)], axis=-1)
        override = (early[:, None] & seeded[None, :])[..., None]
        companies = jnp.where(override, scripted.astype(actions[COMPANIES].dtype), actions[COMPANIES])
        weight = jnp.ones(early.shape) if self.train_on_seeded_years else 1.0 - early.astype(jnp.float32)
        return seeded, {**actions, COMPANIES: companies}, weight
