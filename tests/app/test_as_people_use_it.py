"""The monitor as a new user meets it (issue 15): the live session in front, any terminal size,
help at a keypress, coalesced notifications, nothing cut without a mark, nothing stale.

Pilot tests over 20 ended sessions and one running one (``fixtures.build_crowd``), a fixed clock."""

from __future__ import annotations

import os

import pytest
from textual.widgets import DataTable, Static

from onegc_tui.app import make_app
from onegc_tui.app.screens.help import HelpScreen
from onegc_tui.app.widgets.transcript import TranscriptLog
from onegc_tui.views.checkpoint_names import fit_checkpoint_label
from onegc_tui.views.transcript_view import EVENT_MARKS, KIND_MARKS, MARK_LEGEND
from tests.homes import CROWD_NOW, CROWD_RUNNING, T0, add_events, build_crowd, build_home, settled

SIZES = [(80, 24), (100, 30), (120, 40), (200, 50)]


@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    return build_crowd(tmp_path_factory.mktemp("crowd") / "home")


def crowd_app(home, **kw):
    return make_app(home, live=False, show_clock=False, now=lambda: CROWD_NOW, **kw)


def screen_text(app) -> str:
    """What the terminal shows, as text (the app's own screenshot, stripped of styles)."""
    import re

    svg = app.export_screenshot()
    return re.sub(r"<[^>]+>", "", svg).replace("&#160;", " ")


def help_text(screen: HelpScreen) -> str:
    from rich.console import Console

    with open(os.devnull, "w") as sink:
        console = Console(width=120, record=True, file=sink)
        console.print(screen.body())
        return console.export_text()


def visible_columns(table: DataTable) -> list[str]:
    """Column keys whose whole width is inside the table (not scrolled off to the right)."""
    out, x = [], 0
    for col in table.ordered_columns:
        x += col.get_render_width(table)
        if x <= table.scrollable_content_region.width:
            out.append(col.key.value)
    return out


# ---------------------------------------------------------------------------- the live session in front


@pytest.mark.parametrize("size", SIZES)
async def test_on_attach_the_running_session_is_first_and_selected(crowd, size):
    app = crowd_app(crowd)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert app.dashboard.selected == CROWD_RUNNING
        assert app.dashboard.table.order[0] == CROWD_RUNNING and app.dashboard.table.cursor_row == 0
        assert len(app.dashboard.table.order) == 21


async def test_end_goes_to_the_last_session_and_home_back(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        assert app.dashboard.table.cursor_row == 20 and app.dashboard.selected == app.dashboard.table.order[-1]
        await pilot.press("home")
        await pilot.pause()
        assert app.dashboard.selected == CROWD_RUNNING


async def test_clicking_a_header_sorts_by_it_and_again_reverses(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        table = app.dashboard.table
        assert str(table.columns["state"].label) == "State ▲"
        table.post_message(DataTable.HeaderSelected(table, table.columns["best"].key, 3, table.columns["best"].label))
        await pilot.pause()
        assert table.sort_by == "best" and str(table.columns["best"].label) == "Best val ▼"
        assert str(table.columns["state"].label) == "State"
        scores = [table.summaries[sid].get("score") for sid in table.order if table.summaries[sid].get("score")]
        assert scores == sorted(scores, reverse=True)
        assert "sorted by best ▼" in str(app.query_one("#summary").render())
        table.post_message(DataTable.HeaderSelected(table, table.columns["best"].key, 3, table.columns["best"].label))
        await pilot.pause()
        assert str(table.columns["best"].label) == "Best val ▲" and table.sort_reverse
        assert app.dashboard.selected == CROWD_RUNNING  # the selection stays on its session


async def test_the_sessions_filter_narrows_the_table_and_esc_clears_it(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("backslash", *"state:failed")
        await pilot.pause()
        table = app.dashboard.table
        assert table.order and all(table.summaries[sid]["state"] == "failed" for sid in table.order)
        assert app.dashboard.selected in table.order  # the running session was filtered out: the first that matches
        assert "filter “state:failed”: 3 shown" in str(app.query_one("#summary").render())
        await pilot.press("enter")
        assert app.focused is table  # Enter keeps the filter and gives the table the keyboard
        await pilot.press("backslash", "escape")
        await pilot.pause()
        assert len(table.order) == 21 and not table.row_filter


# ---------------------------------------------------------------------------- any terminal size


@pytest.mark.parametrize("size", SIZES)
async def test_state_budget_and_best_are_on_screen_at_every_size(crowd, size):
    app = crowd_app(crowd)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        shown = visible_columns(app.dashboard.table)
        assert {"state", "left", "best", "session"} <= set(shown)
        assert app.dashboard.table.max_scroll_x == 0  # no column runs off to the right
        text = screen_text(app)
        assert "? Help" in text and "q Quit" in text  # the footer fits, help and quit always in it
        if size[0] >= 200:
            assert set(shown) >= {"agent", "model", "started", "tokens", "cost", "scripts"}  # the room is used


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_checkpoint_score_is_on_screen(crowd, size):
    app = crowd_app(crowd)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        ckpts = app.query_one("#ckpt-table", DataTable)
        assert "score" in visible_columns(ckpts)
        assert "0.6100" in screen_text(app)


# ---------------------------------------------------------------------------- help, focus and Esc


async def test_question_mark_lists_the_keys_of_the_focused_pane_and_esc_closes_it(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "Sessions table" in text and "Last session" in text and "Pause/resume" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("tab")  # the keyboard to the transcript: its keys
        assert isinstance(app.focused, TranscriptLog)
        await pilot.press("question_mark")
        await pilot.pause()
        text = help_text(app.screen)
        assert app.screen.focus_name == "Transcript" and "Open the line whole" in text
        for mark, meaning in MARK_LEGEND.items():
            assert mark in text and meaning in text  # the transcript's marks explained
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_every_mark_the_transcript_uses_is_explained():
    assert set(KIND_MARKS.values()) | set(EVENT_MARKS.values()) == set(MARK_LEGEND)


async def test_the_palette_keys_command_opens_the_same_help(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        keys = next(c for c in app.get_system_commands(app.screen) if c.title == "Keys")
        keys.callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_dashboard_keys_still_work_with_the_transcript_focused(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("tab")
        assert isinstance(app.focused, TranscriptLog)
        await pilot.press("space")
        assert app.dashboard.marked == [CROWD_RUNNING]
        await pilot.press("r")  # one marked: the hint, not silence
        await pilot.pause()
        assert any("mark 2 to 4 sessions" in n.message for n in app._notifications)


async def test_the_focused_pane_is_marked(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pane = app.query_one("#transcript")
        before = pane.styles.border_top
        await pilot.press("tab")
        await pilot.pause()
        assert pane.styles.border_top != before  # its border takes the accent colour
        assert pane.has_pseudo_class("focus-within")


# ---------------------------------------------------------------------------- notifications


async def test_a_burst_of_new_bests_is_one_notification_with_the_selected_session_first(tmp_path):
    from runner.wire.events import CheckpointScored

    home = build_crowd(tmp_path / "home")  # its own: the events below would change the module's crowd
    app = crowd_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        others = [sid for sid in app.dashboard.table.order[1:8]]
        for i, sid in enumerate([*others, CROWD_RUNNING]):  # ingested by another process: read from the store
            add_events(home, sid, [CheckpointScored(session_id=sid, seq=900 + i, ts=T0, name="run_9-1", value=0.99,
                                                    metric="val_acc", split="val", budget_elapsed_s=30.0)])
        app.refresh_sessions()
        await pilot.pause()
        bests = [n for n in app._notifications if "new best" in n.message]
        assert len(bests) == 1
        assert bests[0].message.startswith(f"{CROWD_RUNNING}: new best") and "+ 7 more" in bests[0].message


# ---------------------------------------------------------------------------- text cut without a mark


async def test_long_transcript_lines_end_in_an_ellipsis_and_enter_opens_them(tmp_path):

    import json

    from onegc_tui.app.screens.viewer import LineScreen
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester

    home = build_home(tmp_path / "home", full=True)
    app = make_app(home, focus="b-paused", live=False, show_clock=False, now=lambda: T0 + 100)
    long = "traceback: " + "x" * 300 + " THE END"
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        events = home / "runs" / "b-paused" / "events.jsonl"
        seq = len(events.read_text().splitlines()) + 1
        with events.open("a") as f:  # the runner appends a step; the ingester reads it
            f.write(json.dumps({"v": 1, "type": "transcript", "session_id": "b-paused", "seq": seq, "ts": T0 + 90,
                                "role": "tool", "kind": "tool_result", "text": long, "exit_code": 1}) + "\n")
        store = Store.open(home)
        Ingester(home, store, on_events=app._queue_events).ingest_all()
        store.close()
        app.flush()
        await pilot.pause()
        log = app.query_one(TranscriptLog)
        last = "".join(seg.text for seg in log.render_line(len(log.lines) - 1 - log.scroll_offset.y))
        assert last.rstrip().endswith("…") and "THE END" not in last
        log.focus()
        await pilot.press("enter")  # no cursor yet: the last line
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, LineScreen)
        body = str(app.screen.query_one("#viewer-text").render())
        assert "THE END" in body and "exit 1" in app.screen.query_one("#viewer").border_title
        await pilot.press("escape")
        assert not isinstance(app.screen, LineScreen)


async def test_the_placeholder_goes_when_the_first_line_arrives(tmp_path):
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester
    from runner.launch.spawn import create_session
    from runner.wire.events import TranscriptEvent
    from runner.wire.jsonl import EventWriter
    from runner.wire.session_config import SessionConfig

    home = tmp_path / "home"
    create_session(SessionConfig(session_id="fresh", task="t0", agent="scripted", budget_s=120), home)
    w = EventWriter(home / "runs" / "fresh" / "events.jsonl", "fresh", clock=lambda: T0)
    w.emit("session_started", task="t0_demo", agent="scripted", budget_s=120, grace_s=30, contract={})
    w.close()
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    app = make_app(home, live=False, show_clock=False, now=lambda: T0 + 5)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        log = app.query_one(TranscriptLog)
        assert list(log.lines) == ["(no transcript yet)"]
        add_events(home, "fresh", [TranscriptEvent(session_id="fresh", seq=2, ts=T0 + 1, role="assistant",
                                                   kind="text", text="reading program.md")])
        app.flush()
        await pilot.pause()
        assert len(log.lines) == 1 and "reading program.md" in log.lines[0]


async def test_a_cut_checkpoint_name_is_cut_in_the_middle(crowd):
    """Cut end-first every row read ``run_1_epoch…`` (issue 29): the distinguishing tail stays; at
    80x24 the pane now has room for a name's run and epoch whole (issue 37)."""
    app = crowd_app(crowd)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        ckpts = app.query_one("#ckpt-table", DataTable)
        width = ckpts.columns["name"].width
        name = ckpts.get_cell("run_1_epoch1-1", "name")
        rendered = "".join(s.text for s in app.console.render(name, app.console.options.update(width=width)))
        shown = rendered.strip()
        assert shown == "run_1_epoch1-1" and width >= len(shown), shown
        longer = fit_checkpoint_label("run_1_epoch12-1", width)  # a longer one: cut in the middle, run and epoch kept
        assert "…" in longer and longer.startswith("run_1") and longer.endswith("12-1") and len(longer) == width


# ---------------------------------------------------------------------------- wrong or stale content


async def test_failed_rows_are_coloured(crowd):
    app = crowd_app(crowd)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        failed = next(sid for sid in app.dashboard.table.order if app.dashboard.table.summaries[sid]["state"] == "failed")
        ended = next(sid for sid in app.dashboard.table.order if app.dashboard.table.summaries[sid]["state"] == "ended")
        error = app.get_css_variables()["error"]
        assert error in str(app.dashboard.table.get_cell(failed, "state").style)
        assert error in str(app.dashboard.table.get_cell(failed, "left").style)
        assert error not in str(app.dashboard.table.get_cell(ended, "state").style)


async def test_the_gpu_pane_says_no_gpu_once(tmp_path):
    home = build_home(tmp_path / "home")
    app = make_app(home, focus="b-paused", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = str(app.query_one("#gpu-figures", Static).render())
        assert text == "no GPU visible: NVML unavailable"


async def test_an_ended_sessions_budget_bar_shows_the_share_used(tmp_path):
    home = build_home(tmp_path / "home")
    app = make_app(home, focus="a-ended", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.pause()
        bar = str(app.query_one("#budget-bar", Static).render())
        assert bar.endswith("50% used")  # 60 s of a 120 s budget
        await pilot.press("up")  # b-paused is first: the running share left
        await pilot.pause()


async def test_a_running_sessions_detail_leaves_later_budget_shares_blank(crowd):
    from onegc_tui.app.screens.detail import DetailScreen

    app = crowd_app(crowd)
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.pause()
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        analytics = str(app.screen.query_one("#analytics").render())
        line = next(line for line in analytics.splitlines() if "best live val accuracy at budget" in line)
        assert "25% 0.6100" in line and "100% not yet" in line  # about 75 % of its budget is spent


async def test_raw_logs_open_from_the_detail_screen(tmp_path):
    from onegc_tui.app.screens.viewer import RawFileScreen

    home = build_home(tmp_path / "home")
    (home / "runs" / "a-ended" / "runner.log").write_text("runner started\nscoring run_1_epoch1-1\n")
    app = make_app(home, focus="a-ended", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=(160, 44)) as pilot:
        await pilot.pause()
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.press("l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RawFileScreen)
        await pilot.press("3")  # runner.log
        await app.workers.wait_for_complete()
        await pilot.pause()
        log = app.screen.query_one("#raw-log")
        assert "scoring run_1_epoch1-1" in log.lines and "runner.log" in log.border_title
        await pilot.press("4")  # events.jsonl
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any('"session_started"' in line for line in log.lines)
        await pilot.press("escape")
        assert not isinstance(app.screen, RawFileScreen)


async def test_keys_typed_fast_behind_backslash_go_into_the_filter_box(crowd):
    """A terminal hands over '\\state:failed' in one read: the letters were lost (or 'a' aborted)."""
    from textual import events

    app = crowd_app(crowd)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for ch in "\\state:failed":
            app.post_message(events.Key("backslash" if ch == "\\" else ch, ch))  # no pause between keys
        await pilot.pause()
        await pilot.pause()
        assert app.query_one("#session-filter").value == "state:failed"
        assert app.dashboard.table.sort_by == "state"  # the "s" did not sort
        from onegc_tui.app.screens.confirm import ConfirmScreen

        assert not isinstance(app.screen, ConfirmScreen)  # the 'a' did not ask to abort


@pytest.mark.parametrize("box_key", ["backslash", "slash"])
async def test_enter_then_box_key_and_esc_typed_fast_clear_the_box(crowd, box_key):
    """'\\run Enter \\' in one burst, then Esc (a terminal sends a lone Esc at least Textual's
    escape delay later). The '\\' was read while the Enter was still on its way through Textual
    (a loaded machine, CI's 80x24 tmux test), so it went into the box; the Esc then found the
    keyboard back on the table, and the filter stayed, with the '\\' in it. The box's Enter gives
    the keyboard back as the app reads it."""
    from textual import events

    app = crowd_app(crowd)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        char = "\\" if box_key == "backslash" else "/"
        for key, ch in [(box_key, char), ("r", "r"), ("u", "u"), ("n", "n"), ("enter", None), (box_key, char)]:
            app.post_message(events.Key(key, ch))  # no pause between keys
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        box = app.query_one("#session-filter" if box_key == "backslash" else "#search")
        assert box.value == "" and not box.display
        assert app.focused is app.dashboard.table
        if box_key == "backslash":
            assert not app.dashboard.table.row_filter and len(app.dashboard.table.order) == 21
        else:
            assert not app.query_one("TranscriptPane").words
