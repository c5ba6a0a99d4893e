"""Where a compiled program's time goes: one run under ``jax.profiler``, its kernels summed
by kind.

    from benchmarks.xla_profile import profile_by_kind
    breakdown = profile_by_kind(compiled, *args)   # {"matmul": s, "random numbers": s, ...}

XLA records one trace event per executed kernel (a fusion, a dot, a copy), named as the
instruction in the compiled HLO. Each kernel is put in one kind from the HLO text:

* ``initialisation``: its source is inside a network initialiser (``orthonormal_columns``, ``*_init``);
* ``random numbers``: inside ``jax.random`` (threefry bits, Gumbel noise, randint);
* ``matmul``: otherwise, the instruction is a ``dot``/``convolution``, or a fusion whose computation holds one;
* ``other``: everything else (element-wise work, reductions, copies, gathers, scatters).

Control flow (``while``, ``call``, ``conditional``) is not a kernel: its time is the time of
the kernels inside it, which are counted themselves. The trace adds a little to each kernel,
and XLA:CPU may run independent kernels at once on several threads, so the kinds' sum can
exceed the traced run's wall time; the shares are what to read. The profiler's buffer holds a
bounded number of events: a long program's trace loses some (its ``total`` then falls well
short of its ``wall``), so profile a short one, e.g. a few updates of a trainer.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import re
import tempfile
import time
from typing import Any

import jax

KINDS = ("matmul", "random numbers", "initialisation", "other")
CONTROL_FLOW = {"while", "call", "conditional", "async-start", "async-done"}
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = .*? ([a-z][\w\-]*)\((.*)$")
_RANDOM = ("jit(_gumbel)", "jit(_randint)", "jit(_uniform)", "threefry", "random_bits", "jit(_normal)")
_INIT = ("orthonormal_columns", "_init)", "jit(_initialize")


def instruction_kinds(hlo_text: str) -> dict[str, str]:
    """``{instruction name: kind}`` for every instruction of a compiled module's HLO text
    (``compiled.as_text()``); control-flow instructions get the kind ``"control flow"``."""
    bodies = _computations(hlo_text)
    kinds = {}
    for lines in bodies.values():
        for match in filter(None, map(_INSTRUCTION.match, lines)):
            name, opcode, rest = match.groups()
            called = re.search(r"calls=%?([\w.\-]+)", rest)
            body = "\n".join(bodies.get(called.group(1), [])) if called and opcode == "fusion" else ""
            op_name = (re.search(r'op_name="([^"]*)"', rest) or re.search(r'op_name="([^"]*)"', body) or [None, ""])[1]
            kinds[name] = _kind(opcode, op_name, body)
    return kinds


def _computations(hlo_text: str) -> dict[str, list[str]]:
    """``{computation name: its lines}`` of an HLO module's text (the entry one by its own name)."""
    bodies: dict[str, list[str]] = {}
    current = None
    for line in hlo_text.splitlines():
        if line and not line.startswith(" ") and line.rstrip().endswith("{"):
            words = line.split()
            current = (words[1] if words[0] == "ENTRY" else words[0]).lstrip("%")
            bodies[current] = []
        elif current is not None:
            bodies[current].append(line)
    return bodies


def _kind(opcode: str, op_name: str, fused_body: str) -> str:
    """One instruction's kind from its opcode, its source's ``op_name`` and, for a fusion, the
    text of the computation it fuses."""
    if opcode in CONTROL_FLOW:
        return "control flow"
    if any(marker in op_name for marker in _INIT):
        return "initialisation"
    if any(marker in op_name for marker in _RANDOM):
        return "random numbers"
    if opcode in ("dot", "convolution") or re.search(r" (dot|convolution)\(", fused_body):
        return "matmul"
    return "other"


def kernel_times(trace_dir: str) -> collections.Counter:
    """Seconds per trace-event name summed over the Perfetto trace written in ``trace_dir``."""
    return kernel_events(trace_dir)[0]


def kernel_events(trace_dir: str) -> tuple[collections.Counter, collections.Counter]:
    """Seconds and number of events per trace-event name in the Perfetto trace written in
    ``trace_dir``."""
    files = glob.glob(f"{trace_dir}/**/perfetto_trace.json.gz", recursive=True)
    if not files:
        raise FileNotFoundError(f"no perfetto_trace.json.gz under {trace_dir}")
    with gzip.open(files[0]) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    times: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    for event in events:
        if event.get("ph") == "X":
            times[event["name"]] += event.get("dur", 0) * 1e-6
            counts[event["name"]] += 1
    return times, counts


def traced_run(compiled: Any, *args: Any) -> tuple[collections.Counter, collections.Counter, float]:
    """Run ``compiled(*args)`` once under the profiler (after one untraced run, so first-call
    allocations stay out of the trace): seconds and events per trace-event name, and the traced
    run's wall time."""
    jax.block_until_ready(compiled(*args))
    with tempfile.TemporaryDirectory() as trace_dir:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            start = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            wall = time.perf_counter() - start
        times, counts = kernel_events(trace_dir)
    return times, counts, wall


def by_kind(kinds: dict[str, str], per_kernel: dict[str, float]) -> dict[str, float]:
    """``per_kernel`` (seconds or events per kernel name) summed per kind of :data:`KINDS`;
    names that are not kernels of the program (control flow, the runtime's own events) are left
    out."""
    out = dict.fromkeys(KINDS, 0.0)
    for name, value in per_kernel.items():
        kind = kinds.get(name)
        if kind in out:
            out[kind] += value
    return out


def profile_by_kind(compiled: Any, *args: Any) -> dict[str, float]:
    """Run ``compiled(*args)`` once under the profiler; seconds of kernel time per kind
    (:data:`KINDS`), their ``"total"`` and the traced run's ``"wall"`` time. ``compiled`` is a
    ``jax.jit(f).lower(...).compile()``. The profiler keeps a bounded number of events, so
    profile a short program: ``total`` well under ``wall`` means events were dropped (kernels
    running at once can also put it over). Raises if no kernel of the program was traced."""
    kinds = instruction_kinds(compiled.as_text())
    times, _, wall = traced_run(compiled, *args)
    out = by_kind(kinds, times)
    out["total"] = sum(out[k] for k in KINDS)
    if out["total"] == 0:
        raise RuntimeError("the profiler traced none of the program's kernels (a jax or XLA version that names them otherwise?)")
    out["wall"] = wall
    return out
