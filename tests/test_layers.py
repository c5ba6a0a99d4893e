"""Each layer knows only the ones below it: environments, climate engines and the core know
nothing of training, reports or plots; the core nothing of environments or algorithms; an
algorithm imports only what algorithms share (``jaxclimate.algos.base`` and the building
blocks), never another algorithm; and no two modules of the package import each other, even
through others, even lazily."""

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

#: The package's layers, lowest first, by module prefix: a module may import its own layer and
#: those below. Everything not listed — the package itself, the environments' training reports
#: (``envs/<env>/report.py``, registered by id), run options, training, the commands — is the
#: top layer. Built-in environments reach the core only as declared ``"module:Class"`` strings.
LAYERS = (
    (
        "jaxclimate._io",
        "jaxclimate.checkpoint",
        "jaxclimate.memory",
        "jaxclimate._xla",
        "jaxclimate._cache",
        "jaxclimate.distributed",
        "jaxclimate._cli",
    ),
    ("jaxclimate.core", "jaxclimate.testing"),
    ("jaxclimate.climate",),
    ("jaxclimate.envs",),
    ("jaxclimate.algos", "jaxclimate.interfaces"),
)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (lazy imports included, and
    ``importlib.import_module("...")`` / ``__import__("...")`` of a literal name)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def _imports_by_name(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("import_module", "__import__")


def module_files(package: Path) -> dict[str, Path]:
    """``{dotted module name: file}`` of every module of ``package`` (a folder)."""
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(package: Path) -> dict[str, set[str]]:
    """``{module: the package's modules it imports}``, module-level and lazy imports alike.
    ``from a.b import c`` is an edge to ``a.b.c`` if that is a module, else to ``a.b``; the
    parent packages Python runs on the way are not edges (every module would otherwise sit in
    a cycle with its package's ``__init__``)."""
    modules = module_files(package)
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names}
            elif isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args and isinstance(node.args[0], ast.Constant):
                targets.add(node.args[0].value)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted: every
    module in one reaches every other by imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def layer(module: str) -> int:
    """``module``'s layer: its index in :data:`LAYERS`, ``len(LAYERS)`` for the top one."""
    if module.startswith("jaxclimate.envs.") and module.rsplit(".", 1)[1] == "report":
        return len(LAYERS)
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return len(LAYERS)


def test_no_two_modules_import_each_other():
    cycles = import_cycles(import_graph(PACKAGE))
    assert not cycles, f"modules that import each other (directly or through others): {cycles}"


def test_the_cycle_check_finds_a_planted_cycle(tmp_path):
    """Through a third module and a lazy import: a → b → c, and c imports a inside a function."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("import pkg.c\n")
    (package / "c.py").write_text("def f():\n    from pkg.a import g\n    return g\n")
    (package / "d.py").write_text("import importlib\n\nimportlib.import_module('pkg.e')\n")
    (package / "e.py").write_text("from pkg import d\n")
    assert import_cycles(import_graph(package)) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]


def test_no_module_imports_one_on_a_higher_layer():
    graph = import_graph(PACKAGE)
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer(b) > layer(a))
    assert not upward, f"imports of a higher layer: {upward}"


def test_the_core_imports_nothing_of_environments_or_algorithms():
    files = module_files(PACKAGE)
    core = sorted(name for name in files if name.startswith("jaxclimate.core"))
    offending = {
        name: sorted(m for m in imported_modules(files[name]) if m.startswith(("jaxclimate.envs", "jaxclimate.algos", "jaxclimate.climate")))
        for name in core
    }
    assert core and not any(offending.values()), {k: v for k, v in offending.items() if v}


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
