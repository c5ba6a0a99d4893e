"""The notebooks under notebooks/: stored without outputs, Colab-ready, and executed top to
bottom in FAST mode (each notebook asserts what its text claims, so a silently broken one
fails here)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from jaxclimate._xla import merge_xla_flags
from tests.conftest import COMPILE_FAST, FULL_OPT

#: XLA:CPU without LLVM's expensive optimisation passes, for the notebook kernels (below)
NOTEBOOK_LLVM_FLAG = "--xla_llvm_disable_expensive_passes=true"

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SYSTEMS = ("quickstart", "climate_mitigation", "rice_n", "ebm", "invest_esg")


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def test_every_system_has_a_notebook_linked_from_the_readme():
    names = {p.stem.split("_", 1)[1] for p in NOTEBOOKS}
    assert names == set(SYSTEMS)
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in readme, f"README does not link {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_outputs_and_colab_ready(path):
    nb = _read(path)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "clear the outputs before committing"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    assert 'find_spec("jaxclimate") is None' in code[0].source  # the install cell is a no-op where installed
    assert "FAST = " in code[1].source and "use_cpu_safe_xla_flags()" in code[1].source
    assert any("assert " in c.source for c in code), "a notebook checks what its text claims"


#: notebooks that train the same program (the climate game's scenario (i), paper settings) run on
#: one worker one after the other, so the second loads it from the compilation cache instead of
#: both compiling it at once (`--dist loadgroup`)
SAME_PROGRAM = {"00_quickstart", "01_climate_mitigation"}

#: notebooks whose FAST mode spends more CPU compiling than running: their kernels keep the
#: suite's compile-time-first setting (level 0) instead of the optimised one below. The test
#: alone from a cold cache, user CPU with the optimised setting -> level 0: 04 32 -> 23 s; the
#: others cost more at level 0 (02 77 -> 94 s, 03 30 -> 38 s; 00 and 01, whose training runs
#: dominate, more still).
COMPILE_BOUND = {"04_invest_esg"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=pytest.mark.xdist_group("scenario-i")) if p.stem in SAME_PROGRAM else p for p in NOTEBOOKS], ids=lambda p: p.stem
)
def test_notebook_runs_in_fast_mode(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    nb = _read(path)
    monkeypatch.setenv("JAXCLIMATE_FAST", "1")  # the kernel inherits the environment
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # Notebooks train for real and time what they claim (the surrogate's speed-up over
    # CICERO-SCM): their kernels (but COMPILE_BOUND's) compile with optimisation, without the
    # suite's compile-time-first flag, at the level the full_opt tests use (conftest.py), but without LLVM's expensive passes
    # (their compilation dominates: the five notebooks from a cold cache 283 -> 266 s; the
    # full_opt tests, whose run time dominates, gained nothing). The compilation cache is shared.
    if path.stem not in COMPILE_BOUND:
        monkeypatch.delenv(COMPILE_FAST, raising=False)
    if not FULL_OPT:  # JAXCLIMATE_TEST_FULL_OPT=1 compiles as users' programs are
        monkeypatch.setenv("XLA_FLAGS", merge_xla_flags(os.environ.get("XLA_FLAGS", ""), NOTEBOOK_LLVM_FLAG))
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    print(f"{path.name}: {time.perf_counter() - start:.0f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_install_cell_installs_from_the_checkout_keeping_the_runtimes_jax(tmp_path, monkeypatch):
    """The first cell, run as if jaxclimate were missing: pip installs the checkout the
    notebook sits in, constrained to the jax already installed; outside a checkout and with
    no JAXCLIMATE_SOURCE it stops with a message saying what to set."""
    import importlib.metadata
    import importlib.util
    import subprocess

    code = next(c for c in _read(NOTEBOOKS[0]).cells if c.cell_type == "code").source
    calls = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))
    monkeypatch.delenv("JAXCLIMATE_SOURCE", raising=False)
    monkeypatch.chdir(ROOT / "notebooks")
    exec(code, {})
    (cmd,) = calls
    assert cmd[-1] == f"jaxclimate[cicero] @ {ROOT.resolve().as_uri()}"
    constraints = (tmp_path / "jaxclimate-constraints.txt").read_text().split()
    assert cmd[cmd.index("-c") + 1] == str(tmp_path / "jaxclimate-constraints.txt")
    assert f"jax=={importlib.metadata.version('jax')}" in constraints
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="JAXCLIMATE_SOURCE"):
        exec(code, {})
    monkeypatch.setenv("JAXCLIMATE_SOURCE", "git+https://example.org/fork/jaxclimate.git")
    exec(code, {})
    assert calls[-1][-1] == "jaxclimate[cicero] @ git+https://example.org/fork/jaxclimate.git"
