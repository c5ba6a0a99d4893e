"""Built-in environments are declared (one list of ``"module:Class"`` specs in
``jaxclimate/envs/__init__.py``), not imported: listing the ids imports no environment, making
one imports its family only; users register classes or specs alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jaxclimate.core import registry
from jaxclimate.envs import BUILTIN_ENVS

ROOT = Path(__file__).resolve().parents[2]
OTHER_FAMILIES = ("jaxclimate.envs.rice_n", "jaxclimate.envs.invest_esg", "jaxclimate.envs.climate_mitigation", "jaxclimate.climate.cicero")


def _modules_after(code: str) -> list[str]:
    """The ``jaxclimate`` modules a fresh interpreter holds after running ``code``."""
    script = f"import sys\n{code}\nprint('\\n'.join(m for m in sys.modules if m.startswith('jaxclimate')))"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120).stdout
    return out.split()


def test_making_the_ebm_imports_no_other_environment_family():
    loaded = _modules_after("import jaxclimate\nenv, params = jaxclimate.make('ebm-v1')\nassert env.name")
    assert "jaxclimate.envs.ebm.env" in loaded
    assert not [m for m in loaded if m.startswith(OTHER_FAMILIES)], loaded


def test_listing_the_ids_imports_no_environment():
    loaded = _modules_after("import jaxclimate\nids = jaxclimate.registered_envs()\nassert 'rice-n' in ids and 'invest-esg' in ids")
    assert not [m for m in loaded if m.startswith("jaxclimate.envs.")], loaded


def test_the_declared_list_is_what_is_registered_and_every_spec_imports():
    assert len({spec.id for spec in BUILTIN_ENVS}) == len(BUILTIN_ENVS)
    assert {spec.id for spec in BUILTIN_ENVS} <= set(registry.registered_envs())
    for spec in BUILTIN_ENVS:
        assert callable(registry.load(spec.entry_point)), spec
        assert registry.report_path(spec.id) == spec.report
        if spec.report is not None:
            assert isinstance(registry.load(spec.report), type), spec


def test_a_user_environment_registers_by_class_or_by_spec():
    from tests.core import toy_envs

    try:
        registry.register("toy-by-spec-v0", "tests.core.toy_envs:ToyEnv", report="tests.core.toy_envs:ToyEnv")
        registry.register("toy-by-class-v0", toy_envs.ToyEnv)
        registry.register("toy-missing-v0", "tests.core.toy_envs:NoSuchEnv")
        assert {"toy-by-spec-v0", "toy-by-class-v0"} <= set(registry.registered_envs())
        assert type(registry.make("toy-by-spec-v0")[0]) is type(registry.make("toy-by-class-v0")[0]) is toy_envs.ToyEnv
        assert registry.report_path("toy-by-spec-v0") == "tests.core.toy_envs:ToyEnv"
        with pytest.raises(ValueError, match="toy-missing-v0: its factory 'tests.core.toy_envs:NoSuchEnv' cannot be imported"):
            registry.make("toy-missing-v0")
        with pytest.raises(ValueError, match="already registered"):
            registry.register("toy-by-spec-v0", toy_envs.ToyEnv)
        with pytest.raises(ValueError, match="must be 'module:attribute'"):
            registry.register("toy-bad-v0", "tests.core.toy_envs.ToyEnv")
    finally:
        for env_id in ("toy-by-spec-v0", "toy-by-class-v0", "toy-missing-v0"):
            registry._REGISTRY.pop(env_id, None)
            registry._REPORTS.pop(env_id, None)
