"""python -m jaxclimate.sweep: every value trained in one program equals its own run."""

import json

import numpy as np
import pytest

from jaxclimate import sweep, train
from jaxclimate.algos.ippo import IPPOConfig
from jaxclimate.core.registry import make
from jaxclimate.run import sweeping
from jaxclimate.run.flags import build_options

TINY = [
    "--network",
    "mlp",
    "--total-timesteps",
    "560",
    "--num-envs",
    "4",
    "--set",
    "num_minibatches=2",
    "--set",
    "update_epochs=1",
    "--chunks",
    "2",
    "--reservoir",
    "6",
    "--quiet",
    "--no-plots",
]


@pytest.mark.slow
def test_each_value_equals_its_own_run(tmp_path):
    assert sweep.main(["damage_coefficient=0.003,0.03", *TINY, "--seeds", "2", "--out", str(tmp_path / "s")]) == 0
    result = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert [r["value"] for r in result["rows"]] == [0.003, 0.03] and result["where"] == "env"
    assert "| 0.03 |" in (tmp_path / "s" / "sweep.md").read_text()
    train.run(train.build_options(TINY + ["--seeds", "2", "--env-set", "damage_coefficient=0.03", "--run-dir", str(tmp_path / "alone")]))
    rows = [json.loads(line) for line in (tmp_path / "alone" / "metrics.jsonl").read_text().splitlines()]
    returns = np.array([r["countries"]["episode_return"] for r in rows])  # (updates, seeds, agents)
    np.testing.assert_allclose(result["rows"][1]["curve"]["countries"], returns.mean(axis=(1, 2)), rtol=1e-5)
    # ten times the damage: a clearly lower return (the sweep did apply the value)
    assert result["rows"][1]["final_return"]["countries"] < result["rows"][0]["final_return"]["countries"] - 10


def test_sweep_inputs_and_errors():
    env, params = make("climate-mitigation")
    config = IPPOConfig()
    where, values, stack, hp = sweeping.sweep_inputs("lr", ["1e-4", "1e-3"], params, config)
    assert where == "algo" and stack is None and np.allclose(hp["lr"], [1e-4, 1e-3])
    assert np.allclose(hp["gamma"], config.gamma)
    where, values, stack, hp = sweeping.sweep_inputs("damage_coefficient", ["0.001", "0.002"], params, config)
    assert where == "env" and hp is None and np.allclose(stack.damage_coefficient, [0.001, 0.002])
    with pytest.raises(ValueError, match="cannot sweep 'num_envs'"):
        sweeping.sweep_inputs("num_envs", ["1", "2"], params, config)
    with pytest.raises(ValueError, match="damage_coefficient"):  # the env's own validation names the field
        sweeping.sweep_inputs("damage_coefficient", ["-1", "0.1"], params, config)
    with pytest.raises(ValueError, match="at least two values"):
        sweeping.parse_sweep("lr=1e-3")


def test_sweep_table_shows_a_spread_only_over_several_seeds():
    row = {"value": 0.5, "final_return": {"bands": -1.0}, "final_return_std": {"bands": 0.0}}
    result = {"env": "ebm-v1", "key": "D", "where": "env", "groups": ["bands"], "rows": [row], "seeds": 1}
    one = sweeping.table(result)
    assert "one seed per value" in one and "±" not in one
    two = sweeping.table(dict(result, seeds=2))
    assert "2 seeds per value, mean ± std over seeds" in two and "-1 ± 0" in two


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_to_the_uninterrupted_result(tmp_path):
    """A sweep stopped after its first chunk (as Ctrl-C stops it: that chunk checkpointed) and
    finished with ``--resume`` writes the same rows as a sweep run in one go; ``--run-dir`` names
    its folder as ``--out`` does."""
    argv = ["damage_coefficient=0.003,0.03", *TINY]
    assert sweep.main([*argv, "--run-dir", str(tmp_path / "whole")]) == 0
    options = build_options([*TINY, "--run-dir", str(tmp_path / "part")])
    sweeping.start_sweep(options, "damage_coefficient", ["0.003", "0.03"])
    first = sweeping.run_sweep(options, "damage_coefficient", ["0.003", "0.03"], stop_after_chunks=1)
    assert first == {"interrupted": True, "chunks_done": 1}
    assert not (tmp_path / "part" / "sweep.json").exists()
    assert sweep.main(["--resume", str(tmp_path / "part"), "--quiet"]) == 0
    whole, part = (json.loads((tmp_path / d / "sweep.json").read_text()) for d in ("whole", "part"))
    assert part["rows"] == whole["rows"] and len(whole["rows"][0]["curve"]["countries"]) == 4


def test_a_sweep_refuses_conflicting_folders_and_a_resume_with_new_settings(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        sweep.main(["lr=1e-4,1e-3", "--out", str(tmp_path / "a"), "--run-dir", str(tmp_path / "b")])
    assert stop.value.code == 2 and "differ: a sweep has one folder (see --help)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sweep.main(["--resume", str(tmp_path / "a"), "--seeds", "3"])
    assert "a resumed sweep keeps its settings" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
