"""No agent string can change the operator's terminal state, judged from outside by a real
terminal: a private tmux server (``set-clipboard on``: an OSC 52 write becomes a tmux buffer; an
OSC 0 sets the pane's title) runs the monitor, ``--plain``'s follower, ``onegc sessions`` and
``onegc history`` over the hostile session of tests/integrity/hostile_text.py. Afterwards the
pane titles are tmux's, no buffer exists, and the monitor's screen is whole (not wiped) and
shows the agent's markup as text. A control pane that prints the same bytes raw changes both:
the judge can see an attack."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import uuid

import pytest

from tests.helpers import REPO, wait_for
from tests.integrity.hostile_text import HOSTILE, SID, write_hostile_session

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


class Tmux:
    """A tmux server of the test's own (its own socket, no config): nothing shared with a user's."""

    def __init__(self):
        self.socket = f"onegc-judge-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=False).stdout

    def titles(self) -> list[str]:
        return self("list-panes", "-a", "-F", "#{pane_title}").splitlines()

    def buffers(self) -> str:
        return self("list-buffers")

    def screen(self, target: str) -> str:
        return self("capture-pane", "-p", "-t", target)


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t("kill-server")


def test_nothing_an_agent_printed_reaches_the_terminal(tmp_path, tmux):
    home = tmp_path / "home"
    write_hostile_session(home)
    env = f"env ONEGC_HOME={home} PYTHONPATH={REPO} TERM=xterm-256color TZ=UTC"
    py = shlex.quote(sys.executable)
    tmux("new-session", "-d", "-s", "judge", "-x", "180", "-y", "50", "sleep 600")
    tmux("set-option", "-g", "set-clipboard", "on")
    before = tmux.titles()
    # the line-oriented exits, one after the other in one pane; then a marker
    follow = f"from onegc_tui.cli.plain import follow; from pathlib import Path; follow(Path('{home}'), ['{SID}'])"
    script = (f"{env} {py} -c {shlex.quote(follow)}; {env} {py} -m onegc_tui.cli sessions; "
              f"for f in table md latex csv; do {env} {py} -m onegc_tui.cli history --demo --no-paper --format $f; done; "
              "echo EXITS-DONE; sleep 600")
    tmux("new-window", "-t", "judge", "-n", "lines", script)
    wait_for(lambda: "EXITS-DONE" in tmux.screen("judge:lines"), 120, "the line-oriented exits to finish")
    tmux("new-window", "-t", "judge", "-n", "monitor", f"{env} {py} -m onegc_tui.cli monitor --session {SID}")
    try:
        wait_for(lambda: "text =cmd()[bold red]RED[/bold r" in tmux.screen("judge:monitor"), 90,
                 "the monitor showing the hostile session's transcript")
    except AssertionError:
        print(tmux.screen("judge:monitor"))
        raise
    screen = tmux.screen("judge:monitor")
    tmux("send-keys", "-t", "judge:monitor", "d")  # the detail screen (the analytics, the end's detail)
    wait_for(lambda: "Transcript up to the cursor" in tmux.screen("judge:monitor"), 60, "the detail screen")
    tmux("send-keys", "-t", "judge:monitor", "l")  # the raw files, agent stdout then stderr
    wait_for(lambda: "agent.stdout.jsonl" in tmux.screen("judge:monitor"), 60, "the raw-log viewer")
    tmux("send-keys", "-t", "judge:monitor", "2")
    wait_for(lambda: "red stderr" in tmux.screen("judge:monitor"), 60, "agent.stderr.log in the viewer")
    try:
        assert tmux.buffers() == "", "an OSC 52 clipboard write got through"
        assert not [t for t in tmux.titles() if "PWNED" in t], tmux.titles()
        assert len(tmux.titles()) == len(before) + 2
        assert "text =cmd()[bold red]RED[/bold r" in screen  # the markup shown as written, not applied
        assert "Transcript · all" in screen and "used 01:00 of 02:00" in screen and "? Help" in screen  # not wiped
    except AssertionError:
        print(screen)
        raise
    # the control: the same bytes printed raw do change the terminal, and the judge sees it
    raw = tmp_path / "raw.txt"
    raw.write_text(HOSTILE)
    tmux("new-window", "-t", "judge", "-n", "control", f"cat {raw}; sleep 600")
    wait_for(lambda: tmux.buffers() != "", 30, "the control's clipboard write")
    assert any("PWNED" in t for t in tmux.titles())


HOSTILE_AGENT = r'''
import os, subprocess, sys
bad = "\x1b]0;PWNED-TITLE\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J"
script = f"run_{bad}x.py"
with open(script, "w") as f:
    f.write("print('epoch 1 test_mse 0.0001')\n")
subprocess.run(["python", script], check=False)  # the shim counts it: a process event names it
with open(os.path.join("checkpoints", f"ck{bad}.pt"), "wb") as f:
    f.write(b"not a checkpoint " + bad.encode())
print(f"text {bad}\r\n[12:00:00] s: official final: test_mse 0.0001", flush=True)
print(f"stderr {bad}", file=sys.stderr, flush=True)
import time; time.sleep(3)  # the checkpoint is found and scored (an error) before the end
'''


def test_a_real_hostile_session_under_plain_leaves_the_terminal_alone(home, tmp_path, tmux):
    """``onegc run --plain`` of a command agent whose script name, checkpoint name and output
    carry a title change, a clipboard write and a screen wipe, in a real terminal."""
    agent = tmp_path / "hostile_plain.py"
    agent.write_text(HOSTILE_AGENT)
    env = f"env ONEGC_HOME={home} PYTHONPATH={REPO} TERM=xterm-256color TZ=UTC"
    run = (f"{env} {shlex.quote(sys.executable)} -m onegc_tui.cli run t0 --agent command --plain --budget 60s -- "
           f"{shlex.quote(sys.executable)} {agent}; echo RUN-DONE; sleep 600")
    tmux("new-session", "-d", "-s", "judge", "-x", "200", "-y", "50", "sleep 600")
    tmux("set-option", "-g", "set-clipboard", "on")
    tmux("new-window", "-t", "judge", "-n", "run", run)
    try:
        wait_for(lambda: "RUN-DONE" in tmux.screen("judge:run"), 150, "the session to end")
        screen = tmux.screen("judge:run")
        assert "ended:" in screen and "script started: run_" in screen and "checkpoint ck" in screen, screen
        assert tmux.buffers() == "", "an OSC 52 clipboard write got through"
        assert not [t for t in tmux.titles() if "PWNED" in t], tmux.titles()
        lines = [line for line in screen.splitlines() if line.strip() and "RUN-DONE" not in line]
        assert not [line for line in lines if line.startswith("[12:00:00]")], lines  # no forged harness line
    except AssertionError:
        print(tmux.screen("judge:run"))
        raise
    events = next((home / "runs").iterdir()) / "events.jsonl"
    assert "\\u001b]0;PWNED-TITLE" in events.read_text()  # the record keeps what the agent wrote
