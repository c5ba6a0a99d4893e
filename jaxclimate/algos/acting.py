"""The acting layer every learner of ``jaxclimate.algos`` shares (as Brax's ``acting.py`` serves
its PPO, SAC and APG), so that no algorithm rebuilds it:

* :class:`VectorEnv` — ``num_envs`` copies of an environment reset and stepped together under
  ``vmap``, with episode statistics (:class:`~jaxclimate.core.wrappers.EpisodeStatistics`:
  each agent's return and the length of the last finished episode), the environment's
  declared episode metrics and action masks (``env.capabilities``); a step returns an
  :class:`EnvStep`;
* :func:`mean_over_finished` — a quantity averaged over the episodes that finished in an
  update (NaN where none did), which every learner reports its returns with;
* :func:`episode_program`, :func:`evaluate_policies`, :func:`evaluate_policy` — the
  evaluation rollout of a trained policy (any :class:`~jaxclimate.algos.base.Trainer`'s
  ``act``), all seeds in one compiled program.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.env import EPISODE_METRICS
from jaxclimate.core.wrappers import EpisodeStatistics


class EnvStep(NamedTuple):
    """One step of :class:`VectorEnv`: the environment's outputs, every leaf with a leading
    axis of ``num_envs``, and what learners read of ``info``."""

    obs: dict  # group -> (E, N, ...)
    state: Any  # (E,) EpisodeStatsState
    rewards: dict  # group -> (E, N)
    terminated: jax.Array  # (E,)
    truncated: jax.Array  # (E,)
    info: dict

    @property
    def done(self) -> jax.Array:
        """The step ended an episode (terminated or truncated), (E,)."""
        return jnp.logical_or(self.terminated, self.truncated)

    @property
    def returns(self) -> dict:
        """Group -> (E, N): each agent's return of the last finished episode (updated on the
        step that ends one)."""
        return self.info["returned_episode_returns"]

    @property
    def lengths(self) -> jax.Array:
        """(E,): the length of the last finished episode."""
        return self.info["returned_episode_length"]

    @property
    def final_obs(self) -> dict:
        """The observation the step reached, also where it ended an episode (then ``obs`` is
        the next episode's first): what a replay buffer stores as s'."""
        return self.info["final_obs"]

    @property
    def episode_metrics(self) -> dict | None:
        """The environment's declared episode metrics of the episode so far (read before an
        auto-reset), or ``None`` where it declares none."""
        return self.info.get(EPISODE_METRICS)


class VectorEnv:
    """``num_envs`` copies of ``env`` with episode statistics, reset and stepped together.

    ``reset(key, params)`` splits ``key`` into one key per environment; so does ``step``;
    ``params`` are shared (``None`` in ``vmap``'s axes), so a learner may ``vmap`` the whole
    over parameter sets."""

    def __init__(self, env: Any, num_envs: int):
        self.env = env
        self.num_envs = num_envs
        self.stats_env = EpisodeStatistics(env)
        capabilities = env.capabilities
        self.masked = capabilities.action_mask
        self.episode_metric_names = capabilities.episode_metrics

    def reset(self, key: jax.Array, params: Any) -> tuple[dict, Any]:
        """``(obs, state)`` of ``num_envs`` fresh episodes."""
        return jax.vmap(self.stats_env.reset, in_axes=(0, None))(jax.random.split(key, self.num_envs), params)

    def step(self, key: jax.Array, state: Any, actions: dict, params: Any) -> EnvStep:
        """Every environment's step under ``actions`` (group -> (E, N, ...))."""
        out = jax.vmap(self.stats_env.step, in_axes=(0, 0, 0, None))(jax.random.split(key, self.num_envs), state, actions, params)
        return EnvStep(*out)

    def action_masks(self, state: Any, params: Any) -> dict[str, jax.Array] | None:
        """Group -> (E, N, *padded logits) allowed choices, or ``None`` where the environment
        declares no action masks."""
        if not self.masked:
            return None
        inner = state.env_state
        return {g: jax.vmap(lambda s, g=g: self.env.action_mask(g, s, params))(inner) for g in self.env.agents}

    @staticmethod
    def time(state: Any) -> jax.Array:
        """(E,): the environments' step counters (``EnvState.time``)."""
        return state.env_state.time

    @staticmethod
    def progress(state: Any, params: Any) -> jax.Array:
        """(E,): each episode's progress t / max_steps."""
        return state.episode_length.astype(jnp.float32) / jnp.asarray(params.max_steps, jnp.float32)


def mean_over_finished(x: jax.Array, finished: jax.Array) -> jax.Array:
    """Mean of x (T, E, ...) over the (T, E) entries where an episode finished; NaN if none did
    (a gap in the curves, not a return of 0, which with negative rewards would read as perfect)."""
    weight = finished.reshape(*finished.shape, *([1] * (x.ndim - finished.ndim))).astype(jnp.float32)
    count = jnp.sum(finished)
    return jnp.where(count > 0, jnp.sum(x.astype(jnp.float32) * weight, axis=(0, 1)) / jnp.maximum(count, 1), jnp.nan)


# --- evaluation rollouts -------------------------------------------------------------------------


def evaluate_policies(env, env_params, trainer, state, key: jax.Array | None = None, deterministic: bool = True) -> list[dict[str, Any]]:
    """One episode of every seed's policy from a reset (deterministic actions by default; action
    masks applied where the env declares them), all seeds in one compiled program: a ``lax.scan``
    over the episode, ``vmap``ped over the seeds of ``state``, with one transfer to the host at
    the end. Returns, per seed, ``actions`` and ``rewards`` per group (T, N, ...) and the step
    ``info`` stacked over time (``final_obs`` dropped), cut after the first step that ends
    the episode."""
    key = jax.random.PRNGKey(0) if key is None else key
    steps = int(np.max(np.asarray(getattr(env_params, "max_steps", 1000))))
    episode = episode_program(env, trainer, steps, deterministic)
    policies = jax.vmap(trainer.policy)(state)
    actions, rewards, info, done = jax.device_get(jax.jit(jax.vmap(episode, in_axes=(0, None, None)))(policies, env_params, key))
    evaluations = []
    for s in range(done.shape[0]):
        ended = np.flatnonzero(done[s])
        length = int(ended[0]) + 1 if ended.size else steps
        cut = lambda tree: jax.tree_util.tree_map(lambda x: x[s, :length], tree)  # noqa: E731
        evaluations.append({"actions": cut(actions), "rewards": cut(rewards), "info": cut(info)})
    return evaluations


def evaluate_policy(env, env_params, trainer, state, seed_index: int = 0, key: jax.Array | None = None, deterministic: bool = True) -> dict[str, Any]:
    """:func:`evaluate_policies` for seed ``seed_index`` alone."""
    one = jax.tree_util.tree_map(lambda x: x[seed_index][None], state)
    return evaluate_policies(env, env_params, trainer, one, key, deterministic)[0]


def episode_program(env, trainer, steps: int, deterministic: bool):
    """``episode(policy, env_params, key)`` -> (actions, rewards, info, done) per step: ``steps``
    steps of one env under one policy, with the key chain of a step-by-step loop (``key, k_act,
    k_step = split(key, 3)``)."""
    masked = env.capabilities.action_mask

    def episode(policy, env_params, key):
        key, k_reset = jax.random.split(key)
        obs, env_state = env.reset(k_reset, env_params)

        def body(carry, _):
            obs, env_state, rnn, first, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            batch = jax.tree_util.tree_map(lambda x: x[None], obs)
            mask = {g: env.action_mask(g, env_state, env_params)[None] for g in env.agents} if masked else None
            actions, rnn = trainer.act(policy, batch, rnn, first, k_act, deterministic=deterministic, mask=mask)
            actions = jax.tree_util.tree_map(lambda x: x[0], actions)
            obs, env_state, rewards, terminated, truncated, info = env.step(k_step, env_state, actions, env_params)
            info = {k: v for k, v in info.items() if k != "final_obs"}
            done = jnp.any(jnp.logical_or(terminated, truncated))
            return (obs, env_state, rnn, jnp.zeros((1,), bool), key), (actions, rewards, info, done)

        carry = (obs, env_state, trainer.initial_carry(1), jnp.ones((1,), bool), key)
        return jax.lax.scan(body, carry, None, length=steps)[1]

    return episode
