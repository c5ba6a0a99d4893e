"""Each layer knows only the ones below it: environments, climate engines and the core know
nothing of training, reports or plots; an algorithm imports only what algorithms share
(``jaxclimate.algos.base`` and the building blocks), never another algorithm."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxclimate"
ALGORITHMS = ("jaxclimate.algos.ippo", "jaxclimate.algos.off_policy", "jaxclimate.algos.apg")
#: what the algorithms share (acting, networks, the Algorithm record): none of it imports an algorithm
SHARED = (
    "jaxclimate.algos.base",
    "jaxclimate.algos.acting",
    "jaxclimate.algos.networks",
    "jaxclimate.algos.distributions",
    "jaxclimate.algos.losses",
)
ABOVE_ENVIRONMENTS = ("jaxclimate.train", "jaxclimate.sweep", "jaxclimate.reporting", "jaxclimate.algos", "matplotlib")


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _below_environments() -> list[Path]:
    files = [p for folder in ("core", "climate", "envs") for p in (PACKAGE / folder).rglob("*.py")]
    return [p for p in files if p.name != "report.py"]  # an env's training report sits beside it, registered by id


@pytest.mark.parametrize("path", _below_environments(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_environments_import_nothing_of_training_reports_or_plots(path):
    offending = sorted(m for m in imported_modules(path) if m.startswith(ABOVE_ENVIRONMENTS))
    assert not offending, f"{path.relative_to(PACKAGE)} imports {offending}"


@pytest.mark.parametrize("module", ALGORITHMS)
def test_no_algorithm_imports_another(module):
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    others = sorted(m for m in imported_modules(path) for other in ALGORITHMS if other != module and m.startswith(other))
    assert not others, f"{module} imports {others}"


@pytest.mark.parametrize("module", SHARED)
def test_what_algorithms_share_imports_no_algorithm(module):
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    offending = sorted(m for m in imported_modules(path) if m.startswith(ALGORITHMS))
    assert not offending, f"{module} imports {offending}"


def test_the_check_sees_a_lazy_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from jaxclimate.reporting import TrainingReport\n    return TrainingReport\n")
    assert "jaxclimate.reporting" in imported_modules(sample)
