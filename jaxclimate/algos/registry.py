"""The learning algorithms the training CLI knows, by name.

An algorithm is a config dataclass (frozen, validated in ``__post_init__``, with
``steps_per_update`` and ``num_updates``) and ``make_trainer(env, env_params, config,
recorder=None, rollout_hook=None) -> Trainer`` (the protocol of
:class:`jaxclimate.algos.base.Trainer`: ``init``, ``run``, ``policy``, ``act``,
``initial_carry``, ``config``). ``python -m jaxclimate.train --algo NAME`` then trains it with
the same progress bar, metrics, checkpoints, resume, summary and plots as every other.
"""

from __future__ import annotations

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


def _load_builtin() -> None:
    if "ippo" in _ALGORITHMS:
        return
    from jaxclimate.algos import ippo

    register_algorithm(
        Algorithm(
            "ippo",
            ippo.IPPOConfig,
            ippo.make_trainer,
            "independent PPO (PureJaxRL style): one learner per agent, any action space",
            factored_observations=True,
        )
    )
    from jaxclimate.algos import off_policy

    for algorithm in off_policy.ALGORITHMS:
        register_algorithm(algorithm)
    from jaxclimate.algos import apg

    register_algorithm(apg.ALGORITHM)


def why_not(algo_name: str, env, env_params, config=None) -> str | None:  # placeholder until capabilities land
    return None
