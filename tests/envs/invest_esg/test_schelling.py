"""The Schelling diagrams reproduce the table computed on the original environment."""

import json

import numpy as np

from jaxclimate.envs.invest_esg import schelling
from tests.envs.invest_esg.golden import DATA


def test_every_cell_matches_the_original_environment():
    reference = json.loads((DATA / "schelling_reference.json").read_text())
    returns = schelling.focal_returns(schelling.episode_uniforms())
    table = schelling.schelling_table(returns)
    for mode in schelling.MODES:
        for key in ("cooperate", "defect", "cooperate_stderr", "defect_stderr"):
            np.testing.assert_allclose(table["return"][mode][key], reference[mode][key], atol=0.051, err_msg=f"{mode} {key}")
    discounted = table["discounted_return"]
    np.testing.assert_allclose(discounted["esg"]["cooperate"], reference["esg_discounted"]["cooperate"], atol=0.051)
    np.testing.assert_allclose(discounted["esg"]["defect"], reference["esg_discounted"]["defect"], atol=0.051)
    assert round(discounted["greedy"]["cooperate"][0], 1) == reference["greedy_discounted_k0"]["cooperate"]
    assert round(discounted["none"]["defect"][2], 1) == reference["none_discounted_k2"]["defect"]
    # the paper's reading: with ESG-conscious investors cooperating dominates for every k,
    # with margin-chasing investors defecting does for k >= 1
    assert all(d > 0 for d in table["return"]["esg"]["difference"])
    assert all(d < 0 for d in table["return"]["greedy"]["difference"][1:])
