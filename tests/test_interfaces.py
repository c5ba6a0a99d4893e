"""The interfaces of jaxclimate/interfaces (docs/interfaces.md): PettingZoo, Gymnasium, JaxMARL.

Compilation dominates, so each wrapper is built once per module (``pz``) and every environment
runs with ``max_steps=3`` (and RICE-N with one activity step), so a few cycles reach an
episode's end.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxclimate

pytest.importorskip("pettingzoo")
pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import parallel_api_test  # noqa: E402

from jaxclimate.interfaces import GymnasiumEnv, GymnasiumVectorEnv, JaxMARLEnv, PettingZooEnv  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "interfaces.md"


def overrides(env_id: str) -> dict:
    """Short episodes: three steps (one activity step for RICE-N: it ends by termination at
    step 1 without negotiation, at step 3 with it)."""
    return {"max_steps": 3, **({"num_activity_steps": 1} if env_id.startswith("rice-n") else {})}


@pytest.fixture(scope="module")
def pz():
    """``pz(env_id)``: the module's one PettingZoo wrapper of ``env_id`` (compiled once)."""
    built: dict[str, PettingZooEnv] = {}

    def get(env_id: str) -> PettingZooEnv:
        if env_id not in built:
            built[env_id] = PettingZooEnv(env_id, **overrides(env_id))
        return built[env_id]

    return get


# --- PettingZoo ---------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", jaxclimate.registered_envs())
def test_parallel_api_for_every_registered_environment(pz, env_id):
    """PettingZoo's own API test, with few enough cycles to be quick and enough to end the
    episode (the test stops early once every agent is done); its warnings count as failures.
    Each wrapper traces its reset and its step exactly once."""
    env = pz(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=5)
    assert [str(w.message) for w in caught if "pettingzoo" in w.filename] == []
    assert env.agents == []  # the last episode ended within the cycles
    assert dict(env._runner.traces) == {"reset": 1, "step": 1}
    n_agents = sum(env.jax_env.agents.values())
    assert len(env.possible_agents) == n_agents == len(set(env.possible_agents))


def _random_actions(env: PettingZooEnv, seed: int) -> dict:
    for i, agent in enumerate(env.agents):
        env.action_space(agent).seed(seed + i)
    return {agent: env.action_space(agent).sample() for agent in env.agents}


def test_pettingzoo_replays_the_jax_environment_with_the_documented_key_schedule(pz):
    """InvestESG draws random climate events every step: the wrapper's observations and
    rewards are the JAX environment's under key(seed), split once per reset and step, and the
    episode-ending step hands out that step's observation (not the auto-reset one)."""
    env = pz("invest-esg")
    jax_env, params = jaxclimate.make("invest-esg", max_steps=3)
    step = jax.jit(jax_env.step)
    obs, _ = env.reset(seed=11)
    key, sub = jax.random.split(jax.random.key(11))
    jax_obs, state = jax_env.reset(sub, params)
    np.testing.assert_array_equal(obs["investors_2"], jax_obs["investors"][2])
    for t in range(3):
        actions = _random_actions(env, seed=10 * t)
        grouped = {g: np.stack([actions[f"{g}_{i}"] for i in range(n)]) for g, n in jax_env.agents.items()}
        grouped["investors"] = grouped["investors"].astype(np.int32)
        key, sub = jax.random.split(key)
        _, state, jax_rewards, terminated, truncated, info = step(sub, state, grouped, params)
        obs, rewards, terminations, truncations, _ = env.step(actions)
        for g, n in jax_env.agents.items():
            np.testing.assert_array_equal(np.stack([obs[f"{g}_{i}"] for i in range(n)]), info["final_obs"][g])
            np.testing.assert_allclose([rewards[f"{g}_{i}"] for i in range(n)], jax_rewards[g], rtol=0, atol=0)
        assert set(terminations.values()) == {bool(terminated)} and set(truncations.values()) == {bool(truncated)}
    assert bool(terminated or truncated) and env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step(actions)


def test_seeds_replay_and_differ(pz):
    env = pz("invest-esg")

    def rollout(seed: int) -> list:
        env.reset(seed=seed)
        return [env.step(_random_actions(env, seed=t))[1] for t in range(2)]

    first = rollout(3)
    assert rollout(3) == first
    assert rollout(4) != first
    with pytest.raises(ValueError, match="2\\*\\*32"):
        env.reset(seed=-1)
    with pytest.raises(TypeError, match="integer"):
        env.reset(seed="3")


def test_bad_actions_are_refused_naming_the_agent(pz):
    env = pz("climate-mitigation")  # 4 countries, MultiDiscrete([3, 3, 3, 3])
    env.reset(seed=0)
    good = {agent: np.zeros(4, np.int64) for agent in env.agents}
    with pytest.raises(ValueError, match="no action for agent 'countries_2'"):
        env.step({a: v for a, v in good.items() if a != "countries_2"})
    with pytest.raises(ValueError, match="'countries_1' must have shape \\(4,\\)"):
        env.step({**good, "countries_1": np.zeros(3, np.int64)})
    with pytest.raises(ValueError, match="countries_3 is outside MultiDiscrete"):
        env.step({**good, "countries_3": np.array([0, 3, 0, 0])})
    with pytest.raises(ValueError, match="countries_0 is outside"):
        env.step({**good, "countries_0": np.array([0, 0.5, 0, 0])})
    with pytest.raises(ValueError, match="not live.*countries_9"):
        env.step({**good, "countries_9": np.zeros(4)})
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        env.action_space("nobody")
    obs, *_ = env.step(good)  # nothing above stepped the environment
    assert set(obs) == set(env.possible_agents) and env.jax_state.time == 1


def test_rice_n_action_masks_are_the_reference_layout_and_restrict_sampling(pz):
    """RICE-N with bilateral negotiation: each agent's info["action_mask"] is the reference's
    flat mask of the current state (RiceN.flat_action_mask), and sampling under it (split per
    head, as MultiDiscrete.sample takes it) respects the negotiated minimum mitigation."""
    env = pz("rice-n-bilateral")
    nvec = env.jax_env.nvec
    _, infos = env.reset(seed=0)
    restricted = 0
    while env.agents:
        expected = np.asarray(env.jax_env.flat_action_mask(env.jax_state))
        masks = np.stack([infos[a]["action_mask"] for a in env.agents])
        assert masks.dtype == np.int8 and masks.shape == (27, nvec.sum())
        np.testing.assert_array_equal(masks, expected)
        restricted += int((masks == 0).sum())
        actions = {a: env.action_space(a).sample(mask=tuple(np.split(infos[a]["action_mask"], np.cumsum(nvec)[:-1]))) for a in env.agents}
        for a in env.agents:
            assert all(np.split(infos[a]["action_mask"], np.cumsum(nvec)[:-1])[k][level] for k, level in enumerate(actions[a]))
        _, _, _, _, infos = env.step(actions)
    assert restricted > 0  # the evaluation step set minimum mitigations: the activity step's masks restrict
    assert not any("action_mask" in info for info in infos.values())  # nobody acts after the end


def test_factored_observations_flatten_to_the_flat_layout(pz):
    """RICE-N's factored observation (shared block once, own features per region) reaches
    PettingZoo as the flat vector, equal entry for entry to the flat-layout environment's."""
    flat = pz("rice-n")
    factored = PettingZooEnv("rice-n", observation="factored", **overrides("rice-n"))
    assert factored.observation_space("regions_1") == flat.observation_space("regions_1")
    observations = [flat.reset(seed=0)[0], factored.reset(seed=0)[0]]
    actions = _random_actions(flat, seed=1)
    observations += [flat.step(actions)[0], factored.step(actions)[0]]
    for a in flat.possible_agents:
        np.testing.assert_array_equal(observations[0][a], observations[1][a])
        np.testing.assert_array_equal(observations[2][a], observations[3][a])
    assert observations[2]["regions_26"].shape == flat.observation_space("regions_26").shape == (1043,)


# --- Gymnasium ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gym_env():
    return GymnasiumEnv("ebm-v1", max_steps=4)


def test_gymnasium_env_passes_check_env(gym_env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym_env, skip_render_check=True)
    # the EBM's action box is not [-1, 1] (physical units, docs/ebm.md §3.1): Gymnasium's one advice
    advice = [str(w.message) for w in caught if "gymnasium" in w.filename]
    assert all("symmetric and normalized" in m for m in advice), advice
    assert dict(gym_env._runner.traces) == {"reset": 1, "step": 1}


def test_gymnasium_episode_end_and_errors(gym_env):
    obs, info = gym_env.reset(seed=0)
    assert obs.shape == (96,) and obs.dtype == np.float32 and info == {}
    action = gym_env.action_space.sample()
    ends = [gym_env.step(action)[2:4] for _ in range(4)]
    assert ends == [(False, False)] * 3 + [(False, True)]  # truncated by the time limit
    with pytest.raises(RuntimeError, match="reset"):
        gym_env.step(action)
    gym_env.reset()
    with pytest.raises(ValueError, match="action must have shape \\(195,\\), got \\(10,\\)"):
        gym_env.step(action[:10])
    with pytest.raises(ValueError, match="single-agent.*PettingZooEnv"):
        GymnasiumEnv("invest-esg")


def test_vector_env_is_the_single_env_per_copy_with_same_step_autoreset(gym_env):
    """Copy i of reset(seed=s) replays the single env reset with seed s + i; the step that
    ends the episode returns the fresh episode's observation, the final one in infos."""
    venv = GymnasiumVectorEnv(3, "ebm-v1", max_steps=4)
    assert venv.metadata["autoreset_mode"].name == "SAME_STEP"
    obs, _ = venv.reset(seed=5)
    assert obs.shape == (3, 96) and obs in venv.observation_space
    venv.action_space.seed(0)
    actions = [venv.action_space.sample() for _ in range(4)]
    singles = []
    for i in range(3):
        single_obs, _ = gym_env.reset(seed=5 + i)
        np.testing.assert_array_equal(single_obs, obs[i])
        singles.append([gym_env.step(a[i]) for a in actions])
    for t, a in enumerate(actions):
        obs, rewards, terminations, truncations, infos = venv.step(a)
        np.testing.assert_array_equal(rewards, [s[t][1] for s in singles])
        np.testing.assert_array_equal(truncations, [s[t][3] for s in singles])
        assert not terminations.any() and infos["_profile"].all()
    assert truncations.all() and infos["_final_obs"].all()
    for i in range(3):
        np.testing.assert_array_equal(infos["final_obs"][i], singles[i][-1][0])
    np.testing.assert_array_equal(obs[0], venv.reset(seed=5)[0][0])  # auto-reset to the initial state
    assert dict(venv._runner.traces) == {"reset": 1, "step": 1}


# --- JaxMARL ------------------------------------------------------------------------------------


def test_jaxmarl_view_random_rollout_under_jit_scan_agrees_with_the_environment():
    """A random policy under jit(scan) through the view and, in the same program, the
    jaxclimate step with the same keys and actions: the same observations, rewards and dones,
    across two auto-resets; with ``reset_state`` the next episode starts there."""
    view = JaxMARLEnv("invest-esg", max_steps=3)
    env, params = view.env, view.params

    def rollout(key):
        k_reset, key = jax.random.split(key)
        obs, state = view.reset(k_reset)
        _, env_state = env.reset(k_reset, params)
        marked = state.replace(time=jnp.full_like(state.time, 42))  # a state no step produces

        def body(carry, key):
            state, env_state = carry
            k_act, k_step = jax.random.split(key)
            actions = view.sample_actions(k_act)
            restart = view.step(k_step, state, actions, reset_state=marked)[1]
            obs, state, rewards, dones, infos = view.step(k_step, state, actions)
            env_obs, env_state, env_rewards, term, trunc, _ = env.step(k_step, env_state, env.sample_actions(k_act), params)
            return (state, env_state), (obs, rewards, dones, env_obs, env_rewards, term | trunc, restart.time)

        return obs, jax.lax.scan(body, (state, env_state), jax.random.split(key, 7))[1]

    first_obs, (obs, rewards, dones, env_obs, env_rewards, env_done, restart_time) = jax.jit(rollout)(jax.random.key(0))
    assert set(first_obs) == set(view.agents) and first_obs["companies_0"].shape == view.observation_space("companies_0").shape
    np.testing.assert_array_equal(dones["__all__"], [False, False, True] * 2 + [False])
    np.testing.assert_array_equal(dones["__all__"], env_done)
    for group, names in view.agent_classes.items():
        np.testing.assert_array_equal(jnp.stack([obs[n] for n in names], 1), env_obs[group])
        np.testing.assert_array_equal(jnp.stack([rewards[n] for n in names], 1), env_rewards[group])
        assert all(bool((dones[n] == dones["__all__"]).all()) for n in names)
    # with reset_state, the step that ends an episode continues from the given state
    assert [int(t) for t in restart_time] == [1, 2, 42, 1, 2, 42, 1]


def test_jaxmarl_view_masks_and_errors():
    view = JaxMARLEnv("rice-n-club", regions=[0, 1, 2, 3])
    _, state = view.reset(jax.random.key(0))
    masks = jax.jit(view.get_avail_actions)(state)
    assert masks["regions_3"].dtype == jnp.bool_ and masks["regions_3"].shape == (int(view.env.nvec.sum()),)
    np.testing.assert_array_equal(jnp.stack([masks[a] for a in view.agents]), jax.jit(view.env.flat_action_mask)(state) == 1)
    actions = view.sample_actions(jax.random.key(1))
    with pytest.raises(ValueError, match="no action for agent 'regions_2'"):
        view.step(jax.random.key(2), state, {a: x for a, x in actions.items() if a != "regions_2"})
    with pytest.raises(ValueError, match="unknown agents \\['region_0'\\]"):
        view.step(jax.random.key(2), state, {**actions, "region_0": actions["regions_0"]})
    with pytest.raises(NotImplementedError, match="get_obs"):
        JaxMARLEnv("ebm-v1").get_obs(state)


# --- documentation and packaging ----------------------------------------------------------------


def test_the_documentation_examples_run():
    """Every python block of docs/interfaces.md, in one namespace, as a reader would run them."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 4, "docs/interfaces.md lost its examples"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["observation"].shape == (96,) and namespace["observations"].shape == (8, 96)
    assert set(namespace["obs"]) == {"bands_0", "bands_1"} and namespace["dones"]["__all__"].shape == ()
    assert namespace["total"].shape == () and np.isfinite(namespace["total"])
    # §4.1-4.3: JaxMARL's wrapper over the unit-box view; the three recipes
    assert namespace["action_dim"] == 195 and namespace["obs"]["bands_1"].shape == (4, 96)
    sizes, rice_levels, rice_mask = namespace["sizes"], np.asarray(namespace["levels"]), namespace["mask"]
    assert rice_levels.shape == (14,) and bool((rice_levels < sizes).all())  # no padded level drawn
    assert bool(rice_mask[np.concatenate([[0], np.cumsum(sizes)[:-1]]) + rice_levels].all())  # only allowed levels drawn
    np.testing.assert_allclose(namespace["log_prob"], -np.log(sizes).sum(), rtol=1e-5)  # uniform over each head's levels
    assert set(namespace["esg_rewards"]) == set(namespace["esg"].agents)
    infos = namespace["short_infos"]
    assert bool(infos["truncated"]) and not bool(infos["terminated"])
    assert not np.allclose(infos["final_obs"]["bands_0"], namespace["next_obs"]["bands_0"])  # the returned obs is a new episode's
    assert np.isfinite(namespace["target"])


def test_import_jaxclimate_needs_neither_pettingzoo_nor_gymnasium():
    """Without the extra, jaxclimate and the JAX view import, and the NumPy interfaces say
    which extra they need."""
    code = (
        "import sys; sys.modules['pettingzoo'] = None; sys.modules['gymnasium'] = None\n"
        "import jaxclimate, jaxclimate.interfaces\n"
        "from jaxclimate.interfaces import JaxMARLEnv\n"
        "try:\n    jaxclimate.interfaces.PettingZooEnv\nexcept ImportError as err:\n    print(err)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'pip install "jaxclimate[interfaces]"' in result.stdout


def test_jaxmarl_style_training_code_learns_through_the_view():
    """Training code written against JaxMARL's API alone (agent names, per-agent dicts,
    ``dones["__all__"]``, batchify over agents, vmapped reset/step) learns through the view:
    a softmax policy per agent, trained by REINFORCE on the probe bandit's two discrete agents
    (one-step episodes; +1 for naming the cue, chance 0.25), goes from chance to > 0.9."""
    from tests.algos.probe_envs import ContextualBandit

    probe = ContextualBandit()
    view = JaxMARLEnv(probe, probe.default_params)
    learners = [a for a in view.agents if a.startswith("discrete")]
    n_obs, n_act = view.observation_space(learners[0]).shape[0], view.action_space(learners[0]).n
    batchify = lambda x: jnp.stack([x[a] for a in learners], axis=1)  # noqa: E731  # (envs, learners, ...)

    def episode(weights, key):
        k_reset, k_act, k_others, k_step = jax.random.split(key, 4)
        obs, state = view.reset(k_reset)
        logits = jnp.einsum("lo,loa->la", batchify({a: obs[a][None] for a in learners})[0], weights)
        chosen = jax.random.categorical(k_act, logits)
        actions = {**view.sample_actions(k_others), **{a: chosen[i] for i, a in enumerate(learners)}}
        _, _, rewards, dones, _ = view.step(k_step, state, actions)
        log_prob = jax.nn.log_softmax(logits)[jnp.arange(len(learners)), chosen]
        return batchify({a: rewards[a][None] for a in learners})[0], log_prob, dones["__all__"]

    def update(weights, key):
        def loss(w):
            rewards, log_prob, done = jax.vmap(episode, (None, 0))(w, jax.random.split(key, 64))
            advantage = jax.lax.stop_gradient(rewards - rewards.mean(0))
            return -(advantage * log_prob).mean(), (rewards.mean(), done.all())

        grads, (reward, done) = jax.grad(loss, has_aux=True)(weights)
        return weights - 2.0 * grads, (reward, done)

    weights = jnp.zeros((len(learners), n_obs, n_act))
    _, (rewards, dones) = jax.jit(lambda w, k: jax.lax.scan(update, w, jax.random.split(k, 150)))(weights, jax.random.key(0))
    assert bool(dones.all())  # every episode ended after its one step
    assert float(rewards[:5].mean()) < 0.5 and float(rewards[-10:].mean()) > 0.9, np.asarray(rewards)
