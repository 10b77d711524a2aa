"""No agent string can change the operator's terminal state: a session whose every agent-filled
field holds a screen wipe, an OSC 0 title, an OSC 52 clipboard write, Rich/Textual markup, a
forged ``test_mse 0.0001`` harness line and a spreadsheet formula (tests/integrity/hostile_text.py),
fed to every exit: the sanitiser itself, ``onegc run --plain``'s follower, ``onegc sessions``,
``onegc history`` in each format and ``--sessions-csv``, and the monitor's screens (what Textual
would write to the terminal, read from its compositor). The real monitor in tmux, judged from
outside (the pane's title, tmux's clipboard buffers, the screen), is in test_agent_text_tmux.py."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from click.testing import CliRunner

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.wire.textsafe import NEWLINE_MARK, safe_text
from tests.integrity.hostile_text import (
    CLEAR,
    CLIPBOARD,
    FORGED,
    HOSTILE,
    MARKUP,
    SID,
    TITLE,
    assert_inert,
    write_hostile_session,
)

# ----------------------------------------------------------------------------- the sanitiser


@pytest.mark.parametrize("attack, kept", [
    (f"a{CLEAR}b", "ab"),
    (f"a{TITLE}b", "ab"),
    (f"a{CLIPBOARD}b", "ab"),
    ("a\x1b]0;no terminator\nb", "a\nb"),  # an unterminated string ends at its line, not at the text's end
    ("a\x9b2Jb\x9d0;t\x9cc", "abc"),  # 8-bit CSI and OSC
    ("a\x1bcb\x1b(Bc\x1b7d", "abcd"),  # reset, charset, save cursor
    ("a\x1b[31", "a"),  # a CSI cut short
    ("x\x00\x07\x08\x0b\x0c\r\x7f\x85y", "xy"),  # C0 (not tab, newline), DEL, C1
    ("\u202eevil\u2066", "evil"),  # bidi override and isolate
    ("tab\tand\nnewline", "tab\tand\nnewline"),  # kept
    ("é 日本 ✓ [bold]", "é 日本 ✓ [bold]"),  # printable text is left as it is (markup is the screen's business)
])
def test_safe_text_strips_every_control(attack, kept):
    assert safe_text(attack) == kept


def test_one_line_keeps_agent_text_on_its_line():
    assert safe_text(FORGED, one_line=True) == f"{NEWLINE_MARK}[12:00:00] hx: official final: test_mse 0.0001"
    assert safe_text("a\u2028b\u2029c\td", one_line=True) == f"a{NEWLINE_MARK}b{NEWLINE_MARK}c d"
    assert safe_text(None) == "" and safe_text(3.5) == "3.5"


def test_nothing_random_gets_through():
    """Random strings over the dangerous alphabet: never a control left, in either mode."""
    rng = random.Random(28)
    alphabet = [chr(c) for c in range(0, 0xA0)] + ["\u202e", "\u2067", "[", "]", ";", "\\", "é", "P", "X"]
    for _ in range(3000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert_inert(safe_text(s).replace("\n", "").replace("\t", ""), repr(s))
        one = safe_text(s, one_line=True)
        assert_inert(one, repr(s))
        assert "\n" not in one and "\t" not in one


# ----------------------------------------------------------------------------- --plain


def test_plain_follower_prints_agent_text_inert_and_on_agent_lines(tmp_path):
    from onegc_tui.cli.plain import follow

    home = tmp_path / "home"
    write_hostile_session(home)
    out = io.StringIO()
    follow(home, [SID], out=out)
    text = out.getvalue()
    assert_inert(text.replace("\n", ""), "--plain")
    lines = text.splitlines()
    assert lines and all(line.startswith("[") and f"] {SID}: " in line[:20] for line in lines), lines
    forged = [line for line in lines if "test_mse 0.0001" in line]
    assert forged, "the agent's text is shown"
    for line in forged:  # each one visibly the agent's: after a harness prefix that says whose it is
        head = line.split(f"] {SID}: ", 1)[1]
        assert head.startswith(("agent tool_call: ", "agent error: ", "script ", "WARNING ", "checkpoint ", "started: ",
                                "ended: ")), line
        assert not head.startswith("official"), line
    # one wording with the pane (views/transcript_view.py event_words): the tool's name, one line, then the call
    assert "agent tool_call: [tool=cmd()[bold red]RED[/bold red]" in text and "] call =cmd()[bold red]RED[/bold red]" in text


# ----------------------------------------------------------------------------- onegc sessions / history


@pytest.fixture
def hostile_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    write_hostile_session(home)
    monkeypatch.setenv("ONEGC_HOME", str(home))
    return home


def _cli(*args: str):
    from onegc_tui.cli.main import main

    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def test_sessions_and_history_print_agent_text_inert(hostile_home):
    table = _cli("sessions")
    assert_inert(table.replace("\n", ""), "onegc sessions")
    assert SID in table
    as_json = _cli("sessions", "--json")
    assert_inert(as_json.replace("\n", ""), "onegc sessions --json")  # JSON escapes them: \u001b
    assert json.loads(as_json)[0]["model"].startswith("m=cmd()\x1b[2J")  # the record keeps the raw text
    for fmt in ("table", "md", "latex", "csv", "json"):
        out = _cli("history", "--demo", "--no-paper", "--format", fmt)
        assert_inert(out.replace("\n", ""), f"onegc history --format {fmt}")
        assert "0.0001" in out  # shown (test\\_mse in LaTeX), on the label's own line
        if fmt != "json":
            assert not any(line.startswith("[12:00:00]") for line in out.splitlines()), out


def test_exports_escape_markdown_latex_and_spreadsheet_formulas(hostile_home, tmp_path):
    md = _cli("history", "--demo", "--no-paper", "--format", "md")
    row = next(line for line in md.splitlines() if "0.0001" in line and line.startswith("| "))
    assert "\\[bold red\\]RED\\[/bold red\\]" in row and "\\|cell\\|" in row
    assert row.count("|") - row.count("\\|") == 6  # study, agent, T0, Agg, Agg_max: no cell added
    note = next(line for line in md.splitlines() if "0.0001" in line and not line.startswith("| "))
    assert "\\[bold red\\]" in note
    latex = _cli("history", "--demo", "--no-paper", "--format", "latex")
    row = next(line for line in latex.splitlines() if "test\\_mse" in line)
    assert "\\$accent" in row and "[12:00:00]" in row and row.rstrip().endswith("\\\\")
    out = tmp_path / "sessions.csv"
    _cli("history", "--demo", "--no-paper", "--format", "csv", "--sessions-csv", str(out))
    sessions = list(csv.DictReader(io.StringIO(out.read_text())))
    assert sessions[0]["model"].startswith("m=cmd()")  # not a formula: it starts with m
    matrix = list(csv.DictReader(io.StringIO(_cli("history", "--demo", "--no-paper", "--format", "csv"))))
    for cells in (sessions, matrix):
        for r in cells:
            for key, value in r.items():
                assert_inert(value, f"csv {key}")
                assert not value.startswith(("=", "+", "@", "\t", "\r")), (key, value)
                number = value.lstrip("-").replace(".", "").replace("e", "").isdigit()
                assert not (value.startswith("-") and not number), (key, value)


def test_csv_cells_that_start_like_formulas_get_a_quote():
    from onegc_tui.results.export import sessions_csv
    from onegc_tui.views.outcomes import SessionOutcome

    def outcome(model: str) -> SessionOutcome:
        return SessionOutcome(session_id="s", study=None, agent="command", model=model, task="t0", repeat=1,
                              score=-0.5, end_reason="completed", contract_hash="h", budget_s=60.0)

    for model, written in [("=cmd()", "'=cmd()"), ("+1", "'+1"), ("-1+2", "'-1+2"), ("@SUM(A1)", "'@SUM(A1)"),
                           ("\t=1", "' =1"), ("\r=1", "'=1"), (" =1", "' =1"), ("plain", "plain")]:
        row = next(csv.DictReader(io.StringIO(sessions_csv([outcome(model)]))))
        assert row["model"] == written, (model, row["model"])
        assert row["score"] == "-0.5"  # numbers stay numbers


# ----------------------------------------------------------------------------- the monitor


def _screen_text(app) -> str:
    """Every character the app's current screen would write to the terminal, from its compositor."""
    update = app.screen._compositor.render_update(full=True)
    return "".join(segment.text for strip in update.strips for segment in strip)


async def test_monitor_screens_show_agent_text_inert(hostile_home):
    from onegc_tui.app import make_app
    from onegc_tui.app.screens.detail import DetailScreen
    from onegc_tui.app.screens.history import HistoryScreen
    from onegc_tui.app.screens.viewer import LineScreen, RawFileScreen

    store = Store.open(hostile_home)
    Ingester(hostile_home, store).ingest_all()
    store.close()
    app = make_app(hostile_home, focus=SID, live=False, show_clock=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        seen = {}

        async def look(name: str) -> None:
            await app.workers.wait_for_complete()
            await pilot.pause()
            seen[name] = text = _screen_text(app)
            assert_inert(text, name)

        await look("dashboard")
        assert "[bold red]RED[/bold red]" in seen["dashboard"]  # markup shown as the agent wrote it, not applied
        app._show_note(type("Note", (), {"message": f"alert {HOSTILE}", "severity": "warning"})())
        await pilot.pause()
        note = list(app._notifications)[-1]  # (a toast is not drawn under run_test: its record is read)
        assert note.markup is False and note.message.startswith("alert =cmd()[bold red]RED")
        assert_inert(note.message.replace("\n", ""), "notification")
        transcript = app.query_one("#transcript-log")
        transcript.focus()
        await pilot.press("home", "down", "enter")
        assert isinstance(app.screen, LineScreen)
        await look("line viewer")
        assert "raw =cmd()" in seen["line viewer"] or "call =cmd()" in seen["line viewer"]
        await pilot.press("escape")
        await pilot.press("d")
        assert isinstance(app.screen, DetailScreen)
        await look("detail")
        await pilot.press("l")
        assert isinstance(app.screen, RawFileScreen)
        for key in "1234":
            await pilot.press(key)
            await look(f"raw file {key}")
        assert "red stderr" in seen["raw file 2"]
        await pilot.press("escape", "escape")
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        await look("history")
        assert "test_mse 0.0001" in seen["history"]


def test_an_error_line_that_quotes_a_file_is_inert():
    from onegc_tui.cli.base import one_line

    assert one_line(f"bad session.json: {CLEAR}{TITLE}x\ny") == "bad session.json: x y"


@pytest.mark.parametrize("text", [MARKUP, "[b]x[/b]", "[$accent]q", "[ bold ]z", "C:\\dir\\[x]", "end\\", "a\\\\[i]k",
                                  "[link=https://x.example]l[/link]", HOSTILE])
def test_agent_text_inside_our_markup_is_shown_as_written(text):
    """Inside a markup string of ours (Rich's for the analytics, Textual's for titles and the
    budget's end detail), agent text reads as written and styles nothing."""
    from rich.text import Text
    from textual.content import Content

    from onegc_tui.app.safe import content_escape, markup_escape

    rich = Text.from_markup(f"[b]{markup_escape(text)}[/b] after")
    assert rich.plain == f"{safe_text(text, one_line=True)} after" and [s.end for s in rich.spans] == [len(rich.plain) - 6]
    content = Content.from_markup(f"before {content_escape(text)}")
    assert content.plain == f"before {safe_text(text, one_line=True)}" and not content.spans
