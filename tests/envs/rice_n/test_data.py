"""The shipped RICE-N data: JSON == the reference YAML files, region order, sanity numbers."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest
import yaml

from jaxclimate.envs.rice_n import params as rp

YAML_KEYS = {"A_0": "xA_0", "K_0": "xK_0", "L_0": "xL_0", "L_a": "xL_a", "l_g": "xl_g", "g_A": "xg_A", "delta_A": "xdelta_A", "sigma_0": "xsigma_0"}


def _yaml(name: str) -> dict:
    return yaml.safe_load(resources.files("jaxclimate.envs.rice_n").joinpath(f"data/region_yamls/{name}").read_text())


def test_region_order_is_lexicographic():
    names = rp.region_names()
    assert names == sorted(names)  # string order: 11, 12, ..., 19, 2, 20, ...
    assert names[:10] == ["11", "12", "13", "14", "15", "16", "17", "18", "19", "2"] and names[-1] == "9"


def test_json_equals_region_yamls():
    defaults = _yaml("default.yml")["_RICE_CONSTANT"]
    for i, name in enumerate(rp.region_names()):
        region = {**defaults, **_yaml(f"{name}.yml")["_RICE_CONSTANT"]}
        for key, yaml_key in YAML_KEYS.items():
            assert rp.load_data()["regional"][key]["values"][i] == float(region[yaml_key]), (name, key)
    dice = _yaml("default.yml")["_DICE_CONSTANT"]
    p = rp.rice_params()
    np.testing.assert_array_equal(p.Phi_T, np.asarray(dice["xPhi_T"], float))
    np.testing.assert_array_equal(p.Phi_M, np.asarray(dice["xPhi_M"], float))
    np.testing.assert_array_equal(p.B_M, np.asarray(dice["xB_M"], float))
    assert (p.F_2x, p.M_AT_1750, p.E_L0, p.delta_EL) == (dice["xF_2x"], dice["xM_AT_1750"], dice["xE_L0"], dice["xdelta_EL"])
    assert (p.gamma, p.theta_2, p.alpha, p.a2, p.p_b, p.delta_pb) == (
        defaults["xgamma"],
        defaults["xtheta_2"],
        defaults["xalpha"],
        defaults["xa_2"],
        defaults["xp_b"],
        defaults["xdelta_pb"],
    )


def test_sanity_numbers():
    """docs/rice_n.md §4.4: ΣL₀, ΣK₀, ΣP₀ and initial industrial emissions."""
    p = rp.rice_params()
    production = p.A_0 * p.K_0**0.3 * (p.L_0 / 1000) ** 0.7
    assert p.L_0.sum() == pytest.approx(7763.50, abs=0.01)
    assert p.K_0.sum() == pytest.approx(59.963, abs=1e-3)
    assert production.sum() == pytest.approx(85.4076, abs=1e-4)
    assert (p.sigma_0 * production).sum() == pytest.approx(35.767, abs=1e-3)


def test_index_constants():
    c = rp.index_constants()
    assert c == {"min_ci": 7.006738662719727, "max_ci": 1.2506777048110962, "min_ei": 606.57275390625, "max_ei": 9673.5322265625}


def test_subset_and_bad_regions():
    p = rp.rice_params([3, 0])
    assert p.num_regions == 2 and p.K_0[0] == rp.rice_params().K_0[3]
    with pytest.raises(ValueError, match=r"unknown region ids \[27\]"):
        rp.rice_params([0, 27])
    with pytest.raises(ValueError, match="distinct"):
        rp.rice_params([1, 1])
    with pytest.raises(ValueError, match="at least 2"):
        rp.rice_params([1])


def test_bad_params_name_the_field():
    p = rp.rice_params([0, 1, 2])
    with pytest.raises(ValueError, match=r"RiceParams.A_0 must have shape \(3,\)"):
        p.replace(A_0=np.ones(4))
    with pytest.raises(ValueError, match="RiceParams.debt_ratio_formula must be one of"):
        p.replace(debt_ratio_formula="2021")
    with pytest.raises(ValueError, match="RiceParams.utility_offset"):
        p.replace(utility_offset=0.0)
    with pytest.raises(ValueError, match=r"RiceParams.Phi_T must have shape \(2, 2\)"):
        p.replace(Phi_T=np.eye(3))
