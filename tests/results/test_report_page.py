"""The HTML report's page (onegc_tui/results/report.py) without a browser: what it holds, and that text
from a session is never markup (the Chromium rendering is in test_study_exports.py)."""

from __future__ import annotations

import re

from onegc_tui.results.report import CSP, render_report
from onegc_tui.results.study_data import load_study
from onegc_tui.store import Store
from tests.homes import build_demo_study

HOSTILE = '<script>fetch("http://evil.example/x")</script><img src="http://evil.example/y.png">'


def test_the_page_holds_every_section_escapes_session_text_and_names_nothing_outside(home):
    build_demo_study(home)
    store = Store.open(home)
    try:
        store.set_disqualified("demo--quick--t0--r2", HOSTILE)
        data = load_study(store, "demo")
        page = render_report(data, now=0.0)
    finally:
        store.close()
    assert "<script" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert set(re.findall(r"https?://[^\s\"'<>&]+", page)) <= {"http://www.w3.org/2000/svg", "http://evil.example/x",
                                                               "http://evil.example/y.png"}
    assert 'src="http' not in page and "href=" not in page and f'content="{CSP}"' in page
    for heading in ("Matrix beside the paper", "Anytime curves across repeats", "What a shorter budget",
                    "Paired comparisons", "Integrity and results", "Time ledger", "Cost", "Per-session score"):
        assert heading in page
    assert page.count('class="chart"') >= 2 + 4  # curves (raw, relative) and one score timeline per session
    assert "disqualified: &lt;script&gt;" in page and "1970-01-01 00:00 UTC" in page
    # each score series names its role and split (issue 37): the demo task scores val
    assert "live val accuracy" in page and "official rule on val, best so far" in page
    assert "own s (no model)" in page  # the scripted agent's time is its own, not model generation


def test_the_unofficial_test_best_in_the_outcomes_follows_result_jsons_rule(home):
    from onegc_tui.views import monitor_data
    from onegc_tui.views.monitor_data import unofficial_range

    build_demo_study(home)
    store = Store.open(home)
    try:
        # t0 scores val: its live scores count (the fixture's sessions have no re-evaluation)
        best = {o.session_id: o.unofficial_test_best for o in monitor_data.outcomes(store, include_demo=True)}
        with store.conn:
            store.conn.execute("INSERT INTO checkpoints (session_id, name, official, budget_elapsed_s, value)"
                               " VALUES ('demo--quick--t0--r1', 'late', 0, 100.0, 0.99)")
        again = {o.session_id: o.unofficial_test_best for o in monitor_data.outcomes(store, include_demo=True)}
    finally:
        store.close()
    assert best["demo--quick--t0--r1"] == 0.97 and best["demo--steady--t0--r2"] == 0.6586
    assert again["demo--quick--t0--r1"] == 0.99
    ranges = ((0.30, 0.40), (0.20, 0.45))  # (re-evaluations only, each checkpoint's best known)
    assert unofficial_range(ranges, "t6") == (0.30, 0.40)  # held-out test split: re-evaluations only
    assert unofficial_range(ranges, "t1") == (0.20, 0.45) and unofficial_range(None, "t1") is None


def test_the_integrity_table_names_each_figures_split(tmp_path):
    """Issue 50: it said "unofficial test-best" for t0 too, whose scored split is val."""
    from tests.homes import T0_SESSION, T6_SESSION, build_numbers_home

    home = build_numbers_home(tmp_path / "home")
    store = Store.open(home)
    try:
        page = render_report(load_study(store), now=0.0)
    finally:
        store.close()
    table = page.split("<h2>Integrity and results</h2>", 1)[1].split("<h2>", 1)[0]
    assert "unofficial test-best" not in table and "unofficial best on the scored split" in table
    rows = {sid: row for row in table.split("<tr")[1:] for sid in (T0_SESSION, T6_SESSION) if sid in row}
    assert rows[T0_SESSION].count("0.9320 val") == 2 and rows[T6_SESSION].count("0.3818 test") == 2, rows
