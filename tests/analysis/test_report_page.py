"""The HTML report's page (onegc_tui/report.py) without a browser: what it holds, and that text
from a session is never markup (the Chromium rendering is in test_study_exports.py)."""

from __future__ import annotations

import re

from onegc_tui.report import CSP, render_report
from onegc_tui.store import Store
from onegc_tui.study_data import load_study
from tests.app.fixtures import build_demo_study

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
                    "Paired comparisons", "Integrity flags", "Time ledger", "Cost", "Per-session score"):
        assert heading in page
    assert page.count('class="chart"') >= 2 + 4  # curves (raw, relative) and one score timeline per session
    assert "disqualified: &lt;script&gt;" in page and "1970-01-01 00:00 UTC" in page
