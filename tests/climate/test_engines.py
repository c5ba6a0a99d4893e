"""Climate engines: the shipped surrogate (pure JAX) and CICERO-SCM via pure_callback."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.climate import cicero, engines, weights_io
from jaxclimate.climate import surrogate as sg

SSP245 = cicero.baseline_controllable()[116:]  # 2016..2075


@pytest.fixture(scope="module")
def surrogate_engine():
    return engines.SurrogateEngine("gru", start_year=2016)


def test_shipped_gru_loads_on_a_fresh_install():
    s = weights_io.load_surrogate("gru")
    assert s.config.kind == "gru" and s.config.window == 65
    assert s.card["metrics"]["test_rmse"] > 0 and s.card["dataset"]["num_scenarios"] >= 1000


def test_surrogate_engine_jit_vmap_grad_and_compiles_once(surrogate_engine):
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(E):
        return engines.rollout(surrogate_engine, E)

    T = run(jnp.asarray(SSP245, jnp.float32))
    run(jnp.asarray(SSP245 * 1.01, jnp.float32))
    assert T.shape == (60,) and bool(jnp.all(jnp.isfinite(T)))
    batch = jnp.stack([SSP245 * f for f in (0.9, 1.0, 1.1)]).astype(jnp.float32)
    Tb = jax.jit(jax.vmap(lambda E: engines.rollout(surrogate_engine, E)))(batch)
    np.testing.assert_allclose(np.asarray(Tb[1]), np.asarray(T), rtol=1e-5, atol=1e-6)
    # more CO2 -> warmer by 2075 (the surrogate has learned the sign of the response)
    co2_up = batch[1].at[:, 0].multiply(1.5)
    assert float(run(co2_up)[-1]) > float(T[-1]) + 0.1
    grad = jax.grad(lambda E: engines.rollout(surrogate_engine, E)[-1])(batch[1])
    assert float(grad[:, 0].sum()) > 0  # d T(2075) / d CO2_FF > 0
    chex.clear_trace_counter()


def _rollout_with_resets(engine, E, reset_at):
    """Step one env through E (n, 5), restarting the engine before step ``reset_at``: under
    vmap with different ``reset_at`` the lanes sit at different steps of their episodes."""

    def body(state, t_e):
        t, e = t_e
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(t == reset_at, a, b), engine.init(), state)
        return engine.step(state, e)

    return jax.lax.scan(body, engine.init(), (jnp.arange(E.shape[0]), E))[1]


def _random_lstm_surrogate():
    gru = weights_io.load_surrogate("gru")
    config = sg.SurrogateConfig.paper("lstm")
    return weights_io.Surrogate(config, sg.init_params(config, jax.random.PRNGKey(3)), gru.mean, gru.std, {})


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_reusing_the_baseline_prefix_equals_the_full_window(kind):
    surrogate = "gru" if kind == "gru" else _random_lstm_surrogate()
    fast = engines.SurrogateEngine(surrogate, start_year=2016)
    full = engines.SurrogateEngine(surrogate, start_year=2016, reuse_baseline_prefix=False)
    assert fast.reuse_baseline_prefix and not full.reuse_baseline_prefix
    rng = np.random.default_rng(0)
    # 70 steps: past W = 65, where the window holds no baseline rows any more
    E = jnp.asarray(np.concatenate([SSP245, SSP245[-10:]])[None] * rng.uniform(0.8, 1.2, (4, 70, 5)), jnp.float32)
    reset_at = jnp.asarray([0, 3, 17, 40])  # lanes at different steps of their episodes
    run = lambda eng: jax.jit(jax.vmap(lambda e, r: _rollout_with_resets(eng, e, r)))(E, reset_at)  # noqa: E731
    T_fast, T_full = np.asarray(run(fast)), np.asarray(run(full))
    np.testing.assert_allclose(T_fast, T_full, rtol=0, atol=2e-6)
    assert np.ptp(T_full[:, -1]) > 1e-3  # the lanes differ, so an index mix-up would show
    # derivatives are those of the full pass
    last_T = lambda eng: jax.grad(lambda e: engines.rollout(eng, e)[-1])(E[0])  # noqa: E731
    np.testing.assert_allclose(np.asarray(last_T(fast)), np.asarray(last_T(full)), rtol=1e-5, atol=1e-8)


def test_tcn_engine_runs_the_full_window():
    config = sg.SurrogateConfig.paper("tcn")
    gru = weights_io.load_surrogate("gru")
    tcn = weights_io.Surrogate(config, sg.init_params(config, jax.random.PRNGKey(0)), gru.mean, gru.std, {})
    assert not engines.SurrogateEngine(tcn, start_year=2016).reuse_baseline_prefix


def test_bad_emissions_shape_is_rejected(surrogate_engine):
    with pytest.raises(ValueError, match=r"emissions_t must have shape \(5,\)"):
        surrogate_engine.step(surrogate_engine.init(), jnp.ones(4))
    with pytest.raises(ValueError, match="start_year"):
        engines.SurrogateEngine("gru", start_year=1950)


@pytest.mark.slow
def test_surrogate_and_cicero_engines_agree_on_ssp245(surrogate_engine):
    pytest.importorskip("ciceroscm")
    cicero_engine = engines.CiceroEngine(start_year=2016)
    T_cicero = np.asarray(jax.jit(lambda E: engines.rollout(cicero_engine, E))(jnp.asarray(SSP245)))
    np.testing.assert_allclose(T_cicero, cicero.run_full(cicero.baseline_controllable()[115:])[116:], atol=1e-6)
    T_surrogate = np.asarray(engines.rollout(surrogate_engine, jnp.asarray(SSP245, jnp.float32)))
    rmse = float(np.sqrt(np.mean((T_surrogate - T_cicero) ** 2)))
    test_rmse = surrogate_engine.surrogate.card["metrics"]["test_rmse"]
    assert rmse <= 3 * test_rmse, (rmse, test_rmse)


@pytest.mark.slow
def test_cicero_engine_under_vmap_calls_the_oracle_per_row():
    pytest.importorskip("ciceroscm")
    eng = engines.CiceroEngine(start_year=2016)
    E = jnp.stack([jnp.asarray(SSP245[:3]), jnp.asarray(SSP245[:3] * 1.2)])
    T = jax.jit(jax.vmap(lambda e: engines.rollout(eng, e)))(E)
    expected_hi = cicero.run_full(np.concatenate([cicero.baseline_controllable()[115:116], SSP245[:3] * 1.2, SSP245[3:]]))[116:119]
    np.testing.assert_allclose(np.asarray(T[1]), expected_hi, atol=1e-6)
    assert float(T[1, -1]) != float(T[0, -1])
    with pytest.raises(Exception, match="JVP|differentiat"):
        jax.grad(lambda e: engines.rollout(eng, e).sum())(jnp.asarray(SSP245[:2]))
