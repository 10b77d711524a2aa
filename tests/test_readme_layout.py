"""README "Package layout": one row per package of the core, naming each of its modules, and only
modules that are there.

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
    section = (REPO / "README.md").read_text().split("## Package layout\n", 1)[1].split("\n## ", 1)[0]
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
        assert where in rows, f"README's layout table has no row for {where}/"
        modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
        missing = sorted(modules - rows[where])
        assert not missing, f"README's layout row for {where}/ does not name {missing}"


def test_every_module_a_row_names_is_in_that_rows_folder():
    for where, named in layout_rows().items():
        folder = REPO / where
        assert folder.is_dir(), f"README's layout table has a row for {where}/, which does not exist"
        pattern = "*.py" if where.split("/")[0] in CORE else "**/*.py"  # a core row: its own folder only
        there = {p.name for p in folder.glob(pattern)}
        stray = sorted(named - there)
        assert not stray, f"README's layout row for {where}/ names {stray}, which are not in it"


def test_the_rows_cover_the_whole_core():
    """Not one module of the core left out, counted apart from the rows (a package the glob above
    could miss, a module in a folder without ``__init__.py``)."""
    rows = layout_rows()
    named = {f"{where}/{name}" for where, names in rows.items() for name in names}
    modules = {str(p.relative_to(REPO)) for top in CORE for p in (REPO / top).rglob("*.py")
               if "__pycache__" not in p.parts and p.name != "__init__.py"}
    assert not sorted(modules - named), "README's layout table leaves out modules of the core"
