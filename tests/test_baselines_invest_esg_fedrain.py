"""``baselines/invest_esg.py`` and ``baselines/fedrain.py`` stay runnable: tiny runs train,
evaluate and write results whose numbers agree with each other."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from jaxclimate.envs.ebm import TARGET, area_weighted_rmse_bands

BASELINES = Path(__file__).resolve().parents[1] / "baselines"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_baseline", BASELINES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_invest_esg_baseline_tiny_run(tmp_path):
    out = load("invest_esg").main(
        ["--settings", "fig3", "--steps", "2000", "--seeds", "2", "--chunks", "2", "--hidden", "8", "--episodes", "20", "--out", str(tmp_path)]
    )
    sweep = json.loads((tmp_path / "invest_esg_authors_jax.json").read_text())
    assert list(sweep["settings"]) == ["status_quo", "mandate", "alpha0.5", "alpha1", "alpha10", "alpha100"]
    assert sweep["env_steps"] == [1000, 2000] and sweep["seeds"] == 2
    for entry in sweep["settings"].values():
        risk = entry["curves"]["final_climate_risk"]
        assert len(risk["mean"]) == 2 and 0.4 < risk["mean"][-1] < 1.1
        assert entry["final"]["final_climate_risk"]["mean"] == pytest.approx(np.mean(risk["mean"][-1:]), rel=1e-6)
        assert 0.4 < entry["evaluation"]["final_climate_risk"] < 1.1
    schelling = json.loads((tmp_path / "invest_esg_schelling.json").read_text())
    assert schelling["episodes"] == 20 and len(schelling["return"]["esg"]["cooperate"]) == 5
    assert out["sweep"]["preset"] == "authors_jax"
    for png in ("invest_esg_authors_jax.png", "invest_esg_schelling.png"):
        assert (tmp_path / png).stat().st_size > 10_000


#: three FedRAIN rows in seconds (also the preemption test's run: the two share compiled programs)
FEDRAIN_TINY = ("--envs ebm-v1 ebm-v3-a2 --regimes fed05 nofed --seeds 2 --steps 1000 --set learning_starts=100 --set hidden_size=16").split()


@pytest.mark.slow
@pytest.mark.full_opt  # run time dominates: four DDPG rows of 2,000 steps (with test_preemption.py's FedRAIN test 68 -> 57 s)
def test_fedrain_baseline_tiny_run_and_resume(tmp_path):
    module = load("fedrain")
    argv = FEDRAIN_TINY + ["--out", str(tmp_path)]
    records = module.main(argv)
    rows = records["ddpg"]["rows"]
    assert list(rows) == ["ebm-v1/nofed", "ebm-v3-a2/fed05", "ebm-v3-a2/nofed"]
    fed = rows["ebm-v3-a2/fed05"]
    assert "global" in fed and "global" not in rows["ebm-v3-a2/nofed"]
    per_seed = np.asarray(fed["local"]["per_seed"])
    np.testing.assert_allclose(fed["local"]["mean"], per_seed.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(fed["local"]["std"], per_seed.std(axis=0), rtol=1e-6)  # population std, ddof = 0
    reference = np.asarray(rows["ebm-v1/nofed"]["local"]["mean"])
    np.testing.assert_allclose(fed["local"]["gain_pct"], 100 * (reference - np.asarray(fed["local"]["mean"])) / reference, rtol=1e-6)
    # the only averaging round is the last step: the local actors are nofed's, trained on the same keys
    np.testing.assert_allclose(fed["local"]["per_seed"], rows["ebm-v3-a2/nofed"]["local"]["per_seed"], rtol=1e-5)
    saved = json.loads((tmp_path / "fedrain_ddpg_paper.json").read_text())
    assert saved["condition"] == "paper" and saved["rows"].keys() == rows.keys()
    assert np.allclose(saved["static_climlab"], np.asarray(area_weighted_rmse_bands(np.asarray(module.static_baseline()[0]), TARGET)))
    again = module.main(argv)  # every row is already there: nothing is retrained
    assert again["ddpg"]["rows"]["ebm-v1/nofed"]["train_s"] == rows["ebm-v1/nofed"]["train_s"]
    assert saved["rows"]["ebm-v1/nofed"]["config_overrides"] == {"learning_starts": 100, "hidden_size": 16}
    # other settings are another row: it is retrained, not read back
    changed = module.main(
        [
            "--envs",
            "ebm-v1",
            "--seeds",
            "2",
            "--steps",
            "1000",
            "--set",
            "learning_starts=100",
            "--set",
            "hidden_size=8",
            "--out",
            str(tmp_path),
            "--no-plot",
        ]
    )
    row = changed["ddpg"]["rows"]["ebm-v1/nofed"]
    assert row["config_overrides"] == {"learning_starts": 100, "hidden_size": 8}
    assert not np.array_equal(row["local"]["per_seed"], rows["ebm-v1/nofed"]["local"]["per_seed"])  # another network's results, not the saved row's


def test_fedrain_runs_side_by_side_keep_each_others_rows(tmp_path):
    """Two runs started from the same (empty) file each save a row: the second must not
    overwrite the first's with its stale copy of the file."""
    module = load("fedrain")
    path = tmp_path / "fedrain_ddpg_default.json"
    header = {"algo": "ddpg", "condition": "default", "rows": {}}
    run_a, run_b = json.loads(json.dumps(header)), json.loads(json.dumps(header))  # both read before either saved
    module.save_row(path, run_a, "ebm-v2-a6/fed05", {"train_s": 1.0})
    merged = module.save_row(path, run_b, "ebm-v2-a6/fed10", {"train_s": 2.0})
    saved = json.loads(path.read_text())
    assert saved == merged
    assert saved["rows"] == {"ebm-v2-a6/fed05": {"train_s": 1.0}, "ebm-v2-a6/fed10": {"train_s": 2.0}}
    assert saved["algo"] == "ddpg" and saved["condition"] == "default"
