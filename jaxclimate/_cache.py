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
take a file lock around each read and write, so concurrent processes share it safely. The test
suite keeps its own folder unbounded, JAX's default (no lock: an entry read while another
process writes it fails to decompress, and JAX warns and compiles), and prunes it per session.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_DIR = "JAXCLIMATE_CACHE_DIR"
ENV_SWITCH = "JAXCLIMATE_COMPILE_CACHE"
MAX_BYTES = 4 * 1024**3
UNBOUNDED = -1  # JAX's value for a cache without a bound
_ENTRY_SUFFIX, _ATIME_SUFFIX = "-cache", "-atime"  # JAX's files of an entry: <key>-cache, <key>-atime
# Programs compiling faster than this are not written: reading one back costs about what compiling
# it does. Measured on 2 cores: the train CLI's and the preemption tests (subprocesses that build
# the same programs) took 117-123 s at 0.3 s and 103 s at 0.1 s; the in-process tests of envs/,
# core/ and algos/ 214 s at either, and 430 s with every program written to a bounded cache
# (whose every write scans the folder; 208 s unbounded).
MIN_COMPILE_SECONDS = 0.1


def default_cache_dir() -> Path:
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxclimate" / "xla"


def cache_disabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off")


def enable_compilation_cache(path: str | Path | None = None, *, max_bytes: int = MAX_BYTES) -> Path | None:
    """Turn JAX's persistent compilation cache on (at ``path``, else as the module docstring
    says) unless ``JAXCLIMATE_COMPILE_CACHE=0``; returns the folder in use, or None when off.
    ``max_bytes`` bounds it unless the user set JAX's own bound; ``UNBOUNDED`` leaves it
    unbounded (JAX's default: no lock and no scan of the folder at each write, see
    ``prune``).

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
    if jax.config.jax_compilation_cache_max_size == UNBOUNDED:
        jax.config.update("jax_compilation_cache_max_size", max_bytes)
    return folder


def export_to_subprocesses(folder: Path, *, max_bytes: int = MAX_BYTES) -> None:
    """Set the cache in this process's environment so child processes (CLI subprocesses,
    notebook kernels) read and write the same folder."""
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(folder)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(MIN_COMPILE_SECONDS)
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(max_bytes))


def prune(folder: Path, max_bytes: int) -> int:
    """Delete the oldest entries of an unbounded cache folder until it holds at most
    ``max_bytes`` of them; returns the bytes deleted. A bounded cache evicts by itself, but at
    every write it takes a lock and reads the size and access time of every entry, which grows
    with the folder: the test suite writes thousands of entries and keeps its folder unbounded,
    pruned once per session instead."""
    entries = []
    for path in folder.glob(f"*{_ENTRY_SUFFIX}"):
        try:
            stat = path.stat()
        except OSError:
            continue  # removed meanwhile
        entries.append((stat.st_mtime, stat.st_size, path))
    entries.sort()
    excess = sum(size for _, size, _ in entries) - max_bytes
    deleted = 0
    for _, size, path in entries:
        if deleted >= excess:
            break
        path.unlink(missing_ok=True)
        path.with_name(path.name.removesuffix(_ENTRY_SUFFIX) + _ATIME_SUFFIX).unlink(missing_ok=True)
        deleted += size
    return deleted
