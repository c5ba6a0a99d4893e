"""The documentation site builds without a warning, and the pages' generated tables show what the records hold.

The site test needs the docs tools (mkdocs, mkdocs-material, mkdocstrings[python]) and is skipped
without them; the tables test needs nothing but the records.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_generated_tables_match_their_records(table_generator):
    """Every generated table of every page (results.md, climate_mitigation.md §5.6, …) is the one its record
    gives (`python docs/generate_tables.py` rewrites them)."""
    generator = table_generator
    for page, tables in generator.PAGES.items():
        stale = generator.stale(page.read_text(), tables)
        assert not stale, f"docs/{page.name} disagrees with the records in tables {stale}: run python docs/generate_tables.py --check"


def test_the_table_check_can_fail(table_generator):
    """A changed number, a missing table and a marker without a generator are all caught."""
    generator = table_generator
    text = generator.PAGE.read_text()
    ebm = generator.rendered(text)["ebm-cpu"]
    assert generator.stale(text.replace(ebm, ebm.replace("7,718", "7,719"))) == ["ebm-cpu"]
    without = generator.BLOCK.sub(lambda m: "" if m["name"] == "ebm-cpu" else m[0], text)
    assert generator.stale(without) == ["ebm-cpu"]
    with pytest.raises(SystemExit, match="no generator"):
        generator.regenerate(text + "\n<!-- table:nonexistent -->\n<!-- /table:nonexistent -->\n")


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict`: no warning (broken in-docs links and anchors, griffe's docstring warnings, pages
    missing from the navigation). Links to repository files outside docs/ are reported at INFO (mkdocs.yml says
    why); each of those must leave docs/ and name a file that exists."""
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    pytest.importorskip("material", reason="the docs extra (mkdocs-material) is not installed")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra (mkdocstrings[python]) is not installed")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert (tmp_path / "site" / "api" / "environments" / "index.html").read_text().count("doc-heading") > 10  # the API rendered
    outside = re.findall(r"Doc file '([^']+)' contains a link '([^']+)', but the target", log)
    for page, target in outside:
        resolved = (ROOT / "docs" / page).parent / target
        assert not resolved.resolve().is_relative_to(ROOT / "docs") and resolved.exists(), f"{page}: {target}"
