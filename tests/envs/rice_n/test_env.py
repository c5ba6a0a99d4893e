"""RICE-N environment API: conformance, spaces, masks, flags, bad input."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.envs.rice_n import RiceN, replay, rice_params
from jaxclimate.envs.rice_n.dynamics import debt_ratio, trade_flows
from jaxclimate.testing import check_env

SMALL = [0, 5, 12, 20]


#: bilateral is checked with the factored observation only: its flat observation is the flattened
#: factored one at every step (test_factored_observation_flattens_to_the_flat_one_exactly), and
#: "none" and "club" check the flat path (a fourth run cost 8-9 s, nearly all compilation)
@pytest.mark.parametrize("protocol, observation", [("none", "flat"), ("club", "flat"), ("bilateral", "factored")])
@pytest.mark.slow
def test_check_env(protocol, observation, x64):
    # float64: domestic consumption of an export-saturated region is a cancellation residue
    # (docs/rice_n.md §15), so in float32 a batched reduction that sums in another order moves that
    # region's utility by up to ~1e-3 relative; in float64 the same reordering is invisible.
    env = RiceN(protocol=protocol, regions=SMALL, num_activity_steps=3, dtype="float64", observation=observation)
    params = env.default_params
    variants = [params, params.replace(a2=0.01, utility_offset=0.5)]
    check_env(env, params.replace(max_steps=5), params_variants=variants, num_steps=4)


def test_make_and_dimensions():
    env, params = make("rice-n")
    assert (env.num_regions, env.obs_dim, env.nvec.size, int(env.nvec.sum())) == (27, 1043, 57, 570)
    env, _ = make("rice-n-bilateral")
    assert (env.obs_dim, env.nvec.size, int(env.nvec.sum())) == (1207, 138, 1164)
    env, _ = make("rice-n-club")
    assert (env.obs_dim, env.nvec.size) == (1043 + 2 + 5 * 27, 59 + 27)
    env, _ = make("rice-n", regions=SMALL, protocol="bilateral")
    n = len(SMALL)
    assert env.obs_dim == n + 9 + 10 * n + n * n + 10 + 6 * n and env.nvec.size == 3 + 5 * n


def test_climate_maps_the_step_cannot_integrate_are_refused():
    """docs/rice_n.md §15.1: Φ_T with spectral radius ≥ 1 diverges (shown, then refused); Φ_M
    may not make carbon. A radius just under 1 is accepted."""
    phi_t = np.array([[1.02, 0.0088], [0.025, 0.975]])  # the reference with its atmospheric feedback removed and more
    T = np.zeros(2)
    for _ in range(500):
        T = phi_t @ T + np.array([0.1005, 0.0]) * 3.0
    assert np.abs(T).max() > 1e3  # the map runs away under a constant forcing of 3 W m⁻²
    with pytest.raises(ValueError, match=r"RiceParams.Phi_T has spectral radius 1.02.* unless it is < 1"):
        make("rice-n", regions=SMALL, Phi_T=phi_t)
    make("rice-n", regions=SMALL, Phi_T=np.array([[0.99, 0.0], [0.0, 0.99]]))
    with pytest.raises(ValueError, match=r"RiceParams.Phi_M has spectral radius 1.004.* carbon mass would grow"):
        make("rice-n", regions=SMALL, Phi_M=np.array([[0.89, 0.196, 0.0], [0.12, 0.797, 0.001465], [0.0, 0.007, 0.99853488]]))
    with pytest.raises(ValueError, match="RiceParams.Phi_M must be non-negative"):
        make("rice-n", regions=SMALL, Phi_M=np.array([[1.1, 0.0, 0.0], [-0.1, 1.0, 0.0], [0.0, 0.0, 1.0]]))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="rice-n protocol must be one of"):
        RiceN(protocol="multilateral")
    with pytest.raises(ValueError, match="unknown region ids"):
        RiceN(regions=[0, 99])
    with pytest.raises(ValueError, match="num_activity_steps"):
        RiceN(num_activity_steps=0)
    with pytest.raises(ValueError, match="RiceN.observation must be one of"):
        RiceN(observation="cubic")
    env = RiceN(regions=SMALL)
    _, state = env.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"actions\['regions'\] must have shape"):
        env.step(jax.random.PRNGKey(0), state, {"regions": jnp.zeros((4, 10), jnp.int32)})
    with pytest.raises(ValueError, match="replay: actions must have shape"):
        replay(env, np.zeros((3, 4, 5)))
    with pytest.raises(ValueError, match="level must be in 0..10"):
        env.constant_actions(savings=11)


def test_contains_rejects_out_of_space_levels_but_step_applies_level_10():
    env = RiceN(regions=SMALL, num_activity_steps=2)
    space = env.action_space("regions")
    ok = np.zeros(env.nvec.size, np.int32)
    assert bool(space.contains(ok)) and not bool(space.contains(ok + 10)) and not bool(space.contains(ok - 1))
    out = replay(env, np.stack([env.constant_actions(mitigation=10)] * 2))
    assert np.allclose(out["state__mitigation_rate_all_regions"][1:], 1.0)  # the evaluation's extremal policy
    bilateral = RiceN(protocol="bilateral", regions=SMALL)
    decision = np.zeros(bilateral.nvec.size, np.int32)
    decision[-1] = 2
    assert not bool(bilateral.action_space("regions").contains(decision))


def test_episode_length_done_and_auto_reset():
    for protocol, length in (("none", 20), ("bilateral", 60)):
        env = RiceN(protocol=protocol, regions=SMALL)
        key = jax.random.PRNGKey(1)
        obs, state = env.reset(key)
        step = jax.jit(env.step)
        dones = []
        for i in range(length):
            obs, state, rewards, terminated, truncated, info = step(
                jax.random.fold_in(key, i), state, env.sample_actions(jax.random.fold_in(key, 100 + i))
            )
            dones.append(bool(terminated))
            assert bool(truncated) == (i == length - 1)  # max_steps is the real horizon: the limit and the end coincide
            if protocol == "bilateral" and i % 3 != 2:
                assert np.all(np.asarray(rewards["regions"]) == 0.0)
        assert dones == [False] * (length - 1) + [True]
        assert int(state.time) == 0 and int(state.activity_step) == 0  # auto-reset
        assert float(info["final_obs"]["regions"][0, env.num_regions + 7]) == pytest.approx(length / 100)  # k/100


def test_step_compiles_once_and_vmaps_over_params():
    env = RiceN(regions=SMALL, num_activity_steps=4)
    params = env.default_params
    actions = {"regions": jnp.ones((4, env.nvec.size), jnp.int32)}

    def rollout(p):
        _, s = env.reset(jax.random.PRNGKey(0), p)
        for _ in range(3):  # the 4th step would end the episode and auto-reset
            _, s, r, *_ = env.step(jax.random.PRNGKey(0), s, actions, p)
        return s.carbon_mass[0]

    run = jax.jit(chex.assert_max_traces(rollout, n=1))
    a2 = jnp.array([0.0, 0.00236, 0.01])
    looped = [run(params.replace(a2=v)) for v in a2]  # three values, one trace
    swept = jax.jit(jax.vmap(lambda v: rollout(params.replace(a2=v))))(a2)
    chex.clear_trace_counter()
    np.testing.assert_allclose(swept, looped, rtol=1e-6)
    assert swept[0] > swept[1] > swept[2]  # damages cut output, hence emissions


def test_float32_tracks_float64(x64):
    env64 = RiceN(dtype="float64")
    env32 = RiceN(dtype="float32")
    actions = np.random.default_rng(0).integers(0, 10, size=(20, 27, 57))
    a, b = replay(env64, actions), replay(env32, actions)
    for key in ("state__global_temperature", "state__capital_all_regions", "state__gross_output_all_regions"):
        np.testing.assert_allclose(b[key], a[key], rtol=2e-5)


def test_debt_ratio_flag():
    p = rice_params([0, 1])
    balance = jnp.array([-0.05, 0.3])
    np.testing.assert_allclose(debt_ratio(balance, p), np.clip(10 * np.array([-0.05, 0.3]) / p.K_0, -1, 0))
    p22 = p.replace(debt_ratio_formula="2022")
    np.testing.assert_allclose(debt_ratio(balance, p22), np.clip(np.array([-0.05, 0.3]) / 10 * p.K_0, -1, 0))


def test_trade_flows_hand_computed():
    """Three regions, bids over the import budget, one export cap binding."""
    p = rice_params([0, 1, 2])
    bids = jnp.array([[0.9, 0.6, 0.6], [0.1, 0.0, 0.1], [0.2, 0.0, 0.0]])
    y = jnp.array([1.0, 2.0, 4.0])
    inv = jnp.array([0.5, 0.5, 1.0])
    xbar = jnp.array([0.9, 0.9, 0.1])
    x = np.asarray(trade_flows(bids, y, inv, xbar, jnp.zeros(3), p))
    # importer 0 asks 0.6 + 0.6 = 1.2 > Y=1 -> 0.5 each; importer 1: 0.2, 0.2; importer 2: 0.8, 0
    # exporter 0's cap min(0.9·1, 1 − 0.5) = 0.5 < demand 0.2 + 0.8 -> scale 0.5;
    # exporter 2's cap min(0.1·4, 4 − 1) = 0.4 < demand 0.5 + 0.2 -> scale 0.4/0.7
    expected = np.array([[0, 0.5, 0.5 * 0.4 / 0.7], [0.1, 0, 0.2 * 0.4 / 0.7], [0.4, 0, 0]])
    np.testing.assert_allclose(x, expected, rtol=1e-6)


def test_enforce_minimum_mitigation_flag(x64):
    env = RiceN(protocol="bilateral", regions=SMALL, dtype="float64")
    n, a = 4, env.nvec.size
    actions = np.zeros((3, n, a), np.int64)
    actions[0, :, 3 + 2 * n :: 1][:, : 2 * n] = 5  # promise 0.5, request 0.5 to everyone
    actions[1, :, 3 + 4 * n :] = 1  # accept everything
    loose = replay(env, actions)
    strict = replay(env, actions, env.default_params.replace(enforce_minimum_mitigation=True))
    assert np.allclose(loose["state__minimum_mitigation_rate_all_regions"][2], 0.5)
    assert np.allclose(loose["state__mitigation_rate_all_regions"][3], 0.0)  # mask only (reference)
    assert np.allclose(strict["state__mitigation_rate_all_regions"][3], 0.5)
    assert loose["action_mask"][2][:, 10:20].tolist() == [[0] * 5 + [1] * 5] * n


@pytest.mark.parametrize("protocol", ["bilateral", "club"])
def test_batched_envs_at_different_stages_step_like_single_envs(protocol, x64):
    """vmap(step) dispatches the stage with a lockstep switch: a batch at one stage runs one
    branch, a batch at mixed stages all of them. Both must equal stepping each env alone."""
    env = RiceN(protocol=protocol, regions=SMALL, num_activity_steps=3, dtype="float64")
    params = env.default_params
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    single, sample = jax.jit(env.step), jax.jit(jax.vmap(env.sample_actions))
    for skew in (jnp.array([0, 0, 0]), jnp.array([0, 1, 2])):  # same stage, then mixed
        batch = state.replace(time=state.time + skew)
        for t in range(4):
            actions = {"regions": sample(jax.random.split(jax.random.PRNGKey(t), 3))["regions"]}
            _, batch_next, rewards, *_ = step(keys, batch, actions, params)
            for e in range(3):
                one = jax.tree_util.tree_map(lambda x: x[e], batch)
                _, want, want_r, *_ = single(keys[e], one, {"regions": actions["regions"][e]}, params)
                # atol: an export-saturated region's domestic consumption is a cancellation
                # residue (docs/rice_n.md §15), 0 or 2e-16 depending on the summation order
                chex.assert_trees_all_close(jax.tree_util.tree_map(lambda x: x[e], batch_next), want, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(rewards["regions"][e], want_r["regions"], rtol=1e-12, atol=1e-12)
            batch = batch_next
        assert len(set(np.asarray(batch.time % 3).tolist())) == (1 if int(skew[-1]) == 0 else 3)


@pytest.mark.parametrize("protocol", ["none", "bilateral", "club"])
def test_factored_observation_flattens_to_the_flat_one_exactly(protocol):
    flat = RiceN(protocol=protocol, regions=SMALL, num_activity_steps=2)
    factored = RiceN(protocol=protocol, regions=SMALL, num_activity_steps=2, observation="factored")
    space = factored.observation_space("regions")
    n = len(SMALL)
    assert space.shape == (flat.obs_dim,) and space.insert_at == n
    # the shared block holds everything that is the same for every region (one-hot excluded)
    assert space.shared.shape[0] == 7 + (2 if protocol != "none" else 1) + 10 * n + n * n
    step = jax.jit(lambda env, k, s, a: env.step(k, s, a), static_argnums=0)
    (obs_a, state_a), (obs_b, state_b) = flat.reset(jax.random.PRNGKey(0)), factored.reset(jax.random.PRNGKey(0))
    for t in range(7):  # past an episode end (auto-reset) and through every negotiation stage
        k = jax.random.PRNGKey(t)
        actions = flat.sample_actions(jax.random.fold_in(k, 1))
        obs_a, state_a, *_ = step(flat, k, state_a, actions)
        obs_b, state_b, *_ = step(factored, k, state_b, actions)
        assert obs_b["regions"].shared.shape == space.shared.shape
        np.testing.assert_array_equal(np.asarray(space.flatten(obs_b["regions"])), np.asarray(obs_a["regions"]))
        assert bool(space.contains(jax.tree_util.tree_map(lambda x: x[0] if x.ndim == 2 else x, obs_b["regions"])))
    # batched: flatten keeps leading env axes
    obs_v, _ = jax.vmap(factored.reset)(jax.random.split(jax.random.PRNGKey(1), 3))
    assert space.flatten(obs_v["regions"]).shape == (3, n, flat.obs_dim)
