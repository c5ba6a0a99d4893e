"""RICE-N evaluation: index constants, the extremal/constant policies of docs/rice_n.md §11.3, Pareto
front and hypervolume."""

from __future__ import annotations

import numpy as np
import pytest

from jaxclimate.envs.rice_n import RiceN, replay
from jaxclimate.envs.rice_n import evaluation as ev
from jaxclimate.envs.rice_n.params import index_constants
from tests.envs.rice_n import golden

# docs/rice_n.md §11.3: s, μ (levels), T_AT 2100, T_AT 2115, ΔT, ΔT 2100, M_AT 2115, ΣY, Σ reward, CI, EI
TABLE = [
    (0, 10, 1.9919, 2.1007, 1.2506777, 1.1419, 851.536, 606.5728, 60.6160, 1.0000, 0.0000),
    (10, 0, 6.8246, 7.8567, 7.0067387, 5.9746, 5682.476, 9673.5322, 0.0000, 0.0000, 1.0000),
    (0, 9, 2.0856, 2.2028, 1.3528386, 1.2356, 875.959, 620.8402, 61.7464, 0.9823, 0.0016),
    (9, 0, 6.7150, 7.7327, 6.8827076, 5.8650, 5476.197, 9277.2451, 87.0942, 0.0215, 0.9563),
    (0, 0, 2.8349, 3.0167, 2.1666698, 1.9849, 1095.769, 665.1899, 65.0868, 0.8409, 0.0065),
    (10, 10, 1.9919, 2.1007, 1.2506777, 1.1419, 851.536, 8757.6973, 0.0000, 1.0000, 0.8990),
    (2, 0, 5.3117, 6.1201, 5.2701049, 4.4617, 3339.962, 5111.3813, 165.1634, 0.3017, 0.4968),
    (3, 0, 5.6587, 6.5236, 5.6735640, 4.8087, 3790.013, 5998.9893, 166.2801, 0.2316, 0.5947),
    (2, 5, 4.0332, 4.6318, 3.7818050, 3.1832, 2088.746, 5067.4541, 164.3101, 0.5603, 0.4920),
    (3, 9, 2.5787, 2.8572, 2.0071650, 1.7287, 1134.378, 5520.9062, 159.9384, 0.8686, 0.5420),
    (9, 9, 2.8642, 3.2216, 2.3715553, 2.0142, 1298.153, 8664.7393, 82.9526, 0.8053, 0.8887),
]


@pytest.fixture
def env64(x64):
    return RiceN(dtype="float64")


def test_extremal_constants_reproduce_the_reference_file(env64):
    ours, ref = ev.extremal_constants(env64), index_constants()
    for key in ref:
        assert ours[key] == pytest.approx(ref[key], rel=1e-6), key


def test_extremal_constants_float32():
    ours, ref = ev.extremal_constants(RiceN()), index_constants()
    for key in ref:
        assert ours[key] == pytest.approx(ref[key], rel=1e-5), key


@pytest.mark.parametrize("row", TABLE, ids=[f"s{r[0]}-mu{r[1]}" for r in TABLE])
def test_constant_policy_outcomes(env64, row):
    s, mu, t2100, t2115, dt, dt2100, m2115, total_y, total_r, ci, ei = row
    out = ev.constant_policy(env64, savings=s, mitigation=mu)
    assert out["temperature_2100"] == pytest.approx(t2100, abs=1e-4)
    assert out["temperature_2115"] == pytest.approx(t2115, abs=1e-4)
    assert out["delta_t"] == pytest.approx(dt, abs=1e-5)
    assert out["delta_t_2100"] == pytest.approx(dt2100, abs=1e-4)
    assert out["carbon_2115"] == pytest.approx(m2115, abs=2e-3)
    assert out["total_output"] == pytest.approx(total_y, rel=1e-6, abs=1e-3)
    assert out["total_reward"] == pytest.approx(total_r, abs=2e-4)
    assert out["climate_index"] == pytest.approx(ci, abs=1e-4)
    assert out["economic_index"] == pytest.approx(ei, abs=1e-4)


def test_constant_policies_identical_with_negotiation(x64):
    plain = ev.constant_policy(RiceN(dtype="float64"), savings=2, mitigation=5)
    negotiated = ev.constant_policy(RiceN(protocol="bilateral", dtype="float64"), savings=2, mitigation=5)
    for key, value in plain.items():
        assert negotiated[key] == pytest.approx(value, rel=1e-12), key


# FORMAT.md §1.1: ΔT, ΣY, Σ reward, CI, EI per recorded episode
SUMMARY = {
    "ricen_random_neg0_seed0": (4.6884313, 6755.2305, 0.4028, 0.6781),
    "ricen_random_neg1_seed0": (2.1182055, 6304.3799, 0.8493, 0.6284),
    "ricen_random_safe_neg0_seed0": (4.6089120, 6800.4800, 0.4166, 0.6831),
    "ricen_random_safe_neg1_seed0": (2.1145883, 6287.3052, 0.8499, 0.6265),
}


@pytest.mark.parametrize("name", list(SUMMARY))
def test_recorded_episode_metrics(x64, name):
    dt, total_y, ci, ei = SUMMARY[name]
    out = ev.episode_metrics(replay(golden.env_for(name), golden.load(name)["actions"]))
    assert out["delta_t"] == pytest.approx(dt, abs=1e-5)
    assert out["total_output"] == pytest.approx(total_y, rel=1e-6)
    assert out["climate_index"] == pytest.approx(ci, abs=1e-4) and out["economic_index"] == pytest.approx(ei, abs=1e-4)


def test_rounding_as_the_reference():
    c = index_constants()
    assert ev.climate_index(c["max_ci"]) == 1.0 and ev.climate_index(c["min_ci"]) == 0.0
    # ΔT is rounded to 2 decimals before normalising: 2.1666 -> 2.17
    assert ev.climate_index(2.1666) == round((2.17 - c["min_ci"]) / (c["max_ci"] - c["min_ci"]), 2)
    assert ev.economic_index(665.4) == round((665 - c["min_ei"]) / (c["max_ei"] - c["min_ei"]), 2)
    assert ev.climate_index(2.1666, rounded=False) == pytest.approx((2.1666 - c["min_ci"]) / (c["max_ci"] - c["min_ci"]))


def test_pareto_front_and_hypervolume():
    assert ev.hypervolume([[0.5, 0.4]]) == pytest.approx(0.2)  # one point: C·E
    # two non-dominated points: 0.8·0.2 + 0.3·(0.6 − 0.2)
    assert ev.hypervolume([[0.8, 0.2], [0.3, 0.6], [0.2, 0.1]]) == pytest.approx(0.16 + 0.12)
    front = ev.pareto_front([[0.8, 0.2], [0.3, 0.6], [0.2, 0.1], [0.3, 0.6], [0.8, 0.1]])
    np.testing.assert_array_equal(front, [[0.8, 0.2], [0.3, 0.6]])
    assert ev.hypervolume([[-0.2, 0.5], [0.4, -1.0]]) == 0.0  # clipped at the reference point
    assert ev.hypervolume([[1.0, 0.0], [0.0, 1.0]]) == 0.0  # the extremal policies themselves
    assert ev.hypervolume([[1.0, 0.899]]) == pytest.approx(0.899)  # s = μ = 1 (docs/rice_n.md §11.3)
