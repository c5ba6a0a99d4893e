"""Parity with the original InvestESG environment's recorded episodes (tests/data/invest_esg)."""

import numpy as np
import pytest

from jaxclimate.envs.invest_esg import InvestESG
from tests.envs.invest_esg import golden

STATE_KEYS = (
    "heat_prob",
    "precip_prob",
    "drought_prob",
    "climate_risk",
    "total_cumu_mitigation",
    "market_performance",
    "investor_cash_after_invest",
    "company_capital_after_divest",
    "company_capital_after_invest",
    "company_pc",
    "company_amount",
    "company_cumu",
    "company_resilience",
    "company_esg_score",
    "company_margin",
    "company_capital_gain",
    "company_capital",
    "investor_investments",
    "investor_cash",
    "investor_capital",
    "investor_utility",
    "obs",
    "rewards",
)


@pytest.mark.parametrize("name", golden.FILES)
def test_golden_float64_every_array(x64, name):
    data = golden.load(name)
    env, params = golden.env_for(name)
    obs0, got = golden.replay(env, params, golden.actions(name))
    np.testing.assert_allclose(np.asarray(obs0), data["obs0"], rtol=1e-9, atol=1e-9, err_msg="obs0")
    worst = 0.0
    for key in STATE_KEYS:
        np.testing.assert_allclose(np.asarray(got[key]), data[key], rtol=1e-9, atol=1e-9, err_msg=key)
        worst = max(worst, float(np.max(np.abs(np.asarray(got[key]) - data[key]))))
    for key in golden.EXACT:
        np.testing.assert_array_equal(np.asarray(got[key]), data[key], err_msg=key)
    assert worst < 1e-11  # measured 4.5e-13: a regression of several orders would still pass 1e-9


def test_reference_calendar_reproduces_the_recorded_events(x64):
    """The default episode used the original's own per-year generators: the shipped table
    alone (event_mode="reference_events") must give the same events and trajectory."""
    name = "default_5x3_mitigation"
    data = golden.load(name)
    env, params = golden.env_for(name, event_mode="reference_events")
    assert params.event_uniforms is None
    _, got = golden.replay(env, params, golden.actions(name))
    np.testing.assert_array_equal(np.asarray(got["events"]), data["events"])
    np.testing.assert_allclose(np.asarray(got["company_capital"]), data["company_capital"], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", golden.FILES)
def test_golden_float32(name):
    """float32 (the training precision) tracks the reference: events and floored investment
    amounts exact, money within the tolerances an independent float32 port achieved."""
    data = golden.load(name)
    env, params = golden.env_for(name, dtype="float32")
    _, got = golden.replay(env, params, golden.actions(name, dtype=np.float32))
    for key in ("events", "investment_amount"):
        np.testing.assert_array_equal(np.asarray(got[key]), data[key], err_msg=key)
    for key in ("obs", "company_capital", "investor_investments"):
        np.testing.assert_allclose(np.asarray(got[key]), data[key], rtol=2e-5, atol=2e-4, err_msg=key)
    np.testing.assert_allclose(np.asarray(got["rewards"])[:, 5:], data["rewards"][:, 5:], atol=1e-5)


@pytest.mark.parametrize("name", golden.FILES)
def test_policy_transform_is_bit_exact_in_float32(name):
    """The trainers' transform clip((a + 1)/2 · cap, 0, cap) in float32 gives the recorded
    env actions bit for bit (rows overwritten by hand excluded, as documented)."""
    data = golden.load(name)
    env = InvestESG()
    got = np.asarray(env.policy_to_env(data["company_action_raw"]))
    keep = np.ones(got.shape[:2], bool)
    keep[0] = False
    keep[50, 0] = False
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[keep], data["company_action"][keep])
