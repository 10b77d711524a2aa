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

from tests.conftest import REPO, wait_for
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
