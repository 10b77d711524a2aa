"""``make lint``'s layer contracts are exhaustive where they say so: a module added loose at the top of
``runner/`` or of ``onegc_tui/app/`` fails ``lint-imports`` until it is given a layer.

Each test copies the three packages and pyproject.toml into a temporary folder, adds one empty
module there, and runs the real ``lint-imports`` on the copy (nothing is added to the checkout).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("tasks", "runner", "onegc_tui")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy(dest: Path) -> Path:
    for root in ROOTS:
        shutil.copytree(REPO / root, dest / root, ignore=shutil.ignore_patterns("__pycache__", "data", "*.pt", "*.bin"))
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on ``tree`` (its packages first on the path, no cache)."""
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tree, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "COLUMNS": "500"})


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return _copy(tmp_path_factory.mktemp("layers"))


def _with_module(tree: Path, module: Path):
    """The copy with one more (empty) module, removed after."""
    module.write_text('"""A module no layer names."""\n')
    try:
        return lint_imports(tree)
    finally:
        module.unlink()


@pytest.mark.slow
@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (make venv)")
def test_the_copy_passes_as_it_is(tree):  # the failures below are the new module's, not the copy's
    out = lint_imports(tree)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


@pytest.mark.slow
@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (make venv)")
@pytest.mark.parametrize(("folder", "contract"), [
    ("runner", "runner's wings"),
    ("onegc_tui/app", "the app's rooms"),
    ("onegc_tui", "onegc_tui's wings"),
])
def test_a_loose_module_fails_lint(tree, folder, contract):
    out = _with_module(tree, tree / folder / "loose_probe.py")
    assert out.returncode != 0
    broken = [line for line in out.stdout.splitlines() if line.endswith("BROKEN")]
    assert len(broken) == 1 and broken[0].startswith(contract), out.stdout[-3000:]
    assert "loose_probe" in out.stdout
