"""README "Package layout" names every module of the core, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_layout_table_names_each_module_and_package_of_the_core_and_no_other():
    section = (REPO / "README.md").read_text().split("## Package layout\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w.]+\.py)`", section))
    folders = set(re.findall(r"`(?:\w+/)*?(\w+)/`", section))
    modules = [p for top in ("runner", "onegc_tui") for p in (REPO / top).glob("*.py")] + \
        list((REPO / "onegc_tui" / "store").glob("*.py"))
    missing = sorted(str(p.relative_to(REPO)) for p in modules if p.name != "__init__.py" and p.name not in named)
    assert not missing, f"README's layout table does not name {missing}"
    packages = [p.parent.name for top in ("runner", "onegc_tui") for p in (REPO / top).glob("*/__init__.py")]
    assert not sorted(set(packages) - folders), "a package the layout table does not name"
    there = {p.name for top in ("tasks", "runner", "onegc_tui") for p in (REPO / top).rglob("*.py")}
    assert not sorted(named - there), "the layout table names a module that is not in the repo"
