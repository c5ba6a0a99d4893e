"""Off-policy actor-critics with federated averaging: DDPG, TD3 and TQC as one compiled
program (FedRAIN-Lite, Nath et al.; reference behaviour in docs/fedrain.md).

Every agent of the environment's (single) group is an independent learner — its own actor,
critic(s), target networks, Adam states and replay buffer — stacked on a leading agent axis
and ``vmap``ped; seeds are ``vmap``ped by the caller. The whole run — acting, storing, updating,
federating — is ``lax.scan`` s under ``jit``:

* step t = 1, 2, …: before ``learning_starts`` actions are uniform in the box; then DDPG/TD3
  act with μ(s) plus Gaussian noise of std ``exploration_noise · (high − low)/2`` per
  dimension, clipped to the box; TQC samples its squashed Gaussian;
* the transition (s, a, r, s′, terminated) goes into the agent's buffer, with s′ the **true**
  final observation at an episode's time limit (``info["final_obs"]``) — never a reset
  observation — and no terminal flag for a time limit (the EBM's episodes are truncated, not
  terminated, so values bootstrap through it);
* from t > ``learning_starts``: one critic update per step on a minibatch drawn with
  replacement; every ``policy_frequency`` steps the actor update(s) and the soft target
  updates (TQC: its critic targets every ``target_network_frequency`` steps);
* FedAvg (``federation_period`` K > 0): after the update at every step t that ends K
  episodes, each agent's actor parameters (with ``average_critics`` also the online critics)
  become the agents' mean; targets, optimiser states and buffers stay local. All agents start
  from identical parameters.

``make_trainer`` follows :class:`jaxclimate.algos.base.Trainer`; ``run`` advances whole
iterations of ``num_steps`` env steps (one metrics row each; the EBM's 200-step episode by
default). ``local_policy(state)`` gives the agents' own actors as they were before the last
averaging round (the paper's "local" evaluation); ``policy(state)`` their current actors (after
a final round, the "global" one).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxclimate.algos.acting import VectorEnv, mean_over_finished
from jaxclimate.algos.base import Algorithm, Trainer, is_positive_int, require, tree_select
from jaxclimate.algos.networks import DeterministicActor, QCritic, SquashedGaussianActor
from jaxclimate.algos.replay import ReplayBuffer
from jaxclimate.core import struct

# --- configurations -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig:
    """Settings shared by the three learners (defaults: FedRAIN-Lite's, tuned on ebm-v1).

    ``total_timesteps`` env steps per environment (the paper: 20k = 100 episodes);
    ``num_steps`` env steps per iteration (one metrics row); ``federation_period`` episodes
    between FedAvg rounds (0: never, "nofed"; 5: "fed05"; 10: "fed10");
    ``independent_agent_keys``: each agent draws its own exploration noise and minibatches
    (the original gave every agent the same seed, hence the same streams)."""

    total_timesteps: int = 20_000
    num_envs: int = 1
    num_steps: int = 200
    learning_starts: int = 1000
    buffer_size: int = 1_000_000
    batch_size: int = 128
    gamma: float = 0.99
    tau: float = 0.005
    policy_frequency: int = 2
    hidden_size: int = 256
    federation_period: int = 0
    average_critics: bool = False
    independent_agent_keys: bool = True

    def __post_init__(self) -> None:
        def need(ok: bool, field: str, rule: str) -> None:
            require(self, ok, field, rule)

        for name in ("total_timesteps", "num_envs", "num_steps", "buffer_size", "batch_size", "policy_frequency", "hidden_size"):
            need(is_positive_int(getattr(self, name)), name, "an integer >= 1")
        need(isinstance(self.learning_starts, (int, np.integer)) and self.learning_starts >= 0, "learning_starts", "an integer >= 0")
        need(
            isinstance(self.federation_period, (int, np.integer)) and self.federation_period >= 0,
            "federation_period",
            "an integer >= 0 (episodes between averaging rounds; 0 = never)",
        )
        need(0.0 <= self.gamma <= 1.0, "gamma", "in [0, 1]")
        need(0.0 < self.tau <= 1.0, "tau", "in (0, 1]")
        need(self.total_timesteps >= self.num_steps, "total_timesteps", f">= num_steps = {self.num_steps}")
        self._check()

    def _check(self) -> None:
        pass

    @property
    def steps_per_update(self) -> int:
        """Env steps (summed over envs) per iteration, the CLI's unit of progress."""
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.num_steps


@dataclasses.dataclass(frozen=True)
class DDPGConfig(OffPolicyConfig):
    """DDPG (Lillicrap et al. 2016) as FedRAIN-Lite tuned it on ebm-v1 (docs/fedrain.md §4)."""

    lr: float = 0.0009465344554592341
    tau: float = 0.021580739259456708
    batch_size: int = 128
    exploration_noise: float = 0.21660831219393845
    policy_frequency: int = 2
    hidden_size: int = 256

    def _check(self) -> None:
        if not self.lr > 0 or not self.exploration_noise >= 0:
            raise ValueError(f"{type(self).__name__}: lr must be > 0 and exploration_noise >= 0, got {self.lr}, {self.exploration_noise}")


@dataclasses.dataclass(frozen=True)
class TD3Config(DDPGConfig):
    """TD3 (Fujimoto et al. 2018) as tuned on ebm-v1; the target action is clipped to each
    dimension's own bounds (the original clipped every dimension to D's)."""

    lr: float = 0.002395456268765495
    tau: float = 0.0020450855446733866
    batch_size: int = 64
    exploration_noise: float = 0.23410902852097729
    policy_noise: float = 0.17557689560926737
    noise_clip: float = 0.8
    policy_frequency: int = 7
    hidden_size: int = 64


@dataclasses.dataclass(frozen=True)
class TQCConfig(OffPolicyConfig):
    """TQC (Kuznetsov et al. 2020) as tuned on ebm-v1. ``quantiles_to_drop`` per critic is
    truncation: the original dropped 0 (no truncation, i.e. SAC with distributional
    critics); 2 is the usual default of public TQC implementations."""

    tau: float = 0.0014226499715389931
    batch_size: int = 64
    n_quantiles: int = 45
    n_critics: int = 5
    quantiles_to_drop: int = 2
    actor_lr: float = 0.004552312446877984
    critic_lr: float = 0.00012318273730838416
    alpha_lr: float = 0.00743322425831632
    policy_frequency: int = 6
    target_network_frequency: int = 8
    hidden_size: int = 64

    def _check(self) -> None:
        if not 0 <= self.quantiles_to_drop < self.n_quantiles:
            raise ValueError(f"TQCConfig.quantiles_to_drop must lie in [0, n_quantiles), got {self.quantiles_to_drop}")
        if self.n_critics < 1 or self.target_network_frequency < 1:
            raise ValueError("TQCConfig.n_critics and target_network_frequency must be >= 1")


# --- learners ---------------------------------------------------------------------------------------


@struct.dataclass
class Learner:
    """One agent's networks and optimiser states (TQC adds ``log_alpha`` and its optimiser)."""

    actor: Any
    critic: Any  # stacked on a leading critic axis (1 for DDPG, 2 for TD3, n for TQC)
    actor_target: Any
    critic_target: Any
    actor_opt: Any
    critic_opt: Any
    log_alpha: Any = None
    alpha_opt: Any = None


def _stack_critics(critic: QCritic, key: jax.Array, n: int, obs: jax.Array, action: jax.Array) -> Any:
    return jax.vmap(lambda k: critic.init(k, obs, action)["params"])(jax.random.split(key, n))


def _q(critic: QCritic, params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
    """Every critic's output for a batch: (critics, batch, outputs)."""
    return jax.vmap(lambda p: critic.apply({"params": p}, obs, action))(params)


def _soft_update(target: Any, online: Any, tau: float) -> Any:
    return jax.tree_util.tree_map(lambda t, o: tau * o + (1.0 - tau) * t, target, online)


class _DeterministicLearner:
    """DDPG (``twin=False``) and TD3 (``twin=True``)."""

    def __init__(self, config: DDPGConfig, obs_dim: int, act_dim: int, scale: jax.Array, offset: jax.Array, low: jax.Array, high: jax.Array):
        self.config, self.twin = config, isinstance(config, TD3Config)
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.scale, self.offset, self.low, self.high = scale, offset, low, high
        self.actor = DeterministicActor(act_dim, config.hidden_size)
        self.critic = QCritic(config.hidden_size)
        self.opt = optax.adam(config.lr)  # PyTorch's Adam: β = (0.9, 0.999), ε = 1e-8

    def init(self, key: jax.Array) -> Learner:
        k_actor, k_critic = jax.random.split(key)
        obs, action = jnp.zeros((1, self.obs_dim)), jnp.zeros((1, self.act_dim))
        actor = self.actor.init(k_actor, obs)["params"]
        critic = _stack_critics(self.critic, k_critic, 2 if self.twin else 1, obs, action)
        return Learner(actor, critic, actor, critic, self.opt.init(actor), self.opt.init(critic))

    def mean_action(self, actor: Any, obs: jax.Array) -> jax.Array:
        return self.actor.apply({"params": actor}, obs) * self.scale + self.offset

    def explore(self, learner: Learner, obs: jax.Array, key: jax.Array) -> jax.Array:
        noise = jax.random.normal(key, (*obs.shape[:-1], self.act_dim)) * self.config.exploration_noise * self.scale
        return jnp.clip(self.mean_action(learner.actor, obs) + noise, self.low, self.high)

    def update(self, learner: Learner, batch: dict, key: jax.Array, do_actor: jax.Array, do_target: jax.Array):
        cfg = self.config
        next_action = self.mean_action(learner.actor_target, batch["next_obs"])
        if self.twin:
            next_action = smoothed_target_action(next_action, key, cfg.policy_noise, cfg.noise_clip, self.scale, self.low, self.high)
        next_q = jnp.min(_q(self.critic, learner.critic_target, batch["next_obs"], next_action)[..., 0], axis=0)
        target = batch["reward"] + cfg.gamma * (1.0 - batch["done"]) * next_q

        def critic_loss(params):
            q = _q(self.critic, params, batch["obs"], batch["action"])[..., 0]  # (critics, batch)
            return jnp.sum(jnp.mean((q - target) ** 2, axis=-1)), q.mean()  # TD3: the critics' losses summed

        (c_loss, q_mean), grads = jax.value_and_grad(critic_loss, has_aux=True)(learner.critic)
        updates, critic_opt = self.opt.update(grads, learner.critic_opt, learner.critic)
        learner = learner.replace(critic=optax.apply_updates(learner.critic, updates), critic_opt=critic_opt)

        def actor_step(learner: Learner) -> tuple[Learner, jax.Array]:
            def actor_loss(params):
                action = self.mean_action(params, batch["obs"])
                critic_one = jax.tree_util.tree_map(lambda p: p[0], learner.critic)  # TD3: through critic 1
                return -jnp.mean(self.critic.apply({"params": critic_one}, batch["obs"], action))

            a_loss, grads = jax.value_and_grad(actor_loss)(learner.actor)
            updates, actor_opt = self.opt.update(grads, learner.actor_opt, learner.actor)
            learner = learner.replace(actor=optax.apply_updates(learner.actor, updates), actor_opt=actor_opt)
            return learner.replace(
                actor_target=_soft_update(learner.actor_target, learner.actor, cfg.tau),
                critic_target=_soft_update(learner.critic_target, learner.critic, cfg.tau),
            ), a_loss

        learner, a_loss = jax.lax.cond(do_actor, actor_step, lambda unchanged: (unchanged, jnp.zeros(())), learner)
        return learner, {"critic_loss": c_loss, "actor_loss": a_loss, "q_value": q_mean}


class _TQCLearner:
    """TQC: a squashed-Gaussian actor, ``n_critics`` quantile critics, automatic entropy tuning."""

    def __init__(self, config: TQCConfig, obs_dim: int, act_dim: int, scale: jax.Array, offset: jax.Array, low: jax.Array, high: jax.Array):
        self.config, self.obs_dim, self.act_dim = config, obs_dim, act_dim
        self.scale, self.offset, self.low, self.high = scale, offset, low, high
        self.actor = SquashedGaussianActor(act_dim, config.hidden_size)
        self.critic = QCritic(config.hidden_size, config.n_quantiles)
        self.actor_opt, self.critic_opt = optax.adam(config.actor_lr), optax.adam(config.critic_lr)
        self.alpha_opt = optax.adam(config.alpha_lr)
        self.target_entropy = -float(act_dim)
        self.taus = (2.0 * jnp.arange(config.n_quantiles) + 1.0) / (2.0 * config.n_quantiles)

    def init(self, key: jax.Array) -> Learner:
        k_actor, k_critic = jax.random.split(key)
        obs, action = jnp.zeros((1, self.obs_dim)), jnp.zeros((1, self.act_dim))
        actor = self.actor.init(k_actor, obs)["params"]
        critic = _stack_critics(self.critic, k_critic, self.config.n_critics, obs, action)
        log_alpha = jnp.zeros(())
        return Learner(
            actor, critic, actor, critic, self.actor_opt.init(actor), self.critic_opt.init(critic), log_alpha, self.alpha_opt.init(log_alpha)
        )

    def sample(self, actor: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean, log_std = self.actor.apply({"params": actor}, obs)
        u = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
        y = jnp.tanh(u)
        log_prob = jnp.sum(
            -0.5 * ((u - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi) - jnp.log(self.scale * (1.0 - y**2) + 1e-6), axis=-1
        )
        return y * self.scale + self.offset, log_prob

    def mean_action(self, actor: Any, obs: jax.Array) -> jax.Array:
        mean, _ = self.actor.apply({"params": actor}, obs)
        return jnp.tanh(mean) * self.scale + self.offset

    def explore(self, learner: Learner, obs: jax.Array, key: jax.Array) -> jax.Array:
        return jnp.clip(self.sample(learner.actor, obs, key)[0], self.low, self.high)

    def update(self, learner: Learner, batch: dict, key: jax.Array, do_actor: jax.Array, do_target: jax.Array):
        cfg = self.config
        k_next, k_actor = jax.random.split(key)
        alpha = jnp.exp(learner.log_alpha)
        next_action, next_log_prob = self.sample(learner.actor, batch["next_obs"], k_next)
        atoms = truncated_atoms(_q(self.critic, learner.critic_target, batch["next_obs"], next_action), cfg.quantiles_to_drop)
        target = batch["reward"][:, None] + cfg.gamma * (1.0 - batch["done"][:, None]) * (atoms - alpha * next_log_prob[:, None])

        def critic_loss(params):
            z = _q(self.critic, params, batch["obs"], batch["action"])  # (critics, batch, quantiles)
            return quantile_huber_loss(z, jax.lax.stop_gradient(target), self.taus), z.mean()

        (c_loss, q_mean), grads = jax.value_and_grad(critic_loss, has_aux=True)(learner.critic)
        updates, critic_opt = self.critic_opt.update(grads, learner.critic_opt, learner.critic)
        learner = learner.replace(critic=optax.apply_updates(learner.critic, updates), critic_opt=critic_opt)

        def actor_round(learner: Learner, k: jax.Array) -> tuple[Learner, tuple[jax.Array, jax.Array]]:
            alpha = jnp.exp(learner.log_alpha)

            def actor_loss(params):
                action, log_prob = self.sample(params, batch["obs"], k)
                z = _q(self.critic, learner.critic, batch["obs"], action)
                return jnp.mean(alpha * log_prob - z.mean(axis=(0, 2))), log_prob

            (a_loss, log_prob), grads = jax.value_and_grad(actor_loss, has_aux=True)(learner.actor)
            updates, actor_opt = self.actor_opt.update(grads, learner.actor_opt, learner.actor)
            learner = learner.replace(actor=optax.apply_updates(learner.actor, updates), actor_opt=actor_opt)
            entropy_gap = jax.lax.stop_gradient(log_prob + self.target_entropy)
            a_grad = jax.grad(lambda la: -jnp.mean(la * entropy_gap))(learner.log_alpha)
            updates, alpha_opt = self.alpha_opt.update(a_grad, learner.alpha_opt, learner.log_alpha)
            return learner.replace(log_alpha=optax.apply_updates(learner.log_alpha, updates), alpha_opt=alpha_opt), (a_loss, -log_prob.mean())

        def actor_step(learner: Learner):
            # policy_frequency consecutive actor and α updates (on this step's minibatch, as CleanRL's SAC)
            learner, (losses, entropies) = jax.lax.scan(actor_round, learner, jax.random.split(k_actor, cfg.policy_frequency))
            return learner, losses.mean()

        learner, a_loss = jax.lax.cond(do_actor, actor_step, lambda unchanged: (unchanged, jnp.zeros(())), learner)
        learner = jax.lax.cond(
            do_target, lambda ln: ln.replace(critic_target=_soft_update(ln.critic_target, ln.critic, cfg.tau)), lambda ln: ln, learner
        )
        return learner, {"critic_loss": c_loss, "actor_loss": a_loss, "q_value": q_mean, "alpha": jnp.exp(learner.log_alpha)}


def deterministic_update_flops(config: DDPGConfig, obs_dim: int, act_dim: int) -> dict[str, float]:
    """Matrix-multiply FLOPs of one DDPG/TD3 agent-step (2 per multiply-add), counted by hand.

    With hidden width H, batch B, n critics (1 for DDPG, 2 for TD3) and per-sample
    multiply-adds of a forward pass ``a = obs·H + H² + H·act`` (actor) and
    ``c = (obs + act)·H + H² + H`` (critic):

    * critic update = a (target actor on s′) + n·(c (target critic) + c (forward) + c (weight
      gradients) + H² + H (input gradients of the two upper layers));
    * actor update = a + c (forward through μ and Q₁) + c (Q₁'s input gradients)
      + a (actor weight gradients) + H² + H·act (actor input gradients, upper layers);
    * acting = a for one observation.

    ``per_agent_step = 2·B·(critic + actor / policy_frequency) + 2·a`` once learning has
    started. The count agrees with XLA's cost analysis of the compiled update to within a few
    per cent (the rest is elementwise: Adam, activations; tested), and it is the work a whole
    training row cannot avoid, whatever the implementation (docs/fedrain.md §9)."""
    H, B = config.hidden_size, config.batch_size
    n = 2 if isinstance(config, TD3Config) else 1
    actor = obs_dim * H + H * H + H * act_dim
    critic = (obs_dim + act_dim) * H + H * H + H
    critic_update = actor + n * (3 * critic + H * H + H)
    actor_update = 2 * actor + 2 * critic + H * H + H * act_dim
    return {
        "critic_update": 2.0 * B * critic_update,
        "actor_update": 2.0 * B * actor_update,
        "act": 2.0 * actor,
        "per_agent_step": 2.0 * B * (critic_update + actor_update / config.policy_frequency) + 2.0 * actor,
    }


def smoothed_target_action(
    action: jax.Array, key: jax.Array, policy_noise: float, noise_clip: float, scale: jax.Array, low: jax.Array, high: jax.Array
) -> jax.Array:
    """TD3's target policy smoothing: μ_targ(s′) + clip(N(0, σ²), −c, c)·scale, clipped to
    **each dimension's own** [low, high] (the original clipped every dimension to the first
    one's bounds, D's [0.55, 0.65], evaluating the target critic at impossible actions)."""
    noise = jnp.clip(jax.random.normal(key, action.shape) * policy_noise, -noise_clip, noise_clip)
    return jnp.clip(action + noise * scale, low, high)


def truncated_atoms(z: jax.Array, drop_per_critic: int) -> jax.Array:
    """TQC's target distribution: every critic's quantiles (critics, batch, quantiles) pooled
    and sorted per sample, the ``drop_per_critic · critics`` largest removed (batch, kept)."""
    critics, batch, _ = z.shape
    pooled = jnp.sort(jnp.moveaxis(z, 0, 1).reshape(batch, -1), axis=-1)
    return pooled[:, : pooled.shape[-1] - drop_per_critic * critics]


def quantile_huber_loss(z: jax.Array, target: jax.Array, taus: jax.Array, kappa: float = 1.0) -> jax.Array:
    """TQC's critic loss: for every critic n, quantile k (fraction τ_k) and target atom j,
    ρ_τ(u) = |τ_k − 1[u < 0]| · Huber_κ(u) / κ with u = target_j − z_nk; mean over batch, atoms,
    quantiles, summed over critics. ``z`` (critics, batch, quantiles), ``target`` (batch, atoms)."""
    u = target[None, :, None, :] - z[..., None]  # (critics, batch, quantiles, atoms)
    huber = jnp.where(jnp.abs(u) <= kappa, 0.5 * u**2, kappa * (jnp.abs(u) - 0.5 * kappa))
    weight = jnp.abs(taus[None, None, :, None] - (u < 0).astype(u.dtype))
    return jnp.sum(jnp.mean(weight * huber / kappa, axis=(1, 2, 3)))


# --- the trainer ------------------------------------------------------------------------------------


@struct.dataclass
class OffPolicyState:
    learners: Learner  # stacked over agents (N, ...)
    buffers: ReplayBuffer  # (N, capacity, ...)
    env_state: Any  # (num_envs,) EpisodeStatsState
    obs: Any  # (num_envs, N, obs_dim)
    local_actor: Any  # the agents' actors before the last averaging round (N, ...)
    rng: jax.Array
    step: jax.Array  # env steps per env so far (int32)
    update: jax.Array  # iterations so far (int32)


def federated_average(params: Any) -> Any:
    """FedAvg with equal weights: every agent's parameters become the agents' mean (leading axis)."""
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(jnp.mean(x, axis=0, keepdims=True), x.shape), params)


def make_trainer(env, env_params, config: OffPolicyConfig, recorder: Any = None, rollout_hook: Any = None) -> Trainer:
    """A training run in pieces (see the module docstring and :class:`jaxclimate.algos.base.Trainer`)."""
    _algorithm_of(config).check(env, recorder, rollout_hook)
    ((group, n_agents),) = env.agents.items()
    space = env.action_space(group)
    period = _federation_period(env, env_params, config)
    obs_dim, act_dim = env.observation_space(group).shape[0], space.shape[0]
    low, high = jnp.asarray(space.low, jnp.float32), jnp.asarray(space.high, jnp.float32)
    scale, offset = (high - low) / 2.0, (high + low) / 2.0
    impl_cls = _TQCLearner if isinstance(config, TQCConfig) else _DeterministicLearner
    impl = impl_cls(config, obs_dim, act_dim, scale, offset, low, high)
    # Gates on "t mod k == 0" read the step index inside an iteration when num_steps is a
    # multiple of k: then they do not depend on the (vmapped) state and stay real branches.
    static_gate = lambda k: config.num_steps % k == 0  # noqa: E731
    target_every = getattr(config, "target_network_frequency", config.policy_frequency)
    capacity = min(config.buffer_size, config.total_timesteps * config.num_envs)
    envs = VectorEnv(env, config.num_envs)
    E = config.num_envs

    def init(rng: jax.Array, env_params_: Any = None) -> OffPolicyState:
        p = env_params if env_params_ is None else env_params_
        rng, k_env, k_net = jax.random.split(rng, 3)
        obs, env_state = envs.reset(k_env, p)
        one = impl.init(k_net)  # identical initial networks for every agent (the federation's common start)
        learners = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n_agents, *jnp.shape(x))), one)
        buffer = ReplayBuffer.create(capacity, obs_dim, act_dim)
        buffers = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n_agents, *x.shape)), buffer)
        return OffPolicyState(
            learners=learners,
            buffers=buffers,
            env_state=env_state,
            obs=obs[group],
            local_actor=learners.actor,
            rng=rng,
            step=jnp.zeros((), jnp.int32),
            update=jnp.zeros((), jnp.int32),
        )

    def agent_keys(key: jax.Array) -> jax.Array:
        keys = jax.random.split(key, n_agents)
        return keys if config.independent_agent_keys else jnp.broadcast_to(keys[0], keys.shape)

    def env_step(p):
        def body(state: OffPolicyState, index: jax.Array):
            t = state.step + 1
            rng, k_act, k_random, k_env, k_sample, k_update = jax.random.split(state.rng, 6)
            obs = jnp.swapaxes(state.obs, 0, 1).astype(jnp.float32)  # (N, E, obs_dim)
            explored = jax.vmap(impl.explore)(state.learners, obs, agent_keys(k_act))
            uniform = jax.vmap(lambda k: jax.random.uniform(k, (E, act_dim), minval=low, maxval=high))(agent_keys(k_random))
            action = jnp.where(t < config.learning_starts, uniform, explored)  # (N, E, act_dim)
            step = envs.step(k_env, state.env_state, {group: jnp.swapaxes(action, 0, 1)}, p)
            next_obs = jnp.swapaxes(step.final_obs[group], 0, 1)  # the true next observation, also at a time limit
            done = jnp.broadcast_to(step.terminated.astype(jnp.float32), (n_agents, E))
            buffers = jax.vmap(ReplayBuffer.add)(state.buffers, obs, action, jnp.swapaxes(step.rewards[group], 0, 1), next_obs, done)
            batch = jax.vmap(ReplayBuffer.sample, in_axes=(0, 0, None))(buffers, agent_keys(k_sample), config.batch_size)
            do_actor = ((index + 1) if static_gate(config.policy_frequency) else t) % config.policy_frequency == 0
            do_target = ((index + 1) if static_gate(target_every) else t) % target_every == 0
            updated, metrics = jax.vmap(impl.update, in_axes=(0, 0, 0, None, None))(state.learners, batch, agent_keys(k_update), do_actor, do_target)
            learning = t > config.learning_starts
            learners = jax.tree_util.tree_map(lambda new, old: jnp.where(learning, new, old), updated, state.learners)
            weights = {"critic": learning, "actor": learning & do_actor}
            new_state = state.replace(learners=learners, buffers=buffers, env_state=step.state, obs=step.obs[group], rng=rng, step=t)
            stats = {"done": step.done, "returns": step.returns[group], "metrics": metrics, "weights": weights}
            return new_state, stats

        return body

    def iteration(p):
        step_body = env_step(p)

        def body(state: OffPolicyState, _):
            state, stats = jax.lax.scan(step_body, state, jnp.arange(config.num_steps))
            state = _federate(state.replace(update=state.update + 1), period, config.average_critics)
            return state, _iteration_metrics(stats, group)

        return body

    def run(state: OffPolicyState, num_updates: int, hyperparams: Any = None, env_params_: Any = None):
        p = env_params if env_params_ is None else env_params_
        return jax.lax.scan(iteration(p), state, None, num_updates)

    def act(actors: Any, obs: dict, carry: Any, done: jax.Array, key: jax.Array, deterministic: bool = True, mask: Any = None):
        """Actions of the agents' actors for a batch of envs, (B, N, act_dim): the deterministic
        action (no exploration noise; TQC's mean) or, ``deterministic=False``, an exploring one."""
        o = jnp.swapaxes(jnp.asarray(obs[group], jnp.float32), 0, 1)  # (N, B, obs_dim)
        if deterministic:
            action = jax.vmap(impl.mean_action)(actors, o)
        else:
            action = jax.vmap(impl.explore)(Learner(actors, None, None, None, None, None), o, agent_keys(key))
        return {group: jnp.swapaxes(jnp.clip(action, low, high), 0, 1)}, carry

    trainer = Trainer(init=init, run=run, act=act, config=config, policy=lambda state: state.learners.actor, initial_carry=lambda batch: None)
    return trainer


def _federation_period(env, env_params, config: OffPolicyConfig) -> int:
    """The federation period in env steps (0: never), or a ``ValueError`` where it does not
    fit the iterations."""
    episode = int(np.max(np.asarray(env_params.max_steps)))
    period = config.federation_period * episode
    if period and period % config.num_steps:
        raise ValueError(
            f"{type(config).__name__}: federation every {config.federation_period} episodes = {period} steps must "
            f"be a multiple of num_steps = {config.num_steps}"
        )
    return period


def _federate(state: OffPolicyState, period: int, average_critics: bool) -> OffPolicyState:
    """FedAvg after the update of the step that ends every K-th episode (``period`` steps; 0:
    never): the agents' actors (and critics, if asked) replaced by their mean; ``local_actor``
    keeps each agent's own actor from before the averaging."""
    if not period:
        return state.replace(local_actor=state.learners.actor)
    federate = state.step % period == 0
    learners = state.learners.replace(actor=tree_select(federate, federated_average(state.learners.actor), state.learners.actor))
    if average_critics:
        learners = learners.replace(critic=tree_select(federate, federated_average(learners.critic), learners.critic))
    return state.replace(learners=learners, local_actor=tree_select(federate, state.learners.actor, state.local_actor))


def _iteration_metrics(stats: dict, group: str) -> dict:
    """One metrics row per iteration: each agent's mean return over the episodes finished in
    it (NaN if none did: a gap, not a return of 0), and the learners' losses averaged over the
    steps that updated them."""
    done = stats["done"]  # (steps, envs)
    out = {"episode_return": mean_over_finished(stats["returns"], done), "episodes": jnp.sum(done.astype(jnp.float32))}
    for name, values in stats["metrics"].items():  # (steps, agents)
        weight = stats["weights"]["actor" if name == "actor_loss" else "critic"].astype(jnp.float32)[:, None]
        out[name] = jnp.sum(values * weight, axis=0) / jnp.maximum(jnp.sum(weight), 1.0)
    return {group: out}


def local_policy(state: OffPolicyState) -> Any:
    """The agents' own actors before the last averaging round (the paper's "local" actors)."""
    return state.local_actor


#: What the three learners train: one agent group in a bounded Box (their actors are continuous).
TRAINS = dict(action_kinds=("box",), max_groups=1, rollout_extras=False, min_budget=lambda config: config.num_steps)

ALGORITHMS = tuple(
    Algorithm(name, config_cls, make_trainer, description, **TRAINS)
    for name, config_cls, description in (
        ("ddpg", DDPGConfig, "DDPG with optional FedAvg of the actors (FedRAIN-Lite's tuned settings)"),
        ("td3", TD3Config, "TD3 with optional FedAvg of the actors (target clipped per dimension)"),
        ("tqc", TQCConfig, "TQC with optional FedAvg of the actors (truncation a parameter)"),
    )
)


def _algorithm_of(config: OffPolicyConfig) -> Algorithm:
    """The learner whose config ``config`` is (the closest class, for a subclass)."""
    for cls in type(config).__mro__:
        for algorithm in ALGORITHMS:
            if algorithm.config_cls is cls:
                return algorithm
    raise TypeError(f"not an off-policy config: {type(config).__name__}")
