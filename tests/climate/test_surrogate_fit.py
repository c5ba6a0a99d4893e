"""Surrogate architectures, the training loop (learning, LR schedule, exact resume) and
weight files."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.climate import dataset as ds
from jaxclimate.climate import fit, surrogate, weights_io

pytest.importorskip("ciceroscm")


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    ds.generate_dataset(out, 14, workers=1, config=ds.GeneratorConfig(chunk_size=7), progress=False)
    return ds.load_dataset(out)


TINY = dict(batch_size=64, steps_per_epoch=15, max_epochs=4)


@pytest.mark.parametrize("kind, expected", [("gru", 60225), ("lstm", 77249), ("tcn", 347009)])
def test_architectures_have_the_authors_sizes(kind, expected):
    # PyTorch counts 60,481 / 77,761 / 347,009: its GRU and LSTM carry two bias vectors per gate
    # where Flax carries one (mathematically the same model).
    params = surrogate.init_params(surrogate.SurrogateConfig.paper(kind), jax.random.PRNGKey(0))
    assert surrogate.count_params(params) == expected
    out = surrogate.build_model(surrogate.SurrogateConfig.paper(kind)).apply({"params": params}, jnp.ones((3, 66, 5)))
    assert out.shape == (3,)


def test_recurrent_surrogate_uses_the_whole_history():
    cfg = surrogate.SurrogateConfig.paper("gru")
    params = surrogate.init_params(cfg, jax.random.PRNGKey(0))
    model = surrogate.build_model(cfg)
    x = jax.random.normal(jax.random.PRNGKey(1), (1, 66, 5))
    grad = jax.grad(lambda x: model.apply({"params": params}, x).sum())(x)
    assert float(jnp.abs(grad[0, 0]).sum()) > 0  # the oldest year matters
    assert float(jnp.abs(grad[0, -1]).sum()) > 0  # and the target year (skip connection)


def test_hand_written_gru_backward_equals_autodiff():
    cfg = surrogate.SurrogateConfig.paper("gru")
    params = surrogate.init_params(cfg, jax.random.PRNGKey(0))
    # larger weights than at init so the gates saturate unevenly and every term matters
    params = jax.tree_util.tree_map(lambda a: 3.0 * a, params)
    x = jax.random.normal(jax.random.PRNGKey(1), (8, 66, 5))
    y = jax.random.normal(jax.random.PRNGKey(2), (8,))
    model = surrogate.build_model(cfg)
    autodiff = jax.grad(lambda p, x: jnp.mean((model.apply({"params": p}, x) - y) ** 2), argnums=(0, 1))(params, x)
    by_hand = jax.grad(lambda p, x: jnp.mean((surrogate.apply(cfg, p, x) - y) ** 2), argnums=(0, 1))(params, x)
    np.testing.assert_allclose(surrogate.apply(cfg, params, x), model.apply({"params": params}, x), rtol=1e-6, atol=1e-6)
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(autodiff), jax.tree_util.tree_leaves(by_hand)):
        scale = float(jnp.abs(a).max())
        assert scale > 0, path
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=1e-5 * scale, err_msg=jax.tree_util.keystr(path))


def test_merged_gru_step_equals_flax_gru_cell():
    """The climate engine's one-product cell is flax's GRUCell, every gate included."""
    cfg = surrogate.SurrogateConfig.paper("gru")
    params = jax.tree_util.tree_map(lambda a: 3.0 * a, surrogate.init_params(cfg, jax.random.PRNGKey(0)))  # saturating gates
    params["gru"]["hn"]["bias"] = jax.random.normal(jax.random.PRNGKey(3), (cfg.hidden,))  # zero at init: give it a part
    h = jax.random.normal(jax.random.PRNGKey(1), (16, cfg.hidden))
    x = jax.random.normal(jax.random.PRNGKey(2), (16, surrogate.N_GASES))
    parts = surrogate.RecurrentParts(cfg, params)
    flax_cell = parts._cell.apply(parts._cell_params, h, x)[0]
    merged = jax.jit(parts.step)(h, x)
    assert float(jnp.abs(merged - h).max()) > 0.1  # the step moves the state
    np.testing.assert_allclose(np.asarray(merged), np.asarray(flax_cell), rtol=0, atol=2e-6)


def test_invalid_configs():
    with pytest.raises(ValueError, match="kind must be"):
        surrogate.SurrogateConfig(kind="transformer")
    with pytest.raises(ValueError, match="batch_size"):
        fit.FitConfig(batch_size=0)


def test_plateau_schedule_and_early_stopping_counters():
    cfg = fit.FitConfig(plateau_patience=2, plateau_factor=0.5)
    state = fit.initial_state(cfg, {"w": np.zeros(1)}, fit.make_optimizer(cfg))
    lrs = []
    for val in [1.0, 0.5, 0.5, 0.5, 0.5, 0.49999, 0.4]:
        state = fit.update_schedule(state, val, cfg)
        lrs.append(float(state["learning_rate"]))
    # patience 2: the third epoch without a relative improvement > 1e-4 halves the LR
    assert lrs == pytest.approx([1e-3, 1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 5e-4])
    assert float(state["best_val"]) == pytest.approx(0.4) and int(state["epochs_since_best"]) == 0


def test_cosine_schedule_decays_from_lr_to_min_over_max_epochs():
    cfg = fit.FitConfig(schedule="cosine", learning_rate=1e-3, min_learning_rate=1e-5, max_epochs=4)
    state = fit.initial_state(cfg, {"w": np.zeros(1)}, fit.make_optimizer(cfg))
    lrs = []
    for epoch, val in enumerate([1.0, 2.0, 2.0, 2.0], start=1):  # validation does not steer it
        state = fit.update_schedule({**state, "epoch": np.asarray(epoch)}, val, cfg)
        lrs.append(float(state["learning_rate"]))
    mid = 1e-5 + 0.5 * (1e-3 - 1e-5)
    assert lrs == pytest.approx(
        [1e-5 + (mid - 1e-5) * (1 + np.cos(np.pi / 4)), mid, 1e-5 + (mid - 1e-5) * (1 + np.cos(3 * np.pi / 4)), 1e-5], rel=1e-6
    )
    with pytest.raises(ValueError, match="schedule"):
        fit.FitConfig(schedule="linear")


@pytest.mark.slow
@pytest.mark.full_opt  # run time dominates: training
def test_init_from_starts_at_the_earlier_runs_best_weights(tiny_data, tmp_path):
    first = fit.fit(tiny_data, fit.FitConfig(**{**TINY, "max_epochs": 2}), tmp_path / "a", progress=False)
    # a learning rate too small to move float32 weights: the fine-tune keeps what it started from
    tuned = fit.fit(
        tiny_data,
        fit.FitConfig(**{**TINY, "max_epochs": 1, "learning_rate": 1e-30, "weight_decay": 0.0, "init_from": str(tmp_path / "a")}),
        tmp_path / "b",
        progress=False,
    )
    for a, b in zip(jax.tree_util.tree_leaves(first["params"]), jax.tree_util.tree_leaves(tuned["params"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert tuned["metrics"]["val_rmse"] == pytest.approx(first["metrics"]["val_rmse"])
    # the card of a fine-tuned model says how to redo both stages
    cfg = fit.FitConfig(**{**TINY, "max_epochs": 1, "learning_rate": 1e-30, "weight_decay": 0.0, "init_from": str(tmp_path / "a")})
    weights_io.save_surrogate(tmp_path / "w", "gru", tuned, tiny_data["manifest"], cfg)
    card = json.loads((tmp_path / "w" / "gru.json").read_text())
    dataset_cmd, first_cmd, tune_cmd = card["regenerate"]
    assert "--init-from" not in first_cmd and "--run-dir RUN0" in first_cmd and "--epochs 2" in first_cmd
    assert "--init-from RUN0" in tune_cmd and "--lr 1e-30" in tune_cmd and tune_cmd.endswith("--export jaxclimate/climate/weights")
    assert [c["max_epochs"] for c in card["earlier_training"]] == [2]
    with pytest.raises(ValueError, match="init_from"):
        fit.fit(tiny_data, fit.FitConfig(**{**TINY, "init_from": str(tmp_path / "nowhere")}), tmp_path / "c", progress=False)


@pytest.mark.slow
@pytest.mark.full_opt  # run time dominates: training
def test_fit_learns_and_resume_equals_uninterrupted(tiny_data, tmp_path):
    cfg = fit.FitConfig(**TINY)
    straight = fit.fit(tiny_data, cfg, tmp_path / "a", progress=False)
    # the untrained network's error for comparison
    prepared = fit.prepare(tiny_data)
    model_cfg = surrogate.SurrogateConfig.paper("gru")
    init = surrogate.init_params(model_cfg, jax.random.PRNGKey(cfg.seed + 1))
    evaluate = fit.make_evaluate(surrogate.build_model(model_cfg), prepared)
    init_rmse = float(evaluate(init, *fit.all_samples(prepared.splits["val"]))[0])
    assert straight["metrics"]["val_rmse"] < 0.5 * init_rmse
    # the same run interrupted after 2 epochs and resumed
    fit.fit(tiny_data, fit.FitConfig(**{**TINY, "max_epochs": 2}), tmp_path / "b", progress=False)
    resumed = fit.fit(tiny_data, cfg, tmp_path / "b", progress=False)
    for a, b in zip(jax.tree_util.tree_leaves(straight["params"]), jax.tree_util.tree_leaves(resumed["params"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    lines = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in lines] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="different configuration"):
        fit.fit(tiny_data, fit.FitConfig(**{**TINY, "batch_size": 32}), tmp_path / "b", progress=False)


@pytest.mark.full_opt  # run time dominates: training
def test_weights_round_trip_and_mismatch(tiny_data, tmp_path):
    cfg = fit.FitConfig(**{**TINY, "max_epochs": 1})
    result = fit.fit(tiny_data, cfg, tmp_path / "run", progress=False)
    weights_io.save_surrogate(tmp_path / "w", "gru", result, tiny_data["manifest"], cfg)
    loaded = weights_io.load_surrogate("gru", tmp_path / "w")
    X, _ = ds.make_windows(tiny_data["emissions"][:1], tiny_data["dT"][:1])
    x = (X - result["mean"]) / result["std"]
    expected = surrogate.build_model(loaded.config).apply({"params": result["params"]}, jnp.asarray(x, jnp.float32))
    np.testing.assert_allclose(np.asarray(loaded.predict(jnp.asarray(X))), np.asarray(expected), rtol=1e-5, atol=1e-6)
    assert loaded.card["dataset"]["num_scenarios"] == 14 and "regenerate" in loaded.card
    # a card that claims another architecture must not load silently
    card = json.loads((tmp_path / "w" / "gru.json").read_text())
    card["architecture"]["hidden"] = 64
    (tmp_path / "w" / "gru.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="does not match the architecture"):
        weights_io.load_surrogate("gru", tmp_path / "w")
    with pytest.raises(FileNotFoundError, match="no surrogate 'tcn'"):
        weights_io.load_surrogate("tcn", tmp_path / "w")


def test_a_card_names_each_stages_extra_data_and_how_to_make_it(tmp_path):
    """Stages on different extra training sets each get their own name and commands (trained
    runs first where a set holds their episodes); an earlier run that goes on in the
    background (no final metrics yet) counts the epochs its metrics record."""
    defaults = dataclasses.asdict(fit.FitConfig())

    def extra(name, trained=()):
        folder = tmp_path / name
        folder.mkdir()
        manifest = {
            "seed": 0,
            "episodes_per_source": 7,
            "scenarios": ["ii"],
            "policies": ["random"],
            "trained": {f"trained: {r}": 5 for r in trained},
        }
        (folder / "manifest.json").write_text(json.dumps(manifest))
        return str(folder)

    first = tmp_path / "first"
    first.mkdir()
    (first / "fit_config.json").write_text(json.dumps({**defaults, "extra_data": extra("plain")}))
    (first / "metrics.jsonl").write_text('{"epoch": 1}\n{"epoch": 2}\n{"epoch": 3}\n')
    config = fit.FitConfig(init_from=str(first), extra_data=extra("mixed", trained=("train_ii_mlp",)))
    stages, _ = weights_io._training_chain(dataclasses.asdict(config), defaults, 4)
    assert [epochs for _, epochs in stages] == [3, 4]
    extras = weights_io._extra_data_commands(stages)
    (name1, plain), (name2, mixed) = extras.values()
    assert (name1, name2) == ("EXTRA", "EXTRA2")
    assert plain == ["python -m jaxclimate.climate.policy_data --seed 0 --episodes 7 --scenarios ii --policies random --out EXTRA"]
    assert mixed[0].startswith("python baselines/surrogate_long_run.py trained")
    assert mixed[1].endswith("--out EXTRA2 --trajectories trained/train_ii_mlp/trajectories.npz")
    fit_lines = [weights_io._fit_command(c, defaults, e, f"RUN{i}", None, None, extras[c["extra_data"]][0]) for i, (c, e) in enumerate(stages)]
    assert fit_lines[0].endswith("--extra-data EXTRA") and fit_lines[1].endswith("--extra-data EXTRA2")
    # a flag off its default is part of the command (stage 4's patience 2,000 made its 181 epochs)
    patient = weights_io._fit_command({**defaults, "early_stop_patience": 2000}, defaults, 5, "RUN", None, None)
    assert "--early-stop-patience 2000" in patient and "--early-stop-patience" not in fit_lines[0]


def test_a_card_names_fresh_scenarios_of_the_papers_generator_by_their_dataset_command(tmp_path):
    """An extra set of more of the paper's scenarios (``dataset --first-seed``) is regenerated by
    the dataset command with its seeds, not by ``policy_data``."""
    from jaxclimate.climate import dataset as ds

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    ds._write_manifest(fresh, 80000, ds.GeneratorConfig(), "cicero-jax", first_seed=20000)
    defaults = dataclasses.asdict(fit.FitConfig())
    stages = [({**defaults, "extra_data": str(fresh)}, 3)]
    ((name, commands),) = weights_io._extra_data_commands(stages).values()
    assert (name, commands) == (
        "EXTRA",
        ["python -m jaxclimate.climate.dataset --scenarios 80000 --first-seed 20000 --engine cicero-jax --out EXTRA"],
    )
    # joined to the paper's scenarios (--more-scenarios), it is named so in the fit command
    more = [({**defaults, "more_scenarios": str(fresh)}, 3)]
    ((name, _),) = weights_io._extra_data_commands(more).values()
    assert weights_io._fit_command(more[0][0], defaults, 3, "RUN", None, None, more=name).endswith("--more-scenarios EXTRA")


def test_a_card_names_a_jittered_set_by_its_source_commands_then_the_jitter(tmp_path):
    jittered = tmp_path / "jit"
    jittered.mkdir()
    source = {"kind": "policy-induced", "seed": 0, "episodes_per_source": 7, "scenarios": ["i"], "policies": ["random"], "trained": {}}
    jitter = {"of": "policy7", "of_manifest": source, "bounds": [0.975, 1.025], "seed": 0}
    (jittered / "manifest.json").write_text(json.dumps({**source, "jitter": jitter}))
    defaults = dataclasses.asdict(fit.FitConfig())
    ((name, commands),) = weights_io._extra_data_commands([({**defaults, "extra_data": str(jittered)}, 3)]).values()
    assert commands == [
        "python -m jaxclimate.climate.policy_data --seed 0 --episodes 7 --scenarios i --policies random --out policy7",
        f"python -m jaxclimate.climate.policy_data --jitter-of policy7 --jitter 0.975 1.025 --seed 0 --out {name}",
    ]
    # after the same paths as a set of its own (stage 11, then stage 12): the jitter of that set, once
    (tmp_path / "paths").mkdir()
    (tmp_path / "paths" / "manifest.json").write_text(json.dumps(source))
    chain = [({**defaults, "extra_data": str(tmp_path / "paths")}, 3), ({**defaults, "extra_data": str(jittered)}, 3)]
    (first, made), (second, jitter_only) = weights_io._extra_data_commands(chain).values()
    assert made == [commands[0].replace("--out policy7", f"--out {first}")]
    assert jitter_only == [f"python -m jaxclimate.climate.policy_data --jitter-of {first} --jitter 0.975 1.025 --seed 0 --out {second}"]


def test_a_run_from_the_shipped_weights_keeps_the_card_it_started_from(tmp_path):
    """Weights shipped after a run began do not rewrite its history: the chain through a run
    started from ``shipped:gru`` follows the card that run kept, not today's."""
    defaults = dataclasses.asdict(fit.FitConfig())
    run = tmp_path / "from_shipped"
    run.mkdir()
    (run / "fit_config.json").write_text(json.dumps({**defaults, "init_from": "shipped:gru"}))
    (run / "metrics.jsonl").write_text('{"epoch": 1}\n')
    kept = {"training": {**defaults, "learning_rate": 0.123}, "metrics": {"epochs": 7}, "earlier_training": [], "regenerate": []}
    (run / weights_io.INIT_CARD).write_text(json.dumps(kept))
    stages, card = weights_io._training_chain({**defaults, "init_from": str(run)}, defaults, 2)
    assert [(c["learning_rate"], e) for c, e in stages] == [(0.123, 7), (defaults["learning_rate"], 1), (defaults["learning_rate"], 2)]
    assert card == kept
    (run / weights_io.INIT_CARD).unlink()  # a run without one: today's shipped card
    shipped = json.loads((weights_io.shipped_weights_dir() / "gru.json").read_text())
    assert weights_io._training_chain({**defaults, "init_from": str(run)}, defaults, 2)[1] == shipped
