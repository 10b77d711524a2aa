"""What ``onegc prepare`` shows while a task's ``prepare.py`` runs: a download's bytes as a bar, a
long step (converting) with its seconds counted, the split sizes it wrote, and its error once."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time

import click

from runner.errors import OnegcError

PROGRESS_RE = re.compile(r"^progress: (?P<name>\S+) (?P<done>\d+)/(?P<total>\d+)$")  # a download's bytes
STEP_PREFIX = "step: "  # a long step without a measure of its own (converting): its time, counted as it runs
TICK_S = 1.0  # a step's clock is redrawn this often on a terminal


class PrepareProgress:
    """What ``prepare.py`` says on stderr, as a person reads it: a download as a bar of its bytes,
    a long step (``step: converting …``) with its seconds counted while it runs (redrawn on a
    terminal, said once when it ends elsewhere), every other line as it is, except its error,
    which the one-line failure says (it was printed twice)."""

    def __init__(self, tty: bool):
        self.tty = tty
        self.open_line = False  # a bar or a step's clock is on the current line, to be redrawn or ended
        self.step: tuple[str, float] | None = None
        self.error = ""
        self.last = ""

    def _draw(self, text: str) -> None:
        click.echo(f"\r  {text}\033[K" if self.tty else f"  {text}", nl=not self.tty, err=True)
        self.open_line = self.tty

    def _end_line(self) -> None:
        if self.open_line:
            click.echo("", err=True)
            self.open_line = False

    def _end_step(self) -> None:
        if self.step is not None:
            what, began = self.step
            self.step = None
            if self.tty:
                self._draw(f"{what}: done in {time.monotonic() - began:.0f} s")
            else:
                click.echo(f"  {what}: done in {time.monotonic() - began:.0f} s", err=True)
            self._end_line()

    def line(self, line: str) -> None:
        line = line.rstrip()
        m = PROGRESS_RE.match(line)
        if m:
            done, total = int(m["done"]), int(m["total"])
            width = 30
            filled = width * done // max(total, 1)
            if self.tty or done >= total:  # piped: the whole file once, not a line per MiB
                self._draw(f"{m['name']} [{'#' * filled}{'.' * (width - filled)}] "
                           f"{done / 2**20:.1f}/{total / 2**20:.1f} MiB")
            return
        self._end_step()
        self._end_line()
        if line.startswith(STEP_PREFIX):
            self.step = (line.removeprefix(STEP_PREFIX), time.monotonic())
            self._draw(f"{self.step[0]} …")
            return
        if line.startswith("error: "):
            self.error = line.removeprefix("error: ")
            return
        if line:
            self.last = line
            click.echo(f"  {line}", err=True)

    def tick(self) -> None:
        """A second passed without a line: a running step's clock moves (on a terminal)."""
        if self.step is not None and self.tty:
            what, began = self.step
            self._draw(f"{what} … {time.monotonic() - began:.0f} s")

    def close(self) -> None:
        self._end_step()
        self._end_line()


def run_prepare(task: str, argv: list[str]) -> None:
    """Run a ``prepare.py`` command line, showing what it says; a failure is one line naming ``task``."""
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stderr is not None  # stderr=PIPE gives a stream
    lines: queue.Queue[str | None] = queue.Queue()

    def read(stream=proc.stderr) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, name="prepare-stderr", daemon=True).start()
    shown = PrepareProgress(sys.stderr.isatty())
    while True:
        try:
            line = lines.get(timeout=TICK_S)
        except queue.Empty:
            shown.tick()
            continue
        if line is None:
            break
        shown.line(line)
    shown.close()
    if proc.wait() != 0:
        raise OnegcError(f"preparing {task} failed: {shown.error or shown.last or 'see the output above'}")
