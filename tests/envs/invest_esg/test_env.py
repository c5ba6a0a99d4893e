"""InvestESG behaviour: the worked example, invariants, event modes, options and extensions,
the API contract (check_env), sweeps and shapes."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxclimate
from jaxclimate.envs.invest_esg import COMPANIES, INVESTORS, REFERENCE_EVENT_UNIFORMS, InvestESG, hazard_probabilities, invest
from jaxclimate.testing import check_env


def zero_actions(env, mitigation=0.0, invest_all=False):
    nc, ni = env.num_companies, env.num_investors
    return {COMPANIES: jnp.zeros((nc, 3)).at[:, 0].set(mitigation), INVESTORS: jnp.full((ni, nc), 1 if invest_all else 0, jnp.int32)}


def run(env, params, actions_fn, steps, key=jax.random.PRNGKey(0)):
    """Scan ``steps`` transitions (no auto-reset) and stack (state, rewards, info)."""
    _, state = env.reset(key, params)

    def body(state, k):
        new, rewards, info = env.transition(k, state, *actions_fn(state).values(), params)
        return new, (new, rewards, info)

    return jax.lax.scan(body, state, jax.random.split(key, steps))[1]


def test_reference_table_is_the_original_seeding_rule():
    expected = np.array([[np.random.default_rng(k * t).random() for k in (100, 500, 1000)] for t in range(0, 1000, 37)])
    np.testing.assert_array_equal(REFERENCE_EVENT_UNIFORMS[::37], expected)
    assert REFERENCE_EVENT_UNIFORMS[0].tolist() == [0.6369616873214543] * 3


def test_worked_example_first_year(x64):
    """Every investor picks all five companies, companies spend 0.5 % on mitigation, the
    original's calendar draws u = 0.637 (no event), α = 10 (docs/invest_esg.md §3.1)."""
    env, params = jaxclimate.make("invest-esg", config="exp_a3", event_mode="reference_events", dtype="float64")
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    new, rewards, info = jax.jit(env.transition)(jax.random.PRNGKey(0), state, *zero_actions(env, 0.005, True).values(), params)
    np.testing.assert_allclose(info["investment_amount"], 3.0)
    np.testing.assert_allclose(new.cash, 1.7, rtol=1e-12)
    np.testing.assert_allclose(info["capital_after_invest"], 19.0)
    assert int(new.event_count) == 0
    np.testing.assert_allclose(new.capital, 19 * 0.995 * 1.1, rtol=1e-12)
    np.testing.assert_allclose(rewards[COMPANIES], 1.7955, rtol=1e-12)
    np.testing.assert_allclose(new.holdings, 3 * (1 + 1.7955 / 19), rtol=1e-12)
    np.testing.assert_allclose(new.investor_capital, 18.1175, rtol=1e-12)
    np.testing.assert_allclose(rewards[INVESTORS], 0.1301886, atol=5e-8)
    np.testing.assert_allclose(new.climate_risk, 0.480088, rtol=1e-12)


def test_investment_split_floor_and_exact():
    cash = jnp.array([16.7, 16.7, 16.7, 2.0])
    choices = jnp.array([[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], jnp.float32)
    amount, holdings, idle = invest(cash, choices, exact=False)
    np.testing.assert_allclose(amount, [16, 5, 3, 0])  # less cash than choices: nothing invested
    np.testing.assert_allclose(idle, [0.7, 1.7, 1.7, 2.0], atol=2e-6)  # float32 16.7
    amount, holdings, idle = invest(cash, choices, exact=True)
    np.testing.assert_allclose(idle, 0.0, atol=1e-6)
    np.testing.assert_allclose(jnp.sum(holdings, axis=1), cash, rtol=1e-6)


def test_invariants_over_random_play(x64):
    """Money is conserved by divest + invest; investor capital is holdings + cash; a live
    company's own capital grows at the same margin as its investors' money."""
    env = InvestESG(config="exp_b1", dtype="float64")
    params = env.default_params
    key = jax.random.PRNGKey(3)
    _, state = jax.jit(env.reset)(key, params)
    sample, transition = jax.jit(env.sample_actions), jax.jit(env.transition)  # one program each, not op by op
    for t in range(12):
        k_a, k_s, key = jax.random.split(key, 3)
        acts = sample(k_a)
        new, _, info = transition(k_s, state, acts[COMPANIES], acts[INVESTORS], params)
        before = float(jnp.sum(state.capital) + jnp.sum(state.cash))
        after_flows = float(jnp.sum(info["capital_after_invest"]) + jnp.sum(new.cash))
        assert after_flows == pytest.approx(before, rel=1e-13)
        np.testing.assert_allclose(new.investor_capital, jnp.sum(new.holdings, axis=1) + new.cash, rtol=1e-13)
        own_end = new.capital - jnp.sum(new.holdings, axis=0)
        np.testing.assert_allclose(own_end, info["capital_after_divest"] * (1 + new.margin), rtol=1e-11)
        state = new


def test_hazards_follow_eq1_and_certain_events_always_fire():
    p = InvestESG().default_params
    np.testing.assert_allclose(hazard_probabilities(jnp.float32(80.0), 0.0, p), [0.944, 0.274, 0.41], rtol=1e-6)
    env, params = jaxclimate.make("invest-esg", hazard_base=np.array([1.0, 0.0, 0.0]), hazard_drift=np.zeros(3))
    states, _, _ = run(env, params, lambda s: zero_actions(env), 50)
    events = np.asarray(jax.vmap(lambda s: env.episode_metrics(s, params))(states)["climate_events"])
    np.testing.assert_array_equal(np.diff(np.concatenate([[0], events])), 1)  # heat every year, nothing else


def test_key_mode_draws_independent_events_at_the_stated_rates():
    env = InvestESG()
    params = env.default_params
    keys = jax.random.split(jax.random.PRNGKey(0), 4096)
    states = jax.jit(jax.vmap(lambda k: env.transition(k, env.initial_state(params), *zero_actions(env).values(), params)[0]))(keys)
    rates = np.asarray(states.events).mean(axis=0)
    np.testing.assert_allclose(rates, [0.28, 0.13, 0.17], atol=0.035)  # 5 standard errors
    assert 0 < rates.min() and len({tuple(e) for e in np.asarray(states.events)}) == 8  # envs differ


def test_reference_events_are_the_same_in_every_env_and_episode():
    env = InvestESG(event_mode="reference_events")
    params = env.default_params
    states = jax.jit(jax.vmap(lambda k: run(env, params, lambda s: zero_actions(env), 30, k)[0]))(jax.random.split(jax.random.PRNGKey(1), 3))
    events = np.asarray(states.events)
    np.testing.assert_array_equal(events[0], events[1])
    np.testing.assert_array_equal(events[0], events[2])
    np.testing.assert_array_equal(events[0], REFERENCE_EVENT_UNIFORMS[:30] < np.asarray(states.hazard_prob[0]))


def test_observation_flags_fill_only_their_slots():
    nc, ni = 5, 3
    slots = {"esg_score_observable": [3], "avg_esg_score_observable": [4], "esg_spending_observable": [5], "resilience_spending_observable": [6]}
    env = InvestESG(config="exp_e3", event_mode="injected")  # every hazard fires: X = 3 is visible
    params = env.default_params.replace(allow_greenwash=True, esg_score_observable=False, event_uniforms=np.zeros((100, 3)))
    acts = {COMPANIES: jnp.full((nc, 3), 0.02), INVESTORS: jnp.ones((ni, nc), jnp.int32)}
    states = run(env, params, lambda s: acts, 3)[0]
    state = jax.tree_util.tree_map(lambda x: x[-1], states)
    base = np.asarray(env.observe(state, params))
    for flag, columns in [*slots.items(), ("climate_observable", None)]:
        obs = np.asarray(env.observe(state, params.replace(**{flag: True})))
        changed = np.flatnonzero(obs != base)
        expected = np.arange(env.obs_dim)[-3:] if columns is None else np.array([7 * i + c for i in range(nc) for c in columns])
        if flag == "climate_observable":
            changed = changed[changed >= env.obs_dim - 3]
        np.testing.assert_array_equal(changed, expected, err_msg=flag)
    # the average ESG score lags a year: after 3 years it is the mean of the first two
    with_avg = np.asarray(env.observe(state, params.replace(avg_esg_score_observable=True)))
    np.testing.assert_allclose(with_avg[4], np.mean(np.asarray(states.esg_score)[:2, 0]), rtol=1e-6)


def test_clip_probabilities_changes_only_the_reported_risk():
    env = InvestESG(event_mode="reference_events")
    params = env.default_params
    unclipped = run(env, params, lambda s: zero_actions(env), 100)[0]
    clipped = run(env, params.replace(clip_probabilities=True), lambda s: zero_actions(env), 100)[0]
    heat = np.asarray(unclipped.hazard_prob)[:, 0]
    assert heat[86] < 1.0 < heat[87]  # U = 0: P_heat passes 1 at t = 87
    assert float(unclipped.climate_risk[-1]) == pytest.approx(1.0375, abs=1e-4)
    assert float(clipped.climate_risk[-1]) == pytest.approx(1.0)
    np.testing.assert_array_equal(unclipped.events, clipped.events)
    np.testing.assert_array_equal(unclipped.capital, clipped.capital)


def _doomed_market(**options):
    """Half the capital is lost per event and every hazard fires every year."""
    env = InvestESG(event_mode="injected", **options)
    params = env.default_params.replace(loss_fraction=np.full(5, 0.5), event_uniforms=np.zeros((100, 3)))
    return env, params


def test_basic_bankruptcy_and_the_original_semantics():
    env, params = _doomed_market()
    states, rewards, _ = run(env, params, lambda s: zero_actions(env, invest_all=True), 3)
    assert np.asarray(states.bankrupt)[0].all() and (np.asarray(states.capital)[0] < 0).all()
    # afterwards a bankrupt company's reward stays its last gain and it keeps no growth
    np.testing.assert_array_equal(rewards[COMPANIES][1], rewards[COMPANIES][0])
    np.testing.assert_array_equal(states.margin[1], states.margin[0])


def test_exit_semantics_freeze_holdings_and_zero_rewards():
    env, params = _doomed_market(bankrupt_semantics="exit")
    states, rewards, info = run(env, params, lambda s: zero_actions(env, invest_all=True), 3)
    np.testing.assert_array_equal(rewards[COMPANIES][1:], 0.0)
    np.testing.assert_array_equal(info["investment_amount"][1:], 0.0)  # bits for bankrupt companies are ignored
    np.testing.assert_allclose(states.investor_capital[2], states.investor_capital[1])


def test_strict_bankruptcy_after_three_bad_years():
    env = InvestESG(event_mode="injected", strict_bankruptcy=True)
    params = env.default_params.replace(loss_fraction=np.full(5, 0.1), event_uniforms=np.zeros((100, 3)))
    states = run(env, params, lambda s: zero_actions(env), 4)[0]  # margin 1.1·0.7 − 1 = −0.23 every year
    bankrupt = np.asarray(states.bankrupt).all(axis=1)
    np.testing.assert_array_equal(bankrupt, [False, False, True, True])
    assert (np.asarray(states.capital)[2] > 0).all()
    assert not np.asarray(run(InvestESG(event_mode="injected"), params, lambda s: zero_actions(env), 4)[0].bankrupt).any()


def test_uncertain_damage():
    env = InvestESG(event_mode="injected", uncertain_damage=True)
    params = env.default_params.replace(event_uniforms=np.zeros((100, 3)))
    fixed = run(InvestESG(event_mode="injected"), params, lambda s: zero_actions(env), 5)[0].capital
    no_spread = run(env, params.replace(damage_std=0.0), lambda s: zero_actions(env), 5)[0].capital
    np.testing.assert_allclose(no_spread, fixed, rtol=1e-6)
    spread = np.asarray(run(env, params, lambda s: zero_actions(env), 5)[0].capital)
    assert np.unique(np.round(spread[-1], 5)).size == 5  # identical companies, independent draws
    per_year = InvestESG(event_mode="injected", uncertain_damage=True, damage_draw="per_year")
    assert np.unique(np.round(np.asarray(run(per_year, params, lambda s: zero_actions(env), 5)[0].capital[-1]), 5)).size == 5


def test_noise_comes_from_the_key():
    env, params = jaxclimate.make("invest-esg", company_noise=np.full(5, 0.1), market_noise=0.05)
    a = run(env, params, lambda s: zero_actions(env), 3, jax.random.PRNGKey(5))[0].capital
    b = run(env, params, lambda s: zero_actions(env), 3, jax.random.PRNGKey(5))[0].capital
    c = run(env, params, lambda s: zero_actions(env), 3, jax.random.PRNGKey(6))[0].capital
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c) and np.unique(np.asarray(a[-1])).size == 5


def test_episode_metrics():
    env = InvestESG(event_mode="reference_events")
    params = env.default_params
    states, _, _ = run(env, params, lambda s: zero_actions(env, 0.01, True), 100)
    last = jax.tree_util.tree_map(lambda x: x[-1], states)
    m = {name: np.asarray(v) for name, v in env.episode_metrics(last, params).items()}
    assert tuple(m) == env.capabilities.episode_metrics  # the declared names, in order
    assert m["final_climate_risk"] == pytest.approx(float(last.climate_risk))
    assert m["final_market_wealth"] == pytest.approx(float(np.sum(last.capital) + np.sum(last.cash)), rel=1e-6)
    assert m["climate_events"] == int(np.sum(states.event_count))
    assert m["cumulative_climate_risk"] == pytest.approx(float(np.sum(states.climate_risk)), rel=1e-5)
    np.testing.assert_allclose(m["investment_shares"].sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(m["investment_shares"], 0.2, rtol=1e-5)
    np.testing.assert_allclose(m["investor_mean_capital"], np.mean(np.asarray(states.investor_capital), axis=0), rtol=1e-5)
    assert m["total_mitigation"] == pytest.approx(float(np.sum(last.cumulative[:, 0])))
    assert m["bankrupt_companies"] == 0


@pytest.mark.slow
def test_check_env():
    env, params = jaxclimate.make("invest-esg", config="exp_e3")  # both groups; resilience on
    variants = [params.replace(esg_preference=np.full(3, a), esg_score_observable=bool(a)) for a in (0.0, 10.0)]
    check_env(env, params.replace(max_steps=4), params_variants=[v.replace(max_steps=4) for v in variants])


def test_sweep_is_one_vmap_over_params():
    """Status quo vs mandate and four α values: one compiled program (the flags are leaves)."""
    env, base = jaxclimate.make("invest-esg", event_mode="reference_events")
    settings = [(False, 0.0), (True, 0.0), (True, 0.5), (True, 1.0), (True, 10.0), (True, 100.0)]
    stacked = jax.tree_util.tree_map(
        lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]),
        *[base.replace(esg_score_observable=f, esg_preference=np.full(3, a)) for f, a in settings],
    )

    @jax.jit
    @chex.assert_max_traces(n=1)
    def first_years(p):
        return run(env, p, lambda s: zero_actions(env, 0.005, True), 2)[1][INVESTORS]

    utility = np.asarray(jax.vmap(first_years)(stacked))[:, 0, 0]
    np.testing.assert_allclose(np.diff(utility[2:]) > 0, True)  # more α, more ESG utility
    assert utility[0] == utility[1]  # the mandate changes observations, not rewards
    chex.clear_trace_counter()


def test_scaled_markets_run_and_compile_size_does_not_grow():
    shapes = {}
    for config in ("exp_default", "scale_10x10", "scale_25x25"):
        env, params = jaxclimate.make("invest-esg", config=config)
        obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)  # jitted: eager runs compile op by op
        acts = jax.jit(env.sample_actions)(jax.random.PRNGKey(1))
        obs, state, rewards, *_ = jax.jit(env.step)(jax.random.PRNGKey(2), state, acts, params)
        assert np.isfinite(np.asarray(obs[COMPANIES])).all()
        shapes[config] = (obs[COMPANIES].shape, obs[INVESTORS].shape, rewards[INVESTORS].shape)
        jaxpr = jax.make_jaxpr(env.step)(jax.random.PRNGKey(2), state, acts, params)
        shapes[config + "_eqns"] = len(jaxpr.jaxpr.eqns)
    assert shapes["scale_25x25"] == ((25, 828), (25, 828), (25,))
    assert shapes["exp_default"][0] == (5, 56)
    counts = [shapes[c + "_eqns"] for c in ("exp_default", "scale_10x10", "scale_25x25")]
    assert max(counts) - min(counts) <= 2, counts  # (a no-op broadcast may be elided when N_C = N_I)


def test_invalid_settings_name_the_field():
    with pytest.raises(ValueError, match="InvestESG.config must be one of"):
        InvestESG(config="exp_zzz")
    with pytest.raises(ValueError, match="event_mode"):
        InvestESG(event_mode="fixed")
    with pytest.raises(ValueError, match="action_cap"):
        InvestESG(action_cap=0.5)
    with pytest.raises(ValueError, match=r"InvestESGParams.loss_fraction must lie in \[0, 1\]"):
        jaxclimate.make("invest-esg", loss_fraction=np.full(5, 1.5))
    with pytest.raises(ValueError, match="one entry per agent"):
        jaxclimate.make("invest-esg", esg_preference=np.zeros(4))
    env = InvestESG(config="exp_default")
    other = InvestESG(config="scale_10x10").default_params
    with pytest.raises(ValueError, match="built for 5"):
        env.step(jax.random.PRNGKey(0), env.initial_state(env.default_params), env.sample_actions(jax.random.PRNGKey(0)), other)
    with pytest.raises(ValueError, match="needs company_capital"):
        InvestESG(config={"companies": 3})
    with pytest.raises(ValueError, match="unknown setting"):
        InvestESG(config={"company_capital": (1.0,), "investor_capital": (1.0,), "alpha": 3})
