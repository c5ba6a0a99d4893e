"""Conformance checks every jaxclimate environment must pass.

``check_env(env, params)`` runs the contract of the environment API and raises
``AssertionError`` with a description of the first violation:

1. determinism: the same key gives the same trajectory;
2. ``jit`` == eager execution;
3. ``vmap`` over keys == a Python loop; ``vmap`` over a batch of parameters == a loop;
4. ``step`` compiles once for repeated calls (fed the states it returns, it is not traced again);
5. observations are finite and inside their spaces; sampled actions are inside theirs and
   are accepted; rewards have shape (n_agents,) per group and are finite;
6. truncation and auto-reset: ``truncated`` fires exactly at ``params.max_steps``, the
   returned state is the reset state, ``info["final_obs"]`` is the pre-reset observation;
7. what ``env.capabilities`` declares is there: the episode metrics by those names, an action
   mask of every group with one row per agent.

Use small ``max_steps`` for environments with long episodes (``params.replace(max_steps=…)``).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.env import Capabilities, Environment, EnvParams
from jaxclimate.core.factored import FactoredBox


def check_env(
    env: Environment,
    params: EnvParams | None = None,
    *,
    params_variants: Sequence[EnvParams] | None = None,
    num_steps: int = 5,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    check_observation_bounds: bool = True,
) -> None:
    """Run all conformance checks (see module docstring). ``params_variants`` (at least two
    different parameter sets) enables the vmap-over-params check."""
    params = env.default_params if params is None else params
    key = jax.random.PRNGKey(seed)
    _check_spaces_and_values(env, params, key, num_steps, check_observation_bounds)
    _check_determinism(env, params, key, num_steps)
    _check_compiles_once(env, params, key)
    _check_jit_matches_eager(env, params, key, num_steps, rtol, atol)
    _check_vmap(env, params, params_variants, key, num_steps, rtol, atol)
    _check_auto_reset(env, params, key, num_steps, rtol, atol)
    _check_capabilities(env, params, key)


def _check_capabilities(env, params, key) -> None:
    """What the environment declares it offers is there (shapes only: nothing runs)."""
    capabilities = env.capabilities
    assert isinstance(capabilities, Capabilities), f"{env.name}: capabilities must be a Capabilities, got {type(capabilities).__name__}"
    _, state = jax.eval_shape(env.reset, key, params)
    names = tuple(jax.eval_shape(env.episode_metrics, state, params))
    assert set(names) == set(capabilities.episode_metrics), f"{env.name}: episode_metrics gives {names}, declared {capabilities.episode_metrics}"
    if capabilities.action_mask:
        for group, n in env.agents.items():
            mask = jax.eval_shape(lambda s, group=group: env.action_mask(group, s, params), state)
            assert mask.shape[0] == n, f"{env.name}: action_mask({group!r}) has shape {mask.shape}, not one row per agent ({n})"


def rollout(env: Environment, params: EnvParams, key: jax.Array, num_steps: int, actions_fn=None):
    """Reset, then ``num_steps`` steps with sampled (or ``actions_fn(key, obs)``) actions in a
    ``lax.scan``. Returns (initial obs, stacked per-step outputs)."""
    actions_fn = (lambda k, obs: env.sample_actions(k)) if actions_fn is None else actions_fn
    key_reset, key_run = jax.random.split(key)
    obs0, state = env.reset(key_reset, params)

    def body(carry, step_key):
        obs, state = carry
        k_act, k_step = jax.random.split(step_key)
        actions = actions_fn(k_act, obs)
        obs, state, rewards, terminated, truncated, info = env.step(k_step, state, actions, params)
        out = dict(obs=obs, actions=actions, rewards=rewards, terminated=terminated, truncated=truncated, final_obs=info["final_obs"], state=state)
        return (obs, state), out

    _, outs = jax.lax.scan(body, (obs0, state), jax.random.split(key_run, num_steps))
    return obs0, outs


# One compiled rollout per (env, num_steps), one step and one reset per env, shared by all
# checks (the env object is static): each check compiles only what no other check has.
# ``Environment.step`` is compiled already; ``_step_jit`` also compiles what a wrapper's own
# ``step`` adds around it, so the compile-once check sees a wrapper's state drifting too.
_rollout_jit = jax.jit(rollout, static_argnums=(0, 3, 4))
_step_jit = jax.jit(lambda env, key, state, actions, params: env.step(key, state, actions, params), static_argnums=0)
_reset_jit = jax.jit(lambda env, key, params: env.reset(key, params), static_argnums=0)
# The auto-reset check's reference: ``step_env`` then ``reset_env`` in one program (run eagerly,
# their ops compiled one by one took most of that check's time; eager execution is checked apart).
_step_env_then_reset_jit = jax.jit(
    lambda env, key_step, state, actions, key_reset, params: (env.step_env(key_step, state, actions, params)[0], env.reset_env(key_reset, params)),
    static_argnums=0,
)


def _assert_trees_close(a: Any, b: Any, rtol: float, atol: float, what: str) -> None:
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b, f"{what}: structures differ ({tree_a} vs {tree_b})"
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol, err_msg=what)


def _check_spaces_and_values(env, params, key, num_steps, check_bounds) -> None:
    obs0, outs = _rollout_jit(env, params, key, num_steps)
    for group, n in env.agents.items():
        obs_space, act_space = env.observation_space(group), env.action_space(group)
        first, rest = obs0[group], outs["obs"][group]
        if isinstance(obs_space, FactoredBox):  # checked in the flat layout it stands for
            _check_factored_shapes(env.name, group, n, obs_space, first, rest)
            first, rest = obs_space.flatten(first), obs_space.flatten(rest)
            obs_space = obs_space.flat_space
        all_obs = np.concatenate([np.asarray(first)[None], np.asarray(rest)])
        assert all_obs.shape[1:] == (n, *obs_space.shape), (
            f"{env.name}: obs[{group!r}] has shape {all_obs.shape[1:]}, expected {(n, *obs_space.shape)}"
        )
        assert np.all(np.isfinite(all_obs)), f"{env.name}: non-finite observation in group {group!r}"
        if check_bounds:
            inside = jax.vmap(jax.vmap(obs_space.contains))(jnp.asarray(all_obs))
            assert bool(jnp.all(inside)), f"{env.name}: observation outside {obs_space} in group {group!r}"
        acts = outs["actions"][group]
        assert bool(jnp.all(jax.vmap(jax.vmap(act_space.contains))(acts))), f"{env.name}: sampled action outside {act_space} in group {group!r}"
        rewards = np.asarray(outs["rewards"][group])
        assert rewards.shape == (num_steps, n), f"{env.name}: rewards[{group!r}] shape {rewards.shape[1:]}, expected {(n,)}"
        assert np.all(np.isfinite(rewards)), f"{env.name}: non-finite reward in group {group!r}"
    assert np.asarray(outs["terminated"]).shape == (num_steps,), f"{env.name}: terminated must be a scalar per step"
    assert np.asarray(outs["truncated"]).shape == (num_steps,), f"{env.name}: truncated must be a scalar per step"


def _check_factored_shapes(name, group, n, space, first, rest) -> None:
    for obs, lead in ((first, ()), (rest, (np.shape(rest.own)[0],))):
        expected = ((*lead, *space.shared.shape), (*lead, n, *space.own.shape))
        got = (tuple(np.shape(obs.shared)), tuple(np.shape(obs.own)))
        assert got == expected, f"{name}: factored obs[{group!r}] (shared, own) shapes {got}, expected {expected}"


def _check_determinism(env, params, key, num_steps) -> None:
    first, second = _rollout_jit(env, params, key, num_steps), _rollout_jit(env, params, key, num_steps)
    _assert_trees_close(first, second, 0.0, 0.0, f"{env.name}: same key gave different trajectories")


def _check_jit_matches_eager(env, params, key, num_steps, rtol, atol) -> None:
    key_reset, key_steps = jax.random.split(key)
    keys = jax.random.split(key_steps, min(num_steps, 3))  # eager execution is slow

    def manual(step_fn, reset_fn):
        obs, state = reset_fn(key_reset, params)
        trajectory = [obs]
        for k in keys:
            actions = env.sample_actions(jax.random.fold_in(k, 1))
            obs, state, rewards, *_ = step_fn(k, state, actions, params)
            trajectory.append((obs, rewards))
        return trajectory, state

    with jax.disable_jit():
        eager = manual(env.step, env.reset)
    jitted = manual(partial(_step_jit, env), partial(_reset_jit, env))
    _assert_trees_close(eager, jitted, rtol, atol, f"{env.name}: jit differs from eager execution")


def _rows(tree: Any, lo: int, hi: int) -> Any:
    return jax.tree_util.tree_map(lambda x: x[lo:hi], tree)


def _check_vmap(env, params, variants, key, num_steps, rtol, atol) -> None:
    """``jit(vmap(rollout))`` over a batch of (key, params) pairs equals the rollouts one by
    one: three keys under ``params``, then (when given) every variant under one key. One
    program batches both, so the check compiles one vmapped rollout, not two."""
    assert variants is None or len(variants) >= 2, "params_variants needs at least two parameter sets"
    keys = list(jax.random.split(key, 3))
    items = [(k, params) for k in keys] + [(key, p) for p in variants or ()]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *items)
    batched = jax.jit(jax.vmap(lambda k, p: _rollout_jit(env, p, k, num_steps)))(*stacked)
    looped = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *[_rollout_jit(env, p, k, num_steps) for k, p in items])
    _assert_trees_close(_rows(batched, 0, 3), _rows(looped, 0, 3), rtol, atol, f"{env.name}: vmap over keys differs from a loop")
    if variants is None:
        return
    by_params = _rows(batched, 3, len(items))
    _assert_trees_close(by_params, _rows(looped, 3, len(items)), rtol, atol, f"{env.name}: vmap over params differs from a loop")
    obs = jax.tree_util.tree_leaves(by_params[1]["obs"])
    assert any(not np.allclose(np.asarray(x[0]), np.asarray(x[1])) for x in obs), (
        f"{env.name}: the first two params_variants gave identical observations; choose variants that matter"
    )


def _check_compiles_once(env, params, key) -> None:
    """``step`` fed the states it returns compiles once: the first call may compile, the next
    ones must find that program (a dtype, shape or weak type drifting between steps retraces).
    Runs before any other check calls ``_step_jit`` on these states."""
    obs, state = _reset_jit(env, key, params)
    sizes = []
    for i in range(3):
        k = jax.random.fold_in(key, i)
        obs, state, *_ = _step_jit(env, k, state, env.sample_actions(k), params)
        sizes.append(_step_jit._cache_size())
    assert sizes[1:] == sizes[:1] * 2, (
        f"{env.name}: step was retraced when fed the state it returned ({sizes[-1] - sizes[0]} more compilations "
        "in two more calls): a state leaf changes dtype, shape or weak type between steps"
    )


def _check_auto_reset(env, params, key, num_steps, rtol, atol) -> None:
    """Run to one step before the limit, then take the last step by hand and compare it with
    ``step_env`` + ``reset_env`` under the key split ``Environment.step`` documents. The
    ``num_steps`` rollout of the other checks is reused when it reaches that step."""
    max_steps = int(np.max(np.asarray(params.max_steps)))
    _, state_prev = _reset_jit(env, key, params)
    if max_steps > 1:
        _, outs = _rollout_jit(env, params, key, max(num_steps, max_steps - 1))
        outs = _rows(outs, 0, max_steps - 1)
        terminated = np.asarray(outs["terminated"])
        if terminated.any():  # the episode ended on its own; the time limit is not reached
            return
        assert not np.asarray(outs["truncated"]).any(), f"{env.name}: truncated before params.max_steps={max_steps}"
        state_prev = jax.tree_util.tree_map(lambda x: x[-1], outs["state"])
        assert int(state_prev.time) == max_steps - 1, f"{env.name}: state.time does not count steps"
    k = jax.random.fold_in(key, 12345)
    actions = env.sample_actions(k)
    obs, state, _, terminated, truncated, info = _step_jit(env, k, state_prev, actions, params)
    assert bool(truncated), f"{env.name}: no truncation at step params.max_steps={max_steps}"
    assert int(state.time) == 0, f"{env.name}: state.time is {int(state.time)} after the auto-reset"
    key_step, key_reset = jax.random.split(k)
    final_obs, (reset_obs, reset_state) = _step_env_then_reset_jit(env, key_step, state_prev, actions, key_reset, params)
    _assert_trees_close(info["final_obs"], final_obs, rtol, atol, f"{env.name}: info['final_obs'] is not the pre-reset obs")
    _assert_trees_close(obs, reset_obs, rtol, atol, f"{env.name}: obs after the time limit is not the reset obs")
    _assert_trees_close(state, reset_state, rtol, atol, f"{env.name}: state after the time limit is not the reset state")
