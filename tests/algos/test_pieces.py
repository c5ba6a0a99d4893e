"""GAE, PPO loss and action distributions, each alone (golden values by hand)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.algos.distributions import ActionHead, Bernoulli, Categorical, DiagGaussian
from jaxclimate.algos.gae import generalized_advantages
from jaxclimate.algos.losses import ppo_loss
from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete


def reference_gae(rewards, values, dones, last_value, gamma, lam):
    advantages, next_adv, next_value = np.zeros_like(rewards), 0.0, last_value
    for t in reversed(range(len(rewards))):
        live = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * live - values[t]
        next_adv = delta + gamma * lam * live * next_adv
        advantages[t], next_value = next_adv, values[t]
    return advantages


def test_gae_hand_computed():
    r, v, d = np.array([1.0, 0.0, 2.0]), np.array([0.5, 0.2, 1.0]), np.array([0.0, 1.0, 0.0])
    adv, target = generalized_advantages(jnp.asarray(r), jnp.asarray(v), jnp.asarray(d), jnp.asarray(3.0), 0.9, 0.5)
    # t=2: δ = 2 + 0.9·3 − 1 = 3.7 ; t=1 (episode ends): δ = 0 − 0.2 = −0.2 ; t=0: δ = 1 + 0.9·0.2 − 0.5 = 0.68, Â = 0.68 + 0.45·(−0.2)
    np.testing.assert_allclose(adv, [0.59, -0.2, 3.7], rtol=1e-6)
    np.testing.assert_allclose(target, adv + v, rtol=1e-6)


def test_gae_matches_loop_with_trailing_axes():
    rng = np.random.default_rng(0)
    r, v = rng.normal(size=(20, 3, 2)), rng.normal(size=(20, 3, 2))
    d = (rng.random((20, 3, 2)) < 0.2).astype(float)
    last = rng.normal(size=(3, 2))
    adv, _ = generalized_advantages(*(jnp.asarray(x) for x in (r, v, d, last)), 0.99, 0.95)
    for i in range(3):
        for j in range(2):
            expected = reference_gae(r[:, i, j], v[:, i, j], d[:, i, j], last[i, j], 0.99, 0.95)
            np.testing.assert_allclose(adv[:, i, j], expected, rtol=1e-5, atol=1e-6)


def test_ppo_loss_hand_computed():
    logp_old = jnp.log(jnp.array([0.5, 0.5]))
    logp = jnp.log(jnp.array([0.8, 0.2]))  # ratios 1.6 and 0.4
    adv = jnp.array([1.0, -1.0])
    total, aux = ppo_loss(
        logp,
        logp_old,
        adv,
        jnp.array([1.0, 0.0]),
        jnp.array([0.0, 0.0]),
        jnp.array([2.0, 0.0]),
        jnp.array([0.5, 0.5]),
        clip_eps=0.2,
        vf_coef=0.5,
        ent_coef=0.1,
        normalize_advantages=False,
    )
    # actor: min(1.6·1, 1.2·1) = 1.2 ; min(0.4·−1, 0.8·−1) = −0.8  -> −mean = −0.2
    assert float(aux["actor_loss"]) == pytest.approx(-0.2, rel=1e-6)
    # value: clipped prediction 0.2 -> max((1−2)², (0.2−2)²) = 3.24 and 0 -> ½·mean = 0.81
    assert float(aux["value_loss"]) == pytest.approx(0.81, rel=1e-6)
    assert float(total) == pytest.approx(-0.2 + 0.5 * 0.81 - 0.1 * 0.5, rel=1e-6)
    assert float(aux["clip_fraction"]) == 1.0


def test_ppo_loss_gradient_vanishes_outside_clip():
    """Beyond 1 + ε with a positive advantage the actor gradient is zero (the clip binds)."""
    grad = jax.grad(lambda lp: ppo_loss(lp, jnp.log(0.5), 1.0, 0.0, 0.0, 0.0, 0.0, 0.2, 0.0, 0.0, False)[0])
    assert float(grad(jnp.log(0.9))) == 0.0 and float(grad(jnp.log(0.55))) != 0.0


def test_multi_discrete_head_padding_and_mask():
    head = ActionHead(MultiDiscrete([3, 2]))
    assert head.num_outputs == 6
    dist = head.distribution(jnp.zeros(6))
    probs = np.exp(np.asarray(dist.logits))
    np.testing.assert_allclose(probs, [[1 / 3] * 3, [0.5, 0.5, 0.0]], atol=1e-7)  # padded entry impossible
    assert float(dist.entropy()) == pytest.approx(np.log(3) + np.log(2), rel=1e-6)
    assert float(dist.log_prob(jnp.array([2, 1]))) == pytest.approx(np.log(1 / 3) + np.log(0.5), rel=1e-6)
    mask = jnp.array([[True, False, True], [True, True, True]])
    masked = head.distribution(jnp.zeros(6), mask=mask)
    samples = jax.vmap(masked.sample)(jax.random.split(jax.random.PRNGKey(0), 500))
    assert not np.any(np.asarray(samples[:, 0]) == 1) and set(np.unique(samples[:, 1])) == {0, 1}


def test_other_heads():
    assert ActionHead(Discrete(4)).num_outputs == 4 and isinstance(ActionHead(Discrete(4)).distribution(jnp.zeros(4)), Categorical)
    g = ActionHead(Box(-1.0, 1.0, (2,))).distribution(jnp.array([0.0, 1.0]), jnp.log(jnp.array([1.0, 2.0])))
    assert isinstance(g, DiagGaussian)
    x = np.array([0.5, -1.0])
    expected = -0.5 * (0.5**2 + (2.0 / 2.0) ** 2) - np.log(2.0) - np.log(2 * np.pi)
    assert float(g.log_prob(jnp.asarray(x))) == pytest.approx(expected, rel=1e-6)
    b = ActionHead(MultiBinary(3)).distribution(jnp.array([0.0, 100.0, -100.0]))
    assert isinstance(b, Bernoulli)
    assert float(b.log_prob(jnp.array([1, 1, 0]))) == pytest.approx(np.log(0.5), abs=1e-6)
    assert np.asarray(b.mode()).tolist() == [0, 1, 0]
    head = ActionHead(Box(-1.0, 1.0, (2,)))
    np.testing.assert_array_equal(head.to_env(jnp.array([3.0, -0.5])), [1.0, -0.5])


def test_orthogonal_initializer_matches_qr_and_needs_no_lapack():
    """Same matrices as JAX's QR-based initializer (up to rounding), orthonormal, and no
    LAPACK custom call in the compiled program (batched QR calls could deadlock on CPU). The
    shapes cover whole blocks of columns, a part block after them, a part block alone, and a
    wide matrix (its transpose orthonormalised)."""
    from jaxclimate.algos.initializers import BLOCK, orthogonal

    shapes = (((56, 256), 1.4), ((256, 256), 1.0), ((1043, 256), 1.0), ((256, 3), 0.01))
    assert 56 % BLOCK and 256 % BLOCK == 0 and 3 < BLOCK
    for shape, scale in shapes:
        key = jax.random.PRNGKey(7)
        ours = np.asarray(orthogonal(scale)(key, shape))
        np.testing.assert_allclose(ours, jax.nn.initializers.orthogonal(scale)(key, shape), atol=2e-6)
        gram = ours.T @ ours if shape[0] >= shape[1] else ours @ ours.T
        np.testing.assert_allclose(gram, scale**2 * np.eye(len(gram)), atol=2e-6)
    hlo = jax.jit(jax.vmap(lambda k: orthogonal()(k, (64, 64)))).lower(jax.random.split(jax.random.PRNGKey(0), 4)).as_text()
    assert "custom_call" not in hlo and "lapack" not in hlo.lower()
