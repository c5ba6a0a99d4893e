"""What every algorithm of ``jaxclimate.algos`` shares, and nothing else: the trainer protocol,
the registry's record of an algorithm, the rollout-hook protocol, config validation and a tree
select. Algorithms import from here, never from one another.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np


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


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A learning algorithm as the training CLI knows it: a name, its config dataclass and
    ``make_trainer(env, env_params, config, recorder=None, rollout_hook=None) -> Trainer``."""

    name: str
    config_cls: type
    make_trainer: Callable[..., Any]
    description: str = ""
    #: consumes :class:`~jaxclimate.core.factored.FactoredObs` observations directly, so an
    #: environment's report may default to its factored layout (``TrainingReport.env_defaults``)
    factored_observations: bool = False
    requires: str = ""  # placeholder until the declared capabilities land


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
