"""Probe environments with known optimal returns, for learning tests (able to fail)."""

import jax
import jax.numpy as jnp

from jaxclimate.core import struct
from jaxclimate.core.env import Environment, EnvParams, EnvState
from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete


@struct.dataclass
class CueState(EnvState):
    cue: jax.Array  # int32 in 0..3


class ContextualBandit(Environment):
    """One-step episodes; every group sees a random cue c ∈ {0..3} (one-hot) and must answer:

    * ``"discrete"`` (2 agents, Discrete(4)): +1 for action == c;
    * ``"multi"`` (2 agents, MultiDiscrete([4, 2])): +0.5 for a0 == c, +0.5 for a1 == c % 2;
    * ``"binary"`` (1 agent, MultiBinary(2)): +0.5 per bit equal to the bits of c;
    * ``"continuous"`` (1 agent, Box(-1, 1, (2,))): 1 − mean((a − target(c))²), target
      (c/3 − 0.5, 0.5 − c/3).

    Optimal return 1 for every agent; a policy ignoring the cue gets about 0.25–0.5.
    """

    agents = {"discrete": 2, "multi": 2, "binary": 1, "continuous": 1}

    @property
    def default_params(self):
        return EnvParams(max_steps=100)

    def reset_env(self, key, params):
        cue = jax.random.randint(key, (), 0, 4)
        return self._obs(cue), CueState(time=jnp.zeros((), jnp.int32), cue=cue)

    def _obs(self, cue):
        one_hot = jax.nn.one_hot(cue, 4)
        return {g: jnp.broadcast_to(one_hot, (n, 4)) for g, n in self.agents.items()}

    def step_env(self, key, state, actions, params):
        c = state.cue
        bits = jnp.array([c // 2, c % 2])
        target = jnp.array([c / 3 - 0.5, 0.5 - c / 3])
        rewards = {
            "discrete": (actions["discrete"] == c).astype(jnp.float32),
            "multi": 0.5 * (actions["multi"][:, 0] == c) + 0.5 * (actions["multi"][:, 1] == c % 2),
            "binary": 0.5 * jnp.sum(actions["binary"] == bits, axis=-1),
            "continuous": 1.0 - jnp.mean((actions["continuous"] - target) ** 2, axis=-1),
        }
        new = CueState(time=state.time + 1, cue=c)
        return self._obs(c), new, rewards, jnp.asarray(True), {}

    def observation_space(self, group):
        return Box(0.0, 1.0, (4,))

    def action_space(self, group):
        return {"discrete": Discrete(4), "multi": MultiDiscrete([4, 2]), "binary": MultiBinary(2), "continuous": Box(-1.0, 1.0, (2,))}[group]


class Memory(Environment):
    """Two-step episodes: step 0 shows a cue (one-hot of 2) and pays nothing; step 1 shows
    zeros and pays +1 if the action equals the cue. Memoryless policies average 0.5; a
    recurrent policy can reach 1."""

    agents = {"agents": 1}

    @property
    def default_params(self):
        return EnvParams(max_steps=100)

    def reset_env(self, key, params):
        cue = jax.random.randint(key, (), 0, 2)
        return {"agents": jax.nn.one_hot(cue, 3)[None]}, CueState(time=jnp.zeros((), jnp.int32), cue=cue)

    def step_env(self, key, state, actions, params):
        answer = state.time == 1
        reward = jnp.where(answer, (actions["agents"] == state.cue).astype(jnp.float32), 0.0)
        obs = {"agents": jnp.array([[0.0, 0.0, 1.0]])}  # "answer now", no cue
        return obs, CueState(time=state.time + 1, cue=state.cue), {"agents": reward}, answer, {}

    def observation_space(self, group):
        return Box(0.0, 1.0, (3,))

    def action_space(self, group):
        return Discrete(2)
