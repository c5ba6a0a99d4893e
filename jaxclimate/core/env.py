"""The environment API every jaxclimate environment implements.

Functional like gymnax, multi-agent like JaxMARL, with agents on a leading array axis:

* ``env.reset(key, params) -> (obs, state)``
* ``env.step(key, state, actions, params) -> (obs, state, rewards, terminated, truncated, info)``

``obs``, ``actions`` and ``rewards`` are dicts keyed by agent-group name; each value is an
array with that group's agents on axis 0 (``(n_agents, *space.shape)`` for observations and
actions, ``(n_agents,)`` for rewards). ``terminated`` and ``truncated`` are scalar booleans:
all agents of an environment share one episode.

Environments implement ``reset_env`` and ``step_env``; ``step`` adds the time limit
(``truncated`` once ``state.time >= params.max_steps``) and the automatic reset. After an
auto-reset the returned ``obs``/``state`` are the fresh episode's, and
``info["final_obs"]`` holds the observation of the step that ended the episode (what a
replay buffer or a value bootstrap needs).

What an environment offers beyond this API it declares in ``env.capabilities``
(:class:`Capabilities`: action masks, episode metrics, parameter uncertainties, host
callbacks), so that learners, reports and the CLI read it there instead of probing for
attributes or keys. Where it declares episode metrics, ``step`` adds them to ``info`` under
:data:`EPISODE_METRICS`, read from the state that ended the step (before an auto-reset).
"""

from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType
from typing import Any, Generic, Mapping, TypeVar

import jax
import jax.numpy as jnp

from jaxclimate.core import struct
from jaxclimate.core.precision import at_physics_precision
from jaxclimate.core.spaces import Space

Obs = dict[str, jax.Array]
Actions = dict[str, jax.Array]
Rewards = dict[str, jax.Array]
Info = dict[str, Any]

#: The ``info`` entry of ``step`` holding the declared episode metrics (see :class:`Capabilities`).
EPISODE_METRICS = "episode_metrics"


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What an environment offers beyond the environment API, declared by the environment
    (``env.capabilities``) rather than discovered by probing it.

    * ``action_mask``: ``env.action_mask(group, state, params)`` gives the allowed choices of
      every agent (boolean, in the padded-logits layout of
      :class:`~jaxclimate.algos.distributions.ActionHead`); learners apply it.
    * ``episode_metrics``: the names of ``env.episode_metrics(state, params)``, measures of
      the episode so far (e.g. a market's final wealth); ``step`` adds them to ``info`` under
      :data:`EPISODE_METRICS` and IPPO reports their mean over finished episodes.
    * ``uncertainties``: named distributions over the parameters
      (:class:`jaxclimate.core.uncertainty.Uncertainty`) that training may draw from
      (docs/robustness.md).
    * ``host_callback``: ``None`` where a step runs on the device alone; otherwise one line of
      advice (what to use instead), since such a step calls back to the host (an external model
      through ``jax.pure_callback``) once per call and training on it is refused unless asked for.
    """

    action_mask: bool = False
    episode_metrics: tuple[str, ...] = ()
    uncertainties: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    host_callback: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "episode_metrics", tuple(str(n) for n in self.episode_metrics))
        object.__setattr__(self, "uncertainties", MappingProxyType(dict(self.uncertainties)))


@struct.dataclass
class EnvState:
    """Base state: ``time`` counts steps since the last reset (int32 scalar)."""

    time: jax.Array


@struct.dataclass
class EnvParams:
    """Base parameters: every field is a pytree leaf, so parameters can be ``vmap``ped."""

    max_steps: int = 200

    def validate(self) -> None:
        struct.check_range(type(self).__name__, "max_steps", self.max_steps, low=1)


StateT = TypeVar("StateT", bound=EnvState)
ParamsT = TypeVar("ParamsT", bound=EnvParams)


class Environment(Generic[StateT, ParamsT]):
    """Base class. Subclasses set ``agents`` (group name -> number of agents) and implement
    ``default_params``, ``reset_env``, ``step_env``, ``observation_space``, ``action_space``.

    ``step_env`` must advance ``state.time`` by one.
    """

    #: Agent groups: name -> number of agents (static).
    agents: Mapping[str, int] = {}

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def capabilities(self) -> Capabilities:
        """What this environment offers beyond the API (:class:`Capabilities`); nothing by
        default. Environments that offer more override this property."""
        return Capabilities()

    def action_mask(self, group: str, state: StateT, params: ParamsT | None = None) -> jax.Array:
        """The allowed choices of every agent of ``group`` (see :class:`Capabilities`); only
        environments that declare ``capabilities.action_mask`` implement it."""
        raise NotImplementedError(f"{self.name} declares no action mask (capabilities.action_mask is False)")

    def episode_metrics(self, state: StateT, params: ParamsT) -> dict[str, jax.Array]:
        """The declared episode metrics (``capabilities.episode_metrics``) of the episode that
        led to ``state``; none by default."""
        return {}

    # Read-only aliases of ``capabilities`` under their former names.
    @property
    def uncertainties(self) -> Mapping[str, Any]:
        """``capabilities.uncertainties``."""
        return self.capabilities.uncertainties

    @property
    def uses_host_callback(self) -> bool:
        """``capabilities.host_callback is not None``."""
        return self.capabilities.host_callback is not None

    @property
    def host_callback_advice(self) -> str:
        """``capabilities.host_callback`` (empty where a step calls no host)."""
        return self.capabilities.host_callback or ""

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(self.agents)

    def agent_names(self, group: str) -> list[str]:
        """What plots and tables call each agent of ``group`` (default: ``"country 0"``, … from
        the group's name); environments override it with their own (regions, latitude bands)."""
        self._check_group(group)
        singular = group[:-3] + "y" if group.endswith("ies") else group.removesuffix("s")
        return [f"{singular} {i}" for i in range(self.agents[group])]

    @property
    def default_params(self) -> ParamsT:
        raise NotImplementedError

    # --- to implement -------------------------------------------------------------------
    def reset_env(self, key: jax.Array, params: ParamsT) -> tuple[Obs, StateT]:
        raise NotImplementedError

    def step_env(self, key: jax.Array, state: StateT, actions: Actions, params: ParamsT) -> tuple[Obs, StateT, Rewards, jax.Array, Info]:
        """One transition: ``(obs, state, rewards, terminated, info)``; no time limit, no reset."""
        raise NotImplementedError

    def observation_space(self, group: str | None = None) -> Space:
        """One agent's observation space in ``group`` (default: the only group). Provided for
        environments whose agents all share ``self._observation_space``; override otherwise."""
        return self._shared_space("_observation_space", group)

    def action_space(self, group: str | None = None) -> Space:
        """One agent's action space in ``group`` (default: the only group); see
        :meth:`observation_space`."""
        return self._shared_space("_action_space", group)

    def _shared_space(self, attribute: str, group: str | None) -> Space:
        if group is None and len(self.agents) == 1:
            group = next(iter(self.agents))
        self._check_group(group)
        if not hasattr(self, attribute):
            raise NotImplementedError(f"{type(self).__name__} must set {attribute} or override {attribute[1:]}")
        return getattr(self, attribute)

    #: Optional: ``observation(state, params) -> obs`` when observations are a function of the
    #: state alone. ``step`` then selects the reset *state* and builds one observation,
    #: instead of building the step's and the reset's observations and selecting between them.
    observation = None

    # --- provided -----------------------------------------------------------------------
    # ``reset``, ``step`` and ``sample_actions`` are compiled functions of the environment (a
    # static argument): called outside ``jit`` they run one program, compiled once per
    # environment and argument shapes, instead of dispatching every operation on its own (an
    # eager ``step`` of the climate game took 670 ms, its compiled one 0.5 ms, on 2 CPU cores);
    # traced inside a larger program they are inlined into it (``inline=True``: the same program
    # as before), and every later trace with the same shapes reuses the first. The environment
    # is hashed by identity, so its attributes are read once, when first traced (as in any
    # compiled program). ``jax.disable_jit()`` still runs them op by op.
    def reset(self, key: jax.Array, params: ParamsT | None = None) -> tuple[Obs, StateT]:
        return _reset(self, key, self.default_params if params is None else params)

    def step(
        self, key: jax.Array, state: StateT, actions: Actions, params: ParamsT | None = None
    ) -> tuple[Obs, StateT, Rewards, jax.Array, jax.Array, Info]:
        return _step(self, key, state, actions, self.default_params if params is None else params)

    def sample_actions(self, key: jax.Array) -> Actions:
        """Uniformly sampled actions for every agent of every group."""
        return _sample_actions(self, key)

    def _check_group(self, group: str) -> None:
        if group not in self.agents:
            if len(self.agents) == 1:
                raise ValueError(f"{self.name} has one agent group, {next(iter(self.agents))!r}; got {group!r}")
            raise ValueError(f"{self.name} has agent groups {sorted(self.agents)}; got {group!r}")

    def _check_action_groups(self, actions: Actions) -> None:
        """Keys, shapes and kinds of the actions, checked when ``step`` is traced (no run-time
        cost). Values out of their space's range are checked by ``CheckedActions`` (opt-in)."""
        if not isinstance(actions, Mapping):
            raise TypeError(f"{self.name}.step: actions must be a dict of group -> array ({sorted(self.agents)}), got {type(actions).__name__}")
        if set(actions) != set(self.agents):
            raise ValueError(f"{self.name}.step: actions must have groups {sorted(self.agents)}, got {sorted(actions)}")
        for group, n in self.agents.items():
            space = self.action_space(group)
            expected = (n, *space.shape)
            if tuple(jnp.shape(actions[group])) != expected:
                raise ValueError(f"{self.name}.step: actions[{group!r}] must have shape {expected}, got {tuple(jnp.shape(actions[group]))}")
            if jnp.issubdtype(jnp.dtype(space.dtype), jnp.integer) and not jnp.issubdtype(jnp.result_type(actions[group]), jnp.integer):
                raise TypeError(f"{self.name}.step: actions[{group!r}] must be integers ({space}), got {jnp.result_type(actions[group])}")


def _select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


# Both trace the environment's products at full float32 on every backend (no TF32; see
# jaxclimate/core/precision.py), whatever program they are traced into.
@functools.partial(jax.jit, static_argnums=0, inline=True)
@at_physics_precision
def _reset(env: Environment, key: jax.Array, params: Any) -> tuple[Obs, Any]:
    return env.reset_env(key, params)


@functools.partial(jax.jit, static_argnums=0, inline=True)
@at_physics_precision
def _step(env: Environment, key: jax.Array, state: Any, actions: Actions, params: Any) -> tuple:
    env._check_action_groups(actions)
    key_step, key_reset = jax.random.split(key)
    obs_step, state_step, rewards, terminated, info = env.step_env(key_step, state, actions, params)
    terminated = jnp.asarray(terminated, dtype=bool)
    truncated = state_step.time >= params.max_steps
    done = jnp.logical_or(terminated, truncated)
    obs_reset, state_reset = env.reset_env(key_reset, params)
    state = _select(done, state_reset, state_step)
    # With an ``observation`` hook the reset observation is never used (dead code under jit).
    obs = _select(done, obs_reset, obs_step) if env.observation is None else env.observation(state, params)
    info = dict(info)
    info["final_obs"] = obs_step
    if env.capabilities.episode_metrics:  # read from the state that ended the step, not the reset one
        info[EPISODE_METRICS] = env.episode_metrics(state_step, params)
    return obs, state, rewards, terminated, truncated, info


@functools.partial(jax.jit, static_argnums=0, inline=True)
def _sample_actions(env: Environment, key: jax.Array) -> Actions:
    keys = jax.random.split(key, len(env.agents))
    actions = {}
    for group_key, (group, n) in zip(keys, env.agents.items()):
        space = env.action_space(group)
        actions[group] = jax.vmap(space.sample)(jax.random.split(group_key, n))
    return actions
