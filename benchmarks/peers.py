"""Peer implementations the benchmarks can compare against, loaded from a local checkout.

Nothing here is vendored: a peer is used only where the user points the benchmark at a
checkout of it, and its rows are skipped (with a printed note) otherwise.

**jice**, the RICE-N authors' own JAX port (``jice/`` on branch ``GAIA_jax`` of
github.com/mila-iqia/climate-cooperation-competition; 3, 7 and 20 regions, no negotiation,
equinox modules; measured at commit 3b3f35f, 12 Sep 2024). To obtain it::

    git clone --branch GAIA_jax --single-branch \\
        https://github.com/mila-iqia/climate-cooperation-competition /tmp/peers/jice
    pip install equinox gymnax           # what its environment imports (plus chex, numpy, pyyaml)
    pip install distrax jax-tqdm wandb   # what its PPO trainer imports besides (optax)

(only the ``jice/`` folder is needed: ``git archive GAIA_jax jice | tar -x -C DIR`` works
too) and pass ``--jice DIR`` or set ``JAXCLIMATE_JICE=DIR``, where DIR is the repository root
or any folder holding ``jice/`` (or the ``jice/`` folder itself).

Two compatibility shims, both applied here and neither by editing jice:

1. jice calls ``jax.tree_map``, which jax removed (0.6); it is aliased to
   ``jax.tree_util.tree_map`` before jice is imported (only when jax lacks it).
2. jice's ``Rice`` is an ``equinox.Module`` whose ``step``/``reset`` are bound methods of a
   pytree; :func:`jice_step` and :func:`jice_reset` wrap them in plain functions (closing
   over the module) so they can be traced, jitted and vmapped like ours.

jice reads its region files relative to the working directory (``jice/region_yamls/``):
:func:`load_jice` enters the checkout for that call only.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Callable

#: Environment variable naming a local jice checkout (the ``--jice`` flag wins).
JICE_ENV_VAR = "JAXCLIMATE_JICE"

#: jice's own training script's environment settings (train_with_jax.py on GAIA_jax):
#: train_env skips the per-step info dicts; diff_reward_mode rewards the change of utility.
JICE_TRAIN_SETTINGS = {"train_env": True, "scenario": "default", "diff_reward_mode": True, "relative_reward_mode": False, "disable_trading": False}


def jice_root(path: str | os.PathLike | None = None) -> Path | None:
    """The jice checkout to use: ``path``, else ``$JAXCLIMATE_JICE``, else None (no peer).

    Accepts the repository root, any folder holding ``jice/``, or the ``jice/`` folder
    itself; returns the folder holding ``jice/`` (what goes on ``sys.path``). A path that
    is given but holds no jice raises ``FileNotFoundError``."""
    given = path if path is not None else os.environ.get(JICE_ENV_VAR) or None
    if given is None:
        return None
    candidate = Path(given).expanduser().resolve()
    if (candidate / "jice" / "environment" / "rice.py").is_file():
        return candidate
    if candidate.name == "jice" and (candidate / "environment" / "rice.py").is_file():
        return candidate.parent
    raise FileNotFoundError(f"no jice checkout at {candidate} (expected jice/environment/rice.py in it or at it)")


def apply_jice_shims() -> None:
    """Shim 1: ``jax.tree_map`` -> ``jax.tree_util.tree_map`` where this jax lacks it."""
    import jax

    try:
        jax.tree_map  # noqa: B018 (newer jax raises AttributeError here)
    except AttributeError:
        jax.tree_map = jax.tree_util.tree_map


def import_jice(root: Path) -> Any:
    """Import the ``jice`` package from ``root`` (shimmed); returns ``jice.environment``."""
    apply_jice_shims()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import jice.environment

    found = Path(jice.environment.__file__).resolve()
    if not found.is_relative_to(root.resolve()):
        raise ImportError(f"imported jice from {found}, not from {root}")
    return jice.environment


def load_jice(root: Path, num_regions: int = 20, **settings: Any) -> Any:
    """jice's ``Rice`` environment for ``num_regions`` (3, 7 or 20) with its training
    script's settings (:data:`JICE_TRAIN_SETTINGS`, overridden by ``settings``). Building it
    runs one eager episode (jice's baseline rewards): a few seconds on a CPU."""
    environment = import_jice(root)
    from jice.util import load_region_yamls

    with contextlib.chdir(root):  # jice reads "jice/region_yamls/..." relative to the cwd
        region_params = load_region_yamls(num_regions)
    config = JICE_TRAIN_SETTINGS | settings
    scenario = config.pop("scenario")
    cls = {"default": environment.Rice, "optimal_mitigation": environment.OptimalMitigation, "basic_club": environment.BasicClub}[scenario]
    return cls(region_params=region_params, num_regions=num_regions, scenario=scenario, **config)


def jice_step(env: Any) -> Callable:
    """Shim 2: ``step(key, state, levels) -> (TimeStep, state)`` as a plain function."""

    def step(key, state, levels):
        return env.step(key, state, levels)

    return step


def jice_reset(env: Any) -> Callable:
    """Shim 2: ``reset(key) -> (obs dict, state)`` as a plain function."""

    def reset(key):
        return env.reset(key)

    return reset
