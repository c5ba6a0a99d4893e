"""``baselines/rice_n.py`` stays runnable: a tiny run trains, evaluates and reports points whose
indices agree with their own temperatures, and a hypervolume of those points."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from jaxclimate.envs.rice_n import evaluation as ev

SCRIPT = Path(__file__).resolve().parents[1] / "baselines" / "rice_n.py"


def _script():
    spec = importlib.util.spec_from_file_location("rice_n_baseline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: one update of 4 episodes per seed: protocol "none" (20-step episodes, the smaller program: 10 s
#: instead of 21 s for bilateral on one core) with the defaults, bilateral with the flags that
#: concern its negotiation heads
RUNS = [("none", 80, []), ("bilateral", 240, ["--mask-ignored-heads", "--observation", "factored"])]


@pytest.mark.parametrize("protocol, steps, flags", RUNS, ids=["none-defaults", "bilateral-flags"])
@pytest.mark.slow
def test_rice_n_baseline_tiny_run(tmp_path, protocol, steps, flags):
    module = _script()
    out = tmp_path / "rice_n.json"
    argv = ["--protocols", protocol, "--steps", str(steps), "--envs", "4", "--seeds", "2", "--rollouts", "2", "--out", str(out), *flags]
    payload = module.main(argv)
    saved = json.loads(out.read_text())
    (result,) = saved["results"]
    assert result["protocol"] == protocol and result["env_steps_per_seed"] == steps
    points = np.asarray(result["points"])
    assert points.shape == (2, 2)
    assert result["hypervolume"] == pytest.approx(ev.hypervolume(points))
    # each point's climate index is the mean over roll-outs of the unrounded index of ΔT 2015→2115
    c = ev.index_constants()
    expected = (np.asarray(result["delta_t_2115"]) - c["min_ci"]) / (c["max_ci"] - c["min_ci"])
    np.testing.assert_allclose(points[:, 0], expected, rtol=1e-6)
    # each seed's temperature path, 2015..2115, passes through its recorded 2100 temperature
    assert result["years"][17] == 2100 and np.shape(result["temperature_path"]) == (2, 21)
    np.testing.assert_allclose(np.asarray(result["temperature_path"])[:, 17], result["temperature_2100"], rtol=1e-12)
    assert payload["results"][0]["points"] == result["points"]
    assert saved["config"]["mask_ignored_heads"] == bool(flags)
    assert saved["config"]["observation"] == ("factored" if flags else "flat")


def test_merge_replaces_one_protocols_row_and_refuses_other_settings(tmp_path):
    module = _script()
    out = tmp_path / "record.json"
    args = module.parser().parse_args(["--protocols", "bilateral", "--steps", "240", "--merge", "--out", str(out)])
    assert module.existing_record(args) is None  # nothing to merge into yet
    old = {"protocol": "bilateral", "hypervolume": 0.1}
    kept = {"protocol": "none", "hypervolume": 0.2}
    out.write_text(json.dumps({"note": "kept", "config": {"steps": 240}, "results": [kept, old]}))
    record = module.existing_record(args)
    new = {"protocol": "bilateral", "hypervolume": 0.3}
    payload = module.payload_of(args, [new], record)
    assert payload["results"] == [kept, new] and payload["note"] == "kept"
    assert payload["config"]["protocols"] == ["none", "bilateral"] and "merge" not in payload["config"]
    other = module.parser().parse_args(["--steps", "999", "--merge", "--out", str(out)])
    with pytest.raises(SystemExit, match="steps"):
        module.existing_record(other)


def test_bad_settings_and_the_committed_record_stop_the_run_before_training():
    """One line before any training: a count below 1, settings the trainer refuses (named with
    the protocol), or other settings about to overwrite the committed record of the defaults."""
    module = _script()
    p = module.parser()
    defaults = p.parse_args([])
    with pytest.raises(SystemExit, match="--rollouts must be >= 1, got 0"):
        module.check_args(p.parse_args(["--rollouts", "0", "--out", "x.json"]), defaults)
    with pytest.raises(SystemExit, match="^protocol 'none': .*total_timesteps"):
        module.check_args(p.parse_args(["--protocols", "none", "--steps", "10", "--out", "x.json"]), defaults)
    with pytest.raises(SystemExit, match="^protocol 'none': .*num_minibatches \\(4\\) must divide"):
        module.check_args(p.parse_args(["--protocols", "none", "--envs", "1", "--out", "x.json"]), defaults)
    with pytest.raises(SystemExit, match=r"committed record of the default settings; give another --out PATH for these \({'steps': 200000}\)"):
        module.main(["--steps", "200000"])  # main hands check_args the defaults: stops before training
    with pytest.raises(SystemExit, match="'protocols': \\['club'\\]"):
        module.check_args(p.parse_args(["--protocols", "club"]), defaults)
    module.check_args(p.parse_args(["--protocols", "bilateral", "--merge"]), defaults)  # one row retrained: allowed
    module.check_args(p.parse_args(["--steps", "200000", "--out", "elsewhere.json"]), defaults)
