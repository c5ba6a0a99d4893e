"""The README's quick start and the user guide's examples run as written (the guide's blocks
after the README's, in one namespace, as a reader would run them)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"


@pytest.mark.slow
def test_quick_start_runs():
    blocks = [(page, block) for page in (README, GUIDE)
              for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)]
    assert sum(page == README for page, _ in blocks) >= 2, "README lost its quick-start code blocks"
    assert sum(page == GUIDE for page, _ in blocks) >= 4, "the guide lost its examples"
    namespace: dict = {}
    for i, (page, block) in enumerate(blocks):
        exec(compile(block, str(page), "exec"), namespace)
        if i == 0:  # the EBM quick start
            assert namespace["returns"].shape == (1024, 6)
            assert namespace["rewards"]["bands"].shape == (6,)
            gradients = namespace["gradients"]  # equator-to-pole contrast falls as heat transport grows
            assert bool((gradients[1:] < gradients[:-1]).all()) and 75 < float(gradients[0]) < 90
    # RICE-N: distinct names, checked here
    assert namespace["obs"]["regions"].shape == (27, 1207) and namespace["mask"].shape == (27, 138, 10)
    assert abs(namespace["zeros"]["delta_t"] - 2.1666698) < 1e-4
    assert namespace["o"]["regions"].own.shape == (27, 36) and namespace["flat"].shape == (27, 1043)
    # the climate-mitigation game, scenario (ii)
    assert namespace["rewards"]["countries"].shape == (10,)
    assert 0.7 < float(namespace["info"]["temperature"]) < 0.85
    # InvestESG: P100 and W100 per mitigation level as the comments print them
    p100 = namespace["final"]["final_climate_risk"].mean(1)
    w100 = namespace["final"]["final_market_wealth"].mean(1)
    assert namespace["company_returns"].shape == (5, 256, 5)
    assert abs(float(p100[0]) - 1.04) < 0.01 and abs(float(p100[1]) - 0.56) < 0.01
    assert float(w100[1]) > float(w100[2]) > float(w100[3]) > float(w100[0]) > float(w100[4])
