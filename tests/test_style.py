"""ruff's lint rules and its formatter (pyproject.toml [tool.ruff]) hold over the repository;
CI runs these tests. ``ruff format .`` fixes what the format check finds."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str | None:
    """The ruff of this interpreter's environment (the dev extra pins it), else one on PATH."""
    beside = Path(sys.executable).parent / "ruff"
    return str(beside) if beside.exists() else shutil.which("ruff")


RUFF = _ruff()
needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the dev extra has it)")


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, *args], cwd=cwd, capture_output=True, text=True)


@needs_ruff
def test_ruff_lint_is_clean():
    result = _run("check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@needs_ruff
def test_ruff_format_is_clean():
    result = _run("format", "--check", "--no-cache", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout[-4000:] + result.stderr[-2000:]


@needs_ruff
def test_the_lint_and_format_checks_can_fail(tmp_path):
    (tmp_path / "bad.py").write_text("import os\nx = {  'a':1}\n")  # F401: unused import; and unformatted
    config = ("--config", str(ROOT / "pyproject.toml"))
    lint = _run("check", "--no-cache", *config, str(tmp_path), cwd=tmp_path)
    assert lint.returncode == 1 and "F401" in lint.stdout
    formatted = _run("format", "--check", "--no-cache", *config, str(tmp_path), cwd=tmp_path)
    assert formatted.returncode == 1 and "bad.py" in formatted.stdout
