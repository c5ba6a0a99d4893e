"""Trained policies: load_policy acts as the run's own evaluation does, and python -m
jaxclimate.evaluate rolls them out, also under changed parameters."""

import json

import jax
import numpy as np
import pytest

import jaxclimate
from jaxclimate import evaluate, train
from jaxclimate.reporting import evaluate_policies

TINY = [
    "--network",
    "mlp",
    "--total-timesteps",
    "1120",
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
    "--seeds",
    "2",
    "--quiet",
    "--no-plots",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("evaluate") / "run"
    train.run(train.build_options(TINY + ["--run-dir", str(path)]))
    return path


@pytest.mark.slow
@pytest.mark.xdist_group("evaluate-run")  # one worker trains the module's run once
def test_a_loaded_policy_acts_and_returns_as_the_runs_evaluation(run_dir):
    policy = jaxclimate.load_policy(run_dir)
    assert policy.seeds == 2 and policy.chunks_done == 2
    obs, _ = policy.env.reset(jax.random.PRNGKey(0), policy.env_params)
    batch = jax.tree_util.tree_map(lambda x: x[None], obs)
    actions, _ = jax.jit(lambda k, o: policy.act(k, o, seed=1))(jax.random.PRNGKey(1), batch)
    evaluations = evaluate_policies(policy.env, policy.env_params, policy.trainer, policy.state)
    np.testing.assert_array_equal(np.asarray(actions["countries"][0]), evaluations[1]["actions"]["countries"][0])
    returns = policy.episode_returns(episodes=3)["countries"]  # (seeds, episodes, countries)
    n = policy.env.agents["countries"]
    assert returns.shape == (2, 3, n)
    for seed in range(2):  # the deterministic game and policy: every episode as the run's evaluation
        np.testing.assert_allclose(returns[seed], np.broadcast_to(evaluations[seed]["rewards"]["countries"].sum(0), (3, n)), rtol=1e-5)


@pytest.mark.slow
@pytest.mark.xdist_group("evaluate-run")  # one worker trains the module's run once
def test_evaluate_cli_writes_returns_under_changed_parameters(run_dir, capsys):
    assert evaluate.main([str(run_dir), "--episodes", "2", "--no-plots"]) == 0
    assert evaluate.main([str(run_dir), "--episodes", "2", "--no-plots", "--env-set", "damage_coefficient=0.03"]) == 0
    base = json.loads((run_dir / "evaluation" / "evaluation.json").read_text())
    harsher = json.loads((run_dir / "evaluation-damage_coefficient=0.03" / "evaluation.json").read_text())
    assert base["episodes_per_seed"] == 2 and len(base["returns"]["countries"]["per_seed"]) == 2
    assert "mean_levers" in base["summary"]  # the environment's own summary
    assert harsher["returns"]["countries"]["mean"] < base["returns"]["countries"]["mean"]  # ten times the damage
    printed = capsys.readouterr().out
    assert "[countries] return" in printed and "every episode was the same" in printed
    assert base["actions"] == "most likely" and base["identical_episodes"] is True


@pytest.mark.slow
@pytest.mark.xdist_group("evaluate-run")  # one worker trains the module's run once
def test_evaluate_cli_samples_actions_when_asked(run_dir, capsys):
    """--sample: actions drawn from the policies, so the deterministic game's episodes differ."""
    assert evaluate.main([str(run_dir), "--episodes", "4", "--no-plots", "--sample"]) == 0
    record = json.loads((run_dir / "evaluation-sampled" / "evaluation.json").read_text())  # not the greedy record's folder
    assert record["actions"] == "sampled" and record["identical_episodes"] is False
    assert "every episode was the same" not in capsys.readouterr().out


def test_loading_what_is_not_a_run_says_so(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        jaxclimate.load_policy(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        evaluate.main([str(tmp_path)])
    assert exit_.value.code == 2 and "not a run directory" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.xdist_group("evaluate-run")  # one worker trains the module's run once
def test_evaluate_scores_the_policies_over_draws_of_an_uncertainty(run_dir, capsys):
    """--uncertainty NAME --draws K: each draw's return is the policies' return under that
    draw's parameters (the deterministic game and greedy policies: one episode says it)."""
    assert evaluate.main([str(run_dir), "--episodes", "1", "--no-plots", "--uncertainty", "damage", "--draws", "6"]) == 0
    record = json.loads((run_dir / "evaluation-uncertainty-damage" / "uncertainty.json").read_text())
    per_draw = np.asarray(record["returns"]["countries"]["per_draw"])
    assert per_draw.shape == (6,) and per_draw.std() > 0  # the damage moves the return
    policy = jaxclimate.load_policy(run_dir)
    factors = record["factors"]
    uncertainty = policy.env.uncertainties["damage"]
    for i in (0, 5):
        params = uncertainty.apply(policy.env_params, {k: np.float32(v[i]) for k, v in factors.items()})
        alone = policy.episode_returns(1, env_params=params)["countries"].sum(-1).mean()
        np.testing.assert_allclose(per_draw[i], alone, rtol=1e-5)
    assert "under 6 draws of 'damage'" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.xdist_group("evaluate-run")
def test_a_run_stopped_before_its_first_chunk_is_called_untrained(run_dir, tmp_path, capsys):
    untrained = tmp_path / "untrained"
    result = train.run(train.build_options(TINY + ["--run-dir", str(untrained)]), stop_after_chunks=0)
    assert result["interrupted"] and result["chunks_done"] == 0
    with pytest.warns(UserWarning, match="stopped before its first chunk finished: these policies are untrained"):
        jaxclimate.load_policy(untrained)
    assert evaluate.main([str(untrained), "--episodes", "1", "--no-plots"]) == 0
    captured = capsys.readouterr()
    assert "(untrained: stopped before its first chunk)" in captured.out and "untrained" in captured.err
    policy = jaxclimate.load_policy(run_dir)
    obs, _ = policy.env.reset(jax.random.PRNGKey(0), policy.env_params)
    with pytest.raises(ValueError, match=r"policy.act takes a batch of envs: obs\['countries'\] has one env's shape"):
        policy.act(jax.random.PRNGKey(1), obs)
