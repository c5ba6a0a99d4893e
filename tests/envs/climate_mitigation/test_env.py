"""climate-mitigation: golden fixed-policy episodes, hand-computed values, API contract."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.climate.engines import PrescribedEngine
from jaxclimate.envs.climate_mitigation import HORIZON, LOOKAHEAD, ClimateMitigation, MitigationParams, baseline_arrays
from jaxclimate.testing import check_env

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "cicero" / "game_fixed_policies.npz"


@pytest.fixture(scope="module")
def game():
    with np.load(GOLDEN) as f:
        data = {k: f[k] for k in f.files}
    names = [str(n) for n in data.pop("episode_names")]
    return {n: {k.split("__")[1]: v for k, v in data.items() if k.startswith(n + "__")} for n in names}


def play(env, params, actions_idx):
    """Run a recorded episode (35, N, 4) with ``step_env``; returns per-step outputs."""
    step = jax.jit(env.step_env)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    out = {"emissions": [state.emissions], "rewards": [], "temperature": [], "terminated": []}
    for t in range(HORIZON):
        obs, state, rewards, terminated, info = step(jax.random.PRNGKey(t), state, {"countries": jnp.asarray(actions_idx[t])}, params)
        out["emissions"].append(state.emissions)
        out["rewards"].append(rewards["countries"])
        out["temperature"].append(info["temperature"])
        out["terminated"].append(terminated)
    out = {k: np.asarray(v) for k, v in out.items()}
    out["lookahead_emissions"] = np.asarray(info["lookahead_emissions"])
    out["lookahead_temperatures"] = np.asarray(info["lookahead_temperatures"])
    return out


@pytest.mark.parametrize("decaying", [False, True], ids=["code-lookahead", "paper-lookahead"])
def test_golden_episodes_with_prescribed_temperatures(x64, game, decaying):
    """Emission recursion (clip included) and rewards reproduce every golden episode in
    float64 when the engine returns the stored CICERO-SCM temperatures (docs/climate_mitigation.md §6)."""
    for name, ep in game.items():
        env = ClimateMitigation(name.split("_")[0], engine=PrescribedEngine(ep["dT_glob_air"]), dtype="float64")
        params = env.default_params.replace(decaying_lookahead_prevention=decaying)
        out = play(env, params, ep["actions_idx"])
        np.testing.assert_allclose(out["emissions"], ep["E_agent"][: HORIZON + 1], rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(out["lookahead_emissions"], ep["E5_global"][HORIZON + 1 : HORIZON + 1 + LOOKAHEAD], rtol=1e-12, atol=1e-12)
        reference = ep["reward_paper" if decaying else "reward_code"]
        np.testing.assert_allclose(out["rewards"], reference, rtol=1e-12, atol=1e-13, err_msg=name)
        assert out["terminated"].tolist() == [False] * (HORIZON - 1) + [True]


def test_lookahead_switch_matters_only_in_scenario_ii(game):
    """The two look-ahead conventions differ where the prevention stock is positive."""
    switching = game["ii_switching"]
    assert not np.allclose(switching["reward_code"][-1], switching["reward_paper"][-1], rtol=1e-6)
    np.testing.assert_array_equal(game["i_energy_full"]["reward_code"], game["i_energy_full"]["reward_paper"])


def test_golden_afolu_clip(x64, game):
    """Baseline AFOLU turns negative in 2053: the clip makes every country's AFOLU exactly 0."""
    env = ClimateMitigation("ii", engine=PrescribedEngine(game["ii_bau"]["dT_glob_air"]), dtype="float64")
    out = play(env, env.default_params, game["ii_bau"]["actions_idx"])
    afolu = out["lookahead_emissions"][:, 1]  # 2051..2065
    assert np.all(afolu[2:] == 0.0) and np.all(afolu[:2] > 0.0)


def test_golden_episode_with_cicero_engine(x64, game):
    """With CICERO-SCM itself as the engine the episode's temperatures (2016..2065) and
    rewards equal the golden run (one oracle run per engine step)."""
    ep = game["ii_switching"]
    env = ClimateMitigation("ii", engine="cicero", dtype="float64")
    params = env.default_params
    assert params.initial_obs_temperature == pytest.approx(ep["dT_glob_air"][115], abs=1e-9)  # ΔT(2015)
    out = play(env, params, ep["actions_idx"])
    temps = np.concatenate([out["temperature"], out["lookahead_temperatures"]])
    np.testing.assert_allclose(temps, ep["dT_glob_air"][116:166], rtol=0, atol=1e-9)
    np.testing.assert_allclose(out["rewards"], ep["reward_code"], rtol=1e-9, atol=1e-12)


def test_golden_episodes_with_surrogate_engine(game):
    """The shipped surrogate reproduces the CICERO-SCM temperatures of the fixed-policy
    episodes within its error, and the rewards follow."""
    for name in ("ii_energy_full", "ii_switching", "i_energy_full", "i_bau"):
        ep = game[name]
        env = ClimateMitigation(name.split("_")[0])
        out = play(env, env.default_params, ep["actions_idx"])
        temps = np.concatenate([out["temperature"], out["lookahead_temperatures"]])
        error = temps - ep["dT_glob_air"][116:166]
        assert np.sqrt(np.mean(error**2)) < 5e-3 and np.max(np.abs(error)) < 1e-2, (name, np.abs(error).max())
        np.testing.assert_allclose(out["rewards"].sum(0), ep["reward_code"].sum(0), rtol=2e-2, err_msg=name)


def test_hand_computed_first_step():
    """Observation layout (docs/climate_mitigation.md §3.8), emissions, stock and reward of one step by hand."""
    env = ClimateMitigation("ii", engine=PrescribedEngine(np.linspace(0.0, 3.0, 176)))
    params = env.default_params
    base = baseline_arrays()
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    n = 10
    assert obs["countries"].shape == (n, 2 + 11 * n)
    row0 = np.asarray(obs["countries"][3])
    np.testing.assert_array_equal(np.asarray(obs["countries"]), np.broadcast_to(row0, (n, 112)))
    assert row0[0] == pytest.approx(params.initial_obs_temperature) and row0[1] == 0.0
    E0 = params.shares[:, None] * base["e2015"]
    np.testing.assert_allclose(row0[2 : 2 + 5 * n], (E0 / 91.2339096069336).ravel(), rtol=1e-6)
    np.testing.assert_array_equal(row0[2 + 5 * n :], 0.0)

    actions = np.zeros((n, 4), np.int32)
    actions[0] = [2, 1, 0, 2]  # country 0: full energy, half methane, adaptation 0.08
    obs, state, rewards, terminated, _ = env.step_env(jax.random.PRNGKey(1), state, {"countries": jnp.asarray(actions)}, params)
    M = params.policy_matrix
    E1 = E0 * base["growth"][0]
    E1[0] = E0[0] * base["growth"][0] * (1 + np.array([1.0, 0.5, 0.0]) @ M)
    T = np.linspace(0.0, 3.0, 176)[116]
    P0 = 0.08  # clip(0.95·0 + 0.08, 0, 0.5)
    cost0 = 0.1 * (50 * 0.003 * T**4 * (1 - P0) + 0.001 * 1.0 + 0.001 * 0.25 + 10 * 0.08)
    cost1 = 0.1 * (50 * 0.003 * T**4)
    np.testing.assert_allclose(np.asarray(state.emissions), E1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(rewards["countries"][:2]), [-cost0, -cost1], rtol=1e-5)
    row = np.asarray(obs["countries"][0])
    assert row[0] == pytest.approx(T, rel=1e-6) and row[1] == pytest.approx(1 / 35)
    D1 = E1 - params.shares[:, None] * base["decisions"][0]
    np.testing.assert_allclose(row[2 + 5 * n : 2 + 10 * n], (D1 / 3193.186836242676).ravel(), rtol=1e-5, atol=1e-8)  # float32 round-off
    np.testing.assert_allclose(row[-n:], [P0] + [0.0] * (n - 1), rtol=1e-6)
    assert not bool(terminated)


@pytest.mark.slow
def test_check_env_and_parameter_sweep():
    env, params = make("climate-mitigation", scenario="ii")
    variants = [
        params.replace(max_prevention=m, damage_coefficient=c, decaying_lookahead_prevention=d)
        for m, c, d in ((0.5, 0.003, False), (0.2, 0.01, True))
    ]
    check_env(env, params.replace(max_steps=4), params_variants=variants, num_steps=6)


def test_lookahead_runs_only_at_termination_under_vmap():
    """A batch with one terminating and one mid-episode environment equals the two run alone:
    the masked while_loop gives the look-ahead to the right one only."""
    env, params = make("climate-mitigation")
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key, params)
    actions = {"countries": jnp.full((4, 4), 2, jnp.int32)}
    late = state.replace(time=jnp.asarray(HORIZON - 1, jnp.int32))
    batch = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), late, state)
    step = jax.jit(env.step_env)
    batched = jax.jit(jax.vmap(env.step_env, in_axes=(None, 0, None, None)))(key, batch, actions, params)
    for i, single_state in enumerate((late, state)):
        single = step(key, single_state, actions, params)
        for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(batched)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b)[i], rtol=1e-6, atol=1e-7)
    rewards, terminated = batched[2]["countries"], batched[3]
    assert terminated.tolist() == [True, False]
    assert np.all(np.asarray(rewards[0]) < np.asarray(rewards[1]) - 0.01)  # look-ahead damages


def test_full_energy_effort_beats_no_action_in_scenario_i():
    """docs/climate_mitigation.md §3.7: full energy effort returns about −7.30 per agent against −8.26 for no
    action (discount 0.999; CICERO-SCM) — the surrogate must keep that ordering."""
    env, params = make("climate-mitigation")
    gamma = 0.999 ** np.arange(HORIZON)

    def episode_return(level):
        out = play(env, params, np.full((HORIZON, 4, 4), [level, 0, 0, 0]))
        return (out["rewards"] * gamma[:, None]).sum(0)

    full, bau = episode_return(2), episode_return(0)
    np.testing.assert_allclose(full, -7.30, atol=0.05)
    np.testing.assert_allclose(bau, -8.26, atol=0.05)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(shares=np.full(4, 0.3)), "shares must sum to 1"),
        (dict(lever_cost=np.ones((4, 2))), "lever_cost"),
        (dict(damage_cost=-np.ones(4)), "damage_cost"),
        (dict(policy_matrix=np.full((3, 5), -0.03)), "growth budget"),
        (dict(max_prevention=1.5), "max_prevention"),
    ],
)
def test_bad_parameters_are_named(change, match):
    with pytest.raises(ValueError, match=match):
        MitigationParams().replace(**change)


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="scenario"):
        ClimateMitigation("iii")
    with pytest.raises(ValueError, match="engine"):
        ClimateMitigation("i", engine="fortran")
    with pytest.raises(ValueError, match="start in 2016"):
        ClimateMitigation("i", engine=PrescribedEngine(np.zeros(176), start_year=2020))
    env = ClimateMitigation("i")
    with pytest.raises(ValueError, match="shape"):
        env.step(jax.random.PRNGKey(0), env.reset(jax.random.PRNGKey(0))[1], {"countries": jnp.zeros((3, 4), jnp.int32)})
