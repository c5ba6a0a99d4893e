"""RICE-N's training report: the competition's metrics of each seed's episode in summary.json
and evaluation.json, and several runs compared by hypervolume (``python -m jaxclimate.evaluate
RUN RUN …``)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from jaxclimate import evaluate, make, train
from jaxclimate.envs.rice_n import evaluation as ev
from jaxclimate.envs.rice_n.report import RiceNReport
from jaxclimate.run import make_run


def test_summary_scores_each_seeds_episode_as_the_competition(x64, tmp_path):
    """Two "seeds" playing constant policies: savings 2 with mitigation 5 (docs/rice_n.md §11.3:
    3.78 K, 5067 of output, 164.31 of reward) and with mitigation 0 (warmer, richer)."""
    env, params = make("rice-n", dtype="float64")
    constant = lambda mu: np.broadcast_to(np.asarray(env.constant_actions(savings=2, mitigation=mu)), (20, 27, env.nvec.size))  # noqa: E731
    evaluations = [{"actions": {"regions": constant(5)}}, {"actions": {"regions": constant(0)}}]
    report = RiceNReport()
    summary = report.summarize(env, params, None, None, [], evaluations, None, tmp_path)
    first, second = summary["competition_per_seed"]
    assert (first["Temperature Rise"], first["Gross Output"], first["Episode Reward"]) == (3.78, 5067, 164.31)
    assert second["Temperature Rise"] > first["Temperature Rise"] and second["Abatement Cost"] == 0.0
    mean = summary["competition"]["Temperature Rise"]  # the mean of the unrounded values, then rounded
    assert abs(mean - (first["Temperature Rise"] + second["Temperature Rise"]) / 2) <= 0.01 and summary["competition"]["episodes"] == 2
    assert np.round(summary["index_points"][0], 2).tolist() == [0.56, 0.49]  # §11.3's row, unrounded here
    assert summary["hypervolume"] == pytest.approx(ev.hypervolume(summary["index_points"]))
    assert any("Temperature Rise" in line for line in report.summary_lines(summary))


def test_compare_scores_a_team_by_its_ten_most_recent_runs(tmp_path):
    records = [{"run_dir": f"runs/r{k}", "summary": {"protocol": "none", "index_points": [[0.1 * k, 1 - 0.08 * k]] * 2}} for k in range(12)]
    result = RiceNReport().compare(records, tmp_path)
    assert result["points"][3] == pytest.approx([0.3, 0.76])
    assert result["team_hypervolume"] == pytest.approx(ev.hypervolume(result["points"][2:]))
    assert result["team_hypervolume"] < result["hypervolume_all"]  # the two oldest runs no longer count
    assert (tmp_path / "index_plane.png").stat().st_size > 0


TINY = ["--env", "rice-n", "--env-set", "regions=[0,5,12]", "--env-set", "num_activity_steps=2", "--network", "mlp"]
TINY += ["--total-timesteps", "160", "--num-envs", "4", "--set", "num_minibatches=2", "--set", "update_epochs=1", "--quiet", "--no-plots"]


@pytest.mark.slow
def test_evaluate_reports_the_competition_metrics_and_compares_runs(tmp_path, capsys):
    protocol = "protocol=baselines/protocols/conditional_commitment.py:ConditionalCommitment"
    train.run(train.build_options(TINY + ["--env-set", protocol, "--run-dir", str(tmp_path / "a")]))
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["protocol"] == "conditional-commitment" and set(summary["competition"]) >= {"Capital", "climate_index"}
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # a second submission of the same team
    assert evaluate.main([str(tmp_path / "a"), str(tmp_path / "b"), "--episodes", "1", "--out", str(tmp_path / "team"), "--no-plots"]) == 0
    record = json.loads((tmp_path / "a" / "evaluation" / "evaluation.json").read_text())
    assert record["summary"]["competition"] == summary["competition"]  # the same deterministic episodes
    comparison = json.loads((tmp_path / "team" / "comparison.json").read_text())
    assert comparison["points"][0] == comparison["points"][1] == np.mean(summary["index_points"], axis=0).tolist()
    assert "Temperature Rise" in capsys.readouterr().out


def test_ippo_trains_on_the_factored_observation_unless_told_otherwise(tmp_path, capsys):
    """The CLI's default layout for a learner that takes factored observations; ``--env-set``
    wins; the continuous relaxation (one flat layout) gets nothing; a run built from the
    options sees the factored space."""
    from jaxclimate.algos.registry import get_algorithm
    from jaxclimate.core.factored import FactoredBox
    from jaxclimate.reporting import report_for

    base = TINY + ["--run-dir", str(tmp_path / "run")]
    options = train.build_options([a for a in base if a != "--quiet"])
    assert options.env_overrides["observation"] == "factored"
    assert "observation=factored by default" in capsys.readouterr().err  # said once, where the run starts
    env, *_ = make_run(options)
    assert isinstance(env.observation_space(), FactoredBox)
    assert train.build_options(base + ["--env-set", "observation=flat"]).env_overrides["observation"] == "flat"
    assert report_for("rice-n-rates").env_defaults(get_algorithm("ippo")) == {}  # one flat layout only
    samples = ["--set", "minibatch_size=8"]  # minibatches of single samples: only on the flat layout
    assert train.build_options(base + samples + ["--env-set", "observation=flat"]).config["minibatch_size"] == 8
    with pytest.raises(SystemExit):
        train.build_options(base + samples)
    assert "--env-set observation=flat" in capsys.readouterr().err  # the error says how to train anyway
