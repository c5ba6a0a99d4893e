"""Independent PPO for jaxclimate environments, PureJaxRL style.

``make_train(env, env_params, config)`` returns a pure ``train(rng, hyperparams=None,
env_params=None)``: rollout and update are ``lax.scan``s, so the whole run is one compiled
program, and ``jax.jit(jax.vmap(train))(rngs)`` trains several seeds (or, vmapping
``hyperparams``/``env_params``, several settings) at once. ``make_trainer`` exposes the same
run in pieces — ``init(rng)`` and ``run(runner_state, num_updates)`` — for the CLI, which
trains in compiled chunks under a host loop.

Learners. Each agent group has its own network and action head (built from the group's
action space), so groups with different spaces — continuous companies and binary investors,
say — train side by side. ``share_parameters=False`` (default, the papers' setting) gives
every agent its own parameters and optimiser state, stacked on a leading axis and ``vmap``ped:
they are independent learners (gradient clipping and Adam statistics per agent). With
``share_parameters=True`` one parameter set serves the whole group and each observation gets
a one-hot agent id. Internally a group's data is laid out as (learners L, batch B): L = N,
B = envs (independent) or L = 1, B = envs·N (shared).

Episode boundaries: ``done = terminated or truncated``; nothing is bootstrapped across it
(truncation is treated as termination, as in PureJaxRL). Recurrent carries are reset at the
first step of every episode. Minibatches split the batch axis and keep whole sequences, so
recurrent and feed-forward networks share one update path; a feed-forward network may instead
draw minibatches of ``minibatch_size`` single samples from the whole rollout (Stable-Baselines3's
scheme; the last minibatch holds the remainder, masked by sample weights).

An environment that declares action masks (``env.capabilities.action_mask``;
``action_mask(group, state, params)``, boolean, the padded-logits shape of the head per agent)
has its masked choices get probability 0. One that declares episode metrics
(``env.capabilities.episode_metrics``) gets their mean over the episodes finished in each
update as ``metrics["episode"]``. Acting (the vectorised environments, their episode
statistics) is :mod:`jaxclimate.algos.acting`'s, shared with the other learners.

Rollout options (``lock_in_period``, a ``rollout_hook``): with a lock-in of k, agents query
their policies only when the env's ``time`` is a multiple of k and otherwise repeat the last
raw action, its log-probability and value (those steps stay in the batch). A rollout hook may
override env actions and exclude steps from training (see :class:`RolloutHook`).

Factored observations. A group whose observation space is a
:class:`~jaxclimate.core.factored.FactoredBox` (e.g. ``RiceN(observation="factored")``) keeps
the features its agents share once per environment through the rollout buffer, and the
networks' first layers multiply them once per environment
(:class:`~jaxclimate.algos.networks.FactoredDense`). The policy is the same function of the
flat observation; minibatches then take whole environments (all agents of an env together),
so ``num_minibatches`` must divide ``num_envs``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxclimate.algos.acting import VectorEnv, mean_over_finished
from jaxclimate.algos.base import Algorithm, RolloutHook, Trainer, is_positive_int, require
from jaxclimate.algos.distributions import ActionHead
from jaxclimate.algos.gae import generalized_advantages
from jaxclimate.algos.losses import ppo_loss, standardize
from jaxclimate.algos.networks import ACTIVATIONS, INITIALIZATIONS, NETWORKS, ActorCritic, initial_carry, parameter_role
from jaxclimate.core import struct
from jaxclimate.core.factored import FactoredBox, FactoredObs
from jaxclimate.core.loops import loop_unroll

FLAT_HINT = "the flat layout has no such constraint: observation='flat', --env-set observation=flat on the CLI"

#: Hyper-parameters that may be traced (vmapped over) rather than fixed at compile time.
TRACEABLE = ("lr", "ent_coef", "vf_coef", "clip_eps", "gamma", "gae_lambda")
ADVANTAGE_NORMALIZATIONS = ("minibatch", "batch", "none")


@dataclasses.dataclass(frozen=True)
class IPPOConfig:
    """IPPO settings. ``num_steps`` is the rollout length per update; one update uses
    ``num_envs·num_steps`` env steps. ``total_timesteps`` counts env steps (not agent steps).

    Networks: ``hidden_sizes`` (default two layers of ``hidden_size``) for the actor and the
    critic MLPs, ``layer_norm`` after their last hidden layer, ``initialization``
    ``"orthogonal"`` (gains √2 / 0.01 / 1) or ``"lecun"`` (flax's default).
    Loss and optimiser: ``clip_value_loss``; ``advantage_normalization`` per ``"minibatch"``,
    per ``"batch"`` (per learner, over the whole rollout) or ``"none"``;
    ``separate_optimizers`` gives actor and critic their own Adam and gradient clipping
    (feed-forward networks only). ``minibatch_size`` > 0 (feed-forward only) draws minibatches
    of that many single samples from the rollout instead of ``num_minibatches`` groups of
    whole sequences. ``continuous_actions``: ``"clip"`` a Gaussian sample to the box or
    ``"rescale"`` [−1, 1] onto it first. ``identical_init``: all learners of a group start
    from the same parameters. ``lock_in_period``: see the module docstring.
    ``learning_starts``: (group, env steps) pairs — a group's learners keep their initial
    parameters until that many env steps (per seed) have been collected.
    ``scan_unroll``: steps per iteration of the rollout's scan and of the recurrent network's
    scan over time, 0 (default) for 5 on an accelerator and 1 on the CPU
    (:func:`jaxclimate.core.loops.loop_unroll`): the same arithmetic in fewer loop iterations.
    """

    total_timesteps: int = 100_000
    num_envs: int = 16
    num_steps: int = 35
    update_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    lr: float = 3e-4
    anneal_lr: bool = True
    network: str = "mlp"
    hidden_size: int = 64
    activation: str = "tanh"
    share_parameters: bool = False
    hidden_sizes: tuple[int, ...] = ()
    layer_norm: bool = False
    initialization: str = "orthogonal"
    clip_value_loss: bool = True
    advantage_normalization: str = "minibatch"
    separate_optimizers: bool = False
    minibatch_size: int = 0
    continuous_actions: str = "clip"
    identical_init: bool = False
    lock_in_period: int = 1
    learning_starts: tuple[tuple[str, int], ...] = ()
    scan_unroll: int = 0

    def __post_init__(self) -> None:
        # JSON (config files, the CLI) gives lists and dicts: store hashable tuples.
        object.__setattr__(self, "hidden_sizes", tuple(int(h) for h in self.hidden_sizes))
        starts = self.learning_starts.items() if isinstance(self.learning_starts, dict) else self.learning_starts
        object.__setattr__(self, "learning_starts", tuple((str(g), int(n)) for g, n in starts))

        def need(ok: bool, field: str, rule: str) -> None:
            require(self, ok, field, rule)

        for name in ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches", "hidden_size", "lock_in_period"):
            need(is_positive_int(getattr(self, name)), name, "an integer >= 1")
        need(is_positive_int(self.scan_unroll) or self.scan_unroll == 0, "scan_unroll", "an integer >= 0 (0: by backend)")
        need(0.0 <= self.gamma <= 1.0, "gamma", "in [0, 1]")
        need(0.0 <= self.gae_lambda <= 1.0, "gae_lambda", "in [0, 1]")
        need(self.clip_eps > 0.0, "clip_eps", "> 0")
        need(self.ent_coef >= 0.0, "ent_coef", ">= 0")
        need(self.vf_coef >= 0.0, "vf_coef", ">= 0")
        need(self.max_grad_norm > 0.0, "max_grad_norm", "> 0")
        need(self.lr > 0.0, "lr", "> 0")
        need(self.network in NETWORKS, "network", f"one of {NETWORKS}")
        need(self.activation in ACTIVATIONS, "activation", f"one of {tuple(ACTIVATIONS)}")
        need(all(h >= 1 for h in self.hidden_sizes), "hidden_sizes", "a list of layer widths >= 1 (empty: two of hidden_size)")
        need(self.initialization in INITIALIZATIONS, "initialization", f"one of {INITIALIZATIONS}")
        need(self.advantage_normalization in ADVANTAGE_NORMALIZATIONS, "advantage_normalization", f"one of {ADVANTAGE_NORMALIZATIONS}")
        need(self.continuous_actions in ActionHead.CONTINUOUS_TRANSFORMS, "continuous_actions", f"one of {ActionHead.CONTINUOUS_TRANSFORMS}")
        need(
            isinstance(self.minibatch_size, (int, np.integer)) and self.minibatch_size >= 0,
            "minibatch_size",
            "an integer >= 0 (0: num_minibatches groups of whole sequences)",
        )
        need(
            self.minibatch_size == 0 or self.network == "mlp",
            "minibatch_size",
            "0 for recurrent networks (their minibatches must keep whole sequences)",
        )
        need(
            not self.separate_optimizers or self.network == "mlp",
            "separate_optimizers",
            "False for recurrent networks (actor and critic share the recurrent torso)",
        )
        need(all(n >= 0 for _, n in self.learning_starts), "learning_starts", "(group, env steps >= 0) pairs")
        need(self.total_timesteps >= self.num_envs * self.num_steps, "total_timesteps", f">= num_envs·num_steps = {self.num_envs * self.num_steps}")

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.steps_per_update

    def hyperparams(self) -> dict[str, jax.Array]:
        """The traceable hyper-parameters as float32 scalars (vmap over a stack of these)."""
        return {name: jnp.asarray(getattr(self, name), jnp.float32) for name in TRACEABLE}


@struct.dataclass
class RunnerState:
    params: dict  # group -> parameters stacked over learners (L, ...)
    opt_state: dict
    env_state: Any  # (num_envs,) EpisodeStatsState
    obs: dict  # group -> (num_envs, N, obs_dim)
    done: jax.Array  # (num_envs,) did the previous step end an episode (recurrent resets)
    carry: dict  # group -> recurrent carry (L, B, H)
    recorder: Any  # optional recorder state (see make_trainer)
    rng: jax.Array
    update: jax.Array  # updates done so far (int32)
    hook: Any = None  # optional rollout-hook state
    lock: Any = None  # lock-in: group -> (raw action, log-prob, value) of the last decision


class Transition(NamedTuple):
    obs: jax.Array  # (L, B, d)
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array  # episode ended with this step
    reset: jax.Array  # obs is the first of an episode
    mask: Any
    weight: Any = None  # (L, B) sample weight in the loss, or None (all 1)


class _Group:
    """Static layout of one agent group: learners, batch, network, head."""

    def __init__(self, env, name: str, config: IPPOConfig):
        self.name = name
        self.n = env.agents[name]
        self.shared = config.share_parameters
        self.num_learners = 1 if self.shared else self.n
        self.batch = config.num_envs * (self.n if self.shared else 1)
        self.samples = config.minibatch_size > 0
        if not self.samples and self.batch % config.num_minibatches:
            raise ValueError(
                f"IPPOConfig.num_minibatches ({config.num_minibatches}) must divide the per-learner batch of group "
                f"{name!r} ({self.batch} = num_envs{' × agents' if self.shared else ''})"
            )
        self.head = ActionHead(env.action_space(name), config.continuous_actions)
        obs_space = env.observation_space(name)
        if len(obs_space.shape) != 1:
            raise ValueError(f"IPPO needs flat observations; group {name!r} has shape {obs_space.shape}")
        self.factored = isinstance(obs_space, FactoredBox)
        if self.factored and self.samples:
            raise ValueError(
                f"IPPOConfig.minibatch_size must be 0 for group {name!r}: its observations are factored, so minibatches take whole environments"
                f" ({FLAT_HINT})"
            )
        if self.factored and config.num_envs % config.num_minibatches:
            raise ValueError(
                f"IPPOConfig.num_minibatches ({config.num_minibatches}) must divide num_envs ({config.num_envs}) for "
                f"group {name!r}: its observations are factored, so minibatches take whole environments ({FLAT_HINT})"
            )
        self.obs_dim = obs_space.shape[0] + (self.n if self.shared else 0)
        if self.factored:
            self.shared_dim = obs_space.shared.shape[0]
            self.own_dim = self.obs_dim - self.shared_dim
        self.net = ActorCritic(
            num_outputs=self.head.num_outputs,
            network=config.network,
            hidden_size=config.hidden_size,
            activation=config.activation,
            continuous=self.head.continuous,
            hidden_sizes=config.hidden_sizes,
            layer_norm=config.layer_norm,
            initialization=config.initialization,
            scan_unroll=loop_unroll(config.scan_unroll, 5),
        )
        self.network, self.hidden = config.network, config.hidden_size
        self.identical_init = config.identical_init

    # (E, N, ...) env layout <-> (L, B, ...) learner layout
    def to_learners(self, x: jax.Array) -> jax.Array:
        if self.shared:
            return x.reshape(1, -1, *x.shape[2:])
        return jnp.swapaxes(x, 0, 1)

    def to_env(self, x: jax.Array) -> jax.Array:
        if self.shared:
            return x.reshape(-1, self.n, *x.shape[2:])
        return jnp.swapaxes(x, 0, 1)

    def per_learner(self, x: jax.Array) -> jax.Array:
        """A per-env value (E,) in the learner layout (L, B)."""
        return self.to_learners(jnp.broadcast_to(x[:, None], (x.shape[0], self.n)))

    def observe(self, obs: jax.Array | FactoredObs) -> jax.Array | FactoredObs:
        """Env obs (E, N, d) -> learner obs (L, B, d') (+ one-hot agent id when shared). Factored:
        own features as that, shared (E, Fs) -> (L, E, Fs) (one per env, per learner)."""
        if self.factored:
            shared = obs.shared.astype(jnp.float32)[None]
            shared = shared if self.shared else jnp.broadcast_to(shared, (self.n, *shared.shape[1:]))
            return FactoredObs(shared=shared, own=self._own_with_ids(obs.own))
        return self._own_with_ids(obs)

    def _own_with_ids(self, obs: jax.Array) -> jax.Array:
        obs = obs.astype(jnp.float32)
        if self.shared:
            ids = jnp.broadcast_to(jnp.eye(self.n, dtype=jnp.float32), (obs.shape[0], self.n, self.n))
            obs = jnp.concatenate([obs, ids], axis=-1)
        return self.to_learners(obs)

    def dummy_obs(self) -> jax.Array | FactoredObs:
        """A (1, 1, ·) observation of one agent, for initialising parameters."""
        if self.factored:
            return FactoredObs(jnp.zeros((1, 1, self.shared_dim)), jnp.zeros((1, 1, self.own_dim)))
        return jnp.zeros((1, 1, self.obs_dim))

    def batch_permutation(self, key: jax.Array, num_envs: int) -> tuple[jax.Array, jax.Array]:
        """(batch order, env order) for minibatches: any order of the B rows, or, factored,
        whole environments (the B rows of env e are e·r … e·r + r − 1)."""
        if not self.factored:
            return jax.random.permutation(key, self.batch), None
        envs = jax.random.permutation(key, num_envs)
        per_env = self.batch // num_envs
        return (envs[:, None] * per_env + jnp.arange(per_env)).reshape(-1), envs

    def init_carry(self, batch: int | None = None) -> Any:
        one = initial_carry(self.network, self.hidden, self.batch if batch is None else batch)
        return jax.tree_util.tree_map(lambda c: jnp.broadcast_to(c, (self.num_learners, *c.shape)), one)

    def init_params(self, key: jax.Array) -> Any:
        carry = initial_carry(self.network, self.hidden, 1)
        dummy_obs, dummy_reset = self.dummy_obs(), jnp.zeros((1, 1), bool)
        keys = jax.random.split(key, self.num_learners)
        if self.identical_init:
            keys = jnp.broadcast_to(keys[0], keys.shape)
        return jax.vmap(lambda k: self.net.init(k, carry, dummy_obs, dummy_reset)["params"])(keys)

    def init_lock(self) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Zeros shaped like (raw action, log-prob, value) in the learner layout."""
        shape = (self.num_learners, self.batch)
        action = jnp.zeros((*shape, *self.head.space.shape), jnp.float32 if self.head.continuous else jnp.int32)
        return action, jnp.zeros(shape), jnp.zeros(shape)

    def apply(self, params, carry, obs, resets):
        """One learner: obs (T, B, d), resets (T, B) -> carry, actor out, log_std, value."""
        return self.net.apply({"params": params}, carry, obs, resets)


def _time_axis(obs: Any) -> Any:
    """(L, B, ...) -> (L, 1, B, ...) for every leaf (a flat or a factored observation)."""
    return jax.tree_util.tree_map(lambda x: x[:, None], obs)


def _optimizer(config: IPPOConfig) -> optax.GradientTransformation:
    """Gradient clipping and Adam (ε = 1e-5) per learner; with ``separate_optimizers`` one
    such chain for the actor's and one for the critic's parameters."""

    def chain() -> optax.GradientTransformation:
        return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.scale_by_adam(eps=1e-5))

    if not config.separate_optimizers:
        return chain()
    labels = lambda params: jax.tree_util.tree_map_with_path(lambda path, _: parameter_role(path), params)  # noqa: E731
    return optax.multi_transform({"actor": chain(), "critic": chain()}, labels)


def sample_minibatch_layout(key: jax.Array, n: int, size: int) -> tuple[jax.Array, jax.Array]:
    """Stable-Baselines3's minibatches: a random order of the ``n`` samples cut into
    ⌈n / size⌉ minibatches of ``size``, the last one holding the remainder. Returns the sample
    indices (count, size) and weights (count, size): 1 for real samples, 0 for the slots that
    fill up the last minibatch (they point at sample 0 and count for nothing)."""
    count = math.ceil(n / size)
    slots = count * size
    order = jnp.concatenate([jax.random.permutation(key, n), jnp.zeros((slots - n,), jnp.int32)])
    real = (jnp.arange(slots) < n).astype(jnp.float32)
    return order.reshape(count, size), real.reshape(count, size)


def make_trainer(env, env_params, config: IPPOConfig, recorder: Any = None, rollout_hook: RolloutHook | None = None) -> Trainer:
    """The training run in pieces (see module docstring).

    ``recorder`` (optional) watches every env step inside the compiled rollout:
    ``recorder.init()`` -> state, ``recorder.update(state, key, env_state, info, done)`` ->
    state (``env_state`` is the per-env state *before* the step). Used to keep a bounded
    reservoir of episode trajectories for the policy-consistency replay. ``rollout_hook``
    (optional): see :class:`RolloutHook`.
    """
    ippo = _IPPO(env, env_params, config, recorder, rollout_hook)
    return Trainer(init=ippo.init, run=ippo.run, act=ippo.act, config=config, initial_carry=ippo.initial_carry)


class _IPPO:
    """The pieces of one IPPO run: rollout (:meth:`rollout_step`), per-learner update
    (:func:`_learner_update`), the update step that joins them, and acting for evaluation."""

    def __init__(self, env, env_params, config: IPPOConfig, recorder: Any, rollout_hook: RolloutHook | None):
        ALGORITHM.check(env, recorder, rollout_hook)
        if "episode" in env.agents:
            raise ValueError("IPPO reserves the metrics key 'episode'; an agent group cannot be named so")
        self.groups = [_Group(env, g, config) for g in env.agents]
        unknown = sorted({g for g, _ in config.learning_starts} - set(env.agents))
        if unknown:
            raise ValueError(f"IPPOConfig.learning_starts names groups {unknown}; {env.name} has {sorted(env.agents)}")
        self.learning_starts = dict(config.learning_starts)
        self.env, self.env_params, self.config = env, env_params, config
        self.recorder, self.rollout_hook = recorder, rollout_hook
        self.envs = VectorEnv(env, config.num_envs)
        self.tx = _optimizer(config)
        self.weighted = rollout_hook is not None or config.minibatch_size > 0

    def masks(self, env_state, params) -> dict:
        """Group -> the action masks in the learner layout, or None where the env has none."""
        masks = self.envs.action_masks(env_state, params)
        return {g.name: None if masks is None else g.to_learners(masks[g.name]) for g in self.groups}

    def init(self, rng: jax.Array, env_params_: Any = None) -> RunnerState:
        p = self.env_params if env_params_ is None else env_params_
        groups, E = self.groups, self.config.num_envs
        rng, k_env, k_hook, *k_groups = jax.random.split(rng, 3 + len(groups))
        obs, env_state = self.envs.reset(k_env, p)
        params = {g.name: g.init_params(k) for g, k in zip(groups, k_groups)}
        return RunnerState(
            params=params,
            opt_state={g.name: jax.vmap(self.tx.init)(params[g.name]) for g in groups},
            env_state=env_state,
            obs=obs,
            done=jnp.ones((E,), bool),  # the first observation starts an episode
            carry={g.name: g.init_carry() for g in groups},
            recorder=None if self.recorder is None else self.recorder.init(),
            rng=rng,
            update=jnp.zeros((), jnp.int32),
            hook=None if self.rollout_hook is None else self.rollout_hook.init(k_hook),
            lock={g.name: g.init_lock() for g in groups} if self.config.lock_in_period > 1 else None,
        )

    def policy_step(self, params: dict, obs_env: dict, carry_in: dict, done: jax.Array, key: jax.Array, mask: dict, deterministic: bool = False):
        """Every group's raw action, log-prob and value from the current obs, and the carry."""
        outs, carry = {}, {}
        for g, k in zip(self.groups, jax.random.split(key, len(self.groups))):
            obs = _time_axis(g.observe(obs_env[g.name]))  # (L, 1, B, d)
            resets = g.per_learner(done)[:, None]
            c, out, log_std, value = jax.vmap(g.apply)(params[g.name], carry_in[g.name], obs, resets)
            dist = g.head.distribution(out[:, 0], None if log_std is None else log_std[:, None], mask[g.name])
            action = dist.mode() if deterministic else dist.sample(k)
            outs[g.name] = (jax.tree_util.tree_map(lambda x: x[:, 0], obs), action, dist.log_prob(action), value[:, 0], resets[:, 0])
            carry[g.name] = c
        return outs, carry

    def lock_in(self, outs: dict, lock: dict, time: jax.Array) -> tuple[dict, dict]:
        """Agents decide at times that are multiples of ``lock_in_period``; in between they
        repeat the last decision's raw action, log-prob and value."""
        decide = (time % self.config.lock_in_period) == 0  # (E,)
        new_outs, new_lock = {}, {}
        for g in self.groups:
            obs, action, log_prob, value, resets = outs[g.name]
            now = g.per_learner(decide)
            pick = lambda new, old: jnp.where(now.reshape(*now.shape, *([1] * (new.ndim - 2))), new, old)  # noqa: E731
            kept = tuple(pick(new, old) for new, old in zip((action, log_prob, value), lock[g.name]))
            new_outs[g.name] = (obs, *kept, resets)
            new_lock[g.name] = kept
        return new_outs, new_lock

    def rollout_step(self, rs: RunnerState, p) -> tuple[RunnerState, tuple[dict, dict]]:
        """One step of every env: act, (lock-in, hook), step, record; the transitions per group."""
        E = self.config.num_envs
        rng, k_act, k_env, k_rec, k_hook = jax.random.split(rs.rng, 5)
        mask = self.masks(rs.env_state, p)
        outs, carry = self.policy_step(rs.params, rs.obs, rs.carry, rs.done, k_act, mask)
        lock = rs.lock
        if self.config.lock_in_period > 1:
            outs, lock = self.lock_in(outs, lock, self.envs.time(rs.env_state))
        actions = {g.name: g.to_env(g.head.to_env(outs[g.name][1])) for g in self.groups}
        hook, weight = rs.hook, None
        if self.rollout_hook is not None:
            hook, actions, weight = self.rollout_hook.apply(hook, k_hook, rs.env_state.env_state, actions)
        step = self.envs.step(k_env, rs.env_state, actions, p)
        obs, env_state, rewards, done = step.obs, step.state, step.rewards, step.done
        rec = rs.recorder
        if self.recorder is not None:
            rec = self.recorder.update(rec, k_rec, rs.env_state.env_state, step.info, done)
        transitions = {}
        for g in self.groups:
            o, a, lp, v, reset = outs[g.name]
            w = None if not self.weighted else g.per_learner(jnp.ones((E,)) if weight is None else weight)
            transitions[g.name] = Transition(
                o, a, lp, v, g.to_learners(rewards[g.name].astype(jnp.float32)), g.per_learner(done), reset, mask[g.name], w
            )
        stats = {"returned_episode": done, "returns": step.returns}
        if step.episode_metrics is not None:
            stats["episode_metrics"] = step.episode_metrics
        new = rs.replace(env_state=env_state, obs=obs, done=done, carry=carry, recorder=rec, rng=rng, hook=hook, lock=lock)
        return new, (transitions, stats)

    def update_group(self, g: _Group, rs: RunnerState, carry0: dict, tr: Transition, hp, frac, key) -> tuple[Any, Any, dict]:
        """GAE and the PPO epochs of one group's learners on their trajectories (T, L, B, ...)."""
        config = self.config
        obs = _time_axis(g.observe(rs.obs[g.name]))
        resets = g.per_learner(rs.done)[:, None]
        _, _, _, last_value = jax.vmap(g.apply)(rs.params[g.name], rs.carry[g.name], obs, resets)
        advantages, targets = generalized_advantages(tr.reward, tr.value, tr.done, last_value[:, 0], hp["gamma"], hp["gae_lambda"])
        to_learner_major = lambda x: jnp.swapaxes(x, 0, 1)  # (T, L, ...) -> (L, T, ...)  # noqa: E731
        update = _learner_update(g, config, self.tx, hp, frac)
        new_params, new_opt, losses = jax.vmap(update)(
            rs.params[g.name],
            rs.opt_state[g.name],
            carry0[g.name],
            jax.tree_util.tree_map(to_learner_major, tr),
            to_learner_major(advantages),
            to_learner_major(targets),
            jax.random.split(key, g.num_learners),
        )
        if g.name in self.learning_starts:  # keep the initial parameters until enough data was collected
            started = (rs.update + 1) * config.steps_per_update > self.learning_starts[g.name]
            new_params, new_opt = jax.tree_util.tree_map(
                lambda new, old: jnp.where(started, new, old), (new_params, new_opt), (rs.params[g.name], rs.opt_state[g.name])
            )
        return new_params, new_opt, losses

    def update_step(self, rs: RunnerState, p, hp) -> tuple[RunnerState, dict]:
        """A rollout of ``num_steps`` steps, then every group's update; the metrics of both."""
        config = self.config
        carry0 = rs.carry
        rs, (traj, stats) = jax.lax.scan(lambda r, _: self.rollout_step(r, p), rs, None, config.num_steps, unroll=loop_unroll(config.scan_unroll, 5))
        frac = 1.0 - rs.update.astype(jnp.float32) / config.num_updates
        rng, *keys = jax.random.split(rs.rng, 1 + len(self.groups))
        params, opt_state, metrics = dict(rs.params), dict(rs.opt_state), {}
        finished = stats["returned_episode"]  # (T, E)
        for g, k in zip(self.groups, keys):
            params[g.name], opt_state[g.name], losses = self.update_group(g, rs, carry0, traj[g.name], hp, frac, k)
            metrics[g.name] = dict(
                jax.tree_util.tree_map(jnp.mean, losses),
                episode_return=mean_over_finished(stats["returns"][g.name], finished),
                episodes=jnp.sum(finished),
            )
        if "episode_metrics" in stats:
            metrics["episode"] = jax.tree_util.tree_map(lambda x: mean_over_finished(x, finished), stats["episode_metrics"])
        return rs.replace(params=params, opt_state=opt_state, rng=rng, update=rs.update + 1), metrics

    def run(self, rs: RunnerState, num_updates: int, hyperparams: dict | None = None, env_params_: Any = None):
        """``num_updates`` updates (a ``lax.scan``; ``num_updates`` is static). Metrics have a
        leading axis of length ``num_updates``."""
        hp = self.config.hyperparams() if hyperparams is None else hyperparams
        p = self.env_params if env_params_ is None else env_params_
        return jax.lax.scan(lambda r, _: self.update_step(r, p, hp), rs, None, num_updates)

    def act(self, params: dict, obs: dict, carry: dict, done: jax.Array, key: jax.Array, deterministic: bool = True, mask: dict | None = None):
        """Actions of the trained policy for a batch of envs (for evaluation roll-outs; every
        step queries the policy). ``mask`` (optional): group -> env-layout action masks
        (envs, N, *head shape)."""
        mask = {g.name: None if mask is None or mask.get(g.name) is None else g.to_learners(mask[g.name]) for g in self.groups}
        outs, carry = self.policy_step(params, obs, carry, done, key, mask, deterministic)
        return {g.name: g.to_env(g.head.to_env(outs[g.name][1])) for g in self.groups}, carry

    def initial_carry(self, batch: int) -> dict:
        """Zero recurrent carries for ``batch`` environments (independent learners; a shared
        group's carry is per agent row, so ``batch`` envs hold ``batch·N`` rows)."""
        return {g.name: g.init_carry(batch * (g.n if g.shared else 1)) for g in self.groups}


def _learner_update(g: _Group, config: IPPOConfig, tx: optax.GradientTransformation, hp, frac):
    """``update(params, opt_state, carry0, tr, advantages, targets, key)``: the PPO epochs of
    one learner on its trajectory slice (T, B, ...)."""

    def loss_fn(params, carry0, tr: Transition, advantages, targets):
        _, out, log_std, value = g.apply(params, carry0, tr.obs, tr.reset)
        dist = g.head.distribution(out, None if log_std is None else log_std, tr.mask)
        return ppo_loss(
            dist.log_prob(tr.action),
            tr.log_prob,
            advantages,
            value,
            tr.value,
            targets,
            dist.entropy(),
            hp["clip_eps"],
            hp["vf_coef"],
            hp["ent_coef"],
            config.advantage_normalization == "minibatch",
            config.clip_value_loss,
            tr.weight,
        )

    def update(params, opt_state, carry0, tr: Transition, advantages, targets, key):
        lr = hp["lr"] * (frac if config.anneal_lr else 1.0)
        if config.advantage_normalization == "batch":
            advantages = standardize(advantages, tr.weight)
        minibatches = _sample_minibatches if g.samples else _sequence_minibatches

        def epoch(state, k):
            def minibatch(state, batch):
                params, opt_state = state
                (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, *batch)
                updates, opt_state = tx.update(grads, opt_state, params)
                params = optax.apply_updates(params, jax.tree_util.tree_map(lambda u: -lr * u, updates))
                return (params, opt_state), dict(aux, loss=loss)

            return jax.lax.scan(minibatch, state, minibatches(g, config, k, carry0, tr, advantages, targets))

        (params, opt_state), losses = jax.lax.scan(epoch, (params, opt_state), jax.random.split(key, config.update_epochs))
        return params, opt_state, jax.tree_util.tree_map(jnp.mean, losses)

    return update


def _sequence_minibatches(g: _Group, config: IPPOConfig, k, carry0, tr: Transition, advantages, targets):
    """num_minibatches groups of whole sequences (batch rows; whole envs if factored)."""
    perm, env_perm = g.batch_permutation(k, config.num_envs)

    def split(x, axis, order=perm):  # batch axis -> (minibatches, ..., mb, ...)
        x = jnp.take(x, order, axis=axis)
        mb = x.shape[axis] // config.num_minibatches
        x = jnp.moveaxis(x, axis, 0).reshape(config.num_minibatches, mb, *x.shape[:axis], *x.shape[axis + 1 :])
        return jnp.moveaxis(x, 1, axis + 1)

    tr_split = jax.tree_util.tree_map(lambda x: split(x, 1), tr._replace(obs=None))
    if g.factored:  # the shared features travel with their environments
        obs = FactoredObs(shared=split(tr.obs.shared, 1, env_perm), own=split(tr.obs.own, 1))
    else:
        obs = split(tr.obs, 1)
    return (jax.tree_util.tree_map(lambda x: split(x, 0), carry0), tr_split._replace(obs=obs), split(advantages, 1), split(targets, 1))


def _sample_minibatches(g: _Group, config: IPPOConfig, k, carry0, tr: Transition, advantages, targets):
    """Minibatches of ``minibatch_size`` single samples (feed-forward networks only)."""
    n = config.num_steps * g.batch
    order, real = sample_minibatch_layout(k, n, config.minibatch_size)
    count = order.shape[0]

    def split(x):  # (T, B, ...) -> (count, 1, minibatch_size, ...)
        return x.reshape(n, *x.shape[2:])[order][:, None]

    parts = jax.tree_util.tree_map(split, tr)
    parts = parts._replace(weight=split(tr.weight) * real[:, None])
    mlp_carry = jax.tree_util.tree_map(lambda c: jnp.broadcast_to(c[:1], (count, config.minibatch_size, *c.shape[1:])), carry0)
    return mlp_carry, parts, split(advantages), split(targets)


def make_train(env, env_params, config: IPPOConfig, recorder: Any = None, rollout_hook: RolloutHook | None = None) -> Callable[..., dict]:
    """``train(rng, hyperparams=None, env_params=None) -> {"runner_state", "metrics"}``:
    the whole run (``config.num_updates`` updates) as one pure function."""
    trainer = make_trainer(env, env_params, config, recorder, rollout_hook)

    def train(rng: jax.Array, hyperparams: dict | None = None, env_params_: Any = None) -> dict:
        rs = trainer.init(rng, env_params_)
        rs, metrics = trainer.run(rs, config.num_updates, hyperparams, env_params_)
        return {"runner_state": rs, "metrics": metrics}

    return train


ALGORITHM = Algorithm(
    "ippo", IPPOConfig, make_trainer, "independent PPO (PureJaxRL style): one learner per agent, any action space", factored_observations=True
)
