"""ruff's lint rules (pyproject.toml [tool.ruff]) hold over the repository; CI runs this test."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (the dev extra has it)")
def test_ruff_lint_is_clean():
    result = subprocess.run(["ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (the dev extra has it)")
def test_the_lint_check_can_fail(tmp_path):
    (tmp_path / "bad.py").write_text("import os\n")  # F401: unused import
    result = subprocess.run(["ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "F401" in result.stdout
