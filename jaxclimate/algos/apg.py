"""Analytic policy gradients: a policy trained by backpropagating the return through the
environment's differentiable dynamics (Brax's APG; Freeman et al. 2021, "Brax"; the
short-horizon windows and the optional critic are SHAC's, Xu et al. 2022).

Each agent of the environment's (single) group has a deterministic actor
``a = low + (tanh(f_θ(ô)) + 1)/2 · (high − low)`` acting on normalised observations ``ô``
(running mean and variance of what the rollouts saw). An update rolls ``num_envs``
environments ``unroll_length`` steps forward with the current actors and descends

    L(θ) = −(1 / (E·T)) Σ_e Σ_{t<T} γ^t · w · r_t      (w: ``objective``, below)

by the exact gradient ∂L/∂θ through every step's dynamics (``jax.grad`` of the ``lax.scan``),
clipped to global norm ``max_grad_norm``, with Adam. The environment state carries over from
window to window with its gradient stopped (truncated backpropagation: the EBM's 200-step
episode in one window by default; shorter windows bound the gradient's variance and cost on
long or chaotic horizons, see docs/apg.md). Auto-resets inside a window cut the gradient
there (the reset state does not depend on θ).

``objective``: ``"team"`` — every actor follows the gradient of the agents' summed return
(a cooperative planner, closed-loop); ``"own"`` — each actor the gradient of its own return
only, ∂R_i/∂θ_i, the others' actors held fixed (independent learners; one differentiated
rollout per agent). ``share_parameters``: one actor for the whole group (every agent's
copy starts equal and receives the summed gradient, so the copies stay equal), acting on each
agent's own observation.

``critic`` (SHAC's bootstrap): each window's objective adds γ^T·(1 − d_T)·V_φ(s_T)/T, the
value of the state the window ends in, differentiated through that state into θ. V_φ, one per
agent, acts on the normalised observation and the episode's progress t/max_steps (a state's
value depends on the steps left, which observations need not show); after each update it is
fitted to the window's TD(λ) targets (:func:`td_lambda_targets`, in units of their running
mean and variance) by ``critic_iterations`` full-batch Adam steps. docs/apg.md §1.1 measures
when it helps.

Only continuous actions are differentiated: what APG trains is declared on :data:`ALGORITHM`
(one agent group acting in a bounded 1-D ``Box``), and anything else is refused with one line.
Acting (the vectorised environments, their episode statistics) is
:mod:`jaxclimate.algos.acting`'s, shared with the other learners; the networks are
:mod:`jaxclimate.algos.networks`' ``TanhActor`` and ``ValueCritic``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxclimate.algos.acting import VectorEnv, mean_over_finished
from jaxclimate.algos.base import Algorithm, Trainer, is_positive_int, require
from jaxclimate.algos.networks import TanhActor, ValueCritic
from jaxclimate.core import struct

OBJECTIVES = ("team", "own")


@dataclasses.dataclass(frozen=True)
class APGConfig:
    """``total_timesteps`` env steps summed over the ``num_envs`` environments; an update
    differentiates ``unroll_length`` steps of each."""

    total_timesteps: int = 320_000
    num_envs: int = 8
    unroll_length: int = 200
    lr: float = 3e-3
    max_grad_norm: float = 1.0
    gamma: float = 1.0
    hidden_size: int = 64
    objective: str = "team"
    share_parameters: bool = False
    critic: bool = False
    critic_lr: float = 1e-3
    td_lambda: float = 0.95
    critic_iterations: int = 16

    def __post_init__(self) -> None:
        for name in ("total_timesteps", "num_envs", "unroll_length", "hidden_size", "critic_iterations"):
            require(self, is_positive_int(getattr(self, name)), name, "an integer >= 1")
        require(self, self.lr > 0, "lr", "> 0")
        require(self, self.max_grad_norm > 0, "max_grad_norm", "> 0")
        require(self, 0.0 < self.gamma <= 1.0, "gamma", "in (0, 1]")
        require(self, self.objective in OBJECTIVES, "objective", f"one of {OBJECTIVES}")
        require(self, isinstance(self.share_parameters, (bool, np.bool_)), "share_parameters", "a bool")
        require(self, isinstance(self.critic, (bool, np.bool_)), "critic", "a bool")
        require(self, self.critic_lr > 0, "critic_lr", "> 0")
        require(self, 0.0 <= self.td_lambda <= 1.0, "td_lambda", "in [0, 1]")
        require(self, self.total_timesteps >= self.steps_per_update, "total_timesteps", f">= num_envs * unroll_length = {self.steps_per_update}")

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.unroll_length

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.steps_per_update


@struct.dataclass
class ObsNorm:
    """Running mean and variance of the observations, per agent (Chan et al.'s parallel update)."""

    count: jax.Array
    mean: jax.Array
    var: jax.Array

    @classmethod
    def create(cls, n_agents: int, obs_dim: int) -> ObsNorm:
        return cls(jnp.zeros(()), jnp.zeros((n_agents, obs_dim)), jnp.ones((n_agents, obs_dim)))

    def update(self, batch: jax.Array) -> ObsNorm:
        """``batch``: (samples, N, obs_dim)."""
        n = batch.shape[0]
        mean, var = batch.mean(0), batch.var(0)
        total = self.count + n
        delta = mean - self.mean
        new_mean = self.mean + delta * n / total
        m2 = self.var * self.count + var * n + delta**2 * self.count * n / total
        return ObsNorm(total, new_mean, m2 / total)

    def __call__(self, obs: jax.Array) -> jax.Array:
        """(…, N, obs_dim) → normalised, clipped to ±10."""
        return jnp.clip((obs - self.mean) / jnp.sqrt(self.var + 1e-8), -10.0, 10.0)


@struct.dataclass
class APGState:
    actors: Any  # stacked over agents (N, ...)
    opt_state: Any
    norm: ObsNorm
    env_state: Any  # (num_envs,) EpisodeStatsState
    obs: jax.Array  # (num_envs, N, obs_dim)
    rng: jax.Array
    update: jax.Array
    critic: Any = None  # with ``critic``: values stacked over agents, their Adam state, the targets' running statistics
    critic_opt: Any = None
    value_norm: Any = None


def make_trainer(env, env_params, config: APGConfig, recorder: Any = None, rollout_hook: Any = None) -> Trainer:
    """A training run in pieces (see the module docstring and :class:`jaxclimate.algos.base.Trainer`)."""
    ALGORITHM.check(env, recorder, rollout_hook)
    ((group, n_agents),) = env.agents.items()
    space = env.action_space(group)
    obs_dim, act_dim = env.observation_space(group).shape[0], space.shape[0]
    low, high = jnp.asarray(space.low, jnp.float32), jnp.asarray(space.high, jnp.float32)
    actor = TanhActor(act_dim, config.hidden_size)
    optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr))
    shac = ShacCritic(n_agents, obs_dim, config) if config.critic else None
    envs = VectorEnv(env, config.num_envs)
    T = config.unroll_length
    discounts = jnp.asarray(config.gamma ** np.arange(T), jnp.float32)

    def actions_of(actors: Any, norm: ObsNorm, obs: jax.Array) -> jax.Array:
        """(E, N, obs_dim) → (E, N, act_dim) in the box."""
        unit = jax.vmap(actor.apply, in_axes=(0, 1), out_axes=1)(actors, norm(obs))
        return low + (unit + 1.0) * 0.5 * (high - low)

    def init(rng: jax.Array, env_params_: Any = None) -> APGState:
        p = env_params if env_params_ is None else env_params_
        rng, k_env, k_net, k_critic = jax.random.split(rng, 4)
        obs, env_state = envs.reset(k_env, p)
        actors = _stack(actor.init(k_net, jnp.zeros((obs_dim,))), n_agents)  # one start for every agent
        obs = obs[group].astype(jnp.float32)
        state = APGState(
            actors, jax.vmap(optimizer.init)(actors), ObsNorm.create(n_agents, obs_dim).update(obs), env_state, obs, rng, jnp.zeros((), jnp.int32)
        )
        return state if shac is None else state.replace(**shac.init(k_critic))

    def window(actors: Any, state: APGState, start_state: Any, start_obs: jax.Array, key: jax.Array, p: Any):
        """Roll T steps; the per-agent objective (N,) and what the critic and the metrics need."""

        def body(carry, inputs):
            env_state, obs = carry
            key, discount = inputs
            action = actions_of(actors, state.norm, obs)
            before = envs.progress(env_state, p)
            step = envs.step(key, env_state, {group: action}, p)
            next_obs = step.obs[group].astype(jnp.float32)
            out = (step.rewards[group], step.done, step.returns[group], obs, (next_obs, before, envs.progress(step.state, p)))
            return (step.state, next_obs), out

        (env_state, obs), (rewards, done, returns, seen, after) = jax.lax.scan(body, (start_state, start_obs), (jax.random.split(key, T), discounts))
        objective = (discounts[:, None, None] * rewards).mean((0, 1))
        if shac is not None:  # SHAC: the window's end bootstrapped by the critic, differentiated through the final state
            alive = 1.0 - done[-1].astype(jnp.float32)  # (E,)
            tail = config.gamma**T * alive[:, None] * shac.values(state, obs, envs.progress(env_state, p))
            objective = objective + tail.mean(0) / T
        return objective, (env_state, obs, done, returns, seen, jax.lax.stop_gradient((rewards, after)))

    def update(p):
        def body(state: APGState, _):
            rng, key = jax.random.split(state.rng)
            start_state, start_obs = jax.lax.stop_gradient((state.env_state, state.obs))

            def loss(actors):
                per_agent, aux = window(actors, state, start_state, start_obs, key, p)
                if config.objective == "team":
                    return -per_agent.sum(), aux

                def own(i):  # agent i's return, differentiated with respect to its own actor only
                    mine = jax.tree_util.tree_map(lambda x: jnp.where(_agent_is(i, x), x, jax.lax.stop_gradient(x)), actors)
                    return window(mine, state, start_state, start_obs, key, p)[0][i]

                return -jax.vmap(own)(jnp.arange(n_agents)).sum(), aux

            (value, (env_state, obs, done, returns, seen, (rewards, after))), grads = jax.value_and_grad(loss, has_aux=True)(state.actors)
            if config.share_parameters:  # one actor for the group: the gradient of the shared parameters
                grads = jax.tree_util.tree_map(lambda g: jnp.broadcast_to(g.sum(0, keepdims=True), g.shape), grads)
            grad_norm = jax.vmap(optax.global_norm)(grads)
            updates, opt_state = jax.vmap(optimizer.update)(grads, state.opt_state, state.actors)
            metrics = _metrics(done, returns, value, grad_norm)
            new_state = state.replace(actors=optax.apply_updates(state.actors, updates), opt_state=opt_state)
            if shac is not None:  # fitted under the observation statistics the targets were computed with
                new_state, critic_loss = shac.fit(new_state, seen, rewards, done, after)
                metrics["critic_loss"] = jnp.broadcast_to(critic_loss, (n_agents,))
            norm = state.norm.update(seen.reshape(-1, n_agents, obs_dim))
            new_state = new_state.replace(norm=norm, env_state=env_state, obs=obs, rng=rng, update=state.update + 1)
            return new_state, {group: metrics}

        return body

    def run(state: APGState, num_updates: int, hyperparams: Any = None, env_params_: Any = None):
        p = env_params if env_params_ is None else env_params_
        return jax.lax.scan(update(p), state, None, num_updates)

    def act(policy: Any, obs: dict, carry: Any, done: jax.Array, key: jax.Array, deterministic: bool = True, mask: Any = None):
        """The actors' actions for a batch of envs, (B, N, act_dim); deterministic either way."""
        actors, norm = policy
        return {group: actions_of(actors, norm, jnp.asarray(obs[group], jnp.float32))}, carry

    return Trainer(init=init, run=run, act=act, config=config, policy=lambda state: (state.actors, state.norm))


@dataclasses.dataclass(frozen=True)
class ShacCritic:
    """SHAC's value bootstrap for ``n_agents`` actors (see the module docstring): one value
    network per agent on the normalised observation and the episode's progress, its Adam state,
    and the running statistics of its targets, all carried in :class:`APGState`."""

    n_agents: int
    obs_dim: int
    config: APGConfig

    @property
    def network(self) -> ValueCritic:
        return ValueCritic(self.config.hidden_size)

    @property
    def optimizer(self) -> optax.GradientTransformation:
        return optax.adam(self.config.critic_lr)

    def init(self, key: jax.Array) -> dict[str, Any]:
        """The :class:`APGState` fields of a fresh critic."""
        critics = _stack(self.network.init(key, jnp.zeros((self.obs_dim + 1,))), self.n_agents)
        return {"critic": critics, "critic_opt": jax.vmap(self.optimizer.init)(critics), "value_norm": ObsNorm.create(self.n_agents, 1)}

    def inputs(self, norm: ObsNorm, obs: jax.Array, progress: jax.Array) -> jax.Array:
        """(..., N, obs_dim) and the episode's progress t/max_steps (...) → (-1, N, obs_dim + 1):
        the value of a state depends on the steps left, which observations need not show."""
        flat = norm(obs).reshape(-1, self.n_agents, self.obs_dim)
        return jnp.concatenate([flat, jnp.broadcast_to(progress.reshape(-1, 1, 1), (flat.shape[0], self.n_agents, 1))], axis=-1)

    def values(self, state: APGState, obs: jax.Array, progress: jax.Array) -> jax.Array:
        """Each agent's value (..., N), in the returns' units."""
        unit = jax.vmap(self.network.apply, in_axes=(0, 1), out_axes=1)(state.critic, self.inputs(state.norm, obs, progress))
        return (state.value_norm.mean[:, 0] + jnp.sqrt(state.value_norm.var[:, 0] + 1e-8) * unit).reshape(obs.shape[:-1])

    def fit(self, state: APGState, seen: jax.Array, rewards: jax.Array, done: jax.Array, after: Any) -> tuple[APGState, jax.Array]:
        """TD(λ) targets of the window under the current critic, then ``critic_iterations``
        full-batch Adam steps on their squared error (in the targets' normalised units)."""
        config, n = self.config, self.n_agents
        after, progress_before, progress_after = after
        targets = td_lambda_targets(rewards, self.values(state, after, progress_after), done, config.gamma, config.td_lambda)
        value_norm = state.value_norm.update(targets.reshape(-1, n, 1))
        scaled = ((targets - value_norm.mean[:, 0]) / jnp.sqrt(value_norm.var[:, 0] + 1e-8)).reshape(-1, n)
        inputs = self.inputs(state.norm, seen, progress_before)

        def loss(critics):
            return jnp.mean((jax.vmap(self.network.apply, in_axes=(0, 1), out_axes=1)(critics, inputs) - scaled) ** 2)

        def step(carry, _):
            critics, opt = carry
            value, grads = jax.value_and_grad(loss)(critics)
            updates, opt = jax.vmap(self.optimizer.update)(grads, opt, critics)  # each agent's critic its own Adam state
            return (optax.apply_updates(critics, updates), opt), value

        (critics, opt), losses = jax.lax.scan(step, (state.critic, state.critic_opt), None, config.critic_iterations)
        return state.replace(critic=critics, critic_opt=opt, value_norm=value_norm), losses[-1]


def _stack(tree: Any, n: int) -> Any:
    """``tree`` repeated on a new leading axis of ``n`` (one copy per agent)."""
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n, *x.shape)), tree)


def td_lambda_targets(rewards: jax.Array, next_values: jax.Array, done: jax.Array, gamma: float, lam: float) -> jax.Array:
    """TD(λ) returns of a window, (T, E, N): G_t = r_t + γ(1 − d_t)·((1 − λ)·V(s_{t+1}) + λ·G_{t+1}),
    with G_T = V(s_T) (the window's end is bootstrapped; an episode's end is not)."""
    continuing = 1.0 - done.astype(rewards.dtype)[..., None]

    def back(following, step):
        reward, value, cont = step
        target = reward + gamma * cont * ((1.0 - lam) * value + lam * following)
        return target, target

    _, targets = jax.lax.scan(back, next_values[-1], (rewards, next_values, continuing), reverse=True)
    return targets


def _agent_is(i: jax.Array, x: jax.Array) -> jax.Array:
    """Broadcastable mask of agent ``i``'s slice of a parameter stacked on axis 0."""
    return (jnp.arange(x.shape[0]) == i).reshape((-1,) + (1,) * (x.ndim - 1))


def _metrics(done: jax.Array, returns: jax.Array, loss: jax.Array, grad_norm: jax.Array) -> dict:
    """One row per update: each agent's mean return over the episodes that ended in the window
    (NaN if none did), the loss and each actor's gradient norm before clipping."""
    n = grad_norm.shape[0]
    count = done.astype(jnp.float32).sum()  # (T, E) -> episodes ended in the window
    return {"episode_return": mean_over_finished(returns, done), "episodes": count, "loss": jnp.broadcast_to(loss, (n,)), "grad_norm": grad_norm}


ALGORITHM = Algorithm(
    "apg",
    APGConfig,
    make_trainer,
    "analytic policy gradients through the differentiable dynamics (Brax's APG)",
    action_kinds=("box",),
    max_groups=1,
    rollout_extras=False,
    needs="differentiates the return through continuous actions",
)
