"""Learning on InvestESG: heterogeneous IPPO learns, the presets, the seeding hook and the CLI."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxclimate
from jaxclimate import train
from jaxclimate.algos.ippo import IPPOConfig, make_train
from jaxclimate.envs.invest_esg import COMPANIES, INVESTORS, InvestESG
from jaxclimate.envs.invest_esg.report import AUTHORS_JAX, PAPER_SB3
from jaxclimate.envs.invest_esg.rollout import RealWorldSeeding
from jaxclimate.reporting import report_for


@pytest.mark.slow
def test_heterogeneous_ippo_learns_the_status_quo_response():
    """Gaussian companies and Bernoulli investors, independent learners. Under the status quo
    mitigation only costs a company, so profit-driven companies learn to cut it and their
    returns rise steeply (docs/invest_esg.md §1); investors learn to hold companies."""
    env, params = jaxclimate.make("invest-esg")
    config = IPPOConfig(
        total_timesteps=16 * 100 * 12,
        num_envs=16,
        num_steps=100,
        update_epochs=4,
        minibatch_size=400,
        hidden_sizes=(32, 32),
        lr=3e-3,
        anneal_lr=False,
        clip_value_loss=False,
        continuous_actions="rescale",
    )
    metrics = jax.tree_util.tree_map(np.asarray, jax.jit(make_train(env, params, config))(jax.random.PRNGKey(0))["metrics"])
    companies = metrics[COMPANIES]["episode_return"].mean(axis=-1)
    investors = metrics[INVESTORS]["episode_return"].mean(axis=-1)
    assert companies[-2:].mean() > 1.8 * companies[:2].mean()  # measured 171 -> 516
    assert investors[-2:].mean() > 1.15 * investors[:2].mean()  # measured 2.19 -> 3.29


def test_presets_are_the_papers_settings():
    sb3, jaxp = IPPOConfig(**PAPER_SB3), IPPOConfig(**AUTHORS_JAX)
    assert sb3.steps_per_update == 500 and sb3.update_epochs == 10 and sb3.minibatch_size == 64
    assert sb3.hidden_sizes == (256, 128) and sb3.activation == "tanh" and not sb3.anneal_lr and sb3.lr == 3e-5
    assert sb3.num_updates * sb3.steps_per_update == 3_000_000  # 30k episodes of 100 years
    assert jaxp.separate_optimizers and jaxp.layer_norm and jaxp.hidden_sizes == (256, 256) and jaxp.steps_per_update == 1000
    report = report_for("invest-esg")
    assert report.presets(InvestESG(config="exp_e1_1"), "ippo")["paper_sb3"]["learning_starts"] == ((COMPANIES, 20_000),)
    assert "learning_starts" not in report.presets(InvestESG(), "ippo")["paper_sb3"]


def test_real_world_seeding_overrides_early_years_and_excludes_them():
    env = InvestESG()
    hook = RealWorldSeeding(total_companies=5)
    seeded = hook.init(jax.random.PRNGKey(3))
    assert int(seeded.sum()) == 3  # ceil(5 / 2)
    states = jax.vmap(lambda t: env.initial_state(env.default_params).replace(time=t))(jnp.array([0, 4, 5, 60]))
    policy = {COMPANIES: jnp.full((4, 5, 3), 0.04), INVESTORS: jnp.ones((4, 3, 5), jnp.int32)}
    _, actions, weight = hook.apply(seeded, jax.random.PRNGKey(0), states, policy)
    c = np.asarray(actions[COMPANIES])
    s = np.asarray(seeded)
    assert ((c[:2, s, 0] >= 0.005) & (c[:2, s, 0] <= 0.01)).all() and (c[:2, s, 1:] == 0).all()
    np.testing.assert_array_equal(c[:2, ~s], np.float32(0.04))
    np.testing.assert_array_equal(c[2:], np.float32(0.04))
    np.testing.assert_array_equal(weight, [0, 0, 1, 1])
    np.testing.assert_array_equal(actions[INVESTORS], policy[INVESTORS])


def test_scripted_companies_of_exp_e2_play_their_actions():
    env, params = jaxclimate.make("invest-esg", config="exp_e2", event_mode="reference_events")
    state = env.initial_state(params)
    new, _, info = env.transition(jax.random.PRNGKey(0), state, jnp.full((5, 3), 0.05), jnp.ones((3, 5), jnp.int32), params)
    np.testing.assert_allclose(new.fractions[:2], [[0.01, 0, 0], [0, 0.01, 0]])
    np.testing.assert_allclose(new.fractions[2:], 0.0)


@pytest.mark.slow
def test_cli_trains_invest_esg_and_reports_its_metrics(tmp_path):
    options = train.build_options(
        [
            "--env",
            "invest-esg",
            "--preset",
            "paper_sb3",
            "--seeds",
            "2",
            "--total-timesteps",
            "1000",
            "--chunks",
            "2",
            "--set",
            "hidden_sizes=[16]",
            "--rollout-set",
            "seeding=true",
            "--run-dir",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert options.config["minibatch_size"] == 64 and options.preset == "paper_sb3"
    summary = train.run(options)
    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert np.shape(row["companies"]["episode_return"]) == (2, 5) and np.shape(row["investors"]["episode_return"]) == (2, 3)
    assert np.shape(row["episode"]["final_climate_risk"]) == (2,) and np.shape(row["episode"]["investment_shares"]) == (2, 3, 5)
    learned = summary["learned_policy"]
    assert 0.4 < learned["final_climate_risk"] < 1.1 and np.shape(learned["mean_spending_fractions"]) == (5, 3)
    assert all(f[1] == 0 and f[2] == 0 for f in learned["mean_spending_fractions"])  # disabled in this market
    assert summary["final_episode_metrics"]["final_market_wealth"] > 100
    for png in ("social.png", "policy.png", "returns-companies.png", "returns-investors.png"):
        assert (tmp_path / png).stat().st_size > 10_000
