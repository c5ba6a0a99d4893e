"""What every algorithm of ``jaxclimate.algos`` shares, and nothing else: the trainer protocol,
the registry's record of an algorithm (with what it can train, :class:`Algorithm`), the one
check of an environment against it (:meth:`Algorithm.why_not`, :meth:`Algorithm.check`), the
rollout-hook protocol, config validation and a tree select. Algorithms import from here (and
from the shared building blocks: acting, networks, distributions, losses), never from one
another.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.factored import FactoredBox
from jaxclimate.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space


class Trainer(NamedTuple):
    """A training run in pieces (the protocol every algorithm of ``jaxclimate.algos`` follows):
    ``init(rng, env_params=None)`` -> state; ``run(state, n)`` -> (state, metrics with a
    leading axis n); ``policy(state)`` -> what ``act`` needs of one seed's state;
    ``act(policy, obs, carry, done, key, deterministic=True, mask=None)`` -> (actions, carry)
    for a batch of envs; ``initial_carry(batch)``; ``config`` (``steps_per_update``,
    ``num_updates``)."""

    init: Callable[..., Any]
    run: Callable[..., tuple[Any, dict]]
    act: Callable[..., Any]
    config: Any
    policy: Callable[[Any], Any] = lambda state: state.params
    initial_carry: Callable[[int], Any] = lambda batch: None


def run_up_to(run: Callable[..., tuple[Any, dict]], state: Any, n: jax.Array, length: int, *args: Any) -> tuple[Any, dict]:
    """The first ``n`` of ``length`` updates: ``run(state, 1, *args)`` (a trainer's ``run``)
    applied ``n`` times, where ``n`` (≤ ``length``) is a traced integer, so one program serves
    every chunk size of a run. A training run cut into chunks of 3 and 2 updates otherwise
    compiles its whole update twice (5.4 s each for the climate game on 2 CPU cores). Metrics
    have ``length`` rows; those from row ``n`` on are zeros."""

    @jax.jit  # traced once: the shapes below and the branch reuse the trace
    def one(s):
        s, metrics = run(s, 1, *args)
        return s, jax.tree_util.tree_map(lambda x: x[0], metrics)

    blank = jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(one, state)[1])
    # ``n`` is the same for every run of a batch, so the branch stays a branch under ``vmap``
    return jax.lax.scan(lambda s, i: jax.lax.cond(i < n, one, lambda s: (s, blank), s), state, jnp.arange(length))


#: The kinds of action space (:func:`action_kind`), as an :class:`Algorithm` declares them.
ACTION_KINDS = ("discrete", "multi-discrete", "multi-binary", "box", "unbounded-box")
_KIND_NAMES = {
    "discrete": "Discrete",
    "multi-discrete": "MultiDiscrete",
    "multi-binary": "MultiBinary",
    "box": "bounded 1-D Box",
    "unbounded-box": "unbounded 1-D Box",
}


def action_kind(space: Space) -> str:
    """The kind of an action space: ``"discrete"``, ``"multi-discrete"``, ``"multi-binary"``,
    ``"box"`` (1-D, every bound finite), ``"unbounded-box"`` (1-D, some bound infinite), or
    ``"other"`` (anything else, e.g. a Box of several dimensions: no algorithm trains it)."""
    if isinstance(space, Discrete):
        return "discrete"
    if isinstance(space, MultiDiscrete):
        return "multi-discrete"
    if isinstance(space, MultiBinary):
        return "multi-binary"
    if isinstance(space, Box) and len(space.shape) == 1:
        finite = np.all(np.isfinite(np.asarray(space.low))) and np.all(np.isfinite(np.asarray(space.high)))
        return "box" if finite else "unbounded-box"
    return "other"


def _one_update(config: Any) -> int:
    return config.steps_per_update


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A learning algorithm as the training CLI knows it: a name, its config dataclass,
    ``make_trainer(env, env_params, config, recorder=None, rollout_hook=None) -> Trainer``,
    and what it can train, declared:

    * ``action_kinds``: the kinds of action space (:data:`ACTION_KINDS`, :func:`action_kind`)
      every agent group's actions may have;
    * ``max_groups``: the most agent groups it trains (``None``: any number);
    * ``factored_observations``: it consumes :class:`~jaxclimate.core.factored.FactoredObs`
      observations directly (so an environment's report may default to its factored layout,
      ``TrainingReport.env_defaults``); without it observations must be flat arrays;
    * ``rollout_extras``: it takes a report's recorder and rollout hook;
    * ``min_budget(config)``: the least ``total_timesteps`` a config can have (one update by
      default: ``config.steps_per_update``);
    * ``needs``: what its refusal of an action space says after its name (default "needs
      <the kinds>");
    * ``requires``: one line saying what it trains, for listings (default from the fields).

    :meth:`why_not` checks an environment (and a config) against these; every built-in
    ``make_trainer`` refuses through :meth:`check`, so the two always agree."""

    name: str
    config_cls: type
    make_trainer: Callable[..., Any]
    description: str = ""
    factored_observations: bool = False
    action_kinds: tuple[str, ...] = ACTION_KINDS
    max_groups: int | None = None
    rollout_extras: bool = True
    min_budget: Callable[[Any], int] = _one_update
    needs: str = ""
    requires: str = ""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.action_kinds) - set(ACTION_KINDS))
        if unknown:
            raise ValueError(f"Algorithm {self.name!r}: unknown action kinds {unknown}; the kinds are {ACTION_KINDS}")
        object.__setattr__(self, "action_kinds", tuple(self.action_kinds))
        if not self.needs:
            object.__setattr__(self, "needs", f"needs {_kinds_text(self.action_kinds)} action space")
        if not self.requires:
            object.__setattr__(self, "requires", self._describe())

    def _describe(self) -> str:
        if set(self.action_kinds) == set(ACTION_KINDS) and self.max_groups is None:
            what = "any action space (discrete, multi-discrete, multi-binary, 1-D Box) and any number of agent groups"
        else:
            groups = "any number of agent groups, each" if self.max_groups is None else _groups_text(self.max_groups)
            what = f"{groups} acting in {_kinds_text(self.action_kinds)} space"
        extras = "" if self.rollout_extras else "; no recorders or rollout hooks"
        observations = "flat or factored observations" if self.factored_observations else "flat observations"
        return f"trains {what}, on {observations}{extras}"

    def unsupported(self, env: Any) -> str | None:
        """One line saying why this algorithm cannot train ``env`` at all (its agent groups,
        action spaces or observations), or ``None``."""
        if self.max_groups is not None and len(env.agents) > self.max_groups:
            return f"{self.name} trains {_groups_text(self.max_groups)}; {env.name} has {sorted(env.agents)}"
        for group in env.agents:
            space = env.action_space(group)
            if action_kind(space) not in self.action_kinds:
                return f"{self.name} {self.needs}; {env.name}'s {group} act in {space}"
        for group in env.agents:
            space = env.observation_space(group)
            if len(space.shape) != 1 or (isinstance(space, FactoredBox) and not self.factored_observations):
                hint = " (the flat layout: observation='flat')" if isinstance(space, FactoredBox) else ""
                return f"{self.name} needs flat observations; {env.name}'s {group} observe {space}{hint}"
        return None

    def min_timesteps(self, config: Any = None) -> int:
        """The least ``total_timesteps`` for ``config`` (a config, a mapping of field overrides
        or ``None`` for the defaults), whatever its own ``total_timesteps``."""
        if config is None or isinstance(config, Mapping):
            fields = dict(config or {})
            fields["total_timesteps"] = 2**62  # any budget passes: only the other fields matter here
            config = self.config_cls(**fields)
        return int(self.min_budget(config))

    def why_not(self, env: Any, env_params: Any = None, config: Any = None) -> str | None:
        """``None`` where this algorithm trains ``env``; otherwise one line saying why not.
        The capabilities come first; with ``config`` (a config, or a mapping of field
        overrides of the defaults) also the budget (:meth:`min_timesteps`), the config's own
        validation and what ``make_trainer`` finds of the pair (e.g. a federation period that
        does not fit the episode)."""
        reason = self.unsupported(env)
        if reason is not None or config is None:
            return reason
        if isinstance(config, Mapping):
            try:
                minimum = self.min_timesteps(config)
            except (TypeError, ValueError) as error:
                return str(error)
            total = config.get("total_timesteps", getattr(self.config_cls, "total_timesteps", None))
            if total is not None and total < minimum:
                return f"{self.name} needs total_timesteps >= {minimum:,} (one update with these settings), got {total:,}"
            try:
                config = self.config_cls(**config)
            except (TypeError, ValueError) as error:
                return str(error)
        try:
            self.make_trainer(env, env.default_params if env_params is None else env_params, config)
        except ValueError as error:
            return str(error)
        return None

    def check(self, env: Any, recorder: Any = None, rollout_hook: Any = None) -> None:
        """Raise ``ValueError`` (one line) where this algorithm cannot train ``env`` (with a
        recorder or rollout hook, if given); ``make_trainer`` calls it first."""
        reason = self.unsupported(env)
        if reason is None and not self.rollout_extras and (recorder is not None or rollout_hook is not None):
            reason = f"{self.name} takes no recorders or rollout hooks"
        if reason is not None:
            raise ValueError(reason)


def _kinds_text(kinds: tuple[str, ...]) -> str:
    names = [_KIND_NAMES[k] for k in kinds]
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return ("an " if text[0] in "aeiouAEIOU" else "a ") + text


def _groups_text(n: int) -> str:
    return "one agent group" if n == 1 else f"at most {n} agent groups"


class RolloutHook(Protocol):
    """Acts on the env actions inside the compiled rollout (e.g. scripted steps).

    ``init(key)`` -> hook state (fixed for the run, or updated); ``apply(state, key,
    env_state, actions)`` -> ``(state, actions, weight)`` where ``env_state`` is the batched
    env state before the step, ``actions`` the env-layout actions of every group, and
    ``weight`` (num_envs,) in [0, 1] the weight of this step in the loss of every agent
    (0: the step is collected but not trained on)."""

    def init(self, key: jax.Array) -> Any: ...

    def apply(self, state: Any, key: jax.Array, env_state: Any, actions: dict) -> tuple[Any, dict, jax.Array]: ...


def require(config: Any, ok: bool, field: str, rule: str) -> None:
    """Raise ``ValueError("<Config>.<field> must be <rule>, got <value>")`` unless ``ok``."""
    if not ok:
        raise ValueError(f"{type(config).__name__}.{field} must be {rule}, got {getattr(config, field)!r}")


def is_positive_int(value: Any) -> bool:
    """An integer >= 1 (NumPy integers included, booleans not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1


def tree_select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Leafwise ``where(pred, on_true, on_false)`` of two trees of one structure."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
