"""The CICERO-SCM oracle, live (the ``cicero`` extra; CI installs it), against golden outputs."""

import builtins

import numpy as np
import pytest

from jaxclimate.climate import cicero

pytest.importorskip("ciceroscm")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def oracle():
    return cicero.CiceroOracle()


def test_baseline_emission_table_matches_spec():
    E = cicero.baseline_controllable()
    assert E.shape == (176, 5)
    np.testing.assert_allclose(E[115], [9.71871445, 0.95930182, 388.07279566, 6.9324, 50.48635466])
    np.testing.assert_allclose(E[150], [11.7167, 0.1366, 357.17, 8.0053, 26.703], rtol=2e-4)  # values rounded to 5 significant digits
    np.testing.assert_allclose(E[175], [9.2294, -0.7648, 309.77, 6.9669, 20.145], rtol=2e-4)


def test_ssp245_full_run_matches_golden(golden):
    T = cicero.run_full(cicero.baseline_controllable()[115:])
    assert np.max(np.abs(T - golden["ssp245_dT"])) <= 1e-9
    assert T[-1] == pytest.approx(2.101341, abs=1e-6)


def test_restart_runs_match_golden_scenarios_and_perturbations(oracle, golden):
    E = np.concatenate([golden["scen_E5"], golden["pert_E5"]])[:, 115:]
    expected = np.concatenate([golden["scen_dT"], golden["pert_dT"]])
    T = oracle.run_batch(E)
    assert np.max(np.abs(T - expected)) <= 1e-9


def test_restart_equals_a_fresh_full_run_exactly(oracle, golden):
    for E in (golden["scen_E5"][4, 115:], golden["pert_E5"][5, 115:], cicero.baseline_controllable()[115:] * 0.5):
        np.testing.assert_array_equal(oracle.run(E), cicero.run_full(E))


def test_repeated_runs_do_not_leak_state(oracle, golden):
    first = oracle.run(golden["scen_E5"][0, 115:])
    oracle.run(golden["scen_E5"][1, 115:] * 1.3)
    np.testing.assert_array_equal(oracle.run(golden["scen_E5"][0, 115:]), first)


def test_pool_matches_serial(oracle, golden):
    E = golden["scen_E5"][:6, 115:]
    with cicero.OraclePool(2) as pool:
        np.testing.assert_array_equal(pool.map(E), oracle.run_batch(E))


@pytest.mark.parametrize(
    "emissions, match",
    [
        (np.ones((60, 5)), r"shape \(\.\.\., 61, 5\)"),
        (np.ones((61, 4)), r"shape \(\.\.\., 61, 5\)"),
        (np.full((61, 5), np.nan), "NaN or Inf"),
        (np.concatenate([np.ones((61, 2)), -np.ones((61, 1)), np.ones((61, 2))], axis=1), "CH4 emissions must be >= 0"),
    ],
)
def test_bad_emissions_are_rejected(oracle, emissions, match):
    with pytest.raises(ValueError, match=match):
        oracle.run(emissions)
    with pytest.raises(ValueError, match=match):
        cicero.run_full(emissions)


def test_missing_ciceroscm_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("ciceroscm"):
            raise ImportError("No module named 'ciceroscm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=r'pip install "jaxclimate\[cicero\]"'):
        cicero.require_ciceroscm()
