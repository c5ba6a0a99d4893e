"""Dataset generation (resume after interruption), windowing, splits and normalisation."""

import json

import numpy as np
import pytest

from jaxclimate.climate import dataset as ds
from jaxclimate.climate import scenarios

pytest.importorskip("ciceroscm")

CONFIG = ds.GeneratorConfig(chunk_size=2)


def test_interrupted_generation_resumes_to_the_same_dataset(tmp_path, golden):
    # Uninterrupted reference run (one process) ...
    ds.generate_dataset(tmp_path / "full", 7, workers=1, config=CONFIG, progress=False)
    full = ds.load_dataset(tmp_path / "full")
    # ... and a run stopped after 2 chunks, with a half-written chunk left behind, then resumed
    part = tmp_path / "part"
    ds.generate_dataset(part, 7, workers=1, config=CONFIG, progress=False, max_chunks=2)
    assert sorted(p.name for p in part.glob("chunk_*.npz")) == ["chunk_00000.npz", "chunk_00001.npz"]
    with pytest.raises(ValueError, match="incomplete: 4 of 7"):
        ds.load_dataset(part)
    (part / "chunk_00002.npz.tmp.npz").write_bytes(b"torn write")
    ds.generate_dataset(part, 7, workers=2, config=CONFIG, progress=False)  # resume with a worker pool
    resumed = ds.load_dataset(part)
    np.testing.assert_array_equal(resumed["seeds"], np.arange(7))
    for key in ("emissions", "dT"):
        np.testing.assert_array_equal(resumed[key], full[key])
    # scenario k is the authors' scenario k
    np.testing.assert_allclose(full["dT"][:7], golden["scen_dT"][:7], atol=1e-9)


def test_resume_with_other_settings_is_refused(tmp_path):
    ds.generate_dataset(tmp_path, 2, workers=1, config=CONFIG, progress=False)
    with pytest.raises(ValueError, match="different dataset"):
        ds.generate_dataset(tmp_path, 2, workers=1, config=ds.GeneratorConfig(alpha=0.5, chunk_size=2), progress=False)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["oracle"]["version"] == "2.1.3" and manifest["num_scenarios"] == 2


def test_fresh_scenarios_start_at_first_seed_and_are_the_authors_scenarios_of_those_seeds(tmp_path, golden):
    # extra training data beside the paper's seeds 0..S-1 shares none of its scenarios
    ds.generate_dataset(tmp_path, 2, workers=1, config=CONFIG, progress=False, first_seed=5)
    fresh = ds.load_dataset(tmp_path)
    np.testing.assert_array_equal(fresh["seeds"], [5, 6])
    assert fresh["manifest"]["seeds"] == "5..6"
    np.testing.assert_allclose(fresh["dT"], golden["scen_dT"][5:7], atol=1e-9)
    with pytest.raises(ValueError, match="different dataset"):  # resuming from other seeds is refused
        ds.generate_dataset(tmp_path, 2, workers=1, config=CONFIG, progress=False, first_seed=0)


def test_cli_reports_bad_arguments(tmp_path, capsys):
    assert ds.main(["--scenarios", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "num_scenarios must be >= 1" in capsys.readouterr().err


def test_windows_hold_the_65_previous_years_and_the_target_year():
    E = np.stack([scenarios.numpy_scenario(k) for k in range(3)])
    dT = np.random.default_rng(0).normal(size=(3, 176))
    X, y = ds.make_windows(E, dT)
    assert X.shape == (3 * 61, 66, 5) and y.shape == (183,)
    full = scenarios.full_history(E)
    s, t = 2, 10  # scenario 2, target year 2025 (index 125)
    np.testing.assert_allclose(X[s * 61 + t], full[s, 125 - 65 : 126], rtol=1e-6)
    assert y[s * 61 + t] == np.float32(dT[s, 125])
    # the first target (2015) sees pure SSP2-4.5 history 1950..2014
    np.testing.assert_allclose(X[0, :65], scenarios.full_history(E)[0, 50:115], rtol=1e-6)


def test_split_is_by_scenario_and_70_15_15():
    splits = ds.split_scenarios(20000, seed=0)
    assert [len(splits[k]) for k in ("train", "val", "test")] == [14000, 3000, 3000]
    union = np.concatenate(list(splits.values()))
    assert len(np.unique(union)) == 20000
    assert not np.array_equal(ds.split_scenarios(100, 1)["test"], ds.split_scenarios(100, 2)["test"])


def test_normalisation_uses_training_windows_only():
    E = np.stack([scenarios.numpy_scenario(k) for k in range(10)])
    train = np.array([0, 1, 2, 3, 4, 5, 6])
    mean, std = ds.normalisation_stats(E, train)
    X, _ = ds.make_windows(E[train], np.zeros((7, 176)))  # float32 windows
    rows = X.reshape(-1, 5).astype(np.float64)
    np.testing.assert_allclose(mean, rows.mean(axis=0), rtol=0, atol=1e-6 * std.max())
    np.testing.assert_allclose(std, rows.std(axis=0) + 1e-6, rtol=1e-5)
    mean_all, _ = ds.normalisation_stats(E, np.arange(10))
    assert not np.allclose(mean, mean_all)
