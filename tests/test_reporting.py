"""Policy evaluation as one compiled program: the same episodes as stepping the policy and the
environment one step at a time from Python."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.algos.ippo import IPPOConfig, make_trainer
from jaxclimate.reporting import evaluate_policies, evaluate_policy
from tests.algos.probe_envs import Memory


def step_by_step(env, params, trainer, policy, key):
    """The reference: one jitted policy call and one jitted env step per Python iteration."""
    act, step = jax.jit(trainer.act, static_argnames="deterministic"), jax.jit(env.step)
    key, k_reset = jax.random.split(key)
    obs, state = jax.jit(env.reset)(k_reset, params)
    carry, first, rewards, actions = trainer.initial_carry(1), jnp.ones((1,), bool), [], []
    for _ in range(params.max_steps):
        key, k_act, k_step = jax.random.split(key, 3)
        a, carry = act(policy, jax.tree_util.tree_map(lambda x: x[None], obs), carry, first, k_act, deterministic=False)
        a = jax.tree_util.tree_map(lambda x: x[0], a)
        obs, state, r, terminated, truncated, _ = step(k_step, state, a, params)
        first = jnp.zeros((1,), bool)
        actions.append(np.asarray(a["agents"]))
        rewards.append(np.asarray(r["agents"]))
        if bool(terminated) or bool(truncated):
            break
    return np.stack(actions), np.stack(rewards)


def test_compiled_evaluation_equals_stepping_from_python():
    """A recurrent policy (the carry must flow), sampled actions (the key chain must match),
    two seeds with different weights (the seed axis must not mix), episodes cut where they end."""
    env = Memory()
    params = env.default_params
    config = IPPOConfig(total_timesteps=64, num_envs=4, num_steps=8, num_minibatches=2, network="lstm", hidden_size=8)
    trainer = make_trainer(env, params, config)
    state = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(3), 2))
    key = jax.random.PRNGKey(7)
    evaluations = evaluate_policies(env, params, trainer, state, key, deterministic=False)
    assert len(evaluations) == 2
    for seed, evaluation in enumerate(evaluations):
        policy = trainer.policy(jax.tree_util.tree_map(lambda x: x[seed], state))
        actions, rewards = step_by_step(env, params, trainer, policy, key)
        assert evaluation["actions"]["agents"].shape[0] == 2  # Memory's episodes end after two steps
        np.testing.assert_array_equal(evaluation["actions"]["agents"], actions)
        np.testing.assert_array_equal(evaluation["rewards"]["agents"], rewards)
    single = evaluate_policy(env, params, trainer, state, seed_index=1, key=key, deterministic=False)
    np.testing.assert_array_equal(single["actions"]["agents"], evaluations[1]["actions"]["agents"])


def test_bau_temperatures_in_one_program_equal_stepping_from_python():
    from jaxclimate import make
    from jaxclimate.envs.climate_mitigation.report import bau_temperatures

    env, params = make("climate-mitigation")
    _, state = env.reset(jax.random.PRNGKey(0), params)
    zeros = {g: jnp.zeros((n, 4), jnp.int32) for g, n in env.agents.items()}
    step, temps = jax.jit(env.step), []
    while True:
        _, state, _, terminated, _, info = step(jax.random.PRNGKey(0), state, zeros, params)
        temps.append(float(info["temperature"]))
        if bool(terminated):
            break
    expected = np.asarray(temps + np.asarray(info["lookahead_temperatures"]).tolist())
    got = bau_temperatures(env, params)
    assert got.shape == (50,)  # 2016..2065: 35 decision years and 15 look-ahead years
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def _legend_and_lines(monkeypatch, env, rows, tmp_path):
    """Run plot_returns and keep what it drew (the figure is closed after saving)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxclimate import reporting

    drawn = {}
    monkeypatch.setattr(plt, "close", lambda fig: drawn.setdefault("fig", fig))
    reporting.plot_returns(env, rows, tmp_path)
    ax = drawn["fig"].axes[0]
    return [t.get_text() for t in ax.get_legend().get_texts()], ax, drawn["fig"]


def test_returns_plot_names_agents_and_shades_only_several_seeds(monkeypatch, tmp_path):
    from jaxclimate import make

    env, _ = make("ebm-v3-a2")
    one_seed = [{"env_steps": 10 * (u + 1), "bands": {"episode_return": [[-1.0 - u, -2.0]]}} for u in range(3)]
    labels, ax, fig = _legend_and_lines(monkeypatch, env, one_seed, tmp_path)
    assert labels == ["bands_0 (90°S–0°)", "bands_1 (0°–90°N)"] and not ax.collections  # one seed: no band; named as the interfaces name them
    assert any("one seed" in t.get_text() for t in fig.texts) and (tmp_path / "returns.png").exists()
    two_seeds = [{"env_steps": 10 * (u + 1), "bands": {"episode_return": [[-1.0, -2.0], [-3.0, float("nan")]]}} for u in range(3)]
    _, ax, fig = _legend_and_lines(monkeypatch, env, two_seeds, tmp_path)
    assert len(ax.collections) == 2 and any("mean over 2 seeds" in t.get_text() for t in fig.texts)


def test_returns_plot_of_27_regions_highlights_mean_best_and_worst(monkeypatch, tmp_path):
    from jaxclimate import make

    env, _ = make("rice-n")
    finals = np.arange(27.0)
    finals[5], finals[20] = 100.0, -100.0
    rows = [{"env_steps": 100 * (u + 1), "regions": {"episode_return": [list(finals * (u + 1) / 3)]}} for u in range(3)]
    labels, _, _ = _legend_and_lines(monkeypatch, env, rows, tmp_path)
    assert labels == ["mean over 27 agents", "regions_5 (region 6) (best at the end)", "regions_20 (region 21) (worst at the end)"]


def test_ebm_report_shows_a_spread_only_over_several_seeds():
    from jaxclimate.reporting import report_for

    band = {"bands": ["90S-60S"], "mean": [1.0], "std": [0.0], "static_climlab": [3.0], "per_seed": [[1.0]]}
    one = "\n".join(report_for("ebm-v3-a6").summary_lines({"band_rmse": band}))
    assert "one seed" in one and "±" not in one
    two = "\n".join(report_for("ebm-v3-a6").summary_lines({"band_rmse": dict(band, per_seed=[[1.0], [1.0]])}))
    assert "mean ± std over 2 seeds" in two and "1.000 ± 0.000" in two
