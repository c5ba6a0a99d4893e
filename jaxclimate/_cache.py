"""JAX's persistent compilation cache for jaxclimate's commands and tests.

XLA compilation dominates the start of every run (20–40 s before the CLI's first progress
line on a 2-core CPU). With the cache on, a program compiled once is read back from disk by
any later process that builds the same program: the second start of the same command, the
other pytest worker, a notebook kernel or a subprocess.

Where it lives, first match wins:

1. ``JAX_COMPILATION_CACHE_DIR`` set by the user: JAX's own setting, left as it is;
2. ``JAXCLIMATE_CACHE_DIR``;
3. ``$XDG_CACHE_HOME/jaxclimate/xla`` (``~/.cache/jaxclimate/xla``).

``JAXCLIMATE_COMPILE_CACHE=0`` (or the commands' ``--no-compile-cache``) turns it off. The
cache is bounded (``MAX_BYTES``, least recently used entries go first), which also makes JAX
take a file lock around each read and write, so concurrent processes share it safely.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_DIR = "JAXCLIMATE_CACHE_DIR"
ENV_SWITCH = "JAXCLIMATE_COMPILE_CACHE"
MAX_BYTES = 4 * 1024**3
# Programs compiling faster than this are not written: reading one back costs about what compiling
# it does, and every entry adds to the bounded cache's bookkeeping (every program written, in the
# test suite's in-process tests, doubled their time). Measured on 2 cores: the train CLI's and the
# preemption tests (subprocesses that build the same programs) took 117-123 s at 0.3 s, 103 s at
# 0.1 s; the in-process tests of envs/, core/ and algos/ 214 s at either.
MIN_COMPILE_SECONDS = 0.1


def default_cache_dir() -> Path:
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxclimate" / "xla"


def cache_disabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off")


def enable_compilation_cache(path: str | Path | None = None) -> Path | None:
    """Turn JAX's persistent compilation cache on (at ``path``, else as the module docstring
    says) unless ``JAXCLIMATE_COMPILE_CACHE=0``; returns the folder in use, or None when off.

    Safe to call before or after ``import jax`` and more than once; a folder the user gave JAX
    through ``JAX_COMPILATION_CACHE_DIR`` is kept."""
    if cache_disabled():
        return None
    import jax

    current = jax.config.jax_compilation_cache_dir
    if current and path is None:
        return Path(current)
    folder = Path(path) if path is not None else default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only home: run uncached rather than fail
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    if jax.config.jax_compilation_cache_max_size == -1:
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    return folder


def export_to_subprocesses(folder: Path) -> None:
    """Set the cache in this process's environment so child processes (CLI subprocesses,
    notebook kernels) read and write the same folder."""
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(folder)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(MIN_COMPILE_SECONDS)
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(MAX_BYTES))
