"""A climate club with a border carbon adjustment, written as a user writes a RICE-N protocol.

Nordhaus's climate club (Nordhaus 2015, "Climate Clubs: Overcoming Free-riding in International
Climate Policy", AER 105(4)) binds its members to a common abatement and penalises outsiders
with tariffs; a border carbon adjustment (as the EU's CBAM, Regulation (EU) 2023/956) sizes
that tariff by how much less the outsider abates. The competition's entries combined the two
(AI4GCC 2023 proceedings, arXiv:2307.06951). Here, in one proposal and one evaluation stage:

* proposal: region c proposes a club with minimum mitigation μ_c (one head, 10 levels);
* evaluation: region j joins club c or not (N heads, 2 levels; its own entry is ignored). A
  club forms when anyone other than its proposer joins; its members are the proposer and the
  joiners (``club_membership``). Member j must mitigate m_j = max of its clubs' μ_c;
* border adjustment: member j levies on a region k outside all of j's clubs at least

      floor[j, k] = min(0.9, up_to_level(bca_rate · max(0, m_j − μ_k)))

  where μ_k is k's mitigation rate at the last activity step and ``bca_rate`` a parameter
  (``params.negotiation.bca_rate``, 1 by default: a 0.5 gap in mitigation costs a 0.5 tariff).

Both floors are enforced and the masks forbid the levels below them.

    python -m jaxclimate.train --env rice-n --env-set protocol=baselines/protocols/club_bca.py:ClubBCA
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from jaxclimate.core import struct
from jaxclimate.envs.rice_n import Levers, Protocol, up_to_level
from jaxclimate.envs.rice_n.negotiation import club_membership


@struct.dataclass
class ClubBCAParams:
    bca_rate: Any = 1.0  # tariff per unit of mitigation gap

    def validate(self) -> None:
        struct.check_range("ClubBCAParams", "bca_rate", self.bca_rate, low=0.0)


@struct.dataclass
class ClubBCAState:
    mu_club: Any  # (N,) μ_c proposed by each region
    members: Any  # (N, N) members[j, c] = 1 if j is in formed club c
    minimum: Any  # (N,) m_j
    tariff_floor: Any  # (N, N) lowest tariff j levies on k


class ClubBCA(Protocol):
    name = "club-bca"
    stages = ("proposal", "evaluation")

    def heads(self, n: int) -> dict[str, list[int]]:
        return {"proposal": [10], "evaluation": [2] * n}

    def init(self, n: int, dtype: Any) -> ClubBCAState:
        zeros, square = jnp.zeros((n,), dtype), jnp.zeros((n, n), dtype)
        return ClubBCAState(mu_club=zeros, members=square, minimum=zeros, tariff_floor=square)

    def default_params(self) -> ClubBCAParams:
        return ClubBCAParams()

    def proposal(self, pstate: ClubBCAState, levels, state, params) -> ClubBCAState:
        return pstate.replace(mu_club=levels[:, 0].astype(pstate.mu_club.dtype) / 10)

    def evaluation(self, pstate: ClubBCAState, levels, state, params) -> ClubBCAState:
        members = club_membership(levels.astype(pstate.mu_club.dtype))
        minimum = (members * pstate.mu_club[None, :]).max(axis=1)
        # j and k share a club if some c has both; j adjusts at its border with everyone else
        outside = (members @ members.T == 0) & (members.sum(axis=1) > 0)[:, None]
        gap = jnp.maximum(0.0, minimum[:, None] - state.mitigation[None, :])
        floor = jnp.minimum(0.9, up_to_level(params.negotiation.bca_rate * gap))
        return pstate.replace(members=members, minimum=minimum, tariff_floor=jnp.where(outside, floor, 0.0))

    def floors(self, pstate: ClubBCAState, params) -> Levers:
        return Levers(mitigation=pstate.minimum, tariffs=pstate.tariff_floor)

    def enforced(self, pstate: ClubBCAState, params) -> Levers:
        return self.floors(pstate, params)

    def features(self, pstate: ClubBCAState):
        n = pstate.mu_club.shape[0]
        proposals = jnp.broadcast_to(pstate.mu_club, (n, n))
        return jnp.concatenate([pstate.minimum[:, None], proposals, pstate.members, pstate.tariff_floor], axis=1)
