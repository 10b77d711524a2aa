"""Text in full: one transcript line opened whole (Enter in the transcript), and a session's raw
files (``agent.stdout.jsonl``, ``agent.stderr.log``, ``runner.log``, ``events.jsonl``) from the
detail screen. Both read on a worker and show the text wrapped, scrollable; Esc closes them.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Log, Static

from onegc_tui.app.host import host
from onegc_tui.app.safe import content_escape
from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from runner.wire.paths import SessionPaths
from runner.wire.textsafe import safe_text

RAW_FILES = ("agent.stdout.jsonl", "agent.stderr.log", "runner.log", "events.jsonl")
TAIL_BYTES = 2 << 20  # a raw file's last 2 MiB: its newest lines, whatever its size
RAW_LINE_MAX = 200_000  # characters of one raw line shown (a CLI can write megabytes in one line)


def read_raw_line(path: Path, line_no: int) -> str | None:
    """Line ``line_no`` (1-based) of ``path``, or None when the file or the line is missing."""
    try:
        with open(path, "rb") as f:
            line = next(itertools.islice(f, line_no - 1, None), None)
    except OSError:
        return None
    return None if line is None else line.decode("utf-8", errors="replace").rstrip("\n")[:RAW_LINE_MAX]


def tail(path: Path, limit: int = TAIL_BYTES) -> tuple[list[str], bool]:
    """The last ``limit`` bytes of a file as whole lines, and whether the start was left out."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return [], False
    cut = size > limit
    lines = data.decode("utf-8", errors="replace").splitlines()
    return (lines[1:] if cut else lines), cut


def describe_event(store: Store, sid: str, seq: int) -> tuple[str, str]:
    """A heading and the full text of one event: the step's whole text and the CLI's raw line
    for a transcript step, the event itself for the harness's own lines."""
    event = store_queries.event_json(store, sid, seq)
    if event is None:
        return f"{sid} · event {seq}", "(this event is not in the store)"
    if event.get("type") != "transcript":
        return f"{sid} · event {seq} · {event.get('type')}", json.dumps(event, indent=2, ensure_ascii=False)
    head = f"{sid} · event {seq} · {event.get('role')} {event.get('kind')}"
    if event.get("tool"):
        head += f" · {event['tool']}"
    if event.get("exit_code") is not None:
        head += f" · exit {event['exit_code']}"
    body = event.get("text") or "(no text)"
    folder = store.session(sid) or {}
    if event.get("raw_line") and folder.get("folder"):
        raw_path = SessionPaths(Path(folder["folder"])).agent_stdout
        raw = read_raw_line(raw_path, event["raw_line"])
        if raw is not None:
            body += f"\n\n── the CLI's raw output: {raw_path.name} line {event['raw_line']} ──\n{raw}"
    return head, body


class LineScreen(ModalScreen[None]):
    """One transcript line, whole."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close")]
    help_name = "Line viewer"

    class Read(Message):
        def __init__(self, head: str, body: str):
            super().__init__()
            self.head, self.body = head, body

    def __init__(self, ref: tuple[str, int] | None, line: str):
        super().__init__()
        self.ref, self.line = ref, line

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="viewer"):
            yield Static(safe_text(self.line), id="viewer-text", markup=False)

    def on_mount(self) -> None:
        box = self.query_one("#viewer")
        box.border_title, box.border_subtitle = "Transcript line", "Esc closes"
        box.focus()
        if self.ref is not None:
            self._read(*self.ref)

    @work(thread=True, exit_on_error=False)
    def _read(self, sid: str, seq: int) -> None:
        store = Store.open(host(self).home)
        try:
            self.post_message(self.Read(*describe_event(store, sid, seq)))
        finally:
            store.close()

    def on_line_screen_read(self, msg: Read) -> None:
        self.query_one("#viewer").border_title = content_escape(msg.head)  # (a border title is markup)
        self.query_one("#viewer-text", Static).update(safe_text(msg.body))  # raw bytes stay in the files


class RawFileScreen(ModalScreen[None]):
    """A session's raw files, the newest lines; 1–4 switch file, r reloads."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close"), Binding("r", "reload", "Reload"),
        *(Binding(str(i), f"show({i - 1})", name, show=True) for i, name in enumerate(RAW_FILES, 1))]
    help_name = "Raw files"

    class Read(Message):
        def __init__(self, name: str, lines: list[str], cut: bool):
            super().__init__()
            self.name, self.lines, self.cut = name, lines, cut

    def __init__(self, folder: Path, which: int = 0):
        super().__init__()
        self.folder, self.which = folder, which

    def compose(self) -> ComposeResult:
        yield Log(id="raw-log", max_lines=None, auto_scroll=True)

    def on_mount(self) -> None:
        log = self.query_one(Log)
        log.border_subtitle = "1 agent stdout · 2 agent stderr · 3 runner.log · 4 events · r reload · Esc closes"
        log.focus()
        self.action_show(self.which)

    def action_show(self, which: int) -> None:
        self.which = which
        self._read(self.folder / RAW_FILES[which])

    def action_reload(self) -> None:
        self.action_show(self.which)

    @work(thread=True, exit_on_error=False, exclusive=True)
    def _read(self, path: Path) -> None:
        lines, cut = tail(path)
        if not lines and not path.exists():
            lines = [f"({path.name} does not exist: nothing was written to it)"]
        self.post_message(self.Read(path.name, lines, cut))

    def on_raw_file_screen_read(self, msg: Read) -> None:
        log = self.query_one(Log)
        log.border_title = f"{self.folder.name} · {msg.name}" + (" · the last 2 MiB" if msg.cut else "")
        log.clear()
        log.write_lines([safe_text(line, one_line=True) for line in msg.lines] or ["(empty)"])  # no colours, titles…
        log.scroll_end(animate=False)
