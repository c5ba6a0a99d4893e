"""Tiny environments exercising the API: two agent groups, stochastic reset, termination,
and deliberately broken variants that ``check_env`` must reject."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import Environment, EnvParams, EnvState
from jaxclimate.core.spaces import Box, Discrete


@struct.dataclass
class ToyState(EnvState):
    level: jax.Array  # (3,) one counter per agent: 2 "movers" then 1 "pusher"


@struct.dataclass
class ToyParams(EnvParams):
    max_steps: int = 6
    gain: float = 1.0
    threshold: float = 1e9  # terminate when any level exceeds it

    def validate(self) -> None:
        super().validate()
        struct.check_range("ToyParams", "gain", self.gain, low=0.0)


class ToyEnv(Environment):
    """movers (2 agents, Discrete(3)) add action−1 to their level; the pusher (Box(−1, 1, (2,)))
    adds the sum of its action to its level. Reward = gain × own level."""

    agents = {"movers": 2, "pusher": 1}

    @property
    def default_params(self):
        return ToyParams()

    def observation_space(self, group):
        return Box(-100.0, 100.0, (1,))

    def action_space(self, group):
        return Discrete(3) if group == "movers" else Box(-1.0, 1.0, (2,))

    def reset_env(self, key, params):
        level = jax.random.uniform(key, (3,), minval=-1.0, maxval=1.0)
        state = ToyState(time=jnp.zeros((), jnp.int32), level=level)
        return self._obs(state), state

    def step_env(self, key, state, actions, params):
        delta = jnp.concatenate([actions["movers"].astype(jnp.float32) - 1.0, jnp.sum(actions["pusher"], axis=-1)])
        noise = 0.01 * jax.random.normal(key, (3,))
        level = state.level + params.gain * delta + noise
        new = ToyState(time=state.time + 1, level=level)
        rewards = {"movers": params.gain * level[:2], "pusher": params.gain * level[2:]}
        terminated = jnp.any(level > params.threshold)
        return self._obs(new), new, rewards, terminated, {"level": level}

    def _obs(self, state):
        return {"movers": state.level[:2, None], "pusher": state.level[2:, None]}


class HostRandomEnv(ToyEnv):
    """Draws reset noise from NumPy's global RNG: not a pure function of the key."""

    def reset_env(self, key, params):
        obs, state = super().reset_env(key, params)
        state = state.replace(level=state.level + np.float32(np.random.normal()))
        return self._obs(state), state


class NoTimeEnv(ToyEnv):
    """Forgets to advance ``time``: never truncates."""

    def step_env(self, key, state, actions, params):
        obs, new, rewards, terminated, info = super().step_env(key, state, actions, params)
        return obs, new.replace(time=state.time), rewards, terminated, info


class DtypeDriftEnv(ToyEnv):
    """Advances time as a float, so the state's dtype changes and ``step`` retraces."""

    def step_env(self, key, state, actions, params):
        obs, new, rewards, terminated, info = super().step_env(key, state, actions, params)
        return obs, new.replace(time=state.time + 1.0), rewards, terminated, info


class NanEnv(ToyEnv):
    def _obs(self, state):
        obs = super()._obs(state)
        return {g: jnp.where(state.time > 1, jnp.nan, o) for g, o in obs.items()}


class OutOfSpaceEnv(ToyEnv):
    def observation_space(self, group):
        return Box(-0.5, 0.5, (1,))


class WrongRewardShapeEnv(ToyEnv):
    def step_env(self, key, state, actions, params):
        obs, new, rewards, terminated, info = super().step_env(key, state, actions, params)
        return obs, new, {"movers": rewards["movers"].sum(), "pusher": rewards["pusher"]}, terminated, info
