"""A session folder written by a hostile agent's text: every field an agent can fill (its text,
tool names, checkpoint names, errors quoted in warnings and the end's detail, its model id as the
history labels it) carries terminal escapes, Rich/Textual markup, a forged harness line and a
spreadsheet formula. The tests feed it to every exit and judge what comes out."""

from __future__ import annotations

import re
from pathlib import Path

from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig

T0 = 1_790_000_000.0
CLEAR = "\x1b[2J\x1b[H"  # wipe the screen, cursor home
TITLE = "\x1b]0;PWNED-TITLE\x07"  # OSC 0: the window and tab title
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x1b\\"  # OSC 52: write "rm -rf ~" into the clipboard
FORGED = "\r\n[12:00:00] hx: official final: test_mse 0.0001"  # a harness line of --plain, forged
MARKUP = "[bold red]RED[/bold red][$accent]ACC[/]|cell|"
FORMULA = "=cmd()"
BELL = "\x07\x08\x0c\x9b2J\u202eevil"  # bell, backspace, form feed, 8-bit CSI, a bidi override
HOSTILE = f"{FORMULA}{CLEAR}{TITLE}{CLIPBOARD}{MARKUP}{BELL}{FORGED}"
SID = "hx"

# what no output meant for a terminal may hold: C0 but tab and newline, DEL, C1, bidi controls
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class Clock:
    def __init__(self, start: float = T0):
        self.t = start

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def write_hostile_session(home: Path, sid: str = SID, end: bool = True) -> Path:
    """A session whose every agent-filled field is :data:`HOSTILE`; returns its folder."""
    model = f"m{HOSTILE}"
    create_session(SessionConfig(session_id=sid, task="t0", agent="command", model=model, budget_s=120, created=T0),
                   home)
    folder = home / "runs" / sid
    w = EventWriter(folder / "events.jsonl", sid, clock=Clock())
    w.emit("session_started", task="t0_demo", agent="command", model=model, repeat=1, study=None, budget_s=120,
           grace_s=30, contract={"task_hash": "h"})
    w.emit("budget", state="running", remaining_s=120, deadline=T0 + 120)
    w.emit("transcript", role="assistant", kind="text", text=f"text {HOSTILE}")
    w.emit("transcript", role="assistant", kind="tool_call", tool=f"tool{HOSTILE}", text=f"call {HOSTILE}", call_id="c1")
    w.emit("transcript", role="tool", kind="tool_result", text=f"result {HOSTILE}", call_id="c1", exit_code=0)
    w.emit("transcript", role="assistant", kind="error", text=f"error {HOSTILE}")
    w.emit("process", action="started", pid=4242, script=f"run{HOSTILE}.py", cmdline="python run.py")
    w.emit("warning", code="agent_stderr", message=f"warning {HOSTILE}")
    w.emit("checkpoint_found", name=f"ck{HOSTILE}", path="p", snapshot="s", script="run.py", self_reported=0.5,
           budget_elapsed_s=10.0)
    w.emit("checkpoint_scored", name=f"ck{HOSTILE}", error=f"scorer {HOSTILE}", metric="val_acc", split="val",
           budget_elapsed_s=12.0)
    w.emit("process", action="ended", pid=4242, script=f"run{HOSTILE}.py", cmdline="python run.py", returncode=0)
    if end:
        w.emit("session_ended", reason="agent_failed", detail=f"the agent's last error: {HOSTILE}", active_s=60,
               wall_s=61, paused_s=0, score=None, best_checkpoint=None)
    w.close()
    (folder / "agent.stdout.jsonl").write_text(f'{{"type": "text", "text": "raw"}}\nraw {HOSTILE}\n')
    (folder / "agent.stderr.log").write_text(f"\x1b[31mred stderr\x1b[0m {HOSTILE}\n")
    return folder


def assert_inert(text: str, where: str) -> None:
    """Nothing in ``text`` can drive a terminal: no ESC, no other control, no bidi override."""
    found = CONTROL.search(text)
    if found is not None:
        at = found.start()
        raise AssertionError(f"{where}: control {found.group()!r} at {at}: {text[max(0, at - 40):at + 40]!r}")
