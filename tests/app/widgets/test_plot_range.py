"""Plots keep to the metric's range: an accuracy's axis never runs past 1 nor below 0, a loss's
never below 0 (issue 29: a checkpoint plot of accuracies near 1 was labelled up to 1.0135)."""

from __future__ import annotations

import pytest

from onegc_tui.app import make_app
from onegc_tui.app.widgets.plot import Plot
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.views.metric_range import metric_bounds, padded_range, task_bounds
from onegc_tui.views.plot import plot_series
from tests.homes import _session, settled


def test_every_tasks_metric_has_its_range():
    assert [task_bounds(t) for t in ("t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7")] == [
        (0, 1), (0, None), (0, 1), (0, 1), (0, 1), (0, 1), (0, None), (0, 1)]
    assert metric_bounds("reward") == (None, None) and task_bounds("t99") == (None, None)


def test_the_padded_range_stays_inside_the_bounds():
    assert padded_range([0.97, 0.99, 1.0], (0.0, 1.0)) == pytest.approx((0.9685, 1.0))
    assert padded_range([0.0, 0.02], (0.0, 1.0)) == pytest.approx((0.0, 0.021))
    assert padded_range([1.0], (0.0, 1.0)) == pytest.approx((0.95, 1.0))  # flat at the bound: still a range
    lo, hi = padded_range([0.0], (0.0, None))
    assert lo == 0.0 and hi > 0
    assert padded_range([2.0, 3.0]) == pytest.approx((1.95, 3.05)) and padded_range([]) is None
    _, used = plot_series([[(0, 0.97), (10, 1.0)]], 20, 5, 10, bounds=(0.0, 1.0))
    assert used[1] == 1.0


async def test_the_checkpoint_plot_of_accuracies_near_1_stops_at_1(tmp_path):
    home = tmp_path / "home"
    _session(home, "near-one", "scripted", "completed", False, [0.97, 0.99, 1.0])
    store = Store.open(home)
    Ingester(home, store).catch_up()
    store.close()
    app = make_app(home, live=False, show_clock=False)
    async with app.run_test(size=(160, 44)) as pilot:
        await settled(pilot)
        plot = app.query_one("#score-plot", Plot)
        rows = plot.render().plain.splitlines()
        labels = [float(r.split("┤")[0]) for r in rows if "┤" in r and r.split("┤")[0].strip()]
        assert labels and max(labels) == 1.0 and min(labels) >= 0.0, rows
