"""JaxMARLEnv for JaxMARL's own code (docs/interfaces.md §4): JaxMARL's space classes, actions
rescaled to [-1, 1] or joined into one categorical, infos in the baselines' per-agent shape, and
JaxMARL's own wrappers (from the ``jaxmarl`` package) over every environment's view."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import registered_envs
from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete
from jaxclimate.interfaces import JaxMARLEnv, jaxmarl_env
from jaxclimate.interfaces._actions import JointDiscreteActions


def short(env_id: str) -> dict:
    """Overrides for a short episode (RICE-N: one activity step, 3 regions; else 3 steps)."""
    return {"regions": [0, 1, 2], "num_activity_steps": 1} if env_id.startswith("rice-n") else {"max_steps": 3}


def test_unit_box_actions_span_the_environments_bounds_and_step_as_it():
    unit = JaxMARLEnv("ebm-v2-a2", box_actions="unit")
    raw = JaxMARLEnv("ebm-v2-a2")
    space, bounds = unit.action_space("bands_0"), unit.raw_action_spaces["bands_0"]
    assert np.all(np.asarray(space.low) == -1) and np.all(np.asarray(space.high) == 1) and space.shape == bounds.shape
    assert np.array_equal(raw.action_space("bands_0").low, bounds.low)  # the raw view is unchanged

    def mapped(value):
        return unit.env_actions(dict.fromkeys(unit.agents, jnp.full(space.shape, value)))["bands_1"]

    np.testing.assert_allclose(mapped(-1.0), bounds.low, rtol=1e-6)
    np.testing.assert_allclose(mapped(1.0), bounds.high, rtol=1e-6)
    np.testing.assert_allclose(mapped(0.0), (bounds.low + bounds.high) / 2, rtol=1e-6)
    np.testing.assert_array_equal(mapped(7.0), mapped(1.0))  # clipped, as the environment clips

    key, actions = jax.random.key(0), unit.sample_actions(jax.random.key(1))
    assert all(bool(jnp.all(jnp.abs(a) <= 1)) for a in actions.values())
    _, state = unit.reset(key)
    through_unit = unit.step(key, state, actions)
    through_raw = raw.step(key, state, unit.env_actions(actions))
    for a, b in zip(jax.tree.leaves(through_unit[:4]), jax.tree.leaves(through_raw[:4])):
        np.testing.assert_allclose(a, b, rtol=1e-6)  # the map fused into the step: an ulp apart


def test_joint_discrete_actions_enumerate_every_combination_once():
    nvec = np.array([3, 2, 4])
    joint = JointDiscreteActions(MultiDiscrete(nvec), "test")
    assert joint.space.n == 24
    heads = np.asarray(joint.to_env(jnp.arange(24)))
    assert [tuple(h) for h in heads] == list(itertools.product(range(3), range(2), range(4)))  # row-major
    np.testing.assert_array_equal(joint.from_env(heads), np.arange(24))
    # a joint action is allowed where each of its heads' levels is
    flat = jax.random.bernoulli(jax.random.key(0), 0.7, (5, int(nvec.sum())))
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    expected = np.array([[all(flat[i, offsets[h] + level] for h, level in enumerate(row)) for row in heads] for i in range(5)])
    np.testing.assert_array_equal(joint.joint_mask(flat), expected)
    # bits of a MultiBinary the same way
    bits = JointDiscreteActions(MultiBinary(5), "test")
    assert bits.space.n == 32 and np.asarray(bits.to_env(jnp.int32(19))).tolist() == [1, 0, 0, 1, 1]


def test_joint_discrete_view_steps_as_the_environment_and_refuses_what_is_too_large():
    joint = JaxMARLEnv("climate-mitigation", discrete_actions="joint")
    heads = JaxMARLEnv("climate-mitigation")
    assert joint.action_space("countries_0").n == 81 and joint.raw_action_spaces["countries_0"].nvec.tolist() == [3, 3, 3, 3]
    key = jax.random.key(3)
    _, state = joint.reset(key)
    actions = joint.sample_actions(jax.random.key(4))
    # JaxMARL's discrete scripts send each action with shape (1,)
    through_joint = joint.step(key, state, {a: x[None] for a, x in actions.items()})
    through_heads = heads.step(key, state, joint.env_actions(actions))
    for a, b in zip(jax.tree.leaves(through_joint[:4]), jax.tree.leaves(through_heads[:4])):
        np.testing.assert_array_equal(a, b)
    masks = joint.get_avail_actions(state)
    assert masks["countries_2"].shape == (81,) and bool(masks["countries_2"].all())
    with pytest.raises(ValueError, match=r"rice-n group 'regions': 57 discrete heads \(57 of 10 levels\) make 1e\+57 joint actions, more than 65536"):
        JaxMARLEnv("rice-n", discrete_actions="joint")
    with pytest.raises(ValueError, match=r"box_actions must be one of \('raw', 'unit'\), got 'scaled'"):
        JaxMARLEnv("ebm-v1", box_actions="scaled")


def test_spaces_are_jaxmarls_own_classes_or_ours_with_its_names(monkeypatch):
    spaces = pytest.importorskip("jaxmarl.environments.spaces")
    view = JaxMARLEnv("invest-esg", discrete_actions="joint")
    assert isinstance(view.action_space("companies_0"), spaces.Box) and isinstance(view.observation_space("investors_0"), spaces.Box)
    assert isinstance(view.action_space("investors_0"), spaces.Discrete) and view.action_space("investors_0").n == 32
    heads = JaxMARLEnv("invest-esg")  # MultiBinary(5) as JaxMARL's MultiDiscrete([2] * 5)
    assert isinstance(heads.action_space("investors_0"), spaces.MultiDiscrete)
    assert heads.action_space("investors_0").num_categories.tolist() == [2] * 5
    assert heads.raw_action_spaces["investors_0"].n == 5
    # without jaxmarl: jaxclimate's classes, with JaxMARL's name for the heads' sizes
    monkeypatch.setattr(jaxmarl_env, "_jaxmarl_spaces", lambda: None)
    own = JaxMARLEnv("climate-mitigation")
    assert isinstance(own.action_space("countries_0"), MultiDiscrete) and own.action_space("countries_0").num_categories.tolist() == [3] * 4
    assert isinstance(JaxMARLEnv("ebm-v1", box_actions="unit").action_space("bands_0"), Box)
    assert isinstance(JaxMARLEnv("climate-mitigation", discrete_actions="joint").action_space("countries_0"), Discrete)


@pytest.mark.parametrize("env_id", registered_envs())
def test_jaxmarls_own_wrappers_run_over_every_environments_view(env_id):
    """JaxMARL's ``get_space_dim`` on every space; its ``LogWrapper`` (and ``MPELogWrapper``)
    vmapped over 2 copies for one episode and a step, the infos reshaped to ``(envs *
    agents,)`` as its IPPO scripts do, and the logged return equal to the rewards' sum; its
    Q-learning ``CTRolloutManager`` where the actions are one categorical."""
    baselines = pytest.importorskip("jaxmarl.wrappers.baselines")
    fits_joint = not env_id.startswith("rice-n")
    view = JaxMARLEnv(env_id, box_actions="unit", discrete_actions="joint" if fits_joint else "heads", infos="per_agent", **short(env_id))
    for agent in view.agents:
        assert baselines.get_space_dim(view.action_space(agent)) >= 1
        assert baselines.get_space_dim(view.observation_space(agent)) == view.observation_space(agent).shape[0]
    length = int(view.params.max_steps)  # RICE-N: its protocol's episode length
    log = baselines.LogWrapper(view)

    def run(key):
        obs, state = jax.vmap(log.reset)(jax.random.split(key, 2))

        def body(state, key):
            k_act, k_step = jax.random.split(key)
            actions = jax.vmap(view.sample_actions)(jax.random.split(k_act, 2))
            obs, state, rewards, dones, info = jax.vmap(log.step)(jax.random.split(k_step, 2), state, actions)
            info = jax.tree.map(lambda x: x.reshape((2 * view.num_agents,)), info)  # as ippo_ff_mpe.py does
            return state, (jnp.stack([rewards[a] for a in view.agents], 1), info)

        return jax.lax.scan(body, state, jax.random.split(key, length + 1))[1]

    rewards, info = jax.jit(run)(jax.random.key(0))
    ended = np.asarray(info["returned_episode"]).reshape(length + 1, 2, view.num_agents)
    np.testing.assert_array_equal(ended.all((1, 2)), (np.arange(length + 1) + 1) % length == 0)
    assert ended.all((1, 2)).tolist() == ended.any((1, 2)).tolist()
    logged = np.asarray(info["returned_episode_returns"]).reshape(length + 1, 2, view.num_agents)[length - 1]
    np.testing.assert_allclose(logged, np.asarray(rewards[:length]).sum(0), rtol=1e-5)
    ending = np.asarray(info["terminated"] | info["truncated"]).reshape(length + 1, 2, view.num_agents)
    np.testing.assert_array_equal(ending, ended)
    if all(isinstance(view.action_space(a), baselines.Discrete) for a in view.agents):
        manager = baselines.CTRolloutManager(view, batch_size=2)
        obs, state = manager.batch_reset(jax.random.key(1))
        actions = {a: manager.batch_sample(jax.random.key(2), a) for a in view.agents}
        obs, state, rewards, dones, _ = manager.batch_step(jax.random.key(3), state, actions)
        assert obs["__all__"].shape[0] == 2 and rewards["__all__"].shape == (2,)


def test_the_recorded_jaxmarl_runs_say_what_the_interfaces_page_says(table_generator):
    """baselines/results/jaxmarl_ippo.json (baselines/jaxmarl_ippo.py) and its table in
    docs/interfaces.md §4.2: the table is the record's, and the record shows what the page
    claims — the discrete script reaches the game's best constant action in scenario i and
    beats random in ii; the continuous one beats random on the unit box and loses to it on the
    raw box; RICE-N and InvestESG run neither."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    generator = table_generator
    assert not generator.stale(generator.INTERFACES_PAGE.read_text(), generator.INTERFACES_TABLES), "run python docs/generate_tables.py"
    rows = json.loads((root / "baselines" / "results" / "jaxmarl_ippo.json").read_text())["rows"]
    ran = {(r["env"], r["script"].rsplit("/", 1)[1], r["view"].get("box_actions", "raw")): r for r in rows if r["status"] == "ran"}
    game_i, game_ii = ran[("climate-mitigation-i", "ippo_ff_mpe.py", "raw")], ran[("climate-mitigation-ii", "ippo_ff_mpe.py", "raw")]
    assert abs(game_i["trained_return"] - game_i["constant_return"]) < 1e-3 * abs(game_i["constant_return"])
    assert game_ii["trained_return"] > 0.5 * game_ii["random_return"] and game_ii["trained_return"] > 1.1 * game_ii["constant_return"]
    for env_id in ("ebm-v1", "ebm-v2-a2"):
        unit = ran[(env_id, "ippo_ff_mabrax.py", "unit")]
        assert unit["trained_return"] > 0.85 * unit["random_return"]
    raw = ran[("ebm-v2-a2", "ippo_ff_mabrax.py", "raw")]
    assert raw["trained_return"] < raw["random_return"]
    assert not any(r["env"].startswith(("rice-n", "invest-esg")) for r in ran.values())
