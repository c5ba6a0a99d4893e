"""Negotiation protocols: the bilateral minimum-mitigation rule and the climate-club invariants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.rice_n import RiceN, replay
from jaxclimate.envs.rice_n import negotiation as neg


def test_bilateral_minimum_hand_computed():
    promised = jnp.array([[0.0, 0.3, 0.6], [0.2, 0.0, 0.1], [0.5, 0.4, 0.0]])
    requested = jnp.array([[0.0, 0.7, 0.2], [0.8, 0.0, 0.1], [0.3, 0.9, 0.0]])
    decisions = jnp.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])  # 0 accepts 1's, 1 accepts 2's
    m = np.asarray(neg.bilateral_minimum(promised, requested, decisions))
    # region 0: accepted 1's proposal -> requested[1, 0] = 0.8; nobody accepted 0's -> 0.8
    # region 1: 0 accepted 1's proposal -> promised[1, 0] = 0.2; 1 accepted 2's -> requested[2, 1] = 0.9
    # region 2: 1 accepted 2's proposal -> promised[2, 1] = 0.4
    np.testing.assert_allclose(m, [0.8, 0.9, 0.4])


def _club_reference(joins: np.ndarray, offer: np.ndarray):
    """Brute-force the club definition of the negotiation module docstring."""
    n = joins.shape[0]
    members = np.zeros((n, n), bool)
    for c in range(n):
        joiners = [j for j in range(n) if j != c and joins[j, c] == 1]
        if joiners:
            members[joiners + [c], c] = True
    minimum = np.zeros(n)
    floor = np.zeros((n, n))
    for c in range(n):
        for j in range(n):
            if not members[j, c]:
                continue
            minimum[j] = max(minimum[j], offer[c, 0])
            for k in range(n):
                if k != j and not members[k, c]:
                    floor[j, k] = max(floor[j, k], offer[c, 1])
    return members, minimum, floor


def test_club_obligations_match_the_definition():
    rng = np.random.default_rng(0)
    membership, obligations = jax.jit(neg.club_membership), jax.jit(neg.club_obligations)  # one program per size
    for _ in range(200):
        n = int(rng.integers(2, 7))
        joins = (rng.random((n, n)) < 0.3).astype(float)
        offer = rng.integers(0, 10, size=(n, 2)) / 10
        members = np.asarray(membership(jnp.asarray(joins)))
        minimum, floor = (np.asarray(a) for a in obligations(jnp.asarray(members), jnp.asarray(offer)))
        ref_members, ref_min, ref_floor = _club_reference(joins, offer)
        np.testing.assert_array_equal(members.astype(bool), ref_members)
        np.testing.assert_allclose(minimum, ref_min)
        np.testing.assert_allclose(floor, ref_floor)
        assert np.all(np.diag(floor) == 0)


def _club_episode(env, offers, joins, activity_levels):
    """One proposal / evaluation / activity cycle with the given entries."""
    n, a = env.num_regions, env.nvec.size
    actions = np.zeros((3, n, a), np.int64)
    actions[0, :, 3 + 2 * n : 5 + 2 * n] = offers
    actions[1, :, 5 + 2 * n :] = joins
    actions[2, :, : 3 + 2 * n] = activity_levels
    return replay(env, actions)


def test_club_invariants_in_the_environment(x64):
    env = RiceN(protocol="club", regions=[0, 5, 12, 20, 24], dtype="float64")
    n = env.num_regions
    offers = np.array([[6, 3], [2, 8], [0, 0], [9, 9], [4, 1]])
    joins = np.zeros((n, n), np.int64)
    joins[1, 0] = joins[2, 0] = 1  # regions 1, 2 join club 0 (μ ≥ 0.6, τ ≥ 0.3 on 3, 4)
    joins[0, 4] = 1  # region 0 joins club 4 (μ ≥ 0.4, τ ≥ 0.1 on 1, 2, 3)
    # club 3 (9, 9) and club 1 (2, 8): nobody joins -> bind nobody, not even the proposer
    out = _club_episode(env, offers, joins, np.zeros((n, 3 + 2 * n), np.int64))
    m = out["state__minimum_mitigation_rate_all_regions"][2]
    np.testing.assert_allclose(m, [0.6, 0.6, 0.6, 0.0, 0.4])
    mu = out["state__mitigation_rate_all_regions"][3]
    np.testing.assert_allclose(mu, m)  # enforced: everyone chose 0
    tariffs = out["state__future_tariffs"][3]
    expected = np.zeros((n, n))
    expected[np.ix_([0, 1, 2], [3, 4])] = 0.3  # club 0 members on non-members
    expected[0, 1] = expected[0, 2] = 0.1  # club 4: 0 levies ≥ 0.1 on 1, 2 (and 3, where club 0's 0.3 is higher)
    expected[4, 1] = expected[4, 2] = expected[4, 3] = 0.1  # proposer 4 too
    np.testing.assert_allclose(tariffs, expected)
    mask = np.asarray(env.action_mask("regions", jax.tree_util.tree_map(lambda x: x, _state_at(env, offers, joins))))
    assert mask[3, 1].all() and not mask[0, 1, :6].any() and mask[0, 1, 6:].all()
    assert not mask[0, 3 + 3, :3].any() and mask[0, 3 + 3, 3:].all()  # tariff on region 3 >= level 3
    assert mask[1, 3 + 2].all()  # no floor within a club


def _state_at(env, offers, joins):
    """The state after the evaluation step of one cycle."""
    n = env.num_regions
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    transition = jax.jit(env.transition)  # one program, not op by op
    levels = np.zeros((n, env.nvec.size), np.int64)
    levels[:, 3 + 2 * n : 5 + 2 * n] = offers
    state, _ = transition(state, levels, env.default_params)
    levels = np.zeros((n, env.nvec.size), np.int64)
    levels[:, 5 + 2 * n :] = joins
    state, _ = transition(state, levels, env.default_params)
    return state


def test_club_choices_above_the_floor_are_kept(x64):
    env = RiceN(protocol="club", regions=[0, 1, 2], dtype="float64")
    offers = np.array([[5, 2], [0, 0], [0, 0]])
    joins = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0]])
    activity = np.zeros((3, 9), np.int64)
    activity[:, 1] = [8, 3, 1]
    activity[:, 3:6] = 7  # tariffs above every floor
    out = _club_episode(env, offers, joins, activity)
    np.testing.assert_allclose(out["state__mitigation_rate_all_regions"][3], [0.8, 0.5, 0.1])  # 2 is outside
    np.testing.assert_allclose(out["state__future_tariffs"][3], np.full((3, 3), 0.7))


@pytest.mark.parametrize("protocol", ["bilateral", "club"])
def test_masks_follow_the_minimum(protocol):
    env = RiceN(protocol=protocol, regions=[0, 1, 2, 3])
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))[1]
    state = state.replace(negotiation=state.negotiation.replace(minimum_mitigation=jnp.array([0.0, 0.3, 0.7, 0.9])))
    mask = np.asarray(jax.jit(env.action_mask, static_argnums=0)("regions", state))
    assert mask.shape == (4, env.nvec.size, 10)
    np.testing.assert_array_equal(mask[:, 1].sum(axis=1), [10, 7, 3, 1])
    np.testing.assert_array_equal(jax.jit(env.lowest_allowed_levels)(state), mask.argmax(axis=-1))  # the cheap form
    assert not mask[:, -1, 2:].any() and mask[:, -1, :2].all()  # 2-level heads: padding
    flat = np.asarray(jax.jit(env.flat_action_mask)(state))
    assert flat.shape == (4, int(env.nvec.sum()))


@pytest.mark.parametrize("protocol", ["bilateral", "club"])
def test_mask_ignored_heads_pins_only_the_heads_the_next_stage_ignores(protocol):
    """docs/rice_n.md §17's stage-relevance mask: acting heads keep the reference mask, ignored heads
    allow level 0 only, so their log-probability and entropy under a masked policy are 0."""
    from jaxclimate.algos.distributions import ActionHead

    plain = RiceN(protocol=protocol, regions=[0, 5, 12], num_activity_steps=2)
    pinned = RiceN(protocol=protocol, regions=[0, 5, 12], num_activity_steps=2, mask_ignored_heads=True)
    params = plain.default_params
    head = ActionHead(plain.action_space())
    _, state = jax.jit(plain.reset)(jax.random.PRNGKey(0), params)
    step = jax.jit(plain.step)  # one program each, not op by op
    masks = {env: jax.jit(env.action_mask, static_argnums=0) for env in (plain, pinned)}
    flat_masks = {env: jax.jit(env.flat_action_mask) for env in (plain, pinned)}
    logits = jax.random.normal(jax.random.PRNGKey(1), (3, head.num_outputs))
    order = ("activity", "proposal", "evaluation")
    for t in range(4):
        stage = (int(state.time) + 1) % 3  # the stage the next action is read at
        start, stop = plain.stage_slices[order[stage]]
        a, b = np.asarray(masks[plain]("regions", state)), np.asarray(masks[pinned]("regions", state))
        np.testing.assert_array_equal(b[:, start:stop], a[:, start:stop])
        ignored = np.r_[0:start, stop : plain.nvec.size]
        assert b[:, ignored, 0].all() and not b[:, ignored, 1:].any()
        np.testing.assert_array_equal(flat_masks[pinned](state), flat_masks[plain](state))
        # masked policy: ignored heads are always level 0 and contribute nothing
        pinned_dist = head.distribution(logits, None, jnp.asarray(b))
        action = pinned_dist.sample(jax.random.PRNGKey(t))
        assert (np.asarray(action)[:, ignored] == 0).all()
        acting = np.r_[start:stop]
        np.testing.assert_allclose(pinned_dist.entropy(), _per_head(logits, a, acting, action)[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pinned_dist.log_prob(action), _per_head(logits, a, acting, action)[0], rtol=1e-5, atol=1e-6)
        state = step(jax.random.PRNGKey(t), state, {"regions": action}, params)[1]


def _per_head(logits, mask, heads, action):
    """(log-probability of ``action``, entropy) summed over ``heads`` only, under ``mask``."""
    lp = jax.nn.log_softmax(jnp.where(jnp.asarray(mask), logits.reshape(mask.shape), -1e9), axis=-1)
    taken = jnp.take_along_axis(lp, jnp.asarray(action)[..., None], axis=-1)[..., 0]
    p = jnp.exp(lp)
    entropy = -jnp.sum(jnp.where(p > 0, p * lp, 0.0), axis=-1)
    return taken[:, heads].sum(axis=1), entropy[:, heads].sum(axis=1)
