"""Policy consistency: the reservoir, the replay through CICERO-SCM, the rank statistics."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.core.env import EnvState
from jaxclimate.envs.climate_mitigation import consistency as cs

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "cicero" / "game_fixed_policies.npz"


def test_kendall_and_spearman_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x = rng.normal(size=700)
    y = x + rng.normal(size=700)
    y[:50] = np.round(y[:50])  # ties
    x[100:140] = 0.0
    assert cs.kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert cs.spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


def test_metrics_on_known_inputs():
    T = np.linspace(0.5, 2.0, 50)[None] + np.arange(5)[:, None] * 0.1
    m = cs.consistency_metrics(T, T)
    assert m["rmse_K"] == 0.0 and m["r2"] == 1.0 and m["kendall_tau_T"] == 1.0 and m["kendall_tau_T4"] == 1.0
    m = cs.consistency_metrics(T[::-1], T)  # order reversed
    assert m["kendall_tau_T"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="episodes, years"):
        cs.consistency_metrics(T, T[:, :10])


def test_replay_reproduces_golden_episodes():
    """The game's global emissions replayed through the oracle give the golden CICERO-SCM run."""
    pytest.importorskip("ciceroscm")
    with np.load(GOLDEN) as f:
        names = ["ii_switching", "i_energy_full"]
        E = np.stack([f[f"{n}__E5_global"][1:51] for n in names])  # 2016..2065
        T = np.stack([f[f"{n}__dT_glob_air"][116:166] for n in names])
        full = np.stack([f[f"{n}__E5_global"] for n in names])
    inputs = cs.oracle_inputs(E)
    np.testing.assert_allclose(inputs[:, :51], full[:, :51], rtol=1e-15)
    np.testing.assert_allclose(cs.replay_cicero(E), T, atol=1e-9)


def _fake_step(num_envs, t, done, value):
    env_state = EnvState(time=jnp.full((num_envs,), t, jnp.int32))
    info = {
        "global_emissions": jnp.full((num_envs, 5), value, jnp.float32),
        "temperature": jnp.full((num_envs,), value, jnp.float32),
        "lookahead_emissions": jnp.full((num_envs, 15, 5), -value, jnp.float32),
        "lookahead_temperatures": jnp.full((num_envs, 15), -value, jnp.float32),
    }
    return env_state, info, jnp.full((num_envs,), done)


def test_reservoir_stores_whole_episodes_and_samples_uniformly():
    res = cs.EpisodeReservoir(capacity=4, num_envs=3, horizon=2, lookahead=15)
    update = jax.jit(res.update)
    state = res.init()
    counts = np.zeros(30)
    for episode in range(10):  # 10 rounds × 3 envs = 30 episodes, ids 1..30 per (round, env)
        for t in range(2):
            env_state, info, done = _fake_step(3, t, t == 1, 0.0)
            ids = jnp.arange(3, dtype=jnp.float32) + 3 * episode + 1
            info["global_emissions"] = jnp.broadcast_to(ids[:, None] * (t + 1), (3, 5))
            info["temperature"] = ids * (t + 1)
            state = update(state, jax.random.PRNGKey(100 * episode + t), env_state, info, done)
    E, T = res.contents(state)
    assert int(state.seen) == 30 and E.shape == (4, 17, 5)
    np.testing.assert_array_equal(T[:, 1], 2 * T[:, 0])  # step 0 and step 1 of the same episode
    np.testing.assert_array_equal(T[:, 2:], 0.0)  # look-ahead from info
    assert len(np.unique(T[:, 0])) == 4

    # uniformity: over many seeds each of 30 episodes is kept with probability 4/30
    def fill(key):
        s = res.init()
        for r in range(10):
            k = jax.random.fold_in(key, r)
            ids = jnp.arange(3, dtype=jnp.float32) + 3 * r
            env_state, info, done = _fake_step(3, 1, True, 0.0)
            info["temperature"] = ids
            s = res.update(s, k, env_state, info, done)
        return s.temperatures[:, 1]

    kept = np.asarray(jax.jit(jax.vmap(fill))(jax.random.split(jax.random.PRNGKey(0), 3000))).astype(int).ravel()
    counts = np.bincount(kept, minlength=30) / 3000
    np.testing.assert_allclose(counts, 4 / 30, atol=0.03)
