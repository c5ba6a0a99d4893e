"""jaxclimate environments behind interfaces other libraries' users already know (docs/interfaces.md).

* :class:`PettingZooEnv` — any registered environment as a PettingZoo ``ParallelEnv``.
* :class:`GymnasiumEnv` / :class:`GymnasiumVectorEnv` — a single-agent environment
  (``ebm-v1``) as a Gymnasium ``Env``, and N copies of it as one ``jax.vmap``ped ``VectorEnv``.
* :class:`JaxMARLEnv` — any environment with JaxMARL's ``MultiAgentEnv`` API, pure JAX.

The first three need the ``interfaces`` extra (``pip install "jaxclimate[interfaces]"``:
PettingZoo and Gymnasium); they are imported on first use, so ``import jaxclimate`` and the
JAX view work without it.
"""

from __future__ import annotations

import importlib
from typing import Any

from jaxclimate.interfaces.jaxmarl_env import JaxMARLEnv

_LAZY = {
    "PettingZooEnv": "jaxclimate.interfaces.pettingzoo_env",
    "GymnasiumEnv": "jaxclimate.interfaces.gymnasium_env",
    "GymnasiumVectorEnv": "jaxclimate.interfaces.gymnasium_env",
    "to_gymnasium": "jaxclimate.interfaces.spaces",
}

__all__ = ["JaxMARLEnv", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxclimate.interfaces' has no attribute {name!r}")
    try:
        module = importlib.import_module(_LAZY[name])
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] not in ("pettingzoo", "gymnasium"):
            raise
        raise ImportError(f'jaxclimate.interfaces.{name} needs PettingZoo and Gymnasium: pip install "jaxclimate[interfaces]" ({err})') from err
    return getattr(module, name)
