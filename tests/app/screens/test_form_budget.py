"""The new-session form parses a budget as ``onegc run --budget`` does (issue 29: ``90s`` became
90 minutes, the form kept only the digits), within the same bounds."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from onegc_tui.app import make_app
from tests.homes import build_home

SIZE = (160, 44)


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


async def _submit(app, pilot, budget: str) -> str:
    from onegc_tui.app.screens.newsession import NewSessionScreen

    await pilot.press("n")
    form = app.screen
    assert isinstance(form, NewSessionScreen)
    form.query_one("#budget", Input).value = budget
    await pilot.click("#start")
    await app.workers.wait_for_complete()
    await pilot.pause()
    return str(form.query_one("#form-error").render()) if app.screen is form else ""


@pytest.mark.parametrize(("typed", "seconds"), [("90s", 90.0), ("2m", 120.0), ("1.5h", 5400.0), ("40", 2400.0)])
async def test_the_form_reads_a_budget_like_the_cli(app_home, monkeypatch, typed, seconds):
    import runner.launch.start

    calls = []
    monkeypatch.setattr(runner.launch.start, "start_sessions",
                        lambda home, request: calls.append(request.budget_s) or [])
    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert await _submit(app, pilot, typed) == ""
    assert calls == [seconds]


@pytest.mark.parametrize("typed", ["0.001", "1e20h", "200h", "soon", ""])
async def test_the_form_refuses_what_the_cli_refuses(app_home, monkeypatch, typed):
    import runner.launch.start

    calls = []
    monkeypatch.setattr(runner.launch.start, "start_sessions", lambda *args: calls.append(args) or [])
    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        error = await _submit(app, pilot, typed)
    assert error.startswith("✖ budget") and "from 10s to 7 days" in error and not calls
