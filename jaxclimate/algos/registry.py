"""The learning algorithms the training CLI knows, by name.

An algorithm is a config dataclass (frozen, validated in ``__post_init__``, with
``steps_per_update`` and ``num_updates``) and ``make_trainer(env, env_params, config,
recorder=None, rollout_hook=None) -> Trainer`` (the protocol of
:class:`jaxclimate.algos.base.Trainer`: ``init``, ``run``, ``policy``, ``act``,
``initial_carry``, ``config``). ``python -m jaxclimate.train --algo NAME`` then trains it with
the same progress bar, metrics, checkpoints, resume, summary and plots as every other.

What an algorithm can train is declared on its :class:`~jaxclimate.algos.base.Algorithm`
(action-space kinds, agent groups, observations, the least budget; ``requires`` in one
line); :func:`why_not` says, for an algorithm and an environment, why they do not train
together (or ``None``).
"""

from __future__ import annotations

from typing import Any

from jaxclimate.algos.base import Algorithm

_ALGORITHMS: dict[str, Algorithm] = {}


def register_algorithm(algorithm: Algorithm) -> None:
    if algorithm.name in _ALGORITHMS:
        raise ValueError(f"algorithm {algorithm.name!r} is already registered")
    _ALGORITHMS[algorithm.name] = algorithm


def algorithms() -> dict[str, Algorithm]:
    """Every registered algorithm by name."""
    _load_builtin()
    return dict(_ALGORITHMS)


def get_algorithm(name: str) -> Algorithm:
    _load_builtin()
    if name not in _ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; registered: {', '.join(sorted(_ALGORITHMS))}")
    return _ALGORITHMS[name]


def why_not(algo_name: str, env: Any, env_params: Any = None, config: Any = None) -> str | None:
    """``None`` where algorithm ``algo_name`` trains ``env``; otherwise one line saying why not
    (:meth:`Algorithm.why_not`): first what the algorithm cannot train at all (agent groups,
    action spaces, observations), then, with ``config`` (a config or a mapping of field
    overrides of its defaults), the budget and what ``make_trainer`` finds of the pair. A pair
    for which it returns ``None`` builds a trainer; one for which it does not is refused by
    ``make_trainer`` with the same line."""
    return get_algorithm(algo_name).why_not(env, env_params, config)


def _load_builtin() -> None:
    if "ippo" in _ALGORITHMS:
        return
    from jaxclimate.algos import apg, ippo, off_policy

    for algorithm in (ippo.ALGORITHM, *off_policy.ALGORITHMS, apg.ALGORITHM):
        register_algorithm(algorithm)
