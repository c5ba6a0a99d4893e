"""Live comparison with climlab 0.9.2 (the default-behaviour oracle, docs/ebm.md §7.3).

climlab is a test-only dependency (the ``dev`` extra installs it). A climlab step costs
15–30 ms, so these runs are short; the golden files carry the 200-step trajectories."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.ebm import GROUP, EBMEnv, EBMParams, simulate

climlab = pytest.importorskip("climlab")

pytestmark = pytest.mark.slow


def climlab_model(**extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = climlab.EBM_annual(num_lat=96, a0=0.354, a2=0.25, D=0.6, A=np.full((96, 1), 210.0), B=np.full((96, 1), 2.0), **extra)
    m.Ts[:] = 50.0
    return m


def climlab_step(m, D, A_Wm2, B, a0, a2):
    m.subprocess["diffusion"].D = float(D)
    m.subprocess["LW"].A = np.asarray(A_Wm2, np.float64).reshape(96, 1)
    m.subprocess["LW"].B = np.asarray(B, np.float64).reshape(96, 1)
    m.subprocess["albedo"].a0 = float(a0)
    m.subprocess["albedo"].a2 = float(a2)
    m.step_forward()
    return np.ravel(m.Ts).copy()


def test_random_actions_match_climlab(x64):
    """ebm-v1 with 20 random actions from its box vs climlab fed the same clipped values."""
    env = EBMEnv(1, dtype="float64")
    params = env.default_params.replace(max_steps=1000)
    space = env.action_space()
    keys = jax.random.split(jax.random.PRNGKey(42), 20)
    actions = [np.asarray(space.sample(k)) for k in keys]
    _, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    m = climlab_model()
    assert np.allclose(np.ravel(m.lat), np.asarray(jnp.linspace(-89.0625, 89.0625, 96)))
    worst = 0.0
    for a in actions:
        _, state, rewards, *_ = step(jax.random.PRNGKey(0), state, {GROUP: jnp.asarray(a)[None]}, params)
        A_Wm2 = a[1:97] * np.float32(100)  # the float32 action path of docs/ebm.md §3.1
        T_ref = climlab_step(m, a[0], A_Wm2, a[97:193], a[193], a[194])
        worst = max(worst, float(np.max(np.abs(np.asarray(state.temperature[0]) - T_ref))))
        expected_reward = -np.mean((T_ref - np.asarray(params.target)) ** 2)
        assert float(rewards[GROUP][0]) == pytest.approx(expected_reward, rel=1e-9)
    assert worst <= 1e-10, worst


def test_ice_albedo_matches_climlab(x64):
    """The optional step-function albedo (docs/ebm.md §6) against climlab's with ai=0.62, Tf=-10,
    starting cold enough that ice cells exist, with varying D, A, B."""
    rng = np.random.default_rng(0)
    n = 15
    D = 0.55 + 0.1 * rng.random(n)
    A = 210.0 + 10 * rng.standard_normal((n, 96))
    B = 1.95 + 0.1 * rng.random((n, 96))
    a0, a2 = np.full(n, 0.354), np.full(n, 0.25)
    m = climlab_model(ai=0.62, Tf=-10.0)
    m.Ts[:] = np.linspace(-30, 30, 96)[:, None]
    reference = [climlab_step(m, D[t], A[t], B[t], a0[t], a2[t]) for t in range(n)]
    params = EBMParams(ice_albedo=True)
    Ts = simulate(params, D, A, B, a0, a2, T0=np.linspace(-30, 30, 96))
    assert np.max(np.abs(np.asarray(Ts[1:]) - np.stack(reference))) <= 1e-10
    assert (np.stack(reference) < -10).any()  # the ice branch was exercised


def test_ebm_v3_six_agents_match_climlab_with_numpy_means(x64):
    """ebm-v3-a6: the shared D, a0, a2 are the agents' float32 means in NumPy's order (left to
    right); climlab fed that combination agrees to ~1e-13 °C (``jnp.mean``'s order drifted
    ~2e-6 °C). The actions spread D, a0 and a2 over their boxes so the order matters."""
    env = EBMEnv(3, num_agents=6, dtype="float64")
    params = env.default_params
    space = env.action_space()
    keys = jax.random.split(jax.random.PRNGKey(7), 25)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    m = climlab_model()
    worst, order_mattered = 0.0, 0
    for k in keys:
        a = np.asarray(jax.vmap(space.sample)(jax.random.split(k, 6)))  # (6, 35) float32
        _, state, *_ = step(jax.random.PRNGKey(0), state, {GROUP: jnp.asarray(a)}, params)
        D, a0, a2 = (np.mean(a[:, i]) for i in (0, -2, -1))  # NumPy float32 means, as the original server
        order_mattered += int(D != np.float32(np.sum(np.sort(a[:, 0])[::-1]) / np.float32(6)))
        A_Wm2 = (a[:, 1:17] * np.float32(100)).reshape(96)
        T_ref = climlab_step(m, D, A_Wm2, a[:, 17:33].reshape(96), a0, a2)
        worst = max(worst, float(np.max(np.abs(np.asarray(state.temperature[0]) - T_ref))))
    assert worst <= 1e-10, worst
    assert order_mattered > 0  # a summation order other than NumPy's would have changed D


def test_ordered_mean_is_numpys_float32_mean():
    from jaxclimate.envs.ebm.env import ordered_mean

    x = np.random.default_rng(0).uniform(0.55, 0.65, (3000, 6)).astype(np.float32)
    ours = np.asarray(jax.jit(jax.vmap(ordered_mean))(jnp.asarray(x)))
    np.testing.assert_array_equal(ours, np.mean(x, axis=1))
    assert (np.asarray(jax.vmap(jnp.mean)(jnp.asarray(x))) != np.mean(x, axis=1)).any()  # why this matters
