"""Citations a reader can follow: every "docs/<page>.md §N" in the repository names a page that
exists and a section heading that page has, and nothing cites a specification the repository
does not contain."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SEARCHED = ("jaxclimate", "tests", "baselines", "benchmarks", "docs", "notebooks")
SUFFIXES = {".py", ".md", ".ipynb", ".json", ".txt"}

SECTION = r"§\s*(\d+(?:\.\d+)*)"
CITATION = re.compile(r"(docs/)?([a-z_]+)\.md((?:(?:\s*,\s*|\s*–\s*|\s+and\s+|\s+)?" + SECTION + r")+)")


def _files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in SEARCHED:
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    return [p for p in files if "results" not in p.parts and p != Path(__file__).resolve()]


def _headings(page: Path) -> set[str]:
    """Section numbers of a page's headings ("## 2. Title" -> "2", "### 2.6 Title" -> "2.6")."""
    found = set()
    for line in page.read_text().splitlines():
        match = re.match(r"#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if match:
            found.add(match.group(1))
    return found


def citations(text: str) -> list[tuple[str, str]]:
    return [
        (m.group(2), s)
        for m in CITATION.finditer(text)
        for s in re.findall(SECTION, m.group(3))
        if m.group(1) or (DOCS / f"{m.group(2)}.md").exists() or "docs" in text[max(0, m.start() - 1) : m.start()]
    ]


def test_citation_parser_reads_lists_and_ranges():
    assert citations("FORMAT.md §5 and README.md §2") == []  # not docs pages
    assert citations("docs/nonexistent.md §2") == [("nonexistent", "2")]  # a typo is reported
    text = "(docs/ebm.md §3.1, §7.1) and docs/rice_n.md §6 D–E; see [fedrain.md §5](fedrain.md), §3.6–§3.8"
    assert citations(text) == [("ebm", "3.1"), ("ebm", "7.1"), ("rice_n", "6"), ("fedrain", "5")]
    assert citations("docs/climate_mitigation.md §3.6–§3.8") == [("climate_mitigation", "3.6"), ("climate_mitigation", "3.8")]


def test_every_docs_citation_resolves():
    headings = {page.stem: _headings(page) for page in DOCS.glob("*.md")}
    broken = []
    count = 0
    for path in _files():
        text = path.read_text(errors="replace")
        for page, section in citations(text):
            count += 1
            if page not in headings or section not in headings[page]:
                broken.append(f"{path.relative_to(ROOT)}: {page}.md §{section}")
    assert not broken, "citations without a matching heading:\n" + "\n".join(broken)
    assert count > 100  # the package cites its docs pages throughout


@pytest.mark.parametrize("pattern", [r"SPEC\s*§", r"SPEC:", r"\.\./shared", r"SPEC\.md"])
def test_no_citation_of_material_outside_the_repository(pattern):
    offenders = [str(p.relative_to(ROOT)) for p in _files() if re.search(pattern, p.read_text(errors="replace"))]
    assert not offenders, f"{pattern!r} in {offenders}"


def test_relative_links_in_the_readme_and_docs_resolve():
    """Every relative link of the README and the docs pages names a file of the repository."""
    link = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
    broken = []
    for page in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for target in link.findall(page.read_text()):
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)
