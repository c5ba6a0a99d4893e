"""jaxclimate spaces as ``gymnasium.spaces``, and the host-side check of NumPy actions.

A jaxclimate space describes one agent (``jaxclimate/core/spaces.py``); its Gymnasium twin has
the same shape, bounds and dtype (``MultiBinary`` excepted: Gymnasium's is always int8). A
factored observation space becomes the Box of its flat vectors.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium
import numpy as np

from jaxclimate.core import spaces
from jaxclimate.interfaces._layout import flat_observation_space

_DISCRETE = (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def to_gymnasium(space: spaces.Space) -> gymnasium.spaces.Space:
    """The ``gymnasium.spaces`` equivalent of one agent's jaxclimate space."""
    space = flat_observation_space(space)
    dtype = np.dtype(space.dtype)
    if isinstance(space, spaces.Box):
        return gymnasium.spaces.Box(low=np.asarray(space.low), high=np.asarray(space.high), shape=space.shape, dtype=dtype)
    if isinstance(space, spaces.Discrete):
        return gymnasium.spaces.Discrete(space.n, dtype=dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return gymnasium.spaces.MultiDiscrete(space.nvec, dtype=dtype)
    if isinstance(space, spaces.MultiBinary):
        return gymnasium.spaces.MultiBinary(space.n)
    raise TypeError(f"no Gymnasium equivalent for {space!r}")


def checked_actions(actions: Any, space: spaces.Space, who: Sequence[str], caller: str) -> np.ndarray:
    """``actions`` (len(who), *space.shape) as the dtype the environment takes.

    Discrete kinds are checked against their range (an out-of-range level has no meaning, and
    the jitted step does not check it); an error names the first offending ``who``. Box
    actions are not checked against their bounds: each environment treats those as it
    documents (the EBM clips them), as Gymnasium environments do.
    """
    arr = np.asarray(actions)
    expected = (len(who), *space.shape)
    if arr.shape != expected:
        raise ValueError(f"{caller}: actions must have shape {expected}, got {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{caller}: actions must be numbers, got dtype {arr.dtype}")
    if isinstance(space, _DISCRETE):
        _check_levels(arr, space, who, caller)
    return arr.astype(np.dtype(space.dtype))


def _check_levels(arr: np.ndarray, space: spaces.Space, who: Sequence[str], caller: str) -> None:
    """Every entry a whole number in ``[0, n)`` (``n`` per component for ``MultiDiscrete``)."""
    inside = (arr >= 0) & (arr < _levels(space)) & (arr == np.round(arr))
    bad = ~inside.reshape(len(who), -1).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{caller}: the action of {who[i]} is outside {space}: {arr[i].tolist()}")


def _levels(space: spaces.Space) -> int | np.ndarray:
    """The number of levels of each component of a discrete space."""
    if isinstance(space, spaces.Discrete):
        return space.n
    if isinstance(space, spaces.MultiDiscrete):
        return space.nvec
    return 2  # MultiBinary
