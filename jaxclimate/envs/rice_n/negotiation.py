"""Negotiation protocols of RICE-N (docs/rice_n.md §7–§8; paper §4).

A protocol defines the extra action entries an agent submits every env step, the two
negotiation stages that precede each activity step, what the activity step may enforce, and
the action masks. Three protocols:

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

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.lockstep import lockstep_switch
from jaxclimate.envs.rice_n.dynamics import RiceState
from jaxclimate.envs.rice_n.params import NUM_LEVELS

PROTOCOLS = ("none", "bilateral", "club")


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"rice-n protocol must be one of {PROTOCOLS}, got {protocol!r}")
    return protocol


def action_nvec(protocol: str, n: int) -> np.ndarray:
    """Levels per action entry: 3 + 2N activity entries with 10 levels, then the protocol's."""
    activity = [NUM_LEVELS] * (3 + 2 * n)
    if protocol == "bilateral":
        return np.array(activity + [NUM_LEVELS] * (2 * n) + [2] * n)
    if protocol == "club":
        return np.array(activity + [NUM_LEVELS] * 2 + [2] * n)
    return np.array(activity)


def stage_slices(protocol: str, n: int) -> dict[str, tuple[int, int]]:
    """Half-open action-entry ranges read by each stage (docs/rice_n.md §5.3)."""
    a = 3 + 2 * n
    if protocol == "bilateral":
        return {"activity": (0, a), "proposal": (a, a + 2 * n), "evaluation": (a + 2 * n, a + 3 * n)}
    if protocol == "club":
        return {"activity": (0, a), "proposal": (a, a + 2), "evaluation": (a + 2, a + 2 + n)}
    return {"activity": (0, a)}


def _stage_levels(protocol: str, stage: str, levels: jax.Array, state: RiceState) -> jax.Array:
    """The action entries ``stage`` reads (:func:`stage_slices`), (N, width)."""
    start, stop = stage_slices(protocol, state.capital.shape[-1])[stage]
    return levels[:, start:stop]


def _off_diagonal(x: jax.Array) -> jax.Array:
    return x * (1.0 - jnp.eye(x.shape[-1], dtype=x.dtype))


# --- bilateral (the reference) ---------------------------------------------------------------


def bilateral_proposal(state: RiceState, levels: jax.Array) -> RiceState:
    """promised[i, j] = a_i[a+2j]/10, requested[i, j] = a_i[a+2j+1]/10 (docs/rice_n.md §7.2)."""
    rates = _stage_levels("bilateral", "proposal", levels, state).astype(state.capital.dtype) / NUM_LEVELS
    return state.replace(promised=rates[:, 0::2], requested=rates[:, 1::2])


def bilateral_minimum(promised: jax.Array, requested: jax.Array, decisions: jax.Array) -> jax.Array:
    """m_i = max(max_j promised[i, j]·dec[j, i], max_j requested[j, i]·dec[i, j]) (docs/rice_n.md §7.3)."""
    return jnp.maximum((promised * decisions.T).max(axis=1), (requested.T * decisions).max(axis=1))


def bilateral_evaluation(state: RiceState, levels: jax.Array) -> RiceState:
    """decisions[i, j] = raw a_i[a+2N+j] with the diagonal forced to 0; then m (docs/rice_n.md §7.3)."""
    decisions = _off_diagonal(_stage_levels("bilateral", "evaluation", levels, state).astype(state.capital.dtype))
    return state.replace(decisions=decisions, minimum_mitigation=bilateral_minimum(state.promised, state.requested, decisions))


# --- climate clubs (ours) -------------------------------------------------------------------


def club_proposal(state: RiceState, levels: jax.Array) -> RiceState:
    """club_offer[c] = (μ_min_c, τ_min_c) = a_c[a : a+2]/10."""
    offer = _stage_levels("club", "proposal", levels, state)
    return state.replace(club_offer=offer.astype(state.capital.dtype) / NUM_LEVELS)


def club_membership(joins: jax.Array) -> jax.Array:
    """members[j, c] = 1 if j belongs to formed club c: joiners j ≠ c, plus the proposer c
    when anyone else joined. ``joins[j, c]`` = 1 if j said yes to club c."""
    joins = _off_diagonal(jnp.clip(joins, 0.0, 1.0))
    formed = (joins.sum(axis=0) > 0).astype(joins.dtype)
    return joins + jnp.diag(formed)


def club_obligations(members: jax.Array, offer: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(m_j, floor[j, k]) from membership (N, N) and offers (N, 2) (see module docstring)."""
    mu_min, tau_min = offer[:, 0], offer[:, 1]
    minimum = (members * mu_min[None, :]).max(axis=1)
    # floor[j, k] = max_c members[j, c]·(1 − members[k, c])·τ_min_c
    floor = (members[:, None, :] * (1.0 - members[None, :, :]) * tau_min[None, None, :]).max(axis=2)
    return minimum, _off_diagonal(floor)


def club_evaluation(state: RiceState, levels: jax.Array) -> RiceState:
    members = club_membership(_stage_levels("club", "evaluation", levels, state).astype(state.capital.dtype))
    minimum, floor = club_obligations(members, state.club_offer)
    return state.replace(decisions=members, minimum_mitigation=minimum, tariff_floor=floor)


def club_enforce(rates: dict[str, jax.Array], state: RiceState) -> dict[str, jax.Array]:
    """Members cannot defect: μ ← max(μ, m), τ' ← max(τ', floor)."""
    return dict(
        rates, mitigation=jnp.maximum(rates["mitigation"], state.minimum_mitigation), tariffs=jnp.maximum(rates["tariffs"], state.tariff_floor)
    )


# --- masks (docs/rice_n.md §8) -------------------------------------------------------------------------


def action_mask(protocol: str, state: RiceState, ignored_heads: bool = False) -> jax.Array:
    """Per-agent mask in padded-logits layout (N, A, 10): True = allowed. 2-level heads use
    columns 0–1. Only the mitigation head (and, for clubs, the tariff heads) is ever
    restricted. Built as one broadcast comparison against per-head lowest levels (cheap to
    fuse; a scatter into the (N, A, 10) mask would be materialised every step).

    ``ignored_heads`` (docs/rice_n.md §17's stage-relevance mask; off in the reference): the heads the
    next step's stage ignores (:func:`stage_slices`) allow level 0 only, so a masked policy's
    log-probability and entropy of those heads are 0: it learns from the heads that act. The
    environment is unchanged (it ignores those entries whatever they are)."""
    n = state.capital.shape[-1]
    nvec = action_nvec(protocol, n)
    levels = jnp.arange(NUM_LEVELS)
    valid = levels < jnp.asarray(nvec)[:, None]  # (A, 10) padding of the 2-level heads
    if protocol == "none":  # every head acts at every step
        return jnp.broadcast_to(valid, (n, nvec.size, NUM_LEVELS))
    # The lowest allowed level per (agent, head), selected by head index (no scatter).
    head = jnp.arange(nvec.size)[:, None]  # (A, 1)
    lowest = jnp.where(head == 1, _level(state.minimum_mitigation)[:, None, None], 0)  # (N, A, 1)
    if protocol == "club":
        floors = jnp.pad(_level(state.tariff_floor), ((0, 0), (3, nvec.size - 3 - n)))[..., None]
        lowest = jnp.where((head >= 3) & (head < 3 + n), floors, lowest)
    mask = valid & (levels >= lowest)
    if ignored_heads:  # an ignored head allows level 0 only, even the mitigation head
        mask = jnp.where(_acting_heads(protocol, n, (state.time + 1) % 3), mask, levels == 0)
    return mask


def _acting_heads(protocol: str, n: int, stage: jax.Array) -> jax.Array:
    """(A, 1) booleans: the heads read at ``stage`` (0 activity, 1 proposal, 2 evaluation)."""
    slices = stage_slices(protocol, n)
    bounds = np.array([slices[name] for name in ("activity", "proposal", "evaluation")])
    head = jnp.arange(int(bounds.max()))[:, None]
    start, stop = jnp.asarray(bounds[:, 0])[stage], jnp.asarray(bounds[:, 1])[stage]
    return (head >= start) & (head < stop)


def _level(rate: jax.Array) -> jax.Array:
    """The level of a rate, round(10·rate), as an integer."""
    return jnp.round(rate * NUM_LEVELS).astype(jnp.int32)


def flat_action_mask(protocol: str, mask: jax.Array) -> jax.Array:
    """The reference's flat int mask (N, Σnvec): one block of nvec[e] entries per head."""
    n = mask.shape[0]
    nvec = action_nvec(protocol, n)
    ten = int(np.sum(nvec == NUM_LEVELS))
    parts = [mask[:, :ten, :].reshape(n, -1)]
    if ten < nvec.size:
        parts.append(mask[:, ten:, :2].reshape(n, -1))
    return jnp.concatenate(parts, axis=1).astype(jnp.int32)


def stage_step(protocol: str, stage: jax.Array, state: RiceState, levels: jax.Array, params: Any, activity: Any) -> RiceState:
    """Dispatch one env step by stage (0 activity, 1 proposal, 2 evaluation); ``activity`` is
    the activity-step function ``(state, levels, params) -> state``. Under ``vmap`` the
    dispatch is a :func:`~jaxclimate.core.lockstep.lockstep_switch`: environments reset
    together share the stage, so each step runs one branch (the activity step on one step in
    three) instead of all three and a select; mixed stages fall back to exactly that."""
    if protocol == "none":
        return activity(state, levels, params)
    proposal, evaluation = (bilateral_proposal, bilateral_evaluation) if protocol == "bilateral" else (club_proposal, club_evaluation)
    return lockstep_switch(stage, (activity, lambda s, lv, _: proposal(s, lv), lambda s, lv, _: evaluation(s, lv)), state, levels, params)
