"""RICE-N's compact observation (``observation="compact"``, docs/rice_n.md §9.3): jice's feature
set, each feature the flat observation's of the same value; the masks, the interfaces and IPPO
on it; and ``regions=`` as a comma-separated string."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.envs.rice_n import RiceN
from jaxclimate.envs.rice_n.env import binary_ids
from jaxclimate.testing import check_env

SMALL = [0, 5, 12, 20]
PROTOCOLS = ["none", "bilateral", "club"]
#: the compact observation's own economy: (name, state field, normaliser) in order
OWN = [
    ("capital", "capital", 1e4),
    ("capital_depreciation", "capital_depreciation", 1.0),
    ("labor", "labor", 1e4),
    ("gross_output", "gross_output", 1e3),
    ("investment", "investment", 1e3),
    ("consumption", "consumption", 1e3),
    ("tfp", "tfp", 1e2),
    ("intensity", "intensity", 0.1),
    ("mitigation_cost", "mitigation_cost", 1.0),
    ("damages", "damages", 1.0),
    ("abatement_cost", "abatement_cost", 1.0),
    ("production", "production", 1e3),
    ("utility", "utility", 1.0),
]


def _play(env: RiceN, steps: int, seed: int = 0):
    """(obs, state) after each of ``steps`` steps of random valid actions (an episode end and
    auto-reset included when ``steps`` passes it)."""
    step = jax.jit(env.step)
    key = jax.random.PRNGKey(seed)
    obs, state = env.reset(key)
    out = []
    for t in range(steps):
        k = jax.random.fold_in(key, t)
        actions = {"regions": jnp.maximum(env.sample_actions(k)["regions"], env.lowest_allowed_levels(state))}
        obs, state, *_ = step(k, state, actions)
        out.append((obs, state))
    return out


def test_dimensions_and_names():
    """46 features per region at 20 regions (jice writes 57, 11 of them its constant FaIR
    state; docs/rice_n.md §9.3), 53 at 27; with negotiation the flat layout's negotiation
    features (the stage and the protocol's own) come too."""
    for regions, width in ((range(20), 46), (None, 53), (SMALL, 3 + 8 + 4 + 13)):
        env = RiceN(regions=regions, observation="compact")
        obs, _ = env.reset(jax.random.PRNGKey(0))
        assert env.obs_dim == width and obs["regions"].shape == (env.num_regions, width)
        assert env.observation_space("regions").shape == (width,)
        names = env.feature_names()
        bits = env.num_regions.bit_length()
        assert len(names) == width and names[:bits] == [f"id_bit[{b}]" for b in range(bits)]
        assert names[bits : bits + 8] == [
            "temperature[0]",
            "temperature[1]",
            "carbon_mass[0]",
            "carbon_mass[1]",
            "carbon_mass[2]",
            "forcing_exogenous",
            "land_emissions",
            "time",
        ]
        assert names[-13:] == [name for name, _, _ in OWN]
    for protocol in ("bilateral", "club"):
        flat, compact = RiceN(protocol=protocol, regions=SMALL), RiceN(protocol=protocol, regions=SMALL, observation="compact")
        negotiation = flat.obs_dim - len(SMALL) - 9 - 10 * len(SMALL) - len(SMALL) ** 2 - 9  # the protocol's own features
        assert compact.obs_dim == 3 + 9 + len(SMALL) + 13 + negotiation
        assert "stage" in compact.feature_names() and compact.feature_names()[-1] == f"negotiation[{negotiation - 1}]"
    assert len(RiceN(regions=SMALL).feature_names()) == RiceN(regions=SMALL).obs_dim  # the flat layout's names too


@pytest.mark.parametrize("protocol, dtype", [(p, "float32") for p in PROTOCOLS] + [("bilateral", "float64")])
def test_every_compact_feature_is_the_flat_observations_feature_bit_for_bit(protocol, dtype, request):
    """Normalised as the flat observation is: each compact column (the binary id apart) equals
    the flat column of the same name for every region, through negotiation stages and an
    auto-reset (float64: the parity arithmetic, public features divided in float32)."""
    if dtype == "float64":
        request.getfixturevalue("x64")
    env = RiceN(protocol=protocol, regions=SMALL, num_activity_steps=2, observation="compact", dtype=dtype)
    flat_index = {name: i for i, name in enumerate(RiceN(protocol=protocol, regions=SMALL).feature_names())}
    own = {name for name, _, _ in OWN}
    for obs, state in _play(env, env.episode_length + 2):
        flat = np.asarray(env.observe(state))
        compact = np.asarray(obs["regions"])
        np.testing.assert_array_equal(compact, np.asarray(env.observe_compact(state)))
        for column, name in enumerate(env.feature_names()):
            if name.startswith("id_bit"):
                continue
            for i in range(len(SMALL)):
                expected = flat[i, flat_index[f"{name}[{i}]" if name in own and name not in flat_index else name]]
                assert compact[i, column] == expected, (name, i)


def test_compact_features_against_the_state(x64):
    env = RiceN(regions=range(20), num_activity_steps=3, observation="compact", dtype="float64")
    obs, state = _play(env, 2)[-1]
    x = np.asarray(obs["regions"])
    names = env.feature_names()
    col = {name: i for i, name in enumerate(names)}
    # the binary id, most significant bit first (jice: N.bit_length() bits)
    bits = x[:, : col["temperature[0]"]].astype(int)
    assert bits.shape == (20, 5) and (bits @ (2 ** np.arange(4, -1, -1)) == np.arange(20)).all()
    np.testing.assert_array_equal(binary_ids(20), bits)
    assert binary_ids(16).shape == (16, 5) and binary_ids(2).tolist() == [[0, 0], [0, 1]]
    # the climate and the counter, the same for every region
    np.testing.assert_allclose(x[:, col["temperature[0]"]], float(state.temperature[0]) / 10, rtol=1e-7)
    np.testing.assert_allclose(x[:, col["carbon_mass[2]"]], float(state.carbon_mass[2]) / 1e4, rtol=1e-7)
    np.testing.assert_allclose(x[:, col["land_emissions"]], float(state.land_emissions), rtol=1e-7)
    assert (x[:, col["time"]] == 0.02).all()
    # every region's mitigation rate: row i holds all of them
    mitigation = x[:, col["mitigation[0]"] : col["mitigation[19]"] + 1]
    np.testing.assert_allclose(mitigation, np.broadcast_to(np.asarray(state.mitigation), (20, 20)), rtol=1e-7)
    assert len(set(np.asarray(state.mitigation).tolist())) > 1  # random actions: they differ
    # the region's own economy
    for name, field, norm in OWN:
        np.testing.assert_allclose(x[:, col[name]], np.asarray(getattr(state, field)) / norm, rtol=1e-7, err_msg=name)
    assert (x[:, col["capital"]] > 0).all() and (x[:, col["gross_output"]] > 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["none", "bilateral"])
def test_check_env(protocol, x64):
    env = RiceN(protocol=protocol, regions=SMALL, num_activity_steps=3, dtype="float64", observation="compact")
    params = env.default_params
    check_env(env, params.replace(max_steps=5), params_variants=[params, params.replace(a2=0.01, utility_offset=0.5)], num_steps=4)


def test_action_masks_are_the_same_under_every_observation():
    """The masks read the state only: the compact env's equal the flat env's step for step."""
    compact = RiceN(protocol="bilateral", regions=SMALL, num_activity_steps=2, observation="compact", mask_ignored_heads=True)
    flat = RiceN(protocol="bilateral", regions=SMALL, num_activity_steps=2, mask_ignored_heads=True)
    for (_, a), (_, b) in zip(_play(compact, 6), _play(flat, 6)):
        np.testing.assert_array_equal(compact.action_mask("regions", a), flat.action_mask("regions", b))
        np.testing.assert_array_equal(compact.flat_action_mask(a), flat.flat_action_mask(b))
    assert not np.asarray(compact.action_mask("regions", a)).all()  # the masks do mask something


def test_a_bad_observation_is_refused_naming_the_field_and_the_layouts():
    with pytest.raises(ValueError, match=r"RiceN.observation must be one of \('flat', 'factored', 'compact'\), got 'compakt'"):
        RiceN(observation="compakt")
    with pytest.raises(ValueError, match=r"RiceNRates.observation must be one of \('flat', 'compact'\), got 'factored'"):
        make("rice-n-rates", observation="factored")
    relaxed, _ = make("rice-n-rates", regions=SMALL, observation="compact")  # the relaxation takes it too
    assert relaxed.observation_space("regions").shape == (28,)


@pytest.mark.parametrize("regions", ["0,5,12,20", " 0, 5,12 ,20 ", "[0,5,12,20]", "(0, 5, 12, 20)", (0, 5, 12, 20), np.array(SMALL)])
def test_regions_accepts_lists_and_comma_separated_strings(regions):
    env, params = make("rice-n", regions=regions)
    assert env.regions.tolist() == SMALL and params.num_regions == 4


@pytest.mark.parametrize("regions", ["0;5;12", "0 5 12", "5", "", "a,b", 5, [0.5, 1.5], [True, False], [[0, 1]]])
def test_bad_regions_say_which_forms_are_accepted(regions):
    with pytest.raises(
        ValueError, match=r"rice-n regions must be a list of at least 2 distinct region indices 0\.\.26, e\.g\. \[0,5,12,20\] or 0,5,12,20; got"
    ):
        RiceN(regions=regions)


def test_regions_out_of_range_or_repeated_are_named():
    with pytest.raises(ValueError, match=r"unknown region ids \[27\].*e\.g\. \[0,5,12,20\] or 0,5,12,20"):
        RiceN(regions="0,27")
    with pytest.raises(ValueError, match="must be distinct"):
        RiceN(regions="3,3")


def test_the_interfaces_offer_the_compact_observation():
    """PettingZoo and JaxMARL views built from an env id with ``observation="compact"``
    (Gymnasium's views take single-agent environments only: RICE-N has at least 2 regions)."""
    pytest.importorskip("pettingzoo")
    from jaxclimate.interfaces import GymnasiumEnv, JaxMARLEnv, PettingZooEnv

    overrides = {"regions": "0,5,12,20", "num_activity_steps": 1, "observation": "compact"}
    pz = PettingZooEnv("rice-n", **overrides)
    obs, infos = pz.reset(seed=0)
    width = 3 + 8 + 4 + 13
    assert pz.observation_space("regions_0").shape == (width,) and obs["regions_3"].shape == (width,)
    assert infos["regions_0"]["action_mask"].shape == (int(pz.jax_env.nvec.sum()),)
    assert obs["regions_3"][:3].tolist() == [0, 1, 1]  # region 3's binary id
    while pz.agents:
        obs, *_ = pz.step({a: pz.action_space(a).sample() for a in pz.agents})
    assert obs["regions_0"].shape == (width,)

    marl = JaxMARLEnv("rice-n", **overrides)
    obs, state = jax.jit(marl.reset)(jax.random.key(0))
    assert obs["regions_1"].shape == (width,) and marl.observation_space("regions_1").shape == (width,)
    obs, state, rewards, dones, infos = jax.jit(marl.step)(jax.random.key(1), state, marl.sample_actions(jax.random.key(2)))
    np.testing.assert_array_equal(obs["regions_2"], np.asarray(jax.jit(marl.get_obs)(state)["regions_2"]))
    assert all(bool(d) for d in dones.values())  # one activity step: the episode is over
    with pytest.raises(ValueError, match="single-agent environment"):
        GymnasiumEnv("rice-n", **overrides)


@pytest.mark.slow
def test_ippo_learns_on_the_compact_observation():
    """One network for all regions (``share_parameters``: the binary id tells them apart), 4
    regions, 5 activity steps, 6,400 env steps (80 updates): the mean episode return rises
    from a random policy's ~1.5 to ~2.13 (seeds 0–2 gave 2.12–2.15; ~18 s here, most of it
    compiling)."""
    from jaxclimate.algos.ippo import IPPOConfig, make_trainer

    env = RiceN(regions=SMALL, num_activity_steps=5, observation="compact")
    config = IPPOConfig(total_timesteps=6400, num_envs=16, num_steps=5, lr=1e-3, share_parameters=True)
    trainer = make_trainer(env, env.default_params, config)
    _, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.PRNGKey(0)), config.num_updates)
    returns = np.asarray(metrics["regions"]["episode_return"]).mean(-1)
    assert returns[0] < 1.7 and returns[-5:].mean() > 2.0, (returns[0], returns[-5:])


def test_the_benchmark_counts_the_bytes_each_step_moves():
    """benchmarks/bench_rice_n.py's rows report what one env step writes (observation, state,
    mask) and reads (state, actions), and the env-steps/s those bytes allow at a bandwidth."""
    from benchmarks import bench_rice_n

    env, params = make("rice-n", regions=range(20), observation="compact")
    moved = bench_rice_n.our_traffic(env, params, with_mask=True, with_obs=True, bandwidth=4.8e12)
    size = moved["bytes_per_env_step"]
    state = sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(env.reset(jax.random.PRNGKey(0))[1]))
    assert (size["observation"], size["mask"], size["actions"], size["state"]) == (20 * 46 * 4, 20 * 43 * 10, 20 * 43 * 4, state)
    assert size["written"] == size["observation"] + state + size["mask"] and size["read"] == state + size["actions"]
    assert moved["env_steps_per_s_cap"] == pytest.approx(4.8e12 / (size["written"] + size["read"]))
    dynamics = bench_rice_n.our_traffic(env, params, with_mask=False, with_obs=False, bandwidth=1.0)["bytes_per_env_step"]
    assert dynamics["observation"] == dynamics["mask"] == 0 and dynamics["total"] == 2 * state + size["actions"]
