"""docs/architecture.md "Package layout": one row per package of the core, naming each of its
modules, and only modules that are there; and the README stays a ten-minute read whose links hold.

A row starts with its folder (`runner/wire/`, `onegc_tui/app/screens/`, ...); the modules it names
(`events.py`) must be that folder's own, so a module moved to another room, a new module or a new
package that the table does not name fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = ("runner", "onegc_tui")
MODULE = re.compile(r"`([\w.]+\.py)`")


def layout_rows() -> dict[str, set[str]]:
    """Each row's folder (``runner/wire``) and the modules the row names; rows of one folder join."""
    section = (REPO / "docs" / "architecture.md").read_text().split("## Package layout\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first, rest = line[1:].split("|", 1)
        folder = re.match(r"\s*`([\w/]+)/`", first)
        assert folder, f"a layout row that does not start with its folder: {line[:60]}"
        rows.setdefault(folder.group(1), set()).update(MODULE.findall(rest))
    return rows


def core_packages() -> list[Path]:
    return sorted(init.parent for top in CORE for init in (REPO / top).rglob("__init__.py")
                  if "__pycache__" not in init.parts)


def test_every_package_of_the_core_has_a_row_naming_each_of_its_modules():
    rows = layout_rows()
    for package in core_packages():
        where = str(package.relative_to(REPO))
        assert where in rows, f"docs/architecture.md's layout table has no row for {where}/"
        modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
        missing = sorted(modules - rows[where])
        assert not missing, f"docs/architecture.md's layout row for {where}/ does not name {missing}"


def test_every_module_a_row_names_is_in_that_rows_folder():
    for where, named in layout_rows().items():
        folder = REPO / where
        assert folder.is_dir(), f"docs/architecture.md's layout table has a row for {where}/, which does not exist"
        pattern = "*.py" if where.split("/")[0] in CORE else "**/*.py"  # a core row: its own folder only
        there = {p.name for p in folder.glob(pattern)}
        stray = sorted(named - there)
        assert not stray, f"docs/architecture.md's layout row for {where}/ names {stray}, which are not in it"


def test_the_rows_cover_the_whole_core():
    """Not one module of the core left out, counted apart from the rows (a package the glob above
    could miss, a module in a folder without ``__init__.py``)."""
    rows = layout_rows()
    named = {f"{where}/{name}" for where, names in rows.items() for name in names}
    modules = {str(p.relative_to(REPO)) for top in CORE for p in (REPO / top).rglob("*.py")
               if "__pycache__" not in p.parts and p.name != "__init__.py"}
    assert not sorted(modules - named), "docs/architecture.md's layout table leaves out modules of the core"


README_MAX_LINES = 250  # issue 34: what a newcomer reads in ten minutes; depth lives in docs/


def test_the_readme_is_short_and_its_links_hold():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    assert "shared/" not in text, "the README names a path that only this project's development machines have"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[\w-]+)?\)", text):
        if "://" not in target:
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"


def test_the_docs_links_hold():
    for page in (REPO / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[\w-]+)?\)", page.read_text()):
            if "://" not in target and not target.startswith("mailto:"):
                assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"
