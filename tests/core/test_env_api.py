"""The Environment base class: time limit, auto-reset, final_obs, groups; check_env."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.testing import check_env, rollout
from tests.core import toy_envs


def test_toy_env_passes_check_env():
    env = toy_envs.ToyEnv()
    p = env.default_params
    check_env(env, p, params_variants=[p, p.replace(gain=2.0)])


@pytest.mark.parametrize(
    "broken, match",
    [
        (toy_envs.HostRandomEnv, "jit differs from eager|same key gave different"),
        (toy_envs.NoTimeEnv, "no truncation|does not count steps"),
        (toy_envs.DtypeDriftEnv, "traced|retrac|trace"),
        (toy_envs.NanEnv, "non-finite observation"),
        (toy_envs.OutOfSpaceEnv, "observation outside"),
        (toy_envs.WrongRewardShapeEnv, r"rewards\['movers'\] shape"),
    ],
)
def test_check_env_rejects_broken_envs(broken, match):
    with pytest.raises((AssertionError, Exception), match=match):
        check_env(broken())


def test_truncation_and_auto_reset():
    env = toy_envs.ToyEnv()
    params = env.default_params.replace(max_steps=3)
    _, outs = jax.jit(lambda k: rollout(env, params, k, 7))(jax.random.PRNGKey(0))
    assert np.asarray(outs["truncated"]).tolist() == [False, False, True, False, False, True, False]
    assert np.asarray(outs["state"].time).tolist() == [1, 2, 0, 1, 2, 0, 1]
    # final_obs is the pre-reset observation; obs after the reset is a fresh episode's
    final = np.asarray(outs["final_obs"]["movers"])
    obs = np.asarray(outs["obs"]["movers"])
    assert not np.allclose(final[2], obs[2])
    np.testing.assert_array_equal(final[[0, 1, 3, 4]], obs[[0, 1, 3, 4]])


def test_termination_is_reported_and_resets():
    env = toy_envs.ToyEnv()
    params = env.default_params.replace(threshold=1.5, max_steps=100)
    always_up = lambda k, obs: {"movers": jnp.full((2,), 2, jnp.int32), "pusher": jnp.zeros((1, 2))}  # noqa: E731
    _, outs = jax.jit(lambda k: rollout(env, params, k, 4, always_up))(jax.random.PRNGKey(0))
    terminated = np.asarray(outs["terminated"])
    assert terminated.any() and not np.asarray(outs["truncated"]).any()
    first = int(np.argmax(terminated))
    assert int(outs["state"].time[first]) == 0


def test_step_validates_action_groups_and_shapes():
    env = toy_envs.ToyEnv()
    obs, state = env.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="actions must have groups"):
        env.step(jax.random.PRNGKey(0), state, {"movers": jnp.zeros(2, jnp.int32)})
    with pytest.raises(ValueError, match=r"actions\['pusher'\] must have shape \(1, 2\)"):
        env.step(jax.random.PRNGKey(0), state, {"movers": jnp.zeros(2, jnp.int32), "pusher": jnp.zeros(2)})


def test_sample_actions_per_group():
    env = toy_envs.ToyEnv()
    a = env.sample_actions(jax.random.PRNGKey(0))
    assert a["movers"].shape == (2,) and a["pusher"].shape == (1, 2)
    assert bool(jnp.all(jax.vmap(env.action_space("movers").contains)(a["movers"])))


def test_eager_calls_run_one_compiled_program_per_shape():
    """Outside ``jit``, ``reset``/``sample_actions``/``step`` compile once per environment and
    shapes: a second round of calls traces nothing (op by op, the climate game's surrogate scan
    was traced and compiled again at every step: 670 ms a step), and gives what
    ``jax.disable_jit`` gives op by op."""
    env, params = make("climate-mitigation")
    traces = []

    def on_duration(event, duration, **kw):
        if event == "/jax/core/compile/jaxpr_trace_duration":
            traces.append(kw.get("fun_name"))

    def episode_start(key):
        obs, state = env.reset(key, params)
        return env.step(key, state, env.sample_actions(key), params)

    first = episode_start(jax.random.PRNGKey(0))
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        second = episode_start(jax.random.PRNGKey(1))
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)  # not left listening for the worker's other tests
    assert traces == []
    with jax.disable_jit():
        op_by_op = episode_start(jax.random.PRNGKey(1))
    for a, b in zip(jax.tree_util.tree_leaves(second), jax.tree_util.tree_leaves(op_by_op)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(second)))
