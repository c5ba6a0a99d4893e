"""Float64 parity of RICE-N with the episodes recorded from the reference (FORMAT.md §5)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.rice_n import RiceN, dynamics, replay, state_from_record
from tests.envs.rice_n import golden

pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture(scope="module")
def replays():
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        return {name: replay(golden.env_for(name), golden.load(name)["actions"]) for name in golden.FILES}
    finally:
        jax.config.update("jax_enable_x64", previous)


def _assert_rel(port, ref, tol, what):
    rel = golden.rel_error(port, ref)
    assert rel.max() <= tol, f"{what}: max rel error {rel.max():.3g} > {tol:g} (row {np.unravel_index(rel.argmax(), rel.shape)[0]})"


@pytest.mark.parametrize("name", golden.FILES)
def test_full_replay_climate_and_capital(replays, name):
    g, out = golden.load(name), replays[name]
    for key in golden.CLIMATE_CAPITAL:
        _assert_rel(out[f"state__{key}"], g[f"state__{key}"], 1e-6, f"{name} {key}")
    dT = out["state__global_temperature"][-1, 0] - out["state__global_temperature"][0, 0]
    dT_ref = float(g["state__global_temperature"][-1, 0]) - float(g["state__global_temperature"][0, 0])
    assert abs(dT - dT_ref) <= 1e-5


@pytest.mark.parametrize("name", golden.FILES)
def test_full_replay_exact_parts(replays, name):
    g, out = golden.load(name), replays[name]
    for key in ("timestep", "activity_timestep", "stage"):
        np.testing.assert_array_equal(out[f"state__{key}"], g[f"state__{key}"], err_msg=key)
    np.testing.assert_array_equal(out["stage"], g["stage"])
    np.testing.assert_array_equal(out["done"], g["done"])
    for key in ("promised_mitigation_rate", "requested_mitigation_rate", "proposal_decisions"):
        np.testing.assert_array_equal(out[f"state__{key}"].astype(np.float32), g[f"state__{key}"], err_msg=key)
    np.testing.assert_allclose(out["state__minimum_mitigation_rate_all_regions"], g["state__minimum_mitigation_rate_all_regions"], rtol=0, atol=1e-7)
    np.testing.assert_array_equal(out["action_mask"], g["action_mask"])
    for key, value in out.items():
        assert np.all(np.isfinite(value)), f"{name}: non-finite {key}"


@pytest.mark.parametrize("name", golden.SAFE)
def test_full_replay_trade_on_well_conditioned_episodes(replays, name):
    g, out = golden.load(name), replays[name]
    _assert_rel(out["state__consumption_all_regions"], g["state__consumption_all_regions"], 5e-3, "C")
    for key in ("utility_all_regions", "reward_all_regions"):
        _assert_rel(out[f"state__{key}"], g[f"state__{key}"], 1e-3, key)
    _assert_rel(out["rewards"], g["rewards"], 1e-3, "rewards")
    for key in ("current_balance_all_regions", "scaled_imports", "tariffed_imports"):
        _assert_rel(out[f"state__{key}"], g[f"state__{key}"], 5e-2, key)


@pytest.mark.parametrize("name", golden.CONSTANT)
def test_full_replay_constant_policies(replays, name):
    g, out = golden.load(name), replays[name]
    _assert_rel(out["state__consumption_all_regions"], g["state__consumption_all_regions"], 1e-5, "C")
    for key in ("utility_all_regions", "reward_all_regions"):
        _assert_rel(out[f"state__{key}"], g[f"state__{key}"], 2e-5, key)
    for key in ("scaled_imports", "tariffed_imports", "current_balance_all_regions", "desired_imports"):
        assert np.all(out[f"state__{key}"] == 0.0) and np.all(g[f"state__{key}"] == 0.0), key


@pytest.mark.parametrize("name", golden.FILES)
def test_observations_rebuilt_from_recorded_state(name):
    """docs/rice_n.md §9.2: the observation of every recorded state row equals the recorded one."""
    g = golden.load(name)
    env = golden.env_for(name)
    rows = range(len(g["obs"]))
    obs = np.stack([np.asarray(env.observe(state_from_record(g, k))) for k in rows])
    assert obs.shape == g["obs"].shape
    np.testing.assert_array_equal(obs, g["obs"])  # float32 arithmetic as the reference: bit-exact
    masks = np.stack([np.asarray(env.flat_action_mask(state_from_record(g, k))) for k in rows])
    np.testing.assert_array_equal(masks, g["action_mask"])
    # the factored layout carries the same features: flattened, bit-exact too
    factored = RiceN(protocol=env.protocol, dtype=env.dtype, observation="factored")
    space = factored.observation_space("regions")
    flat = np.stack([np.asarray(space.flatten(factored.observation(state_from_record(g, k))["regions"])) for k in rows[::5]])
    np.testing.assert_array_equal(flat, g["obs"][::5])


@pytest.mark.parametrize("name", ["ricen_random_neg0_seed0", "ricen_random_neg1_seed0"])
def test_jitted_observations_equal_the_recorded_ones(name):
    """The observation compiled into a program, as every step builds it, is bit-exact too: XLA
    rewrites a division by a constant into a multiplication by its reciprocal (1 ulp off for
    some values; the timestep k/100 was), so every feature is divided with ``exact_divide``."""
    g = golden.load(name)
    env = golden.env_for(name)
    states = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *[state_from_record(g, k) for k in range(len(g["obs"]))])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(env.observe))(states)), g["obs"])
    factored = RiceN(protocol=env.protocol, dtype=env.dtype, observation="factored")
    space = factored.observation_space("regions")
    flat = jax.jit(jax.vmap(lambda s: space.flatten(factored.observation(s)["regions"])))(states)
    np.testing.assert_array_equal(np.asarray(flat), g["obs"])


def _check_one_step(name: str) -> list[str]:
    """Teacher-forced checks of FORMAT.md §5.3 on every step of a file; returns failures."""
    g = golden.load(name)
    env = golden.env_for(name)
    rows = np.arange(1, len(g["obs"]))
    out = golden.one_step_records(env, g, rows)
    activity = g["stage"] == 0
    failures = []

    def check(key, tol, ref_key=None, where=activity):
        ref = g[ref_key or f"state__{key}"][rows][where]
        rel = golden.rel_error(out[key][where], ref)
        if rel.max() > tol:
            failures.append(f"{key}: rel {rel.max():.3g} > {tol:g}")

    for key in (
        "global_temperature",
        "global_carbon_mass",
        "capital_all_regions",
        "labor_all_regions",
        "production_factor_all_regions",
        "intensity_all_regions",
        "production_all_regions",
        "gross_output_all_regions",
        "investment_all_regions",
        "damages_all_regions",
        "abatement_cost_all_regions",
        "mitigation_cost_all_regions",
    ):
        check(key, 1e-6)
    check("scaled_imports", 1e-4)
    check("tariffed_imports", 1e-4)
    check("current_balance_all_regions", 1e-3)
    saturated, bound = golden.saturation(g, rows[activity])
    for key, ref_key in (("consumption_all_regions", None), ("utility_all_regions", None), ("rewards", "rewards")):
        ref = (g[ref_key][rows - 1] if ref_key else g[f"state__{key}"][rows])[activity].astype(np.float64)
        port = out[key][activity]
        rel = golden.rel_error(port, ref)
        if np.any(rel[~saturated.reshape(rel.shape)] > 3e-4):
            failures.append(f"{key}: non-saturated rel {rel[~saturated.reshape(rel.shape)].max():.3g} > 3e-4")
        excess = np.abs(port - ref) - (bound + 1e-4 * np.abs(ref))
        if np.any(excess[saturated] > 0):
            failures.append(f"{key}: saturated entries exceed the residue bound by {excess[saturated].max():.3g}")
    negotiation = ~activity
    if negotiation.any():
        for key in ("promised_mitigation_rate", "requested_mitigation_rate", "proposal_decisions"):
            if not np.array_equal(out[key][negotiation].astype(np.float32), g[f"state__{key}"][rows][negotiation]):
                failures.append(f"{key} differs at a negotiation step")
        if not np.array_equal(out["action_mask"], g["action_mask"][rows]):
            failures.append("action mask differs")
        m = np.abs(out["minimum_mitigation_rate_all_regions"] - g["state__minimum_mitigation_rate_all_regions"][rows])
        if m.max() > 1e-7:
            failures.append(f"minimum mitigation differs by {m.max():.3g}")
        neg_obs = slice(1044, 1207)
        if not np.array_equal(out["obs"][negotiation][..., neg_obs], g["obs"][rows][negotiation][..., neg_obs]):
            failures.append("negotiation part of the observation differs")
    return failures


@pytest.mark.parametrize("name", golden.FILES)
def test_one_step_teacher_forced(name):
    assert _check_one_step(name) == []


@pytest.mark.parametrize(
    "patch",
    [
        # DICE timing: temperature from the NEW carbon mass instead of the previous one
        ("temperature_step", lambda orig: lambda T, m_at, f, p: orig(T, m_at * 1.01, f, p)),
        # a wrong Armington domestic weight (0.55 instead of 0.5)
        ("armington_consumption", lambda orig: lambda c, xh, p: orig(c, xh, p.replace(armington_dom_pref=p.armington_dom_pref * 1.1))),
        # export caps from gross production instead of net output
        ("trade_flows", lambda orig: lambda b, y, i, xbar, bal, p: orig(b, y, i * 0.0, xbar, bal, p)),
    ],
    ids=["temperature-timing", "armington-weight", "export-cap"],
)
def test_planted_bug_breaks_parity(monkeypatch, patch):
    """The parity checks must be able to fail: perturb one equation, parity must break."""
    name, make = patch
    monkeypatch.setattr(dynamics, name, make(getattr(dynamics, name)))
    golden._env.cache_clear()  # a fresh env object: no cached trace of the unpatched step
    try:
        failures = _check_one_step("ricen_random_neg0_seed0")
    finally:
        golden._env.cache_clear()
    assert failures, f"perturbing {name} went unnoticed"


@pytest.mark.parametrize("name", ["ricen_random_neg0_seed0", "ricen_random_safe_neg1_seed0"])
def test_trade_actions_do_not_move_climate_or_capital(replays, name):
    """docs/rice_n.md §6.2: replacing every export, tariff and bid action leaves T, M, K, Y unchanged."""
    g = golden.load(name)
    env = golden.env_for(name)
    actions = g["actions"].copy()
    rng = np.random.default_rng(1)
    actions[:, :, 2:57] = rng.integers(0, 10, size=actions[:, :, 2:57].shape)
    out = replay(env, actions)
    base = replays[name]
    for key in ("global_temperature", "global_carbon_mass", "capital_all_regions", "gross_output_all_regions"):
        np.testing.assert_array_equal(out[f"state__{key}"], base[f"state__{key}"], err_msg=key)
    assert not np.array_equal(out["state__scaled_imports"], base["state__scaled_imports"])


@pytest.mark.parametrize("name", golden.FILES)
def test_trade_invariants(replays, name):
    out = replays[name]
    x = out["state__scaled_imports"]
    y = out["state__gross_output_all_regions"]
    inv = out["state__investment_all_regions"]
    xbar = out["state__max_export_limit_all_regions"]
    b = out["state__current_balance_all_regions"]
    assert np.all(x >= 0.0)
    assert np.all(np.diagonal(x, axis1=1, axis2=2) == 0.0)
    assert np.all(x.sum(axis=2) <= y * (1 + 1e-12) + 1e-12)
    assert np.all(x.sum(axis=1) <= np.minimum(xbar * y, y - inv) * (1 + 1e-12) + 1e-12)
    assert np.all(np.abs(b.sum(axis=1)) <= 1e-5 * np.abs(b).sum(axis=1) + 1e-6)
    assert np.all(out["state__consumption_all_regions"] >= 0) and np.all(out["state__utility_all_regions"] >= 0)
