"""The tensor cores' active share of the budget (onegc_tui/views/gpu_activity.py), per session and
per cell, in history and the report (issue 50)."""

from __future__ import annotations

import pytest

from onegc_tui.results.report import render_report
from onegc_tui.results.study_data import load_study
from onegc_tui.store import Store
from onegc_tui.views.gpu_activity import mean_share, share_words, tensor_active_s, tensor_share
from onegc_tui.views.timeline import BudgetAxis
from tests.homes import T0_SESSION, T6_SESSION, build_numbers_home


def test_each_sample_stands_for_the_budget_time_since_the_last():
    axis = BudgetAxis([(0.0, 0.0), (10.0, 10.0), (20.0, 10.0), (30.0, 20.0)])  # paused from 10 s to 20 s
    samples = [(float(t), 0, 50.0) for t in range(1, 31)]  # a sample a second, tensor cores half the time
    assert tensor_active_s(samples, axis, 100.0) == pytest.approx(0.5 * 20)  # the pause stands for nothing
    gap = [(1.0, 0, 100.0), (10.0, 0, 100.0)]  # a 9 s gap in the record counts 5 s at most
    assert tensor_active_s(gap, axis, 100.0) == pytest.approx(1.0 + 5.0)
    two = [(1.0, 0, 100.0), (1.0, 1, 0.0)]  # two GPUs: their mean
    assert tensor_active_s(two, axis, 100.0) == pytest.approx(0.5)
    late = [(29.0, 0, 100.0), (30.0, 0, 100.0)]  # past a budget of 19.5 s: only the part inside it counts
    assert tensor_active_s(late, axis, 19.5) == pytest.approx(1.0 + 0.5)


def test_sessions_without_gpm_are_left_out_and_counted():
    assert mean_share([0.3, None, 0.1]) == (pytest.approx(0.2), 2)
    assert mean_share([None]) == (None, 0)
    assert share_words(0.2, 2, 3) == "tensor cores active 20.0% of the budget (GPM, 2 of 3 sessions)"
    assert share_words(None).startswith("tensor cores: no GPM figures")


def test_history_and_the_report_carry_it(tmp_path):
    home = build_numbers_home(tmp_path / "home")
    store = Store.open(home)
    try:
        t6 = tensor_share(store, T6_SESSION)
        assert t6 is not None and 0 < t6 < 0.01  # 8 one-second samples at ~27 % of a 40-minute budget
        assert tensor_share(store, T0_SESSION) is None  # no GPU: no figure
        page = render_report(load_study(store))
    finally:
        store.close()
    assert "<h2>What the GPU did</h2>" in page and f"{t6:.1%}" in page and "no GPM" in page
    assert "tensor cores active, share of the budget (GPM)" in page  # each session's, in the time ledger
