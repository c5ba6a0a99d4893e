"""Mutually conditional binding commitments, written as a user writes a RICE-N protocol.

After Heitzig, Oechssler, Pröschel, Ragavan and Lo, "Improving International Climate Policy via
Mutually Conditional Binding Commitments" (AI4GCC 2023, track 2 third place and track 3 winner;
arXiv:2307.14267): each region states what it is ready to do *on condition* that others do
enough, and the mechanism binds the largest set of commitments whose conditions all hold. Our
version, with step-function commitments and one negotiation stage before each activity step:

* pledge: region i submits a mitigation rate μ_i (10 levels) and a condition c_i (10 levels,
  c_i = level/10): "I mitigate at least μ_i if the others' binding commitments average at
  least c_i";
* binding set: the largest S with  mean_{j≠i} μ_j·[j ∈ S] ≥ c_i  for every i ∈ S, found by
  starting from everyone and dropping the regions whose condition fails until none does
  (at most N rounds: dropping a region only lowers the others' averages, so the result is
  the largest fixed point);
* the activity step enforces μ ≥ μ_i on the binding set, and the masks forbid lower levels.

A single pledge stage makes the episode 40 env steps (20 pledges, 20 activity steps).

    python -m jaxclimate.train --env rice-n --env-set protocol=baselines/protocols/conditional_commitment.py:ConditionalCommitment
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxclimate.core import struct
from jaxclimate.envs.rice_n import Levers, Protocol


@struct.dataclass
class CommitmentState:
    pledge: Any  # (N,) μ_i
    condition: Any  # (N,) c_i
    binding: Any  # (N,) 1 where i's commitment binds


def binding_set(pledge: jax.Array, condition: jax.Array) -> jax.Array:
    """The largest set whose conditions all hold (module docstring), as 0/1 floats."""
    n = pledge.shape[0]

    def drop_failing(_, binding):
        others = (binding * pledge).sum() - binding * pledge  # Σ_{j≠i} μ_j [j ∈ S]
        return binding * (others / (n - 1) >= condition - 1e-6)  # float32 sums; grid averages differ by ≥ 1/260

    return jax.lax.fori_loop(0, n, drop_failing, jnp.ones_like(pledge))


class ConditionalCommitment(Protocol):
    name = "conditional-commitment"
    stages = ("pledge",)

    def heads(self, n: int) -> dict[str, list[int]]:
        return {"pledge": [10, 10]}

    def init(self, n: int, dtype: Any) -> CommitmentState:
        zeros = jnp.zeros((n,), dtype)
        return CommitmentState(pledge=zeros, condition=zeros, binding=zeros)

    def pledge(self, pstate: CommitmentState, levels, state, params) -> CommitmentState:
        rates = levels.astype(pstate.pledge.dtype) / 10
        pledge, condition = rates[:, 0], rates[:, 1]
        return CommitmentState(pledge=pledge, condition=condition, binding=binding_set(pledge, condition))

    def floors(self, pstate: CommitmentState, params) -> Levers:
        return Levers(mitigation=pstate.binding * pstate.pledge)

    def enforced(self, pstate: CommitmentState, params) -> Levers:
        return self.floors(pstate, params)

    def features(self, pstate: CommitmentState):
        n = pstate.pledge.shape[0]
        public = jnp.concatenate([pstate.pledge, pstate.condition, pstate.binding])
        return jnp.concatenate([(pstate.binding * pstate.pledge)[:, None], jnp.broadcast_to(public, (n, 3 * n))], axis=1)
