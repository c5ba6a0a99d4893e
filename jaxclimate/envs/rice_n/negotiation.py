"""RICE-N's built-in negotiation protocols (docs/rice_n.md §7–§8; paper §4), written through
the protocol interface of :mod:`jaxclimate.envs.rice_n.protocol` like any user's protocol, and
named there (``BUILTIN_PROTOCOLS``: this module registers nothing).

``none``
    negotiation off: every env step is an activity step (20 per episode), 3 + 2N actions.

``bilateral`` (the reference, paper §4.3, docs/rice_n.md §7.2–7.3)
    env step k has stage k mod 3: 1 = proposal, 2 = evaluation, 0 = activity. At the
    proposal stage region i sends every j a pair (promised[i, j], requested[i, j]): the
    mitigation rate i promises itself and the rate it asks of j (entries 3+2N+2j and
    3+2N+2j+1, 10 levels). At the evaluation stage i accepts (1) or rejects (0) the proposal
    received from each j (entries 3+4N+j, 2 levels; the self-decision is forced to 0), and

        m_i = max( max_j promised[i, j]·decisions[j, i],  max_j requested[j, i]·decisions[i, j] ).

    m is only an action mask on the next activity step's mitigation (levels < round(10·m) are
    masked); the environment applies whatever is chosen unless
    ``RiceParams.enforce_minimum_mitigation`` (docs/rice_n.md §14.1 #3).

``club`` (climate clubs, paper §4.4 — the paper gives prose only; this definition is ours)
    the same three-stage cycle. Proposal stage: region c offers a club (μ_min_c, τ_min_c)
    (entries 3+2N and 3+2N+1, 10 levels each). Evaluation stage: region j says for every
    club c whether it joins (entries 5+2N+c, 2 levels; its own entry is ignored). A club
    is *formed* when at least one region other than its proposer joins; its members are the
    proposer and the joiners. Then, for the next activity step,

        m_j          = max over formed clubs c ∋ j of μ_min_c                 (0 if none)
        floor[j, k]  = max over formed clubs c with j ∈ c, k ∉ c of τ_min_c    (0 if none)

    and the environment **enforces** both (members cannot defect): μ_j ← max(μ_j, m_j) and
    the tariff j levies on k, τ'_jk ← max(τ'_jk, floor[j, k]). The masks forbid the levels
    below, so a masked policy's choice is applied unchanged. Invariants (tested): members of
    a formed club mitigate at least its μ_min; tariff floors apply only from members to
    non-members of a club (never within a club, never on oneself); a club nobody joins binds
    nobody, not even its proposer; agreements last one activity step (renegotiated every
    cycle, like the bilateral protocol).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.envs.rice_n.params import NUM_LEVELS
from jaxclimate.envs.rice_n.protocol_base import Levers, Protocol

Array = jax.Array


def _off_diagonal(x: Array) -> Array:
    return x * (1.0 - jnp.eye(x.shape[-1], dtype=x.dtype))


def _as_float32(x: Array) -> Array:
    """The reference stores the negotiation state in float32 arrays (docs/rice_n.md §9.1)."""
    return x.astype(jnp.float32)


class NoNegotiation(Protocol):
    """Protocol ``none``: no negotiation stages (the base class as it is)."""

    name = "none"


# --- bilateral (the reference) ---------------------------------------------------------------


@struct.dataclass
class BilateralState:
    """promised[i, j], requested[i, j] (i's proposal to j), decisions[i, j] (i accepts j's), the
    minimum mitigation m (N,)."""

    promised: Array
    requested: Array
    decisions: Array
    minimum_mitigation: Array

    def reference_record(self) -> dict[str, Array]:
        """The reference's record keys for this state (docs/rice_n.md §3)."""
        return {
            "minimum_mitigation_rate_all_regions": self.minimum_mitigation,
            "promised_mitigation_rate": self.promised,
            "requested_mitigation_rate": self.requested,
            "proposal_decisions": self.decisions,
        }


def bilateral_minimum(promised: Array, requested: Array, decisions: Array) -> Array:
    """m_i = max(max_j promised[i, j]·dec[j, i], max_j requested[j, i]·dec[i, j]) (docs/rice_n.md §7.3)."""
    return jnp.maximum((promised * decisions.T).max(axis=1), (requested.T * decisions).max(axis=1))


class Bilateral(Protocol):
    """The reference's bilateral negotiation (module docstring; paper §4.3)."""

    name = "bilateral"
    stages = ("proposal", "evaluation")

    def heads(self, n: int) -> dict[str, list[int]]:
        return {"proposal": [NUM_LEVELS] * (2 * n), "evaluation": [2] * n}

    def init(self, n: int, dtype: Any) -> BilateralState:
        square = jnp.zeros((n, n), dtype)
        return BilateralState(promised=square, requested=square, decisions=square, minimum_mitigation=jnp.zeros((n,), dtype))

    def proposal(self, pstate: BilateralState, levels: Array, state: Any, params: Any) -> BilateralState:
        """promised[i, j] = a_i[a+2j]/10, requested[i, j] = a_i[a+2j+1]/10 (docs/rice_n.md §7.2)."""
        rates = levels.astype(pstate.promised.dtype) / NUM_LEVELS
        return pstate.replace(promised=rates[:, 0::2], requested=rates[:, 1::2])

    def evaluation(self, pstate: BilateralState, levels: Array, state: Any, params: Any) -> BilateralState:
        """decisions[i, j] = raw a_i[a+2N+j] with the diagonal forced to 0; then m (docs/rice_n.md §7.3)."""
        decisions = _off_diagonal(levels.astype(pstate.promised.dtype))
        return pstate.replace(decisions=decisions, minimum_mitigation=bilateral_minimum(pstate.promised, pstate.requested, decisions))

    def floors(self, pstate: BilateralState, params: Any) -> Levers:
        return Levers(mitigation=pstate.minimum_mitigation)

    def enforced(self, pstate: BilateralState, params: Any) -> Levers:
        """Nothing, as the reference, unless ``params.enforce_minimum_mitigation`` (μ ≥ 0, so a
        floor of 0 changes nothing)."""
        return Levers(mitigation=jnp.where(params.enforce_minimum_mitigation, pstate.minimum_mitigation, 0.0))

    def features(self, pstate: BilateralState) -> Array:
        """m, promised, promisedᵀ, requested, requestedᵀ, decisions, decisionsᵀ (docs/rice_n.md §9.1)."""
        s = pstate
        parts = [s.minimum_mitigation[:, None], s.promised, s.promised.T, s.requested, s.requested.T, s.decisions, s.decisions.T]
        return _as_float32(jnp.concatenate(parts, axis=1))

    def state_from_record(self, get: Callable[[str], np.ndarray], n: int, dtype: Any) -> BilateralState:
        keys = BilateralState(
            promised="promised_mitigation_rate",
            requested="requested_mitigation_rate",
            decisions="proposal_decisions",
            minimum_mitigation="minimum_mitigation_rate_all_regions",
        )
        return jax.tree_util.tree_map(lambda key: jnp.asarray(get(key), dtype), keys)


# --- climate clubs (ours) -------------------------------------------------------------------


@struct.dataclass
class ClubState:
    """offer (N, 2): (μ_min, τ_min) proposed by each region; members[j, c]: j belongs to formed
    club c; minimum_mitigation m (N,); tariff_floor (N, N): the lowest tariff j levies on k."""

    offer: Array
    members: Array
    minimum_mitigation: Array
    tariff_floor: Array

    def reference_record(self) -> dict[str, Array]:
        """Membership recorded where the reference records decisions."""
        return {"minimum_mitigation_rate_all_regions": self.minimum_mitigation, "proposal_decisions": self.members}


def club_membership(joins: Array) -> Array:
    """members[j, c] = 1 if j belongs to formed club c: joiners j ≠ c, plus the proposer c
    when anyone else joined. ``joins[j, c]`` = 1 if j said yes to club c."""
    joins = _off_diagonal(jnp.clip(joins, 0.0, 1.0))
    formed = (joins.sum(axis=0) > 0).astype(joins.dtype)
    return joins + jnp.diag(formed)


def club_obligations(members: Array, offer: Array) -> tuple[Array, Array]:
    """(m_j, floor[j, k]) from membership (N, N) and offers (N, 2) (see module docstring)."""
    mu_min, tau_min = offer[:, 0], offer[:, 1]
    minimum = (members * mu_min[None, :]).max(axis=1)
    # floor[j, k] = max_c members[j, c]·(1 − members[k, c])·τ_min_c
    floor = (members[:, None, :] * (1.0 - members[None, :, :]) * tau_min[None, None, :]).max(axis=2)
    return minimum, _off_diagonal(floor)


class Club(Protocol):
    """Climate clubs with enforced minimum mitigation and tariff floors (module docstring)."""

    name = "club"
    stages = ("proposal", "evaluation")

    def heads(self, n: int) -> dict[str, list[int]]:
        return {"proposal": [NUM_LEVELS] * 2, "evaluation": [2] * n}

    def init(self, n: int, dtype: Any) -> ClubState:
        square = jnp.zeros((n, n), dtype)
        return ClubState(offer=jnp.zeros((n, 2), dtype), members=square, minimum_mitigation=jnp.zeros((n,), dtype), tariff_floor=square)

    def proposal(self, pstate: ClubState, levels: Array, state: Any, params: Any) -> ClubState:
        """offer[c] = (μ_min_c, τ_min_c) = a_c[a : a+2]/10."""
        return pstate.replace(offer=levels.astype(pstate.offer.dtype) / NUM_LEVELS)

    def evaluation(self, pstate: ClubState, levels: Array, state: Any, params: Any) -> ClubState:
        members = club_membership(levels.astype(pstate.offer.dtype))
        minimum, floor = club_obligations(members, pstate.offer)
        return pstate.replace(members=members, minimum_mitigation=minimum, tariff_floor=floor)

    def floors(self, pstate: ClubState, params: Any) -> Levers:
        return Levers(mitigation=pstate.minimum_mitigation, tariffs=pstate.tariff_floor)

    def enforced(self, pstate: ClubState, params: Any) -> Levers:
        """Members cannot defect: μ ← max(μ, m), τ' ← max(τ', floor)."""
        return self.floors(pstate, params)

    def features(self, pstate: ClubState) -> Array:
        """m, every club's offer (μ_min of all, then τ_min of all), membership and its transpose,
        the tariff floors."""
        n = pstate.offer.shape[0]
        offer = jnp.broadcast_to(pstate.offer.T.reshape(-1), (n, 2 * n))
        parts = [pstate.minimum_mitigation[:, None], offer, pstate.members, pstate.members.T, pstate.tariff_floor]
        return _as_float32(jnp.concatenate(parts, axis=1))
