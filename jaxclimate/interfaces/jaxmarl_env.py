"""Any jaxclimate environment with JaxMARL's ``MultiAgentEnv`` API: pure JAX, jittable.

As JaxMARL: ``agents`` is a list of names (``f"{group}_{i}"``), ``num_agents``,
``observation_spaces``/``action_spaces`` dicts and ``observation_space(agent)``/``action_space(agent)``,
``reset(key) -> (obs, state)`` and ``step(key, state, actions, reset_state=None) -> (obs, state,
rewards, dones, infos)`` with per-agent dicts, ``dones["__all__"]``, an automatic reset when the
episode ends, ``get_obs(state)``, ``get_avail_actions(state)``, ``agent_classes`` and ``name``.
``reset`` and ``step`` are jitted, as JaxMARL's are.

What is ours, not JaxMARL's:

* ``state`` is the jaxclimate environment's state (its ``time`` counts steps; JaxMARL's base
  ``State`` has ``step`` and ``done``).
* ``step`` calls the jaxclimate ``step`` with the key it is given, so the two agree step for
  step; ``infos`` is the jaxclimate step's info with ``"final_obs"`` per agent name (the
  observation the ending step produced, for bootstrapping) and ``"terminated"``/``"truncated"``
  (``dones`` is their ``or``).
* observations are flat (factored ones flattened); ``get_avail_actions`` gives flat boolean
  masks (``sum(nvec)`` entries, head after head; see ``jaxclimate/interfaces/_layout.py``).
* ``sample_actions(key)`` draws every agent's action, vectorised per group.

The spaces are JaxMARL's own classes (``jaxmarl.environments.spaces``: ``Box``, ``Discrete``,
``MultiDiscrete`` with ``num_categories``; a ``MultiBinary(n)`` becomes ``MultiDiscrete([2]*n)``)
when ``jaxmarl`` is installed, so JaxMARL's helpers (``get_space_dim``) accept them, and
jaxclimate's (``jaxclimate/core/spaces.py``, with ``num_categories`` too) otherwise.

For JaxMARL's own baseline scripts (docs/interfaces.md §4.2) three options, all off by default:

* ``box_actions="unit"`` — every ``Box`` action seen as ``[-1, 1]`` per component (the range
  JaxMARL's and Brax's Gaussian policies assume), mapped affinely onto the environment's
  bounds; ``raw_action_spaces`` keeps the bounds.
* ``discrete_actions="joint"`` — every ``MultiDiscrete``/``MultiBinary`` action seen as one
  ``Discrete`` over all combinations (JaxMARL's feed-forward scripts take one categorical),
  where there are at most ``MAX_JOINT_ACTIONS``.
* ``infos="per_agent"`` — ``infos`` holds only ``(num_agents,)`` arrays (``"terminated"``,
  ``"truncated"``), the shape JaxMARL's ``LogWrapper`` and rollouts reshape; the environment's
  other entries are dropped.
"""

from __future__ import annotations

import functools
import io
import sys
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space
from jaxclimate.interfaces._actions import MAX_JOINT_ACTIONS, JointDiscreteActions, RawActions, UnitBoxActions
from jaxclimate.interfaces._layout import AgentLayout, mask_width, resolve

__all__ = ["JaxMARLEnv", "MAX_JOINT_ACTIONS", "to_jaxmarl_space"]

_jit_method = functools.partial(jax.jit, static_argnums=0)
_BOX_ACTIONS = ("raw", "unit")
_DISCRETE_ACTIONS = ("heads", "joint")
_INFOS = ("full", "per_agent")


class JaxMARLEnv:
    """A jaxclimate environment seen through JaxMARL's ``MultiAgentEnv`` API.

    Args:
        env: a registered id or a built environment.
        params: its parameters (only with a built environment; default its own). They are
            part of the view: JaxMARL's ``reset``/``step`` take none.
        box_actions: ``"raw"`` (the environment's bounds) or ``"unit"`` (every ``Box`` action
            as ``[-1, 1]``).
        discrete_actions: ``"heads"`` (``MultiDiscrete`` as it is) or ``"joint"`` (one
            ``Discrete`` over all combinations of the heads).
        infos: ``"full"`` (the environment's info, ``final_obs``, ``terminated``,
            ``truncated``) or ``"per_agent"`` (only ``(num_agents,)`` arrays: ``terminated``,
            ``truncated``).
        **overrides: ``jaxclimate.make`` overrides for an env id.
    """

    def __init__(
        self,
        env: str | Environment,
        params: EnvParams | None = None,
        *,
        box_actions: str = "raw",
        discrete_actions: str = "heads",
        infos: str = "full",
        **overrides: Any,
    ):
        for field, value, valid in (
            ("box_actions", box_actions, _BOX_ACTIONS),
            ("discrete_actions", discrete_actions, _DISCRETE_ACTIONS),
            ("infos", infos, _INFOS),
        ):
            if value not in valid:
                raise ValueError(f"JaxMARLEnv: {field} must be one of {valid}, got {value!r}")
        self.env, self.params, self._name = resolve(env, params, overrides)
        self._layout = layout = AgentLayout(self.env)
        self._infos = infos
        self._actions = {g: _action_view(s, box_actions, discrete_actions, f"{self._name} group {g!r}") for g, s in layout.action_spaces.items()}
        self.agents: list[str] = list(layout.agents)
        self.num_agents = len(self.agents)
        own_obs = {g: layout.flat_observation_spaces[g] for g in layout.groups}
        own_act = {g: view.space for g, view in self._actions.items()}
        self.observation_spaces: dict[str, Any] = self._per_agent({g: to_jaxmarl_space(s) for g, s in own_obs.items()})
        self.action_spaces: dict[str, Any] = self._per_agent({g: to_jaxmarl_space(s) for g, s in own_act.items()})
        #: The environment's own action spaces (jaxclimate classes), per agent: the bounds a
        #: rescaled ``Box`` maps onto, the heads a joint ``Discrete`` enumerates.
        self.raw_action_spaces: dict[str, Space] = self._per_agent(layout.action_spaces)

    def _per_agent(self, per_group: Mapping[str, Any]) -> dict[str, Any]:
        return {a: per_group[self._layout.group_of(a)] for a in self.agents}

    @property
    def name(self) -> str:
        return self._name

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        """Group name -> its agents' names (agents of a group share spaces and role)."""
        return {g: list(names) for g, names in self._layout.names.items()}

    def observation_space(self, agent: str) -> Any:
        self._layout.group_of(agent)  # a clear error for an unknown name
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        self._layout.group_of(agent)
        return self.action_spaces[agent]

    # --- the API -------------------------------------------------------------------------
    @_jit_method
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], Any]:
        obs, state = self.env.reset(key, self.params)
        return self._layout.split(self._layout.flatten(obs)), state

    @_jit_method
    def step(self, key: jax.Array, state: Any, actions: dict[str, jax.Array], reset_state: Any = None) -> tuple:
        """One step; where the episode ends, the returned ``obs``/``state`` are the next
        episode's: the environment's own reset, or ``reset_state`` when given (which needs
        :meth:`get_obs`)."""
        grouped = self._grouped_env_actions(actions, f"{self.name}.step")
        obs, next_state, rewards, terminated, truncated, info = self.env.step(key, state, grouped, self.params)
        done = jnp.logical_or(terminated, truncated)
        obs = self._layout.split(self._layout.flatten(obs))
        if reset_state is not None:
            next_state = _where(done, reset_state, next_state)
            obs = _where(done, self.get_obs(reset_state), obs)
        dones = dict.fromkeys(self.agents, done)  # one episode for every agent
        dones["__all__"] = done
        if self._infos == "per_agent":
            per_agent = (self.num_agents,)
            infos = {"terminated": jnp.broadcast_to(terminated, per_agent), "truncated": jnp.broadcast_to(truncated, per_agent)}
        else:
            infos = dict(info, terminated=terminated, truncated=truncated)
            infos["final_obs"] = self._layout.split(self._layout.flatten(info["final_obs"]))
        return obs, next_state, self._layout.split(rewards), dones, infos

    def get_obs(self, state: Any) -> dict[str, jax.Array]:
        """Observations of ``state``, per agent; for environments whose observation is a
        function of the state (``Environment.observation``: RICE-N, InvestESG)."""
        if self.env.observation is None:
            raise NotImplementedError(
                f"{self.name}: observations are not a function of the state alone, so there is no get_obs (and no step(reset_state=...))"
            )
        return self._layout.split(self._layout.flatten(self.env.observation(state, self.params)))

    def get_avail_actions(self, state: Any) -> dict[str, jax.Array]:
        """Per agent, a flat boolean mask of its action levels (True = allowed): the
        environment's masks where it has them (RICE-N), else all True for discrete actions;
        with ``discrete_actions="joint"``, one entry per joint action."""
        masks = self._layout.flat_masks(state, self.params) if self._layout.has_masks else {}
        out = {}
        for group, view in self._actions.items():
            if group in masks:
                out[group] = view.joint_mask(masks[group])
            elif isinstance(view.space, (Discrete, MultiDiscrete, MultiBinary)):
                out[group] = jnp.ones((len(self._layout.names[group]), mask_width(view.space)), bool)
            else:
                raise NotImplementedError(f"{self.name}: group {group!r} has {view.space} actions, which have no availability mask")
        return self._layout.split(out)

    # --- conveniences --------------------------------------------------------------------
    def sample_actions(self, key: jax.Array) -> dict[str, jax.Array]:
        """Uniformly drawn actions for every agent in the view's spaces (one ``vmap`` per
        group)."""
        if all(type(view) is RawActions for view in self._actions.values()):
            return self._layout.split(self.env.sample_actions(key))
        keys = jax.random.split(key, len(self._actions))
        grouped = {
            g: jax.vmap(view.space.sample)(jax.random.split(k, len(self._layout.names[g]))) for k, (g, view) in zip(keys, self._actions.items())
        }
        return self._layout.split(grouped)

    def env_actions(self, actions: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
        """The environment's actions for actions in the view's spaces, per agent (what
        :meth:`step` hands the environment)."""
        return self._layout.split(self._grouped_env_actions(actions, f"{self.name}.env_actions"))

    def _grouped_env_actions(self, actions: Mapping[str, jax.Array], caller: str) -> dict[str, jax.Array]:
        if isinstance(actions, Mapping):
            actions = {agent: self._scalar_if_discrete(agent, x) for agent, x in actions.items()}
        grouped = self._layout.stack(actions, caller, {g: view.space for g, view in self._actions.items()})
        return {g: self._actions[g].to_env(a) for g, a in grouped.items()}

    def _scalar_if_discrete(self, agent: str, action: Any) -> Any:
        """JaxMARL's scripts send a ``Discrete`` action with shape (1,): taken as the scalar
        it is."""
        group = self._layout.index.get(agent, (None,))[0]
        if group is not None and self._actions[group].space.shape == () and jnp.shape(action) == (1,):
            return jnp.reshape(action, ())
        return action

    def __repr__(self) -> str:
        return f"JaxMARLEnv<{self.name}, {self.num_agents} agents>"


def _action_view(space: Space, box_actions: str, discrete_actions: str, where: str) -> RawActions:
    if box_actions == "unit" and isinstance(space, Box):
        return UnitBoxActions(space, where)
    if discrete_actions == "joint" and isinstance(space, (MultiDiscrete, MultiBinary)):
        return JointDiscreteActions(space, where)
    return RawActions(space)


@functools.cache
def _jaxmarl_spaces() -> Any:
    """``jaxmarl.environments.spaces``, or None where jaxmarl is not installed.

    Importing jaxmarl imports all its environments, prints two lines about them, and (its
    MABrax module, silencing brax) sets ``sys.stdout``/``sys.stderr`` to the process's own
    streams, which would cut a notebook's output off: the lines are dropped and both streams
    restored."""
    streams = sys.stdout, sys.stderr, sys.__stdout__
    try:
        sys.stdout = sys.__stdout__ = io.StringIO()
        from jaxmarl.environments import spaces
    except ImportError:
        return None
    finally:
        sys.stdout, sys.stderr, sys.__stdout__ = streams
    return spaces


def to_jaxmarl_space(space: Space) -> Any:
    """``space`` as JaxMARL's own class where ``jaxmarl`` is installed (``MultiBinary(n)`` as
    ``MultiDiscrete([2] * n)``, JaxMARL having no binary space); ``space`` itself otherwise."""
    spaces = _jaxmarl_spaces()
    if spaces is None:
        return space
    if isinstance(space, Box):
        return spaces.Box(space.low, space.high, tuple(space.shape), space.dtype)
    if isinstance(space, Discrete):
        return spaces.Discrete(space.n, space.dtype)
    if isinstance(space, MultiDiscrete):
        return spaces.MultiDiscrete(np.asarray(space.nvec).reshape(-1).tolist())
    if isinstance(space, MultiBinary):
        return spaces.MultiDiscrete([2] * space.n)
    raise TypeError(f"no JaxMARL space for {space}")


def _where(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
