"""The persistent compilation cache of the commands (jaxclimate/_cache.py): where it lives,
how it is switched off, and that a second process reads back what the first compiled."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from jaxclimate import _cache
from tests.conftest import LEGACY_EMITTERS_FLAG, RUN_OPTIMISATION_FLAG, _xla_accepts

ROOT = Path(__file__).resolve().parents[1]

# Compiles RICE-N's step (several seconds: above the cache's 0.1 s threshold) the way the CLI
# sets the cache up, and prints how many compilations the persistent cache answered.
PROGRAM = """
import json, sys, jax, jaxclimate
from jaxclimate import _cli
hits = []
jax.monitoring.register_event_listener(lambda event, **_: hits.append(event) if event.endswith("cache_hits") else None)
folder = _cli.configure_compile_cache(sys.argv[1:])
env, params = jaxclimate.make("rice-n")
key = jax.random.PRNGKey(0)
_, state = env.reset(key, params)
jax.block_until_ready(jax.jit(env.step)(key, state, env.sample_actions(key), params))
print(json.dumps({"folder": None if folder is None else str(folder), "hits": len(hits)}))
"""


def test_cache_folder_and_switch(monkeypatch, tmp_path):
    monkeypatch.delenv(_cache.ENV_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.default_cache_dir() == tmp_path / "xdg" / "jaxclimate" / "xla"
    monkeypatch.setenv(_cache.ENV_DIR, str(tmp_path / "mine"))
    assert _cache.default_cache_dir() == tmp_path / "mine"
    for off in ("0", "false", "OFF"):
        monkeypatch.setenv(_cache.ENV_SWITCH, off)
        assert _cache.cache_disabled() and _cache.enable_compilation_cache() is None
    monkeypatch.setenv(_cache.ENV_SWITCH, "1")
    assert not _cache.cache_disabled()


@pytest.mark.slow
def test_second_process_reads_what_the_first_compiled(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE") and k != _cache.ENV_SWITCH}
    env.update({_cache.ENV_DIR: str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"})

    def run(*flags):
        out = subprocess.run([sys.executable, "-c", PROGRAM, *flags], env=env, capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    def entries():
        return sorted(p.name for p in (tmp_path / "cache").glob("*-cache"))

    off = run("--no-compile-cache")
    assert off == {"folder": None, "hits": 0} and not (tmp_path / "cache").exists()
    first = run()
    assert first == {"folder": str(tmp_path / "cache"), "hits": 0}
    written = entries()
    assert written, "the first run wrote nothing to the cache"
    second = run()
    # every program the first run wrote is read back. (A program that compiled in under the
    # cache's threshold the first time and over it the second, on a loaded machine, may be added:
    # that is the cache working, not a miss.)
    assert second["hits"] >= len(written) and set(written) <= set(entries())


def test_the_suite_compiles_compile_time_first_unless_a_test_is_marked_full_opt():
    """conftest.py: the suite and its subprocesses compile with JAX's most optimisations off."""
    if os.environ.get("JAXCLIMATE_TEST_FULL_OPT") == "1":
        pytest.skip("JAXCLIMATE_TEST_FULL_OPT=1 compiles every test as users' programs are")
    assert jax.config.read("jax_disable_most_optimizations") and os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1"


@pytest.mark.full_opt
def test_a_full_opt_test_and_its_subprocesses_compile_with_optimisation():
    """At XLA's backend level 1 (conftest.py), or users' level 2 under JAXCLIMATE_TEST_FULL_OPT=1."""
    assert not jax.config.read("jax_disable_most_optimizations") and os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "0"
    level_one = RUN_OPTIMISATION_FLAG in os.environ["XLA_FLAGS"].split()
    assert level_one == (os.environ.get("JAXCLIMATE_TEST_FULL_OPT") != "1")


def test_the_suite_and_its_workers_compile_with_the_legacy_cpu_emitters_where_jaxlib_has_them():
    """conftest.py: the main process adds the flag once its jaxlib accepts it; a worker (this
    process under xdist) and every subprocess inherit it through ``XLA_FLAGS``."""
    if os.environ.get("JAXCLIMATE_TEST_FULL_OPT") == "1":
        pytest.skip("JAXCLIMATE_TEST_FULL_OPT=1 compiles every test as users' programs are")
    assert LEGACY_EMITTERS_FLAG in os.environ["XLA_FLAGS"].split() or not _xla_accepts(LEGACY_EMITTERS_FLAG)


def test_the_suites_cache_is_unbounded_and_pruned_oldest_first(tmp_path):
    """conftest.py: no bound while the suite runs (a bound scans the folder at every write);
    ``prune`` keeps the newest entries within its budget, each entry's access-time file with it."""
    if not _cache.cache_disabled():
        assert jax.config.jax_compilation_cache_max_size == _cache.UNBOUNDED
    for age, name in enumerate(("old", "middle", "new")):
        entry = tmp_path / f"{name}-cache"
        entry.write_bytes(b"x" * 100)
        (tmp_path / f"{name}-atime").write_bytes(b"t")
        os.utime(entry, (1_000 + age, 1_000 + age))
    assert _cache.prune(tmp_path, 1_000) == 0
    assert _cache.prune(tmp_path, 150) == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new-atime", "new-cache"]
