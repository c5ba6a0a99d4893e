"""Policy-induced surrogate data and training on it (train split only, shipped weights as a start)."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.climate import cicero, dataset, fit, policy_data
from jaxclimate.climate import surrogate as sg


def test_policy_paths_are_game_paths_with_oracle_temperatures(tmp_path):
    pytest.importorskip("ciceroscm")
    policy_data.generate(tmp_path, 3, scenarios=("ii",), policies=("random", "scripted"), seed=5)
    data = dataset.load_dataset(tmp_path)
    assert data["emissions"].shape == (6, 61, 5) and data["manifest"]["kind"] == "policy-induced"
    base = cicero.baseline_controllable()
    np.testing.assert_allclose(data["emissions"][:, 0], np.broadcast_to(base[2015 - 1900], (6, 5)))  # 2015 = SSP2-4.5
    assert len({e.tobytes() for e in data["emissions"]}) == 6  # every episode its own policy
    assert np.all(data["emissions"][:, :, 2:] >= 0)  # CH4, N2O, SO2 never negative (per-country clip)
    assert np.any(data["emissions"][:, 1:51, 0] < 0.999 * base[2016 - 1900 : 2066 - 1900, 0])  # efforts cut fossil CO2
    oracle = cicero.CiceroOracle()
    for k in (0, 5):
        np.testing.assert_allclose(data["dT"][k], oracle.run(data["emissions"][k]), rtol=0, atol=1e-12)
    with np.load(tmp_path / "chunk_00000.npz") as f:
        assert list(f["sources"]) == ["ii/random"] * 3 + ["ii/scripted"] * 3
    with pytest.raises(ValueError, match="policy must be one of"):
        policy_data.episode_paths("i", "greedy", jax.random.PRNGKey(0), 2)


def test_trained_policy_episodes_join_as_their_own_source(tmp_path):
    """A run's trajectories.npz (the game's float32 emission paths) becomes a source named after
    the run, its 2016..2065 rows kept exactly, with the oracle's temperatures."""
    paths = policy_data.episode_paths("i", "scripted", jax.random.PRNGKey(3), 2).astype(np.float32)
    run = tmp_path / "ii_mlp"
    run.mkdir()
    np.savez(run / "trajectories.npz", emissions=paths, temperatures=np.zeros((2, 50), np.float32), first_year=np.asarray(2016))
    out = policy_data.generate(tmp_path / "data", 1, scenarios=("ii",), policies=("random",), trajectories=[run / "trajectories.npz"])
    data = dataset.load_dataset(out)
    assert data["manifest"]["trained"] == {"trained: ii_mlp": 2} and data["emissions"].shape == (3, 61, 5)
    with np.load(out / "chunk_00000.npz") as f:
        assert list(f["sources"]) == ["ii/random", "trained: ii_mlp", "trained: ii_mlp"]
    np.testing.assert_array_equal(data["emissions"][1:, 1:51], paths.astype(np.float64))
    from jaxclimate.climate import cicero_jax

    np.testing.assert_allclose(data["dT"][1:], cicero_jax.run_batch(cicero.oracle_inputs(paths.astype(np.float64))), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="is not a file"):
        policy_data.generate(tmp_path / "bad", 0, trajectories=[tmp_path / "nope.npz"])
    np.savez(run / "wrong.npz", emissions=np.zeros((2, 35, 5)), first_year=np.asarray(2016))
    with pytest.raises(ValueError, match=r"no \(episodes, 50, 5\) emission paths"):
        policy_data.generate(tmp_path / "bad", 0, trajectories=[run / "wrong.npz"])
    with pytest.raises(ValueError, match="episodes must be >= 1"):
        policy_data.generate(tmp_path / "bad", 0)
    assert not (tmp_path / "bad").exists()  # refused before anything is written


def _n2o_explained_by_other_gases(emissions):
    """R² of N2O's deviations from the paths' mean (2016..2065) on the other gases'."""
    dev = (emissions[:, 1:51] - emissions[:, 1:51].mean(0)).reshape(-1, 5)
    others = np.c_[dev[:, [0, 1, 2, 4]], np.ones(len(dev))]
    fitted = others @ np.linalg.lstsq(others, dev[:, 3], rcond=None)[0]
    return 1 - np.sum((dev[:, 3] - fitted) ** 2) / np.sum((dev[:, 3] - dev[:, 3].mean()) ** 2)


def test_jittered_copies_move_every_gas_on_its_own_from_2016(tmp_path):
    """A jittered set: the source's paths unchanged, then a copy of each whose gases are
    perturbed independently of each other (the game's levers move them together), 2015 kept,
    with the oracle's temperatures."""
    source = policy_data.generate(tmp_path / "src", 40, scenarios=("i",), policies=("scripted",), seed=2)
    out = policy_data.generate_jittered(tmp_path / "jit", source, (0.975, 1.025), seed=3)
    data, original = dataset.load_dataset(out), dataset.load_dataset(source)
    n = len(original["emissions"])
    np.testing.assert_array_equal(data["emissions"][:n], original["emissions"])
    copies = data["emissions"][n:]
    np.testing.assert_array_equal(copies[:, 0], original["emissions"][:, 0])  # 2015 as it was
    log_ratio = np.log(copies[:, 1:51, [0, 2, 3, 4]] / original["emissions"][:, 1:51, [0, 2, 3, 4]])  # CO2_FF, CH4, N2O, SO2
    growth = np.diff(log_ratio, axis=1).reshape(-1, 4)
    assert np.all(np.abs(growth) <= np.log(1.025) + 1e-12) and growth.std() > 1e-3  # within the bounds, not zero
    assert np.abs(np.corrcoef(growth.T)[np.triu_indices(4, 1)]).max() < 0.1  # each gas on its own
    assert _n2o_explained_by_other_gases(original["emissions"]) > 0.99  # scenario (i)'s levers move the gases together
    assert _n2o_explained_by_other_gases(copies) < 0.9
    from jaxclimate.climate import cicero_jax

    np.testing.assert_allclose(data["dT"][n:], cicero_jax.run_batch(copies), rtol=0, atol=1e-12)
    with np.load(out / "chunk_00000.npz") as f:
        assert set(f["sources"][n:]) == {"jittered i/scripted"}
    assert data["manifest"]["jitter"]["of_manifest"]["episodes_per_source"] == 40
    with pytest.raises(ValueError, match="0 < low <= 1 <= high"):
        policy_data.jittered_paths(copies, 0, (1.01, 1.02))
    (tmp_path / "paper").mkdir()
    dataset._write_manifest(tmp_path / "paper", 1, dataset.GeneratorConfig())
    np.savez(tmp_path / "paper" / "chunk_00000.npz", seeds=np.arange(1), emissions=copies[:1], dT=data["dT"][:1])
    with pytest.raises(ValueError, match="not a policy-data set"):
        policy_data.generate_jittered(tmp_path / "bad", tmp_path / "paper", (0.975, 1.025))


def test_extra_data_joins_the_training_split_only():
    rng = np.random.default_rng(0)

    def fake(n):
        return {"seeds": np.arange(n), "emissions": rng.uniform(1, 2, (n, 61, 5)), "dT": rng.normal(size=(n, 176))}

    data, extra = fake(20), fake(7)
    plain, mixed = fit.prepare(data), fit.prepare(data, extra=extra)
    assert len(mixed.splits["train"]) == len(plain.splits["train"]) + 7
    for split in ("val", "test"):
        np.testing.assert_array_equal(mixed.splits[split], plain.splits[split])
    np.testing.assert_array_equal(mixed.mean, plain.mean)
    np.testing.assert_array_equal(mixed.std, plain.std)
    np.testing.assert_allclose(np.asarray(mixed.targets[20:]), extra["dT"][:, 115:176].astype(np.float32))


def test_more_scenarios_join_the_papers_group_and_extra_data_keeps_its_share():
    """--more-scenarios: more of the paper's scenarios join the training split with the paper's
    (before extra_start, so --extra-fraction's share stays the extra data's); validation, test
    and the normalisation stay the paper's."""
    rng = np.random.default_rng(0)

    def fake(n):
        return {"seeds": np.arange(n), "emissions": rng.uniform(1, 2, (n, 61, 5)), "dT": rng.normal(size=(n, 176))}

    data, more, extra = fake(20), {**fake(6), "seeds": 20 + np.arange(6)}, fake(7)
    plain, both = fit.prepare(data), fit.prepare(data, extra=extra, more=more)
    assert both.extra_start == 26 and len(both.splits["train"]) == len(plain.splits["train"]) + 13
    for split in ("val", "test"):
        np.testing.assert_array_equal(both.splits[split], plain.splits[split])
    np.testing.assert_array_equal(both.mean, plain.mean)
    np.testing.assert_allclose(np.asarray(both.targets[20:26]), more["dT"][:, 115:176].astype(np.float32))
    np.testing.assert_allclose(np.asarray(both.targets[26:]), extra["dT"][:, 115:176].astype(np.float32))
    assert fit.prepare(data, more=more).extra_start is None  # no extra data: batches drawn over the joined split
    with pytest.raises(ValueError, match="more_scenarios: seeds 0..5 overlap"):  # the paper's own scenarios again
        fit.prepare(data, more=fake(6))


def test_extra_fraction_fixes_each_batchs_share_of_extra_paths():
    """--extra-fraction: the paper's scenarios keep their share of every batch however large
    the extra set is; asked for without extra data, it is refused by name."""
    paper, extra = jnp.arange(10), 100 + jnp.arange(5)
    ids = np.asarray(fit.batch_scenarios(jax.random.PRNGKey(0), [paper, extra], [3, 5]))
    assert ids.shape == (8,) and np.all(ids[:3] < 10) and np.all(ids[3:] >= 100)
    assert len(set(ids[3:])) > 1  # drawn, not repeated
    with pytest.raises(ValueError, match=r"extra_fraction.*with extra_data"):
        fit.FitConfig(extra_fraction=0.5)
    with pytest.raises(ValueError, match="extra_fraction"):
        fit.FitConfig(extra_fraction=1.0, extra_data="EXTRA")
    rng = np.random.default_rng(0)
    data = {"seeds": np.arange(20), "emissions": rng.uniform(1, 2, (20, 61, 5)), "dT": rng.normal(size=(20, 176))}
    assert fit.prepare(data).extra_start is None and fit.prepare(data, extra=data).extra_start == 20
    with pytest.raises(ValueError, match="extra_fraction needs extra data"):
        fit.make_train_epoch(None, None, fit.prepare(data), 8, 1, extra_fraction=0.5)


def test_shipped_weights_can_start_a_run():
    config = sg.SurrogateConfig.paper("gru")
    like = {"best_params": sg.init_params(config, jax.random.PRNGKey(0))}
    shipped = fit._best_params_of(Path("shipped:gru"), like)
    assert jax.tree_util.tree_structure(shipped) == jax.tree_util.tree_structure(like["best_params"])
    assert not all(np.allclose(a, b) for a, b in zip(jax.tree_util.tree_leaves(shipped), jax.tree_util.tree_leaves(like["best_params"])))
