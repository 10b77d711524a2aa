"""The real monitor in a real terminal: ``onegc monitor`` in tmux over scripted sessions; select,
pause by key, open history, help, filter, search and quit, reading the screen with
``tmux capture-pane``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid

import pytest

from tests.helpers import REPO, start_session, wait_event, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def test_monitor_in_tmux_select_pause_history_quit(home):
    s1 = start_session(home, "tm1", budget_s=300, pace_s=0.5)
    wait_event(s1, "session_started", timeout=60)
    s2 = start_session(home, "tm2", budget_s=300, pace_s=0.5)
    wait_event(s2, "session_started", timeout=60)
    name = f"onegc-test-{uuid.uuid4().hex[:8]}"
    cmd = (f"env ONEGC_HOME={home} PYTHONPATH={REPO} TERM=xterm-256color "
           f"{sys.executable} -m onegc_tui.cli monitor")
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "45", cmd)
    tmux("resize-window", "-t", name, "-x", "160", "-y", "45")
    screen = lambda: tmux("capture-pane", "-p", "-t", name)  # noqa: E731
    try:
        _drive(name, screen, s1, s2)
    except AssertionError:
        print(screen())  # what the terminal showed, for the failure report
        raise
    finally:
        tmux("kill-session", "-t", name)
        for paths in (s1, s2):
            from runner.wire.control import request

            request(paths, "abort", source="test")
        for paths in (s1, s2):
            wait_event(paths, "session_ended", timeout=120)


def first_request(paths) -> str | None:
    lines = paths.control.read_text().splitlines() if paths.control.exists() else []
    return json.loads(lines[0])["action"] if lines else None  # the file exists a moment before its line


def _drive(name, screen, s1, s2) -> None:
    if True:
        wait_for(lambda: "tm1" in screen() and "tm2" in screen(), 60, "both sessions on the monitor")
        wait_for(lambda: "tm2" in screen().splitlines()[0], 30, "the most recent running session selected (header)")
        tmux("send-keys", "-t", name, "Down")
        wait_for(lambda: "tm1" in screen().splitlines()[0], 30, "the other session selected (header)")
        tmux("send-keys", "-t", name, "p")
        wait_for(lambda: first_request(s1) == "pause", 30, "a pause request in tm1's control.jsonl")
        assert not s2.control.exists()  # the selected session, not the other
        wait_for(lambda: "PAUSED" in screen(), 60, "the paused state on screen")
        tmux("send-keys", "-t", name, "h")
        wait_for(lambda: "Sonnet 4.6" in screen() and "history" in screen(), 60, "the history matrix with the paper")
        tmux("send-keys", "-t", name, "h")  # h again (or Escape) goes back
        wait_for(lambda: "sorted by" in screen(), 30, "back on the dashboard")
        tmux("send-keys", "-t", name, "q")
        wait_for(lambda: name not in tmux("list-sessions", "-F", "#{session_name}"), 30, "the monitor to quit")


def start_tmux(home, width: int, height: int) -> tuple[str, callable]:
    name = f"onegc-test-{uuid.uuid4().hex[:8]}"
    cmd = (f"env ONEGC_HOME={home} PYTHONPATH={REPO} TERM=xterm-256color TZ=UTC "
           f"{sys.executable} -m onegc_tui.cli monitor")
    tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), cmd)
    tmux("resize-window", "-t", name, "-x", str(width), "-y", str(height))
    return name, lambda: tmux("capture-pane", "-p", "-t", name)


def transcript_lines(screen: str) -> list[str]:
    """The transcript pane's lines on an 80-column screen: left box, after its title."""
    out, inside = [], False
    for line in screen.splitlines():
        if "Transcript ·" in line:
            inside = True
            continue
        if inside and line.startswith("│"):
            body = line[1:].split("│")[0].strip()
            if "▌" in body:  # a notification over the pane from here (its left edge): cut by it
                body = body.split("▌")[0].rstrip() + "…"
            if body[:2].isdigit():
                out.append(body)
        elif inside and line.startswith("╰"):
            break
    return out


def test_monitor_at_80x24_help_filter_and_search(home):
    """A person at 80x24 with one running session among 20 ended: the running one is on top and
    selected, ? lists the keys and Esc closes it, the filter narrows the table, the search finds
    run_1.py and val_acc in the transcript."""
    from tests.homes import build_crowd

    build_crowd(home, running=False)
    live = start_session(home, "zz-live", budget_s=300, pace_s=3.0)  # about a minute of steps
    wait_event(live, "session_started", timeout=60)
    name, screen = start_tmux(home, 80, 24)
    try:
        wait_for(lambda: "zz-live" in screen().splitlines()[0], 60, "the running session selected on attach")
        rows = screen().splitlines()
        header = next(i for i, line in enumerate(rows) if "Budget left" in line)
        assert "running" in rows[header + 1] and "zz-live" in rows[header + 1]
        assert "Best" in rows[header]
        wait_for(lambda: "? Help" in screen() and "q Quit" in screen(), 30, "the footer, whole")
        tmux("send-keys", "-t", name, "?")
        wait_for(lambda: "Keys · the keyboard is on: Sessions table" in screen(), 30, "the help screen")
        assert "Pause/resume" in screen()
        tmux("send-keys", "-t", name, "Escape")
        wait_for(lambda: "Keys ·" not in screen() and "Budget left" in screen(), 30, "help closed by Esc")
        tmux("send-keys", "-t", name, "-l", "\\state:failed")  # typed fast: the keys after \\ go into the box
        tmux("send-keys", "-t", name, "Enter")
        wait_for(lambda: "filter “state:failed”: 3 shown" in screen(), 30, "the filtered table")
        assert "FAILED" in screen() and "running  " not in screen()
        tmux("send-keys", "-t", name, "-l", "\\")
        tmux("send-keys", "-t", name, "Escape")
        wait_for(lambda: "filter" not in screen().splitlines()[1], 30, "the filter cleared by Esc")
        tmux("send-keys", "-t", name, "Home")
        wait_for(lambda: "zz-live" in screen().splitlines()[0], 30, "the newest session selected again")
        wait_for(lambda: "val_acc" in screen(), 120, "the first training epochs in the transcript")
        for word in ("run_1.py", "val_acc"):
            tmux("send-keys", "-t", name, "-l", f"/{word}")
            tmux("send-keys", "-t", name, "Enter")

            def matches(word: str = word) -> bool:  # the search's name shows a frame before its lines: wait for both
                shown = screen()
                lines = transcript_lines(shown)
                return (f"“{word}”" in shown and any(word in line for line in lines)
                        and all(word in line or line.endswith("…") for line in lines))

            try:
                wait_for(matches, 30, f"the search for {word}: only matching lines")
            except AssertionError as exc:
                raise AssertionError(f"{exc}: {transcript_lines(screen())}") from None
        tmux("send-keys", "-t", name, "q")
        wait_for(lambda: name not in tmux("list-sessions", "-F", "#{session_name}"), 30, "the monitor to quit")
    except AssertionError:
        print(screen())
        raise
    finally:
        tmux("kill-session", "-t", name)
        from runner.wire.control import request

        request(live, "abort", source="test")
        wait_event(live, "session_ended", timeout=120)
