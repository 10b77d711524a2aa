"""Fixtures shared by the runner, store and app tests: a temporary ONEGC_HOME with the demo
task prepared, and helpers to run real sessions (real runner processes, real agents)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO

os.environ["TZ"] = "UTC"  # transcript timestamps in snapshots
time.tzset()
# pytest imports GNU readline (capture.py's _readline_workaround) before any conftest, and readline
# puts COLUMNS=80 LINES=24 into the C environment when stdin is not a terminal. os.environ never
# shows them, but every child inherits them: a monitor run in a test's own 180x50 tmux pane then
# draws itself at 80x24. Take them out, so that a child sizes itself from its own terminal.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
    os.unsetenv(_name)


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory) -> Path:
    """The demo task's data, prepared once per test run."""
    root = tmp_path_factory.mktemp("demo-data")
    out = root / "t0_demo"
    subprocess.run([sys.executable, str(REPO / "tasks/t0_demo/prepare.py"), "--data-dir", str(out)], check=True,
                   capture_output=True)
    return out


@pytest.fixture(autouse=True)
def _data_dir_stays_the_tests() -> object:
    """``ONEGC_DATA_DIR`` as it was before the test, after it. The runner's ``load_task_module``
    sets it for its whole process (a runner serves one task), so a test that builds a TaskJudge
    would otherwise hand its data folder to every later test in the same worker: a script run
    there read another task's data (a T3 test, in a full run)."""
    before = os.environ.get("ONEGC_DATA_DIR")
    yield
    if before is None:
        os.environ.pop("ONEGC_DATA_DIR", None)
    else:
        os.environ["ONEGC_DATA_DIR"] = before


@pytest.fixture
def home(tmp_path, demo_data, monkeypatch) -> Path:
    """An ONEGC_HOME with t0 prepared (a copy: the kit's manifest makes it ready)."""
    import shutil

    h = tmp_path / "home"
    (h / "data").mkdir(parents=True)
    shutil.copytree(demo_data, h / "data" / "t0_demo")
    monkeypatch.setenv("ONEGC_HOME", str(h))
    return h


# ----------------------------------------------------------------------------- test tiers
# `make test-fast` runs -m "not slow": unit and Pilot tests. A test whose body starts a process
# (a runner, an agent, bwrap, tmux, Slurm, Chromium, a Python child) is slow, and must say so:
# this hook fails it otherwise. It watches the test's call only (a session-scoped fixture such as
# demo_data runs once per run), through the interpreter's audit events for process creation.
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec",
                            "os.system"})
_watched: list[pytest.Item] = []  # the test whose call is running, if it is not marked slow


def _audit(event: str, _args: tuple) -> None:
    if event in PROCESS_EVENTS and _watched:
        _watched[0].stash[_STARTED] = event


_STARTED = pytest.StashKey[str]()
sys.addaudithook(_audit)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    if item.get_closest_marker("slow") is None:
        _watched.append(item)
    try:
        yield
    finally:
        _watched.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    started = item.stash.get(_STARTED, None)
    if call.when == "call" and started and report.passed:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} started a process ({started}) but is not marked slow: "
                           "add @pytest.mark.slow (make test-fast leaves such tests out)")
@pytest.fixture
def small_tmpfs(tmp_path):
    """``small_tmpfs(size, options="")`` mounts a tmpfs of that size (e.g. "30m"; options such as
    "ro") under ``tmp_path`` and returns its folder: a real filesystem that fills up. Needs root
    (or CAP_SYS_ADMIN); the test is skipped with the reason elsewhere."""
    mounted: list[Path] = []

    def mount(size: str, options: str = "") -> Path:
        target = tmp_path / f"tmpfs{len(mounted)}"
        target.mkdir()
        opts = f"size={size},mode=0755" + (f",{options}" if options else "")
        out = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(target)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {out.stderr.strip() or out.returncode}")
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


@pytest.fixture
def store(home):
    """The home's SQLite store (a real file), closed after the test."""
    from onegc_tui.store import Store

    opened = Store.open(home)
    yield opened
    opened.close()


@pytest.fixture
def built_home(home) -> Path:
    """A home holding the fixed sessions of tests/homes.py (ingested: its store is current)."""
    from tests.homes import build_home

    return build_home(home)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings):
    """A test's timeout (300 s, or its mark) is its hang guard on a quiet machine. Its waits
    stretch with the load (tests/helpers.py ``slack``, at most MAX_SLACK), so the guard stretches
    as far: a suite beside another on 2 cores is slow, not hung."""
    from pytest_timeout import pytest_timeout_set_timer as set_timer

    from tests.helpers import MAX_SLACK

    return set_timer(item, settings._replace(timeout=settings.timeout * MAX_SLACK))
