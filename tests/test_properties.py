"""Property tests (Hypothesis) over every environment family's parameters and actions:

* every range a parameter class checks, broken by a drawn value (below, above, at an excluded
  bound, NaN, ±inf), raises ``ValueError`` naming the class, the field and the valid range;
* every in-range action sequence (random, at the action spaces' bounds, or mixed) gives finite
  observations and rewards over a whole episode with the default parameters.

The checked ranges are read from the classes' own ``validate`` (recording the calls it makes
to ``struct.check_range``), so a range added there is tested here without an edit.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jaxclimate import make  # noqa: E402
from jaxclimate.core import struct  # noqa: E402
from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete  # noqa: E402

FAMILIES = ["ebm-v1", "ebm-v3-a6", "climate-mitigation", "rice-n", "invest-esg"]


def checked_ranges(params) -> list[dict]:
    """The ``check_range`` calls ``params.validate()`` makes: owner, field and bounds."""
    calls, real = [], struct.check_range

    def record(owner, name, value, **bounds):
        calls.append(dict(owner=owner, name=name, **bounds))
        return real(owner, name, value, **bounds)

    struct.check_range = record
    try:
        params.validate()
    finally:
        struct.check_range = real
    return [c for c in calls if c.get("low") is not None or c.get("high") is not None]


def _violations(check: dict) -> st.SearchStrategy:
    """Values outside the range ``check`` describes (and the non-finite ones)."""
    bad = [st.just(math.nan), st.just(math.inf), st.just(-math.inf)]
    low, high = check.get("low"), check.get("high")
    if low is not None:
        bad.append(st.floats(max_value=low, exclude_max=check.get("low_inclusive", True), allow_nan=False, allow_infinity=False, min_value=low - 1e6))
    if high is not None:
        bad.append(
            st.floats(min_value=high, exclude_min=check.get("high_inclusive", True), allow_nan=False, allow_infinity=False, max_value=high + 1e6)
        )
    return st.one_of(bad)


@pytest.mark.parametrize("env_id", FAMILIES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_out_of_range_parameter_is_refused_naming_field_and_range(env_id, data):
    _, params = _env(env_id)
    checks = _RANGES.setdefault(env_id, checked_ranges(params))
    assert checks, f"{env_id}: validate() checks no range"
    check = data.draw(st.sampled_from(checks))
    value = data.draw(_violations(check))
    current = np.asarray(getattr(params, check["name"]))
    bad = np.full(current.shape, value, dtype=float) if current.shape else value
    with pytest.raises(ValueError) as error:
        params.replace(**{check["name"]: bad})
    message = str(error.value)
    assert f"{check['owner']}.{check['name']}" in message
    assert ("must be finite" in message) if not math.isfinite(value) else ("must lie in" in message)


_ENVS: dict = {}
_RANGES: dict = {}


def _env(env_id):
    if env_id not in _ENVS:
        _ENVS[env_id] = make(env_id)
    return _ENVS[env_id]


def _action(space, key, mode):
    """One in-range action: random, at the low bound, at the high bound."""
    if isinstance(space, Box):
        low, high = jnp.asarray(space.low, jnp.float32), jnp.asarray(space.high, jnp.float32)
        low, high = jnp.where(jnp.isfinite(low), low, -1e3), jnp.where(jnp.isfinite(high), high, 1e3)
        return {0: space.sample(key), 1: low, 2: high}[mode] if mode < 3 else jnp.where(jax.random.bernoulli(key, 0.5, low.shape), low, high)
    if isinstance(space, Discrete):
        return {0: space.sample(key), 1: jnp.int32(0), 2: jnp.int32(space.n - 1)}.get(mode, space.sample(key))
    if isinstance(space, MultiDiscrete):
        nvec = jnp.asarray(space.nvec)
        return {0: space.sample(key), 1: jnp.zeros_like(nvec), 2: nvec - 1}.get(mode, space.sample(key)).astype(jnp.int32)
    if isinstance(space, MultiBinary):
        return {0: space.sample(key), 1: jnp.zeros(space.shape, jnp.int32), 2: jnp.ones(space.shape, jnp.int32)}.get(mode, space.sample(key))
    raise TypeError(f"no action strategy for {space}")


_EPISODES: dict = {}


def _episode_program(env_id):
    """A whole episode under per-step action modes (0 random, 1 low, 2 high, 3 mixed), compiled once."""
    if env_id not in _EPISODES:
        env, params = _env(env_id)
        steps = int(params.max_steps)

        def episode(key, modes):
            obs, state = env.reset(key, params)

            def body(state, inputs):
                k, mode = inputs
                keys = jax.random.split(k, len(env.agents) + 1)
                actions = {}
                for g_key, (group, n) in zip(keys[1:], env.agents.items()):
                    space = env.action_space(group)
                    per_mode = [jax.vmap(lambda kk, m=m: _action(space, kk, m))(jax.random.split(g_key, n)) for m in range(4)]
                    actions[group] = jnp.stack(per_mode)[mode]
                obs, state, rewards, *_ = env.step(keys[0], state, actions, params)
                finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(jnp.asarray(x, jnp.float32))) for x in jax.tree_util.tree_leaves((obs, rewards))]))
                return state, finite

            return jax.lax.scan(body, state, (jax.random.split(key, steps), modes))[1]

        _EPISODES[env_id] = (jax.jit(episode), steps)
    return _EPISODES[env_id]


@pytest.mark.slow
@pytest.mark.parametrize("env_id", FAMILIES)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), modes=st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_in_range_actions_keep_a_whole_episode_finite(env_id, seed, modes):
    episode, steps = _episode_program(env_id)
    per_step = jnp.asarray((modes * steps)[:steps], jnp.int32)  # the drawn pattern of modes, repeated over the episode
    finite = np.asarray(episode(jax.random.PRNGKey(seed), per_step))
    assert finite.all(), f"{env_id}: non-finite observation or reward at step {int(np.argmin(finite))} (modes {modes}, seed {seed})"
