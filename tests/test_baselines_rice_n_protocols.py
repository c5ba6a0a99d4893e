"""``baselines/rice_n_protocols.py`` stays runnable: a tiny tournament trains a protocol written
in a user's file, scores it as the competition did and draws the index plane."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "baselines" / "rice_n_protocols.py"


def _script():
    spec = importlib.util.spec_from_file_location("rice_n_protocols", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_points_are_the_recorded_planner_and_constants():
    ref = _script().reference_points()
    assert len(ref["constants"]) == 121 and len(ref["planner"]) == 2
    assert all(0 <= c <= 1.01 for c in ref["planner"])  # the planner sits inside the extremal policies' box


def test_a_tournament_of_other_protocols_keeps_off_the_committed_record():
    """The docstring's own example without its --out would have replaced the committed
    record: it stops, before any training, asking for one."""
    committed = SCRIPT.parent / "results" / "rice_n_protocols.json"
    before = committed.stat().st_mtime_ns
    with pytest.raises(
        SystemExit, match=r"is the committed record of the default settings; give another --out PATH for these \({'protocols': \['none'\]}\)"
    ):
        _script().main(["--protocols", "none"])
    assert committed.stat().st_mtime_ns == before


@pytest.mark.slow
def test_a_tiny_tournament_scores_and_draws_a_users_protocol(tmp_path):
    module = _script()
    out = tmp_path / "tournament.json"
    argv = ["--protocols", module.EXAMPLES[1], "--steps", "160", "--envs", "4", "--seeds", "2", "--rollouts", "2", "--out", str(out)]
    payload = module.main(argv)
    (row,) = payload["results"]
    assert row["protocol"] == "conditional-commitment" and row["env_steps_per_seed"] == 160
    assert np.asarray(row["points"]).shape == (2, 2) and len(row["competition_per_seed"]) == 2
    assert row["competition"]["episodes"] == 4 and isinstance(row["competition"]["Capital"], int)
    assert json.loads(out.read_text())["config"]["observation"] == "factored"  # the tournament's default
    assert out.with_suffix(".png").stat().st_size > 0
