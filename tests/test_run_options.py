"""Typed run options: what config.json records reads back to the same options, older run
folders still load, and this session's flags are never recorded."""

import json

import pytest

from jaxclimate.run_options import SESSION_ONLY, RunOptions


def test_recorded_options_read_back_to_the_same_options():
    options = RunOptions(
        env="rice-n", config={"lr": 3e-4, "network": "mlp"}, run_dir="runs/x", env_overrides={"negotiation": "bilateral"},
        algo="ippo", preset="paper", seeds=3, seed=7, chunks=4, checkpoint_every=2, rollout={"a": 1},
        loggers=("tensorboard",), resume=True, quiet=True, no_plots=True,
    )  # fmt: skip
    record = json.loads(json.dumps(options.recorded()))  # through config.json
    assert not set(SESSION_ONLY) & set(record)
    again = RunOptions.from_record(dict(record, resolved={"updates": 2}), quiet=True)
    assert again == options.replace(resume=False, no_plots=False)


def test_a_run_folder_of_an_earlier_version_still_loads():
    old = {"env": "climate-mitigation", "ippo": {"lr": 1e-3}, "run_dir": "runs/old", "seeds": 2, "seed": 0, "chunks": 5}
    options = RunOptions.from_record(old, run_dir="elsewhere", resume=True)
    assert options.config == {"lr": 1e-3} and options.algo == "ippo" and options.run_dir == "elsewhere" and options.resume


def test_options_are_frozen():
    with pytest.raises(AttributeError):
        RunOptions(env="ebm-v1", config={}, run_dir="r").seeds = 2
