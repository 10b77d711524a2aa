"""The GPU pane shows what the GPU's units did where it has GPM (issue 50): three one-line
sparklines (SM, tensor cores, DRAM bandwidth) beside the utilisation bars; where GPM is missing
(an older GPU, an older record) one line says so and nothing else changes; without a GPU, the
no-GPU line alone."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from onegc_tui.app import make_app
from onegc_tui.app.widgets.panes import GpuPane
from tests.helpers import UNTIL_TOLD, events, let_go_after_gpu_samples, start_session, wait_event, write_agent
from tests.homes import (
    CROWD_NOW,
    CROWD_RUNNING,
    T0,
    T0_SESSION,
    T6_SESSION,
    add_events,
    build_crowd,
    build_numbers_home,
    settled,
)


def gpm_lines(app) -> list[str] | None:
    """The pane's GPM lines, or None where the GPM box is not shown."""
    box = app.query_one(GpuPane).query_one("#gpm", Static)
    return str(box.render()).splitlines() if box.display and box.styles.display != "none" and \
        box.region.height > 0 else None


@pytest.fixture(scope="module")
def numbers_home(tmp_path_factory):
    return build_numbers_home(tmp_path_factory.mktemp("gpm") / "home")


async def test_a_gpu_with_gpm_shows_three_sparklines(numbers_home):
    app = make_app(numbers_home, focus=T6_SESSION, live=False, show_clock=False, now=lambda: T0 + 10_000)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        lines = gpm_lines(app)
        assert lines is not None and [line.split()[0] for line in lines] == ["SM", "tensor", "DRAM"], lines
        assert lines[1].endswith(" 35%") and lines[0].endswith(" 58%"), lines  # the latest sample's figures
        assert all(any(ch in "▁▂▃▄▅▆▇█" for ch in line) for line in lines)


async def test_no_gpu_shows_its_one_line_and_no_gpm_box(numbers_home):
    app = make_app(numbers_home, focus=T0_SESSION, live=False, show_clock=False, now=lambda: T0 + 10_000)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        assert gpm_lines(app) is None
        assert str(app.query_one("#gpu-figures", Static).render()) == "no GPU visible: NVML unavailable"


async def test_an_older_gpu_says_it_has_no_gpm_in_one_line(tmp_path):
    from runner.wire.events import Warning_

    home = build_crowd(tmp_path / "home", n_ended=2)
    app = make_app(home, focus=CROWD_RUNNING, live=False, show_clock=False, now=lambda: CROWD_NOW)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        assert gpm_lines(app) == ["no GPM figures in this record (SM and tensor activity: Hopper GPUs and later)"]
        message = "no GPM on GPU 0: NVML reports no SM, tensor-core or memory-bandwidth activity for it"
        add_events(home, CROWD_RUNNING, [Warning_(session_id=CROWD_RUNNING, seq=500, ts=CROWD_NOW, code="no_gpm",
                                                  message=message)], on_events=None)
        app.dashboard.select(CROWD_RUNNING)
        await settled(pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gpm_lines(app) == [message]
        figures = str(app.query_one("#gpu-figures", Static).render()).splitlines()
        assert figures[0].startswith("util ") and figures[-1].startswith("busy ")  # as before


@pytest.mark.slow
@pytest.mark.parametrize("gpm", ["1", "0"], ids=["fake-gpm", "fake-without-gpm"])
async def test_a_real_session_on_the_fake_nvml(home, tmp_path, monkeypatch, gpm):
    """A real runner on the fake NVML: its GPM sparklines, or (an older GPU) the no-GPM line."""
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPM", "55,30,20" if gpm == "1" else "0")
    paths = start_session(home, f"fake-{gpm}", agent="command", command=write_agent(tmp_path, "a.py", UNTIL_TOLD),
                          gpu="0", budget_s=300)
    let_go_after_gpu_samples(paths)
    wait_event(paths, "session_ended", timeout=120)
    assert any(e["type"] == "gpu" for e in events(paths))
    app = make_app(home, focus=paths.session_id, live=True, show_clock=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        lines = gpm_lines(app)
        if gpm == "1":
            assert lines is not None and [line.split()[0] for line in lines] == ["SM", "tensor", "DRAM"]
            assert lines[1].endswith(" 30%"), lines
        else:
            assert lines is not None and len(lines) == 1 and lines[0].startswith("no GPM on GPU 0"), lines
