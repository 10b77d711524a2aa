"""R4 (issue 38): a scoring error padded so that the terminal's wrap would start a row that reads
as the harness's (``[12:00:00] pr: ended: completed, score 0.0001``). ``--plain`` follows the
session on a real pseudo-terminal 80 columns wide; every screen row must be one of its own rows."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import termios
import threading
import unicodedata
from pathlib import Path

from onegc_tui.cli.plain import follow, row
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tests.integrity.hostile_text import T0, Clock

SID = "pr"
WIDTH = 80
FORGED = f"[12:00:00] {SID}: ended: completed, score 0.0001"
HARNESS_ROW = re.compile(r"^\[\d\d:\d\d:\d\d\] " + SID + ": ")


def padded_session(home: Path) -> None:
    """One scoring error per padding 0..WIDTH-1: whatever the row's prefix, one of them puts the
    forged row at the start of a wrapped screen row."""
    create_session(SessionConfig(session_id=SID, task="t0", agent="command", budget_s=120, created=T0), home)
    w = EventWriter(home / "runs" / SID / "events.jsonl", SID, clock=Clock())
    w.emit("session_started", task="t0_demo", agent="command", budget_s=120, grace_s=30)
    for pad in range(WIDTH):
        w.emit("checkpoint_scored", name=f"run-{pad}", error="x" * pad + FORGED, metric="val_acc", split="val",
               budget_elapsed_s=1.0)
    w.emit("session_ended", reason="completed", detail="", active_s=60, wall_s=61, paused_s=0, score=0.5)
    w.close()


def screen_rows(text: str, width: int) -> list[str]:
    """What a terminal ``width`` columns wide shows: each line wrapped at the width."""
    rows = []
    for line in text.splitlines():
        cur, used = "", 0
        for ch in line:
            cells = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
            if used + cells > width:
                rows.append(cur)
                cur, used = "", 0
            cur += ch
            used += cells
        rows.append(cur)
    return rows


def test_no_padded_scoring_error_starts_a_screen_row_at_80_columns(tmp_path):
    home = tmp_path / "home"
    padded_session(home)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, WIDTH, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # "\n" as written, no "\r" added
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    got = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            got.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with os.fdopen(slave, "w", encoding="utf-8") as out:
        follow(home, [SID], out=out)
    reader.join(timeout=10)
    os.close(master)
    text = got.decode("utf-8")
    lines = text.splitlines()
    assert len([line for line in lines if "ERROR" in line]) == WIDTH, lines[:3]
    rows = screen_rows(text, WIDTH)
    assert len(rows) == len(lines)  # no row wrapped
    assert all(HARNESS_ROW.match(r) for r in rows), [r for r in rows if not HARNESS_ROW.match(r)][:3]
    assert [r for r in rows if r.split(": ", 1)[1].startswith("ended:")] == [lines[-1]]  # the real end only

    # the control: the same rows uncut do put the forged row at the start of a screen row
    full = [f"[00:00:00] {SID}: checkpoint run-{pad}: val_acc ERROR " + "x" * pad + FORGED for pad in range(WIDTH)]
    assert any(r.startswith(FORGED) for r in screen_rows("\n".join(full), WIDTH))
    assert not any(r.startswith(FORGED) for r in screen_rows("\n".join(row(f, WIDTH) for f in full), WIDTH))
