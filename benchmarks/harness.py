"""Shared benchmark harness.

Every benchmark reports compile time separately from run time, takes the median of several
runs each ending in ``block_until_ready``, records the device, and writes JSON to
``benchmarks/results/``. Speed is measured here, never in timed tests.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import jax

from jaxclimate._io import atomic_write_text

RESULTS_DIR = Path(__file__).parent / "results"


def device_info() -> dict[str, Any]:
    device = jax.devices()[0]
    return {
        "backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "jax_version": jax.__version__,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,  # the cores this process may run on (taskset)
        "machine": platform.machine(),
        "x64": bool(jax.config.jax_enable_x64),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def compile_timed(fn: Callable, *args: Any) -> tuple[Any, float]:
    """``jax.jit(fn)`` compiled ahead of time for ``args``, and the seconds that took."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - start


def time_compiled(fn: Callable, *args: Any, repeats: int = 5) -> dict[str, Any]:
    """Compile ``jax.jit(fn)`` for ``args`` (timed on its own), then time ``repeats`` calls.

    Returns ``compile_s``, ``median_s``, ``runs_s``."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    compiled, compile_s = compile_timed(fn, *args)
    (runs,) = time_interleaved([(compiled, args)], repeats)  # one program: a warm-up, then its runs
    return {"compile_s": compile_s, "median_s": statistics.median(runs), "runs_s": runs}


def time_interleaved(programs: list[tuple[Callable, tuple]], repeats: int) -> list[list[float]]:
    """Seconds of each ``(compiled, args)`` program over ``repeats`` interleaved rounds, after
    one warm-up run each. Every round runs every program once, in reverse order every other
    round: a slow spell of a shared machine then falls on the programs of a round alike, and
    no program always runs right after the same one. Pair rounds with :func:`paired_ratio`."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for compiled, args in programs:
        jax.block_until_ready(compiled(*args))
    runs: list[list[float]] = [[] for _ in programs]
    for round_ in range(repeats):
        order = range(len(programs)) if round_ % 2 == 0 else reversed(range(len(programs)))
        for i in order:
            compiled, args = programs[i]
            start = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            runs[i].append(time.perf_counter() - start)
    return runs


def paired_ratio(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, float]:
    """Our rate over the peer's, round by round (rows with ``env_steps`` and ``runs_s`` from
    the same :func:`time_interleaved` call): the median and quartiles over rounds."""
    ratios = [(ours["env_steps"] / a) / (peer["env_steps"] / b) for a, b in zip(ours["runs_s"], peer["runs_s"], strict=True)]
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {"median": statistics.median(ratios), "q1": quartiles[0], "q3": quartiles[2]}


def ratio_fields(ours: dict[str, Any], peer: dict[str, Any], name: str) -> dict[str, Any]:
    """``ratio_vs_<name>`` (the :func:`paired_ratio` median) and ``ratio_vs_<name>_quartiles`` for a row."""
    ratio = paired_ratio(ours, peer)
    return {f"ratio_vs_{name}": ratio["median"], f"ratio_vs_{name}_quartiles": [ratio["q1"], ratio["q3"]]}


def time_python(fn: Callable[[], Any], repeats: int = 5) -> dict[str, Any]:
    """Median wall time of ``repeats`` calls of a host (non-JAX) function, after one warm-up."""
    fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return {"median_s": statistics.median(runs), "runs_s": runs}


#: XLA:CPU's flag naming the kinds of kernels it hands to the YNNPACK library (jax 0.10: dots and
#: reductions, with the elementwise work feeding them, by default); a peer's speed and ours move
#: differently with it.
YNN_FLAG = "xla_cpu_experimental_ynn_fusion_type"


def xla_variant_suffix(flags: str | None = None) -> str:
    """``"-ynn_<kinds>"`` when ``flags`` (default ``$XLA_FLAGS``) sets :data:`YNN_FLAG`
    (``"-ynn_off"`` for none, ``"-ynn_dot"`` for ``LIBRARY_FUSION_TYPE_DOT``), ``""``
    otherwise: a benchmark's record under other fusion settings then sits beside the default
    one instead of replacing it."""
    flags = os.environ.get("XLA_FLAGS", "") if flags is None else flags
    settings = re.findall(rf"--{YNN_FLAG}=(\S*)", flags)
    if not settings:
        return ""
    kinds = [k.removeprefix("LIBRARY_FUSION_TYPE_").lower() for k in settings[-1].split(",") if k]  # the last setting wins
    return "-ynn_" + ("_".join(kinds) if kinds else "off")


def save_results(name: str, payload: dict[str, Any], results_dir: Path | None = None) -> Path:
    """Write ``payload`` (plus device info and a UTC timestamp) to
    ``results/{name}-{backend}.json`` and return the path."""
    results_dir = RESULTS_DIR if results_dir is None else Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "device": device_info(), **payload}
    path = results_dir / f"{name}-{jax.default_backend()}.json"
    atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    return path


def format_table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """Plain-text table; ``columns`` are (key, header, format spec)."""
    header = [h for _, h, _ in columns]
    body = [[format(r[k], f) if r.get(k) is not None else "-" for k, _, f in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(b, widths)) for b in body]
    return "\n".join(lines)
