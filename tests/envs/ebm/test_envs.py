"""ebm-v1/v2/v3 environments (docs/ebm.md §3): conformance, relations between versions, action
path, flags, configuration errors, and vmapped parameter sweeps."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.envs.ebm import GROUP, EBMEnv, EBMParams, physics, simulate, static_baseline
from jaxclimate.testing import check_env
from tests.conftest import load_golden

ENV_IDS = ["ebm-v1", "ebm-v2-a2", "ebm-v2-a6", "ebm-v3-a2", "ebm-v3-a6"]


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.slow
def test_check_env(env_id):
    env, params = make(env_id)
    params = params.replace(max_steps=6)  # the auto-reset check reuses the 5-step rollout
    variants = [params, params.replace(heat_capacity=3.0e7, initial_temperature=20.0)]
    check_env(env, params, params_variants=variants)


@pytest.mark.parametrize(
    "env_id, obs_dim, act_dim, n",
    [("ebm-v1", 96, 195, 1), ("ebm-v2-a2", 96, 195, 2), ("ebm-v2-a6", 96, 195, 6), ("ebm-v3-a2", 48, 99, 2), ("ebm-v3-a6", 16, 35, 6)],
)
def test_spaces_match_spec(env_id, obs_dim, act_dim, n):
    env, _ = make(env_id)
    assert env.agents == {GROUP: n}
    assert env.observation_space(GROUP).shape == (obs_dim,)
    space = env.action_space(GROUP)
    assert space.shape == (act_dim,)
    m = (act_dim - 3) // 2
    np.testing.assert_allclose(space.low[[0, 1, m, m + 1, 2 * m, -2, -1]], [0.55, 1.4, 1.4, 1.95, 1.95, 0.3, 0.2], rtol=1e-6)
    np.testing.assert_allclose(space.high[[0, 1, m, m + 1, 2 * m, -2, -1]], [0.65, 4.2, 4.2, 2.05, 2.05, 0.4, 0.3], rtol=1e-6)


def run_actions(env, params, actions_seq, time_limit=False):
    """Step ``env`` through a (T, N, act_dim) action sequence; returns stacked pre-reset obs,
    rewards, states and truncation flags. Without ``time_limit`` the episode is not cut at
    ``max_steps``, so the states are the model's, not an auto-reset's."""
    if not time_limit:
        params = params.replace(max_steps=actions_seq.shape[0] + 1)

    def body(state, a):
        obs, state, rewards, _, truncated, info = env.step(jax.random.PRNGKey(0), state, {GROUP: a}, params)
        return state, (info["final_obs"][GROUP], rewards[GROUP], state.temperature, truncated)

    _, state = env.reset(jax.random.PRNGKey(0), params)
    return jax.jit(lambda s, a: jax.lax.scan(body, s, a))(state, actions_seq)[1]


def test_reference_action_reward_values():
    env, params = make("ebm-v1")
    actions = jnp.broadcast_to(env.reference_action(), (200, 1, 195))
    _, rewards, _, truncated = run_actions(env, params, actions, time_limit=True)
    rewards = np.asarray(rewards)[:, 0]
    # docs/ebm.md §3.1: −2317.9 at step 1, −66.56 at step 200, return −60358.11 (float32 action path)
    assert rewards[0] == pytest.approx(-2317.9, abs=0.05)
    assert rewards[-1] == pytest.approx(-66.56, abs=0.01)
    assert rewards.sum() == pytest.approx(-60358.11, rel=1e-4)
    assert np.asarray(truncated).tolist() == [False] * 199 + [True]


def test_ebm_v2_equals_ebm_v1_agent_by_agent(x64):
    v1 = EBMEnv(1, dtype="float64")
    v2 = EBMEnv(2, num_agents=6, dtype="float64")
    params = v1.default_params
    actions = jax.random.uniform(jax.random.PRNGKey(3), (20, 1, 195), minval=v1.action_space().low, maxval=v1.action_space().high)
    obs1, r1, T1, _ = run_actions(v1, params, actions)
    obs2, r2, T2, _ = run_actions(v2, params, jnp.tile(actions, (1, 6, 1)))
    for k in range(6):
        np.testing.assert_array_equal(np.asarray(T2[:, k]), np.asarray(T1[:, 0]))
        np.testing.assert_array_equal(np.asarray(obs2[:, k]), np.asarray(obs1[:, 0]))
    sq = (np.asarray(T1[:, 0]) - np.asarray(params.target)) ** 2
    np.testing.assert_allclose(np.asarray(r2), -sq.reshape(20, 6, 16).mean(-1), rtol=1e-12)


def test_ebm_v3_reference_subactions_match_case_a(x64):
    # docs/ebm.md §7.2: the float32 action path rounds 2.1·100 and 0.6, so ≈ 1e-5 °C, not 1e-10.
    env = EBMEnv(3, num_agents=6, dtype="float64")
    g = load_golden("case_a_default")
    actions = jnp.broadcast_to(env.reference_action(), (200, 6, 35))
    obs, rewards, T, _ = run_actions(env, env.default_params, actions)
    err = np.max(np.abs(np.asarray(T[:, 0]) - g["Ts"][1:]))
    assert 1e-7 < err < 5e-5
    np.testing.assert_allclose(np.asarray(rewards), g["reward_a6"], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(T[:, 0], np.float32).reshape(200, 6, 16))


def test_ebm_v3_combines_agents_as_spec(x64):
    # D, a0, a2 are float32 means over agents; A and B are concatenated south to north.
    env = EBMEnv(3, num_agents=2, dtype="float64")
    space = env.action_space()
    a = np.asarray(jax.random.uniform(jax.random.PRNGKey(7), (10, 2, 99), jnp.float32, space.low, space.high))
    _, _, T, _ = run_actions(env, env.default_params, jnp.asarray(a))
    D = a[:, :, 0].mean(axis=1, dtype=np.float32)
    A = (a[:, :, 1:49] * np.float32(100)).reshape(10, 96)
    B = a[:, :, 49:97].reshape(10, 96)
    a0 = a[:, :, -2].mean(axis=1, dtype=np.float32)
    a2 = a[:, :, -1].mean(axis=1, dtype=np.float32)
    expected = simulate(env.default_params, D, A, B, a0, a2)
    np.testing.assert_allclose(np.asarray(T[:, 0]), np.asarray(expected[1:]), rtol=0, atol=1e-9)


def test_env_level_golden_case_b(x64):
    # ebm-v1 driven by case b's inputs through the action path (A/100 in float32).
    env = EBMEnv(1, dtype="float64")
    g = load_golden("case_b_fixed")
    actions = np.concatenate([g["D"][:, None], g["A_Wm2"] / 100.0, g["B"], g["a0"][:, None], g["a2"][:, None]], axis=1)
    _, rewards, T, _ = run_actions(env, env.default_params, jnp.asarray(actions, jnp.float32)[:, None])
    assert np.max(np.abs(np.asarray(T[:, 0]) - g["Ts"][1:])) < 1e-4
    np.testing.assert_allclose(np.asarray(rewards)[:, 0], g["reward_v1"], rtol=1e-5)


def test_actions_are_clipped_to_bounds(x64):
    env = EBMEnv(1, dtype="float64")
    space = env.action_space()
    inside = jnp.asarray(space.high)[None, None]
    outside = inside + 10.0
    _, r_in, T_in, _ = run_actions(env, env.default_params, jnp.tile(inside, (3, 1, 1)))
    _, r_out, T_out, _ = run_actions(env, env.default_params, jnp.tile(outside, (3, 1, 1)))
    np.testing.assert_array_equal(np.asarray(T_in), np.asarray(T_out))


@pytest.mark.parametrize("ignore", [False, True])
def test_ignore_albedo_actions_flag(x64, ignore):
    env = EBMEnv(1, dtype="float64")
    params = env.default_params.replace(ignore_albedo_actions=ignore)
    ref = jnp.tile(env.reference_action()[None], (30, 1, 1))
    changed = ref.at[:, :, -2].set(0.30)  # a0 0.354 -> 0.30 every step
    _, _, T_ref, _ = run_actions(env, params, ref)
    _, _, T_chg, _ = run_actions(env, params, changed)
    diff = float(jnp.max(jnp.abs(T_chg - T_ref)))
    if ignore:
        assert diff == 0.0
    else:
        assert diff > 0.1


def test_evaluated_profile_stitches_ebm_v2_bands():
    env = EBMEnv(2, num_agents=2)
    T = jnp.stack([jnp.full(96, 1.0), jnp.full(96, 2.0)])
    state = env.reset(jax.random.PRNGKey(0))[1].replace(temperature=T)
    profile = np.asarray(env.evaluated_profile(state))
    np.testing.assert_array_equal(profile, [1.0] * 48 + [2.0] * 48)


# --- configuration errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(version=2, num_agents=5), r"num_agents must divide the 96-latitude grid.*got 5"),
        (dict(version=1, num_agents=2), r"num_agents must be 1 for ebm-v1"),
        (dict(version=4), r"version must be 1, 2 or 3"),
        (dict(version=2, num_agents=0), r"num_agents must divide"),
        (dict(version=1, dtype="float16"), r"dtype must be float32 or float64"),
    ],
)
def test_invalid_env_configuration(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EBMEnv(**kwargs)


def test_float64_without_x64_is_a_clear_error():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 already enabled in this process")
    with pytest.raises(ValueError, match="jax_enable_x64"):
        EBMEnv(1, dtype="float64")


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("heat_capacity", -4.0e7, r"EBMParams.heat_capacity must lie in \(0, inf\), got -4"),
        ("timestep", 0.0, r"EBMParams.timestep must lie in \(0, inf\), got 0"),
        ("max_steps", 0, r"EBMParams.max_steps must lie in \[1, inf\), got 0"),
        ("insolation", np.ones(95), r"EBMParams.insolation must have shape \(96,\)"),
        ("target", np.full(96, np.nan), r"EBMParams.target must be finite"),
        ("a0", 1.5, r"EBMParams.a0 must lie in \[0, 1\], got 1.5"),
        ("D", -0.1, r"EBMParams.D must lie in \[0, inf\), got -0.1"),
    ],
)
def test_invalid_params(field, value, match):
    with pytest.raises(ValueError, match=match):
        EBMParams(**{field: value})
    with pytest.raises(ValueError, match=match):
        make("ebm-v1", **{field: value})


@pytest.mark.parametrize("override", [dict(heat_capacity=1e3), dict(heat_capacity=1e-3), dict(timestep=1e9), dict(B=np.full(96, 300.0))])
def test_parameters_the_radiation_step_cannot_integrate_are_refused(override):
    """The cases that used to compile and end in non-finite losses (docs/ebm.md §7.1)."""
    with pytest.raises(ValueError, match=r"EBMParams: timestep·B/heat_capacity = .* must stay below 2, or the explicit radiation step diverges"):
        make("ebm-v1", **override)


def test_the_radiation_stability_bound_is_where_the_step_diverges():
    """Δt·B/C just under 2 (allowed) stays bounded for 190 steps; just over it (built around
    the check) runs away — the bound is the numerics', not a guess."""
    env, params = make("ebm-v1")
    b_max = 2.05
    below = params.replace(heat_capacity=params.timestep * b_max / 1.95)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    above = jax.tree_util.tree_unflatten(
        treedef, [params.timestep * b_max / 2.05 if "heat_capacity" in jax.tree_util.keystr(p) else v for p, v in leaves]
    )
    with pytest.raises(ValueError, match="must stay below 2"):
        params.replace(heat_capacity=float(above.heat_capacity))
    action = {"bands": jnp.full((1, env.action_space("bands").shape[0]), b_max).at[:, :97].set(env.reference_action()[:, :97])}

    def final_spread(p):
        _, state = env.reset(jax.random.key(0), p)
        state = jax.lax.fori_loop(0, 190, lambda _, s: env.step(jax.random.key(0), s, action, p)[1], state)  # before the reset at 200
        return float(jnp.max(jnp.abs(state.temperature)))

    assert final_spread(below) < 100.0
    assert not final_spread(above) < 1e4  # 1.05**190 growth (or overflow)


def test_make_rejects_unknown_options():
    with pytest.raises(ValueError, match="unknown option"):
        make("ebm-v1", heat_capacty=4e7)
    with pytest.raises(ValueError, match="unknown environment id 'ebm-v9'"):
        make("ebm-v9")


def test_make_routes_overrides():
    env, params = make("ebm-v3", num_agents=2, heat_capacity=3e7, ignore_albedo_actions=True)
    assert env.num_agents == 2 and env.version == 3
    assert params.heat_capacity == 3e7 and params.ignore_albedo_actions is True


# --- vmapped parameter sweeps ---------------------------------------------------------------


def eight_param_sets() -> list[EBMParams]:
    rng = np.random.default_rng(0)
    base = EBMParams()
    return [
        base.replace(
            D=0.55 + 0.1 * rng.random(),
            A=210.0 + 20 * rng.standard_normal(96),
            B=1.95 + 0.1 * rng.random(96),
            a0=0.3 + 0.1 * rng.random(),
            a2=0.2 + 0.1 * rng.random(),
            heat_capacity=4.1813e7 * (0.5 + rng.random()),
            target=np.asarray(base.target) + rng.standard_normal(96),
        )
        for _ in range(8)
    ]


def test_static_baseline_vmaps_over_eight_param_sets(x64):
    variants = eight_param_sets()
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *variants)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(p):
        return static_baseline(p)

    T_batch, bands_batch = jax.vmap(run)(stacked)
    for i, p in enumerate(variants):
        T_i, bands_i = static_baseline(p)
        np.testing.assert_allclose(np.asarray(T_batch[i]), np.asarray(T_i), rtol=0, atol=1e-10)
        np.testing.assert_allclose(np.asarray(bands_batch[i]), np.asarray(bands_i), rtol=1e-10, atol=1e-10)
    assert len({round(float(b[0]), 6) for b in bands_batch}) == 8  # the sets really differ
    chex.clear_trace_counter()


def test_env_rollout_vmaps_over_eight_param_sets(x64):
    env = EBMEnv(3, num_agents=6, dtype="float64")
    variants = [p.replace(ignore_albedo_actions=bool(i % 2), initial_temperature=40.0 + i) for i, p in enumerate(eight_param_sets())]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *variants)
    actions = jnp.asarray(jax.random.uniform(jax.random.PRNGKey(1), (25, 6, 35), minval=env.action_space().low, maxval=env.action_space().high))
    batched = jax.jit(jax.vmap(lambda p: run_actions(env, p, actions)))(stacked)
    for i, p in enumerate(variants):
        single = run_actions(env, p, actions)
        for got, want in zip(batched, single):
            np.testing.assert_allclose(np.asarray(got[i]), np.asarray(want), rtol=1e-12, atol=1e-10)


# --- optional ice albedo (docs/ebm.md §6) ---------------------------------------------------------


@pytest.mark.parametrize(
    "T0, edges, area, mean, tmin, tmax",
    [
        (50.0, (-56.25, 56.25), 0.1685, 7.906, -24.379, 24.779),
        (0.0, (-54.375, 54.375), 0.1872, 7.574, -24.847, 24.597),
        (-50.0, (), 1.0, -40.145, -51.504, -34.787),
    ],
)
def test_ice_albedo_steady_states(x64, T0, edges, area, mean, tmin, tmax):
    params = EBMParams(ice_albedo=True, initial_temperature=T0)
    n = 3000
    Ts = simulate(params, D=np.full(n, 0.6), A=np.full((n, 96), 210.0), B=np.full((n, 96), 2.0), a0=np.full(n, 0.354), a2=np.full(n, 0.25))
    T = np.asarray(Ts[-1])
    assert np.max(np.abs(T - np.asarray(Ts[-2]))) < 1e-9  # steady
    ice = T < params.freezing_temperature
    faces = physics.LAT_BOUNDS_DEG[1:-1][ice[1:] != ice[:-1]]
    np.testing.assert_allclose(faces, edges)
    w = np.cos(physics.LAT_RAD)
    assert np.sum(w * ice) / np.sum(w) == pytest.approx(area, abs=1e-4)
    assert float(physics.cos_weighted_mean(jnp.asarray(T))) == pytest.approx(mean, abs=1e-3)
    assert T.min() == pytest.approx(tmin, abs=1e-3) and T.max() == pytest.approx(tmax, abs=1e-3)


def test_ice_albedo_off_by_default_has_single_warm_state(x64):
    # Without the flag the cold start converges to the same state as the warm start.
    n = 3000
    forcing = dict(D=np.full(n, 0.6), A=np.full((n, 96), 210.0), B=np.full((n, 96), 2.0), a0=np.full(n, 0.354), a2=np.full(n, 0.25))
    warm = simulate(EBMParams(initial_temperature=50.0), **forcing)[-1]
    cold = simulate(EBMParams(initial_temperature=-50.0), **forcing)[-1]
    np.testing.assert_allclose(np.asarray(warm), np.asarray(cold), atol=1e-6)
