"""Single-agent jaxclimate environments (``ebm-v1``) as a Gymnasium ``Env`` and ``VectorEnv``.

:class:`GymnasiumEnv` hands out one agent's observation, reward and action without the agent
axis. On the step that ends an episode it returns that step's observation (the JAX
environment's ``info["final_obs"]``) with ``terminated``/``truncated``, and a further ``step``
before ``reset`` is an error.

:class:`GymnasiumVectorEnv` runs ``num_envs`` copies as one ``jax.vmap``ped program and resets
a copy in the step that ends its episode, as the JAX environment does (Gymnasium's
``AutoresetMode.SAME_STEP``): the returned observation is the fresh episode's, and
``infos["final_obs"]`` (an object array, set where ``infos["_final_obs"]``) and
``infos["final_info"]`` hold what the ending step produced. ``infos`` otherwise holds each
copy's step info, batched, with Gymnasium's ``"_key"`` masks.

Both seed a ``jax.random`` key as ``jaxclimate/interfaces/_host.py`` describes; vector copy
``i`` of ``reset(seed=s)`` replays ``GymnasiumEnv.reset(seed=s + i)`` step for step.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.interfaces._host import HostRunner
from jaxclimate.interfaces._layout import MAX_SEED, resolve
from jaxclimate.interfaces.spaces import checked_actions, to_gymnasium


def _single_agent_runner(
    env: str | Environment, params: EnvParams | None, overrides: dict, num_envs: int | None, caller: str
) -> tuple[HostRunner, str]:
    """The runner of an environment with exactly one agent, and its name."""
    env, params, name = resolve(env, params, overrides)
    if sum(env.agents.values()) != 1:
        raise ValueError(
            f"{caller} needs a single-agent environment; {name} has agents {dict(env.agents)} (use jaxclimate.interfaces.PettingZooEnv or JaxMARLEnv)"
        )
    return HostRunner(env, params, num_envs), name


class GymnasiumEnv(gymnasium.Env):
    """A single-agent jaxclimate environment as a Gymnasium ``Env``.

    Args:
        env: a registered id with one agent (default ``"ebm-v1"``) or a built environment.
        params: its parameters (only with a built environment).
        render_mode: must be None (nothing to render).
        **overrides: ``jaxclimate.make`` overrides for an env id.
    """

    metadata = {"render_modes": []}

    def __init__(self, env: str | Environment = "ebm-v1", params: EnvParams | None = None, *, render_mode: str | None = None, **overrides: Any):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (jaxclimate environments have no rendering), got {render_mode!r}")
        self._runner, self._name = _single_agent_runner(env, params, overrides, None, "GymnasiumEnv")
        self._group = self._runner.layout.groups[0]
        self.observation_space = to_gymnasium(self._runner.layout.observation_spaces[self._group])
        self.action_space = to_gymnasium(self._runner.layout.action_spaces[self._group])
        self._over = True

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """``options`` is accepted for the API and ignored (no reset options)."""
        super().reset(seed=seed)
        obs, masks = self._runner.reset(seed, lambda: int(self.np_random.integers(MAX_SEED)))
        self._over = False
        return obs[self._group][0], self._info({}, masks)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._over:
            raise RuntimeError(f"{self._name}: the episode is over (or was never started); call reset()")
        space, action = self._runner.layout.action_spaces[self._group], np.asarray(action)
        if action.shape != space.shape:
            raise ValueError(f"{self._name}.step: the action must have shape {space.shape}, got {action.shape}")
        actions = checked_actions(action[None], space, ["the agent"], f"{self._name}.step")  # the agent axis added
        out = self._runner.step({self._group: actions})
        terminated, truncated = bool(out.terminated), bool(out.truncated)
        self._over = terminated or truncated
        info = self._info(out.info, {} if self._over else out.masks)  # at the end the masks would be the next episode's
        return out.final_obs[self._group][0], float(out.rewards[self._group][0]), terminated, truncated, info

    @property
    def jax_env(self) -> Environment:
        """The JAX environment underneath."""
        return self._runner.env

    def _info(self, info: dict, masks: dict) -> dict:
        info = dict(info)
        if masks:
            info["action_mask"] = masks[self._group][0].astype(np.int8)
        return info

    def __str__(self) -> str:
        return f"GymnasiumEnv<{self._name}>"


class GymnasiumVectorEnv(VectorEnv):
    """``num_envs`` copies of a single-agent jaxclimate environment, stepped as one ``vmap``.

    Args:
        num_envs: the number of copies.
        env, params, **overrides: as :class:`GymnasiumEnv`.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, env: str | Environment = "ebm-v1", params: EnvParams | None = None, **overrides: Any):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self._runner, self._name = _single_agent_runner(env, params, overrides, self.num_envs, "GymnasiumVectorEnv")
        self._group = self._runner.layout.groups[0]
        self.single_observation_space = to_gymnasium(self._runner.layout.observation_spaces[self._group])
        self.single_action_space = to_gymnasium(self._runner.layout.action_spaces[self._group])
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """``seed``: one int (copy ``i`` gets ``seed + i``) or one per copy. ``options`` is ignored."""
        super().reset(seed=seed if isinstance(seed, (int, np.integer)) else None)
        obs, masks = self._runner.reset(seed, lambda: int(self.np_random.integers(MAX_SEED - self.num_envs)))
        return obs[self._group][:, 0], self._masks_info(masks)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        space = self._runner.layout.action_spaces[self._group]
        who = [f"environment {i}" for i in range(self.num_envs)]
        actions = checked_actions(actions, space, who, f"{self._name}.step")
        out = self._runner.step({self._group: actions[:, None]})
        done = out.terminated | out.truncated
        infos = {**_batched(out.info, np.ones(self.num_envs, bool)), **self._masks_info(out.masks)}
        if done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):  # host side, only the copies that ended
                final_obs[i] = out.final_obs[self._group][i, 0]
            infos.update(final_obs=final_obs, _final_obs=done.copy(), final_info=_batched(out.info, done), _final_info=done.copy())
        return out.obs[self._group][:, 0], out.rewards[self._group][:, 0], out.terminated, out.truncated, infos

    @property
    def jax_env(self) -> Environment:
        """The JAX environment underneath."""
        return self._runner.env

    def _masks_info(self, masks: dict) -> dict:
        if not masks:
            return {}
        return {"action_mask": masks[self._group][:, 0].astype(np.int8), "_action_mask": np.ones(self.num_envs, bool)}

    def __str__(self) -> str:
        return f"GymnasiumVectorEnv<{self._name}, {self.num_envs} copies>"


def _batched(info: dict, present: np.ndarray) -> dict:
    """A batched info dict in Gymnasium's vector layout: each entry with its ``"_key"`` mask."""
    out = {}
    for key, value in info.items():
        out[key] = _batched(value, present) if isinstance(value, dict) else value
        out[f"_{key}"] = present.copy()
    return out
