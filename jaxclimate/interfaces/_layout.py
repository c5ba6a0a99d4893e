"""What every interface shares: agent names, flat observations, flat action masks, seeds.

Pure JAX and NumPy (no PettingZoo or Gymnasium), so the JaxMARL view needs neither.

* Agent ``i`` of group ``g`` is named ``f"{g}_{i}"``, groups in ``env.agents`` order.
* A factored observation (:class:`~jaxclimate.core.factored.FactoredObs`) becomes the flat
  per-agent vector ``FactoredBox.flatten`` gives, column for column the environment's flat
  layout; its space is ``FactoredBox.flat_space``.
* An environment's ``action_mask(group, state, params)`` is in the padded-logits layout IPPO
  uses, (N, heads, max levels). Outside the package the usual layout is flat: for
  ``MultiDiscrete(nvec)`` one block of ``nvec[k]`` entries per head, ``sum(nvec)`` in all (the
  layout of RICE-N's reference, ``RiceN.flat_action_mask``), and ``n`` entries for ``Discrete(n)``.
"""

from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.env import Environment, EnvParams
from jaxclimate.core.factored import FactoredBox, FactoredObs
from jaxclimate.core.registry import make
from jaxclimate.core.spaces import Discrete, MultiBinary, MultiDiscrete, Space

#: Seeds are 32-bit: with 64-bit JAX off, ``jax.random.key`` silently folds larger ones onto
#: smaller ones (``key(2**32 + 5) == key(5)``), so two seeds would give one episode.
MAX_SEED = 2**32


def resolve(env: str | Environment, params: EnvParams | None, overrides: Mapping[str, Any]) -> tuple[Environment, EnvParams, str]:
    """``(env, params, name)`` from an env id (+ ``make`` overrides) or a built environment."""
    if isinstance(env, str):
        if params is not None:
            raise ValueError(f"pass params only with a built environment; for {env!r} give overrides as keywords")
        built, params = make(env, **overrides)
        return built, params, env
    if not isinstance(env, Environment) and not hasattr(env, "unwrapped"):
        raise TypeError(f"env must be a registered id or a jaxclimate Environment, got {type(env).__name__}")
    if overrides:
        raise ValueError(f"keyword overrides {sorted(overrides)} apply to an env id; pass params with a built environment")
    return env, env.default_params if params is None else params, env.name


def check_seed(seed: Any) -> int:
    """A seed as a Python int in ``[0, 2**32)`` (see :data:`MAX_SEED`)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not 0 <= int(seed) < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    return int(seed)


def flat_observation_space(space: Space) -> Space:
    """The space of the arrays an interface hands out: a factored box's flat box, else itself."""
    return space.flat_space if isinstance(space, FactoredBox) else space


def mask_width(space: Space) -> int:
    """Entries of one agent's flat action mask."""
    if isinstance(space, Discrete):
        return space.n
    if isinstance(space, MultiDiscrete):
        return int(space.nvec.sum())
    if isinstance(space, MultiBinary):
        return 2 * space.n
    raise TypeError(f"action masks are defined for Discrete and MultiDiscrete actions, not {space}")


class AgentLayout:
    """The static layout of an environment's agents (names, spaces, mask indices), and the
    pure-JAX conversions between grouped arrays and what the interfaces hand out."""

    def __init__(self, env: Environment):
        self.env = env
        self.groups: tuple[str, ...] = tuple(env.agents)
        self.names: dict[str, list[str]] = {g: [f"{g}_{i}" for i in range(n)] for g, n in env.agents.items()}
        self.agents: list[str] = [name for g in self.groups for name in self.names[g]]
        self.index: dict[str, tuple[str, int]] = {f"{g}_{i}": (g, i) for g, n in env.agents.items() for i in range(n)}
        self.observation_spaces: dict[str, Space] = {g: env.observation_space(g) for g in self.groups}
        self.flat_observation_spaces: dict[str, Space] = {g: flat_observation_space(s) for g, s in self.observation_spaces.items()}
        self.action_spaces: dict[str, Space] = {g: env.action_space(g) for g in self.groups}
        self.has_masks = env.capabilities.action_mask
        self._mask_index = {g: self._flat_mask_index(s) for g, s in self.action_spaces.items()} if self.has_masks else {}

    # --- names ---------------------------------------------------------------------------
    def group_of(self, agent: str) -> str:
        """The group of agent ``agent``; a clear error for a name that is not an agent."""
        if agent not in self.index:
            raise ValueError(f"unknown agent {agent!r}; agents are {_abbreviated(self.agents)}")
        return self.index[agent][0]

    # --- observations --------------------------------------------------------------------
    def flatten(self, obs: Mapping[str, jax.Array | FactoredObs]) -> dict[str, jax.Array]:
        """Group -> (..., N, F) arrays; factored observations flattened as the environment
        lays them out flat (``FactoredBox.flatten``)."""
        out = {}
        for group in self.groups:
            space = self.observation_spaces[group]
            out[group] = space.flatten(obs[group]) if isinstance(space, FactoredBox) else obs[group]
        return out

    # --- action masks --------------------------------------------------------------------
    def _flat_mask_index(self, space: Space) -> tuple[np.ndarray, np.ndarray] | None:
        """(head, level) of each flat mask entry for ``MultiDiscrete``; None for ``Discrete``
        (its padded mask is already flat)."""
        if not isinstance(space, (Discrete, MultiDiscrete)):
            raise TypeError(f"action masks are defined for Discrete and MultiDiscrete actions, not {space}")
        if isinstance(space, Discrete):
            return None
        heads = np.repeat(np.arange(space.nvec.size), space.nvec.reshape(-1))
        levels = np.concatenate([np.arange(n) for n in space.nvec.reshape(-1)])
        return heads, levels

    def flat_masks(self, state: Any, params: EnvParams) -> dict[str, jax.Array]:
        """Group -> (N, mask_width) booleans (True = allowed); ``{}`` without masks. One
        gather per group from the environment's padded-logits mask."""
        out = {}
        for group, index in self._mask_index.items():
            padded = jnp.asarray(self.env.action_mask(group, state, params), bool)
            out[group] = padded if index is None else padded[:, index[0], index[1]]
        return out

    # --- per-agent dicts inside JAX ------------------------------------------------------
    def split(self, grouped: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
        """Group -> (N, ...) arrays to agent name -> (...) arrays: one ``unstack`` per group
        (the per-agent dict is the API; building it takes no per-agent computation)."""
        out = {}
        for group in self.groups:
            out.update(zip(self.names[group], jax.lax.unstack(jnp.asarray(grouped[group]), axis=0)))
        return out

    def check_actions(self, per_agent: Any, caller: str, spaces: Mapping[str, Space] | None = None) -> None:
        """Every agent has an action of its space's shape (``spaces``, per group: default the
        environment's) and nothing else is there (at trace time under ``jit``); errors name
        the agent."""
        if not isinstance(per_agent, Mapping):
            raise TypeError(f"{caller}: actions must be a dict of agent name -> action, got {type(per_agent).__name__}")
        unknown = sorted(set(per_agent) - set(self.index))
        if unknown:
            raise ValueError(f"{caller}: actions for unknown agents {_abbreviated(unknown)}; agents are {_abbreviated(self.agents)}")
        spaces = self.action_spaces if spaces is None else spaces
        for group in self.groups:
            shape = tuple(spaces[group].shape)
            for name in self.names[group]:
                if name not in per_agent:
                    raise ValueError(f"{caller}: no action for agent {name!r}")
                if tuple(jnp.shape(per_agent[name])) != shape:
                    raise ValueError(f"{caller}: the action of agent {name!r} must have shape {shape}, got {tuple(jnp.shape(per_agent[name]))}")

    def stack(self, per_agent: Mapping[str, Any], caller: str, spaces: Mapping[str, Space] | None = None) -> dict[str, jax.Array]:
        """Agent name -> action to group -> (N, ...) arrays (one ``stack`` per group), checked
        by :meth:`check_actions`."""
        self.check_actions(per_agent, caller, spaces)
        return {group: jnp.stack([jnp.asarray(per_agent[name]) for name in self.names[group]]) for group in self.groups}


def _abbreviated(names: list[str], limit: int = 8) -> str:
    """Names for an error message, shortened when long (RICE-N has 27 regions)."""
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}]" if len(names) <= limit else f"[{shown}, ...] ({len(names)} in all)"
