"""The GPU pane's figure lines fit its narrowest width, and its bars say their scale and span
(issue 37 item 5: the "busy N%" line was always cut, the sparkline had neither)."""

from __future__ import annotations

from onegc_tui.app.widgets.panes import GPU_LINE_W, gpu_lines
from tests.homes import T0, build_home


def test_the_figure_lines_fit_even_with_the_widest_figures():
    widest = {"util_pct": 100.0, "power_w": 1000.0, "temp_c": 100.0, "mem_used_mb": 143_000.0, "mem_total_mb": 143_771.0}
    lines = gpu_lines(widest, [100.0] * 120)
    assert lines == ["util 100% · 1000 W · 100°C", "mem 139.6/140 GiB", "busy 100% of last 120 s"]
    assert all(len(line) <= GPU_LINE_W for line in lines)
    assert gpu_lines({"util_pct": 5, "mem_used_mb": 0, "mem_total_mb": 0}, [])[0] == "util 5%"


async def test_the_bars_title_names_their_scale_and_span(tmp_path):
    from textual.widgets import Static

    from onegc_tui.app import make_app
    from onegc_tui.app.widgets.panes import GpuPane

    home = build_home(tmp_path / "home")
    app = make_app(home, focus="a-ended", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(GpuPane)
        assert str(pane.query_one(".pane-title", Static).render()) == "GPU · bars 0–100 % util, last 8 s"
        figures = str(pane.query_one("#gpu-figures", Static).render()).splitlines()
        assert figures[-1] == "busy 62% of last 8 s"  # 5 of the 8 samples over 10 %
