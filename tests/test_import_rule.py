"""../shared/DESIGN.md §2: the core never loads textual or rich; only onegc_tui/app does. And no
import circle anywhere in the three packages.

The lists are derived from the packages (grimp's static graph, the one import-linter reads), never
kept by hand: a module added anywhere outside onegc_tui.app is checked the day it is added.
"""

import subprocess
import sys

import grimp
import pytest

ROOTS = ("tasks", "runner", "onegc_tui")
UI_PACKAGE = "onegc_tui.app"  # the one package allowed to load textual and rich
ENTRY_POINTS = ("__main__",)  # `python -m` entry points run a command when imported


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*ROOTS)


def core_modules(graph: grimp.ImportGraph) -> list[str]:
    """Every module of the three packages but the app's and the `python -m` entry points."""
    return sorted(
        m for m in graph.modules
        if m != UI_PACKAGE and not m.startswith(UI_PACKAGE + ".") and m.rsplit(".", 1)[-1] not in ENTRY_POINTS
    )


def test_the_core_list_is_derived_and_complete():
    mods = core_modules(_graph())
    for expected in ("onegc_tui.views", "onegc_tui.results", "onegc_tui.store", "onegc_tui.cli.plain", "runner.session.main"):
        assert expected in mods
    assert not any(m.startswith(UI_PACKAGE) for m in mods)


def _load_and_report(modules: list[str]) -> str:
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "from runner.agents import ADAPTERS, get_adapter\n"
        "[get_adapter(n) for n in ADAPTERS]\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.slow
def test_core_imports_neither_textual_nor_rich():
    loaded = _load_and_report(core_modules(_graph()))
    assert loaded == "", f"loaded: {loaded}"


@pytest.mark.slow
def test_the_app_does_load_textual():  # the check above can fail: importing the app is caught
    assert "textual" in _load_and_report([UI_PACKAGE]).split(",")


def import_cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Every module-level import circle inside the three packages, as its modules in order."""
    cycles: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported == module or imported.split(".")[0] not in ROOTS:
                continue
            path = graph.find_shortest_chain(importer=imported, imported=module)
            if path is not None and frozenset(path) not in seen:
                seen.add(frozenset(path))
                cycles.append((module, *path))
    return cycles


def test_no_import_circle_in_the_three_packages():
    assert import_cycles(_graph()) == []


def test_the_circle_check_can_fail():
    graph = _graph()
    graph.add_import(importer="onegc_tui.store", imported="onegc_tui.results.report")  # report reads the store
    assert any("onegc_tui.store" in c for c in import_cycles(graph))
