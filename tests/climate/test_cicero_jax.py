"""CICERO-SCM in JAX against the live ciceroscm 2.1.3, year by year (docs/climate_mitigation.md §7)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.climate import cicero, cicero_jax, engines, scenarios

pytest.importorskip("ciceroscm")

FORCING = ("CO2", "CH4", "N2O", "SO4_DIR", "SO4_IND", "BC", "OC", "TROP_O3", "STRAT_H2O", "LANDUSE", "Total_forcing")
TEMPERATURES = ("dT_glob_air", "dT_glob", "dT_NH", "dT_SH", "dT_NH_air", "dT_SH_air", "dT_glob_sea")


def scenario_set() -> dict[str, np.ndarray]:
    base = cicero.baseline_controllable()[2015 - 1900 :]
    years = np.arange(2015, 2076)
    negative = base.copy()  # net CO2 negative: fossil CO2 ramps to 0 by 2030, land use a growing sink
    negative[:, 0] *= np.clip((2030 - years) / 15, 0, 1)
    negative[:, 1] = -0.05 * (years - 2014)
    no_so2 = base.copy()
    no_so2[:, 4] = 0.0
    high_ch4 = base.copy()
    high_ch4[:, 2] *= np.linspace(1, 3, 61)
    return {
        "ssp245": base,
        "generator_0": scenarios.numpy_scenario(0),
        "generator_7": scenarios.numpy_scenario(7),
        "net_negative_co2": negative,
        "so2_zero": no_so2,
        "high_ch4": high_ch4,
    }


@pytest.fixture(scope="module")
def runs64():
    """Every scenario through the JAX port in float64 (one vmapped compile) and the oracle."""
    with cicero_jax.x64_context():
        model = cicero_jax.CiceroJAX(dtype=jnp.float64)
        cases = scenario_set()
        stacked = jnp.asarray(np.stack(list(cases.values())))
        outputs = jax.tree_util.tree_map(np.asarray, jax.jit(jax.vmap(model.run))(stacked))
    return {name: ({k: v[i] for k, v in outputs.items()}, cicero.full_results(E)) for i, (name, E) in enumerate(cases.items())}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(scenario_set()))
def test_float64_parity_year_by_year(runs64, name):
    ours, ref = runs64[name]
    for key in TEMPERATURES:
        np.testing.assert_allclose(ours[key], ref[key], rtol=0, atol=1e-12, err_msg=key)
    conc = ref["concentrations"]
    np.testing.assert_allclose(ours["CO2"], conc["CO2"].to_numpy(), rtol=1e-13, atol=0)
    np.testing.assert_allclose(ours["CH4"], conc["CH4"].to_numpy(), rtol=1e-13, atol=0)
    np.testing.assert_allclose(ours["N2O"], conc["N2O"].to_numpy(), rtol=1e-13, atol=0)
    for key in FORCING:
        np.testing.assert_allclose(ours["F_" + key], ref["forcing"][key].to_numpy(), rtol=0, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(ours["RIB_glob"], ref["RIB_glob"], rtol=0, atol=1e-11)


def test_edge_cases_exercise_what_they_claim(runs64):
    ours, _ = runs64["net_negative_co2"]
    assert ours["CO2"][-1] < ours["CO2"][2030 - 1900]  # concentrations fall once emissions are net negative
    assert abs(runs64["so2_zero"][0]["F_SO4_DIR"][-1]) > 0.0 and runs64["so2_zero"][0]["dT_glob_air"][-1] > runs64["ssp245"][0]["dT_glob_air"][-1]
    assert runs64["high_ch4"][0]["CH4"][-1] > 2 * runs64["ssp245"][0]["CH4"][-1]


@pytest.mark.slow
@pytest.mark.parametrize("plant", ["ocean_substeps", "rs_fir_lag", "trop_o3_split"])
def test_planted_errors_fail_parity(monkeypatch, runs64, plant):
    """The comparison would notice a wrong sub-step count, kernel lag or forcing coefficient."""
    if plant == "ocean_substeps":
        monkeypatch.setattr(cicero_jax, "LDTIME", 11)
    elif plant == "trop_o3_split":
        monkeypatch.setattr(cicero_jax, "TROP_O3_SPLIT", 1.46)
    with cicero_jax.x64_context():
        model = cicero_jax.CiceroJAX(dtype=jnp.float64)
        if plant == "rs_fir_lag":
            model._fir = jnp.roll(model._fir, 1)
        T = np.asarray(jax.jit(model.run)(scenario_set()["ssp245"])["dT_glob_air"])
    assert np.max(np.abs(T - runs64["ssp245"][1]["dT_glob_air"])) > 1e-6


def test_float32_engine_within_2e5_kelvin():
    """The engine starts from a float64 state at 2016 and steps in float32."""
    engine = engines.CiceroJaxEngine(start_year=2016, dtype=jnp.float32)
    base = cicero.baseline_controllable()
    for E in (base[2015 - 1900 :], scenarios.numpy_scenario(3)):
        T = np.asarray(jax.jit(lambda e: engines.rollout(engine, e))(jnp.asarray(E[1:], jnp.float32)))
        ref = cicero.CiceroOracle().run(np.concatenate([base[2015 - 1900 : 2016 - 1900], E[1:]]))[2016 - 1900 :]
        assert T.dtype == np.float32 and np.max(np.abs(T - ref)) < 2e-5
    assert engine.initial_temperature() == pytest.approx(0.725111, abs=1e-6)


@pytest.mark.slow
def test_gradients_match_finite_differences_of_the_oracle():
    """d dT_glob_air(2050) / d E(2020) for CO2, CH4, N2O, SO2: JAX reverse mode in float64
    against central differences of the real model."""
    base = cicero.baseline_controllable()[2015 - 1900 :]
    i2020, i2050 = 2020 - 2015, 2050 - 1900
    with cicero_jax.x64_context():
        model = cicero_jax.CiceroJAX(dtype=jnp.float64)
        grad = np.asarray(jax.jit(jax.grad(lambda E: model.run(E)["dT_glob_air"][i2050]))(jnp.asarray(base)))[i2020]
    oracle = cicero.CiceroOracle()
    for gas, h in ((0, 1e-3), (2, 1e-1), (3, 1e-2), (4, 1e-1)):
        up, down = base.copy(), base.copy()
        up[i2020, gas] += h
        down[i2020, gas] -= h
        fd = (oracle.run(up)[i2050] - oracle.run(down)[i2050]) / (2 * h)
        assert grad[gas] == pytest.approx(fd, rel=1e-6), cicero.CONTROLLABLE[gas]
    assert grad[0] == pytest.approx(1.4586e-3, rel=1e-3)  # K per Pg C


def test_unimplemented_configuration_is_rejected():
    with pytest.raises(ValueError, match="threstemp"):
        cicero_jax.CiceroJAX(pamset_udm={**cicero.PAMSET_UDM, "threstemp": 0})
    with pytest.raises(ValueError, match="ocean_efficacy"):
        cicero_jax.CiceroJAX(pamset_udm={**cicero.PAMSET_UDM, "ocean_efficacy": 0.8})
    with pytest.raises(ValueError, match="qnox"):
        cicero_jax.CiceroJAX(pamset_emiconc={**cicero.PAMSET_EMICONC, "qnox": 0.1})


def test_climate_game_runs_on_cicero_jax():
    import jaxclimate

    env, params = jaxclimate.make("climate-mitigation", scenario="i", engine="cicero-jax")
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    assert float(obs["countries"][0, 0]) == pytest.approx(0.725111, abs=1e-5)  # the engine's own ΔT(2015)
    actions = {"countries": jnp.zeros((4, 4), jnp.int32)}
    _, _, _, _, _, info = jax.jit(env.step)(jax.random.PRNGKey(1), state, actions, params)
    reference = cicero.CiceroOracle().run(cicero.baseline_controllable()[2015 - 1900 :])[2016 - 1900]
    # no action = SSP2-4.5 growth per country (clipping only bites AFOLU from 2053)
    assert float(info["temperature"]) == pytest.approx(reference, abs=2e-5)


def test_dataset_and_replay_with_cicero_jax_equal_the_oracle(tmp_path):
    from jaxclimate.climate import dataset
    from jaxclimate.envs.climate_mitigation import consistency

    config = dataset.GeneratorConfig(chunk_size=3)
    dataset.generate_dataset(tmp_path / "oracle", 5, workers=1, config=config, progress=False)
    dataset.generate_dataset(tmp_path / "jax", 5, config=config, progress=False, engine="cicero-jax")
    a, b = dataset.load_dataset(tmp_path / "oracle"), dataset.load_dataset(tmp_path / "jax")
    np.testing.assert_array_equal(a["emissions"], b["emissions"])
    np.testing.assert_allclose(b["dT"], a["dT"], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="different dataset"):  # the manifest records the engine
        dataset.generate_dataset(tmp_path / "oracle", 5, config=config, progress=False, engine="cicero-jax")
    episodes = np.stack([b["emissions"][k, 1:51] for k in range(3)])  # 2016..2065 paths
    np.testing.assert_allclose(consistency.replay_cicero(episodes, engine="cicero-jax"), consistency.replay_cicero(episodes), rtol=0, atol=1e-12)
