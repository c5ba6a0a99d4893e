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

**pax**, UCL DARK's multi-agent library (github.com/ucl-dark/pax), whose ``Rice`` environment
(``pax/envs/rice/rice.py``: 27 or 5 regions, continuous actions in [0, 1], no negotiation; a
gymnax ``Environment`` with its own jitted ``step``/``reset``; measured at commit 6ae3d07,
12 Jan 2024, the head of ``main``). To obtain it::

    git clone https://github.com/ucl-dark/pax /tmp/peers/pax
    pip install chex gymnax pyyaml       # what its Rice module imports (plus jax)

(only the ``pax/`` package folder is needed: ``git archive HEAD pax | tar -x -C DIR`` works
too) and pass ``--pax DIR`` or set ``JAXCLIMATE_PAX=DIR``, where DIR is the repository root or
any folder holding ``pax/`` (or the ``pax/`` folder itself). Its region files are read from
``pax/envs/rice/27_regions/`` (one YAML per region, sorted by file name, plus ``default.yml``),
a path :func:`load_pax` passes absolute, so the working directory does not matter.

Three compatibility shims, all applied here and none by editing pax:

1. pax calls ``jax.tree_map`` (in ``Rice.step``): jice's shim 1.
2. ``pax/envs/rice/rice.py`` imports ``float_precision`` (``jnp.float32``) from ``pax.utils``,
   which imports dm-haiku and optax at the top for pax's agents. Neither is needed by the
   environment, so a stand-in ``pax.utils`` holding only ``float_precision`` is registered in
   ``sys.modules`` before the import (its dtype read from the checkout's own ``pax/utils.py``);
   nothing else of pax is imported. (With dm-haiku installed it is not needed, but it is used
   anyway so that every run imports the same code.)
3. pax calls ``jnp.clip(x, a_min=0, a_max=1)``, keywords newer jax removed; only inside pax's
   Rice module (its ``jnp`` global) ``jax.numpy`` is replaced by a view of it whose ``clip``
   takes them too (only when this jax lacks them). Nothing outside that module sees it.

pax's ``step``/``reset`` are already plain (jitted) functions of ``(key, state, actions,
params)`` and ``(key, params)``; :func:`pax_step` and :func:`pax_reset` close over its (empty)
``EnvParams`` so that they take the same arguments as jice's.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Callable

#: Environment variable naming a local jice checkout (the ``--jice`` flag wins).
JICE_ENV_VAR = "JAXCLIMATE_JICE"

#: jice's own training script's environment settings (train_with_jax.py on GAIA_jax):
#: train_env skips the per-step info dicts; diff_reward_mode rewards the change of utility.
JICE_TRAIN_SETTINGS = {"train_env": True, "scenario": "default", "diff_reward_mode": True, "relative_reward_mode": False, "disable_trading": False}


#: jice's Rice module, relative to the folder holding the ``jice`` package
JICE_RICE = Path("jice", "environment", "rice.py")


def checkout_root(path: str | os.PathLike | None, env_var: str, module: Path) -> Path | None:
    """A peer's checkout: ``path``, else ``$env_var``, else None (no peer). Accepts the folder
    holding ``module`` (``package/…/rice.py``: the repository root or any folder holding the
    package) or the package folder itself, and returns the folder holding the package (what
    goes on ``sys.path``). A path that is given but holds no such module raises
    ``FileNotFoundError``."""
    given = path if path is not None else os.environ.get(env_var) or None
    if given is None:
        return None
    candidate = Path(given).expanduser().resolve()
    if (candidate / module).is_file():
        return candidate
    if candidate.name == module.parts[0] and (candidate.parent / module).is_file():
        return candidate.parent
    raise FileNotFoundError(f"no {module.parts[0]} checkout at {candidate} (expected {module} in it or {module.parts[0]}/ to be it)")


def jice_root(path: str | os.PathLike | None = None) -> Path | None:
    """The jice checkout to use (``path``, else ``$JAXCLIMATE_JICE``; :func:`checkout_root`)."""
    return checkout_root(path, JICE_ENV_VAR, JICE_RICE)


def alias_tree_map() -> None:
    """Shim 1: ``jax.tree_map`` -> ``jax.tree_util.tree_map`` where this jax lacks it."""
    import jax

    try:
        jax.tree_map  # noqa: B018 (newer jax raises AttributeError here)
    except AttributeError:
        jax.tree_map = jax.tree_util.tree_map


def import_jice(root: Path) -> Any:
    """Import the ``jice`` package from ``root`` (shimmed); returns ``jice.environment``."""
    alias_tree_map()
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


#: Environment variable naming a local pax checkout (the ``--pax`` flag wins).
PAX_ENV_VAR = "JAXCLIMATE_PAX"

#: pax's Rice module, relative to the folder holding the ``pax`` package
PAX_RICE = Path("pax", "envs", "rice", "rice.py")


def pax_root(path: str | os.PathLike | None = None) -> Path | None:
    """The pax checkout to use (``path``, else ``$JAXCLIMATE_PAX``; :func:`checkout_root`)."""
    return checkout_root(path, PAX_ENV_VAR, PAX_RICE)


def checkout_commit(root: Path) -> str | None:
    """The git commit checked out at ``root`` (None where it is no git work tree, e.g. an export)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip() if done.returncode == 0 else ""
    return commit or None


def pax_float_precision(root: Path) -> Any:
    """The dtype ``pax/utils.py`` names ``float_precision`` (``float_precision = jnp.<dtype>``)."""
    import jax.numpy as jnp

    tree = ast.parse((root / "pax" / "utils.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["float_precision"]:
            if isinstance(node.value, ast.Attribute) and getattr(node.value.value, "id", None) == "jnp":
                return getattr(jnp, node.value.attr)
    raise ImportError(f"no 'float_precision = jnp.<dtype>' in {root / 'pax' / 'utils.py'}")


class _NumpyWithClipKeywords(types.ModuleType):
    """Shim 3: ``jax.numpy`` whose ``clip`` also takes the removed ``a_min``/``a_max``."""

    def __getattr__(self, name: str) -> Any:
        import jax.numpy as jnp

        return getattr(jnp, name)

    @staticmethod
    def clip(x, min=None, max=None, *, a_min=None, a_max=None):  # noqa: A002 (jnp.clip's names)
        import jax.numpy as jnp

        return jnp.clip(x, a_min if min is None else min, a_max if max is None else max)


def import_pax(root: Path) -> Any:
    """Import pax's Rice module from ``root`` (shimmed); returns ``pax.envs.rice.rice``."""
    import jax.numpy as jnp

    alias_tree_map()  # shim 1
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import pax

    found = Path(pax.__file__).resolve()
    if not found.is_relative_to(root.resolve()):
        raise ImportError(f"imported pax from {found}, not from {root}")
    if "pax.utils" not in sys.modules:  # shim 2
        utils = types.ModuleType("pax.utils", "jaxclimate's stand-in: only what pax's Rice imports")
        utils.float_precision = pax_float_precision(root)
        sys.modules["pax.utils"] = utils
    import pax.envs.rice.rice as rice

    if "a_min" not in inspect.signature(jnp.clip).parameters:  # shim 3
        rice.jnp = _NumpyWithClipKeywords("jax.numpy")
    return rice


def load_pax(root: Path, num_regions: int = 27, episode_length: int = 20, has_mediator: bool = False) -> Any:
    """pax's ``Rice`` for ``num_regions`` (27 or 5, its two region folders), 20 steps an
    episode and no mediator (the settings of its Rice-N experiments without one)."""
    rice = import_pax(root)
    folder = root / "pax" / "envs" / "rice" / f"{num_regions}_regions"
    if not folder.is_dir():
        raise FileNotFoundError(f"pax has no {num_regions}-region configuration ({folder})")
    return rice.Rice(config_folder=str(folder), has_mediator=has_mediator, episode_length=episode_length)


def pax_step(env: Any) -> Callable:
    """``step(key, state, actions) -> (obs tuple, state, reward tuple, done, info)`` as a plain
    function of jice's arguments (pax's ``EnvParams`` is empty)."""
    params = sys.modules[type(env).__module__].EnvParams()

    def step(key, state, actions):
        return env.step(key, state, actions, params)

    return step


def pax_reset(env: Any) -> Callable:
    """``reset(key) -> (obs tuple, state)`` as a plain function."""
    params = sys.modules[type(env).__module__].EnvParams()

    def reset(key):
        return env.reset(key, params)

    return reset
