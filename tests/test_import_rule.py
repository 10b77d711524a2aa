"""../shared/DESIGN.md §2: the core never loads textual or rich; only onegc_tui/app does."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_core_imports_neither_textual_nor_rich():
    code = (
        "import sys, runner, runner.session.main, runner.launch.study, runner.launch.start, runner.scoring.scorer, "
        "runner.agents, tasks, onegc_tui.store, onegc_tui.store.ingest, onegc_tui.store.live, onegc_tui.store.reindex, "
        "onegc_tui.cli.plain, onegc_tui.format, onegc_tui.alerts, onegc_tui.plot, onegc_tui.timeline, "
        "onegc_tui.transcript_view, onegc_tui.sessions_view, onegc_tui.monitor_data, onegc_tui.store.queries, "
        "onegc_tui.cli.main, onegc_tui.analysis, onegc_tui.export, onegc_tui.report, onegc_tui.paired, "
        "onegc_tui.study_data\n"
        "from runner.agents import ADAPTERS, get_adapter\n"
        "[get_adapter(n) for n in ADAPTERS]\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"loaded: {out.stdout.strip()}"


@pytest.mark.slow
def test_the_app_does_load_textual():  # the check above can fail: importing the app is caught
    code = "import sys, onegc_tui.app; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
