"""Test configuration.

The CPU XLA flags must be set before JAX starts its backend: jax 0.10.2 can deadlock in
``jit(vmap(train))`` on CPU without them (see ``jaxclimate/_xla.py``). Every test has a
timeout (pyproject) so a hang fails instead of eating CI's budget.

Compilation is most of the suite's time (70 % of it, measured), so the tests compile with
JAX's ``jax_disable_most_optimizations`` (XLA's backend optimisation level 0 and LLVM's
expensive passes off; set as ``JAX_DISABLE_MOST_OPTIMIZATIONS=1`` so every subprocess and
notebook kernel inherits it): the same programs, compiled faster and run slower, which for the
tiny configurations of most tests is a large net gain. Tests whose time is spent running
rather than compiling (training loops) carry the ``full_opt`` marker and, like the notebook
kernels, compile with optimisation at XLA's backend level 1 (``XLA_FLAGS``, inherited too)
rather than users' level 2: a RICE-N training run in FAST mode on one core compiled in 19 s
instead of 38 s and ran in 28 s instead of 25 s, and the five notebooks took 293 s instead of
363 s. Neither changes semantics: each comparison a test makes is between programs compiled
alike within the test, or within a stated tolerance. ``JAXCLIMATE_TEST_FULL_OPT=1`` runs the
whole suite as users' programs are compiled. Otherwise every test, ``full_opt`` or not, also
compiles with XLA:CPU's legacy fusion emitters (``LEGACY_EMITTERS_FLAG`` below), about a third
faster to compile.

Each test's JAX compile time (tracing, lowering and XLA compilation in the test's own process,
read from ``jax.monitoring``) is recorded beside its duration; ``--compile-report N`` prints the
N slowest tests with that split at the end of the run.

Compiled programs are kept in JAX's persistent compilation cache in the checkout's ignored
``.cache/jax`` folder, shared by the xdist workers and by every subprocess the tests start
(CLI runs, notebook kernels): a clean checkout starts cold, a second run is warm.
``JAXCLIMATE_COMPILE_CACHE=0`` runs the suite without it.
"""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path


# The suite runs on the CPU wherever it runs, a GPU machine included (each xdist worker would
# otherwise preallocate 75 % of the GPU's memory, and the parity tolerances are CPU ones);
# JAXCLIMATE_TEST_BACKEND=gpu (or any JAX platform name) asks for another backend. Set before
# JAX is imported, so JAX and every subprocess the tests start read it.
# The `gpu` tier (`python -m pytest -m gpu -n 0`) is the exception: it compares the accelerator
# with the CPU, so it leaves every platform on and compiles as users' programs are compiled.
def _gpu_tier_requested(argv: list[str]) -> bool:
    """Whether the command line selects the gpu marker (``-m gpu``, ``-m "gpu and …"``)."""
    for i, arg in enumerate(argv):
        expr = argv[i + 1] if arg == "-m" and i + 1 < len(argv) else arg[3:] if arg.startswith("-m=") else None
        if expr is not None and expr.split(" and ")[0].strip() == "gpu":
            return True
    return False


# xdist workers do not see the command line: the main process hands the choice down
GPU_TIER = _gpu_tier_requested(sys.argv) or os.environ.get("JAXCLIMATE_GPU_TIER") == "1"
if GPU_TIER:
    os.environ["JAXCLIMATE_GPU_TIER"] = "1"
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # several workers share the device
    os.environ.setdefault("JAXCLIMATE_TEST_FULL_OPT", "1")
    if "JAXCLIMATE_TEST_BACKEND" not in os.environ:
        os.environ.pop("JAX_PLATFORMS", None)
    else:
        os.environ["JAX_PLATFORMS"] = os.environ["JAXCLIMATE_TEST_BACKEND"]
else:
    os.environ["JAX_PLATFORMS"] = os.environ.get("JAXCLIMATE_TEST_BACKEND", "cpu")

#: compile-time-first compilation (module docstring); inherited by every subprocess and kernel
COMPILE_FAST = "JAX_DISABLE_MOST_OPTIMIZATIONS"
#: what the tests that run (full_opt tests, notebook kernels) compile at instead: XLA's backend
#: optimisation level 1, not users' 2 (module docstring); JAX_DISABLE_MOST_OPTIMIZATIONS, where
#: set, overrides it with level 0
RUN_OPTIMISATION_FLAG = "--xla_backend_optimization_level=1"
FULL_OPT = os.environ.get("JAXCLIMATE_TEST_FULL_OPT", "0") == "1"
if not FULL_OPT:
    os.environ.setdefault(COMPILE_FAST, "1")

from jaxclimate import _cache  # noqa: E402
from jaxclimate._xla import flag_names, merge_xla_flags, use_cpu_safe_xla_flags  # noqa: E402

#: XLA:CPU's legacy fusion emitters (LLVM IR written directly) instead of its MLIR fusion
#: emitters: the same programs compile about a third faster (tests/algos/test_ippo_options.py and
#: test_off_policy.py from a cold cache 128 -> 84 s; notebook 02 90 -> 75 s). Tests only, like
#: the optimisation levels; left out where a jaxlib no longer knows the flag (XLA aborts on one
#: it does not know, so the main process asks a throwaway process first and the workers inherit).
LEGACY_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters=false"


def _xla_accepts(flag: str) -> bool:
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {flag}", JAX_PLATFORMS="cpu")
    probe = [sys.executable, "-c", "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"]
    return subprocess.run(probe, env=env, capture_output=True, timeout=120).returncode == 0


use_cpu_safe_xla_flags()
if not FULL_OPT:
    os.environ["XLA_FLAGS"] = merge_xla_flags(os.environ["XLA_FLAGS"], RUN_OPTIMISATION_FLAG)
    unset = flag_names(LEGACY_EMITTERS_FLAG).isdisjoint(flag_names(os.environ["XLA_FLAGS"]))  # a user's value wins
    if unset and "PYTEST_XDIST_WORKER" not in os.environ and _xla_accepts(LEGACY_EMITTERS_FLAG):
        os.environ["XLA_FLAGS"] = merge_xla_flags(os.environ["XLA_FLAGS"], LEGACY_EMITTERS_FLAG)
ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("JAX_COMPILATION_CACHE_DIR") or ROOT / ".cache" / "jax")
# Unbounded while the suite runs (a bounded cache scans its whole folder at every write: the
# suite writes thousands of entries), pruned to CACHE_KEEP_BYTES when a session starts.
CACHE_KEEP_BYTES = 2 * 1024**3
if not _cache.cache_disabled():
    _cache.export_to_subprocesses(CACHE, max_bytes=_cache.UNBOUNDED)
    if "PYTEST_XDIST_WORKER" not in os.environ and CACHE.is_dir():
        _cache.prune(CACHE, CACHE_KEEP_BYTES)

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

_cache.enable_compilation_cache(CACHE, max_bytes=_cache.UNBOUNDED)

DATA = Path(__file__).parent / "data"

_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
_compile_seconds = [0.0]


def _on_duration(event: str, duration: float, **_) -> None:
    if event in _COMPILE_EVENTS:
        _compile_seconds[0] += duration


jax.monitoring.register_event_duration_secs_listener(_on_duration)


def pytest_addoption(parser):
    parser.addoption(
        "--compile-report", type=int, default=0, metavar="N", help="print the N slowest tests with their JAX compile time (this process only)"
    )


def pytest_itemcollected(item):
    """xdist groups, marked as each test is collected (before xdist reads them). The ``full_opt``
    tests share one group, so they run in a row on one worker and switch the compilation setting
    (clearing JAX's caches) once, not around each of them. Every other test without a group of its
    own joins its file's: a file's tests run on one worker, so its module fixtures are built, its
    programs traced and its eager operations compiled once, not once per worker (the fast tier
    from a cold cache: 5:01 -> 4:26 on 2 cores, 11 % less test time)."""
    if item.get_closest_marker("full_opt") is not None:
        item.add_marker(pytest.mark.xdist_group("full-opt"))
    elif item.get_closest_marker("xdist_group") is None:
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))  # its file, as in its node id


def pytest_collection_modifyitems(config, items):
    """The slow tier first (stable order otherwise): xdist hands out the groups in the order of
    their first tests, so both workers start on the long tests and the short ones fill the gaps,
    instead of one long test ending the run."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if jax.default_backend() != "cpu":
        return
    from jaxclimate.info import gpu_present

    if GPU_TIER and gpu_present():
        return  # a GPU is here but JAX runs on the CPU: the tier runs, and fails, rather than pass by skipping
    skip = pytest.mark.skip(reason="no accelerator: JAX sees only the CPU (on a GPU machine: python -m pytest -m gpu -n 0)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _full_optimisation_where_marked(request, monkeypatch):
    """``@pytest.mark.full_opt``: the test (and the processes it starts) compiles with
    optimisation (XLA's level 1, ``RUN_OPTIMISATION_FLAG``), for tests whose time is spent
    running compiled code."""
    if request.node.get_closest_marker("full_opt") is not None and os.environ.get(COMPILE_FAST) == "1":
        monkeypatch.setenv(COMPILE_FAST, "0")
        _compile_with_full_optimisation(True)
    yield


@pytest.hookimpl(trylast=True)  # after the test's fixtures are torn down (COMPILE_FAST restored)
def pytest_runtest_teardown(item, nextitem):
    """Back to compile-time-first after a full_opt test unless the next one is full_opt too,
    before any fixture of the next test (module-scoped ones included) compiles."""
    if os.environ.get(COMPILE_FAST) == "1" and (nextitem is None or nextitem.get_closest_marker("full_opt") is None):
        _compile_with_full_optimisation(False)


def _compile_with_full_optimisation(full: bool) -> None:
    """Switch this process's compilation setting, clearing JAX's in-memory caches, which are
    keyed without it: a full_opt test compiles with optimisation, and no test of the other
    setting runs a program compiled under this one (the two settings' results differ in the last
    bits, and tests compare runs of one process with runs of another bit for bit). Switched only
    when it changes, so the full_opt tests in a row share their programs."""
    if jax.config.read("jax_disable_most_optimizations") != full:
        return  # already compiling with (full) or without (not full) optimisation
    jax.clear_caches()
    jax.config.update("jax_disable_most_optimizations", not full)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item._jaxclimate_start = (_compile_seconds[0], time.perf_counter())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    start = getattr(item, "_jaxclimate_start", None)
    if call.when == "teardown" and start is not None:
        report = outcome.get_result()
        report.user_properties.append(("compile_s", _compile_seconds[0] - start[0]))
        report.user_properties.append(("total_s", time.perf_counter() - start[1]))


_timings: dict[str, dict] = {}


def pytest_runtest_logreport(report):
    props = dict(report.user_properties)
    if "total_s" in props and report.when == "teardown":
        _timings[report.nodeid] = props


def pytest_terminal_summary(terminalreporter, config):
    n = config.getoption("--compile-report")
    if not n or not _timings:
        return
    rows = sorted(_timings.items(), key=lambda kv: -kv[1]["total_s"])
    total = sum(t["total_s"] for t in _timings.values())
    compiled = sum(t["compile_s"] for t in _timings.values())
    tr = terminalreporter
    tr.section(f"{n} slowest tests: wall and in-process JAX compile time")
    tr.write_line(f"{'wall s':>8} {'compile s':>9} {'share':>6}  test")
    for nodeid, t in rows[:n]:
        share = t["compile_s"] / t["total_s"] if t["total_s"] else 0.0
        tr.write_line(f"{t['total_s']:8.1f} {t['compile_s']:9.1f} {share:6.0%}  {nodeid}")
    tr.write_line(
        f"all {len(_timings)} tests: {total:.0f} s of test time, {compiled:.0f} s compiling ({compiled / total:.0%}; subprocesses not counted)"
    )


@pytest.fixture
def table_generator():
    """docs/generate_tables.py as a module (docs/ is not a package): the docs' generated tables
    and the records they come from."""
    spec = importlib.util.spec_from_file_location("generate_tables", Path(__file__).resolve().parents[1] / "docs" / "generate_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def x64():
    """Run the test with 64-bit JAX (parity tests), restoring the previous setting."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


def load_golden(name: str) -> dict:
    with np.load(DATA / "ebm" / f"{name}.npz") as f:
        return {k: f[k] for k in f.files}
