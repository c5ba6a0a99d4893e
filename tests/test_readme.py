"""The README's quick start runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quick_start_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2, "README lost its quick-start code blocks"
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, str(README), "exec"), namespace)
        if i == 0:  # the EBM quick start
            assert namespace["returns"].shape == (1024, 6)
            assert namespace["rewards"]["bands"].shape == (6,)
    # RICE-N: distinct names, checked here
    assert namespace["obs"]["regions"].shape == (27, 1207) and namespace["mask"].shape == (27, 138, 10)
    assert abs(namespace["zeros"]["delta_t"] - 2.1666698) < 1e-4
    assert namespace["o"]["regions"].own.shape == (27, 36) and namespace["flat"].shape == (27, 1043)
    # the climate-mitigation game, scenario (ii)
    assert namespace["rewards"]["countries"].shape == (10,)
    assert 0.7 < float(namespace["info"]["temperature"]) < 0.85
