"""``baselines/rice_n.py`` stays runnable: a tiny run trains, evaluates and reports points whose
indices agree with their own temperatures, and a hypervolume of those points."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from jaxclimate.envs.rice_n import evaluation as ev

SCRIPT = Path(__file__).resolve().parents[1] / "baselines" / "rice_n.py"


@pytest.mark.parametrize("flags", [[], ["--mask-ignored-heads", "--observation", "factored"]])
@pytest.mark.slow
def test_rice_n_baseline_tiny_run(tmp_path, flags):
    spec = importlib.util.spec_from_file_location("rice_n_baseline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "rice_n.json"
    payload = module.main(["--protocols", "bilateral", "--steps", "240", "--envs", "4", "--seeds", "2", "--rollouts", "2", "--out", str(out), *flags])
    saved = json.loads(out.read_text())
    (result,) = saved["results"]
    assert result["protocol"] == "bilateral" and result["env_steps_per_seed"] == 240
    points = np.asarray(result["points"])
    assert points.shape == (2, 2)
    assert result["hypervolume"] == pytest.approx(ev.hypervolume(points))
    # each point's climate index is the mean over roll-outs of the unrounded index of ΔT 2015→2115
    c = ev.index_constants()
    expected = (np.asarray(result["delta_t_2115"]) - c["min_ci"]) / (c["max_ci"] - c["min_ci"])
    np.testing.assert_allclose(points[:, 0], expected, rtol=1e-6)
    assert payload["results"][0]["points"] == result["points"]
    assert saved["config"]["mask_ignored_heads"] == bool(flags)
    assert saved["config"]["observation"] == ("factored" if flags else "flat")
