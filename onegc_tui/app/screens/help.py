"""``?``: every key that works right now, for the pane that has the keyboard first, then the
screen's and the app's; and what the transcript's marks and the table's colours mean.

The lists are read from the live bindings (``Screen.active_bindings``), so they cannot drift
from what the keys do. Esc, ``?`` or ``q`` closes it.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from onegc_tui.views.transcript_view import MARK_LEGEND
from runner.wire.score_terms import ROLE_WIDTHS, Role, role_mark

Section = tuple[str, list[tuple[str, str]]]  # title, (key, what it does)
STATE_LEGEND = [("running", "running"), ("PAUSED", "paused: the tree is frozen, the budget clock stopped"),
                ("FAILED", "failed: the agent or the harness failed (its checkpoints are still scored)"),
                ("ended", "ended: completed, budget exhausted or aborted")]


SCORE_ROLES: list[tuple[str, Role, str]] = [
    ("val", "live", "a live val score: ranks the checkpoints while the session runs, never the result"),
    ("test", "official", "the result: the val-best checkpoint re-evaluated on the scored split (test on T4-T6)"),
    ("test", "unofficial", "a re-evaluation that was not chosen: how selection fared, never counted")]


def pane_name(widget: DOMNode | None) -> str:
    """What a person calls the focused widget: its own or its closest ancestor's ``help_name``."""
    node = widget
    while node is not None:
        name = getattr(node, "help_name", None)
        if name:
            return name
        node = node.parent
    return type(widget).__name__ if widget is not None else "nothing"


SIDEWAYS = {"scroll_left", "scroll_right", "page_left", "page_right"}  # nothing in the monitor scrolls sideways


def _useful(node, binding: Binding) -> bool:
    if not binding.description or binding.key.startswith("super+") or binding.action in SIDEWAYS:
        return False
    row_cursor = getattr(node, "cursor_type", None) == "row"
    return not (row_cursor and binding.action in ("cursor_left", "cursor_right"))


def key_sections(screen) -> list[Section]:
    """The active keys of ``screen`` grouped by who handles them: the focused pane, the screen, the app."""
    app = screen.app
    focused = screen.focused
    groups: dict[str, list] = {}
    for _, (node, binding, enabled, _tooltip) in screen.active_bindings.items():
        if not enabled or not _useful(node, binding):
            continue  # a key that does nothing here is not worth a line
        if node is app or binding.action.startswith("app."):  # a screen may name an app key in its footer place
            title = "Everywhere"
        elif node is screen:
            title = "On this screen"
        else:
            title = f"{pane_name(focused)} (has the keyboard: Tab moves it)"
        entry = (app.get_key_display(binding), binding.description)
        if entry not in groups.setdefault(title, []):
            groups[title].append(entry)
    order = sorted(groups, key=lambda t: (t == "Everywhere", t == "On this screen"))
    return [(t, groups[t]) for t in order]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", show=False)]
    help_name = "Help"

    def __init__(self, sections: list[Section], focus_name: str, legend: bool = True, note: str = ""):
        super().__init__()
        self.sections, self.focus_name, self.legend, self.note = sections, focus_name, legend, note

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self.body(), id="help-text")

    def on_mount(self) -> None:
        box = self.query_one("#help")
        box.border_title = f"Keys · the keyboard is on: {self.focus_name}"
        box.border_subtitle = "Esc closes"
        box.focus()

    def body(self) -> Group:
        """The keys and the legend, as one renderable."""
        parts: list[RenderableType] = []
        if self.note:  # the monitor's own caveat (a read-only view), before the keys it is about
            parts += [Text(self.note, style="bold yellow"), Text("")]
        for title, entries in self.sections:
            table = Table.grid(padding=(0, 2))
            table.add_column(style="bold", min_width=8, no_wrap=True)
            table.add_column()
            for key, what in entries:
                table.add_row(Text(key), Text(what))  # Text: "[tool]" is not markup
            parts += [Text(title, style="bold underline"), table, Text("")]
        if self.legend:
            marks = Table.grid(padding=(0, 2))
            marks.add_column(style="bold", min_width=8)
            marks.add_column()
            for mark, meaning in MARK_LEGEND.items():
                marks.add_row(Text(mark), Text(meaning))
            parts += [Text("Transcript marks", style="bold underline"), marks, Text("")]
            roles = Table.grid(padding=(0, 2))
            roles.add_column(style="bold", min_width=8)
            roles.add_column()
            for split, role, meaning in SCORE_ROLES:
                roles.add_row(Text(" / ".join(role_mark(split, role, w) for w in reversed(ROLE_WIDTHS))), Text(meaning))
            parts += [Text("What a checkpoint's score is (narrowest / wider / widest; docs/numbers.md)",
                           style="bold underline"), roles, Text("")]
            states = Table.grid(padding=(0, 2))
            states.add_column(min_width=8)
            states.add_column()
            tones = {"running": "green", "PAUSED": "bold yellow", "FAILED": "bold red", "ended": "dim"}
            for label, meaning in STATE_LEGEND:
                states.add_row(Text(label, style=tones[label]), Text(meaning))
            states.add_row(Text("⚠ id", style="bold yellow"), Text("before a session id: it ran --unsealed, or some of its "
                                                                 "scores carry integrity flags (the detail screen says which)"))
            states.add_row(Text("0.99 val sealed"), Text("an official score on a sealed scored split (--scored-split sealed): "
                                                     "the agent never held its targets; never pooled with the paper's"))
            parts += [Text("Session states", style="bold underline"), states]
        return Group(*parts)


def help_for(screen: Screen, home: Path, read_only: bool) -> HelpScreen:
    """The help of ``screen``: its keys grouped, the focused pane's named, and on a read-only home
    a line saying so."""
    note = (f"A read-only view of {home}: this user cannot write it. The sessions stream as they run; "
            "pause, resume, abort, new session and export say why not instead of acting.") if read_only else ""
    return HelpScreen(key_sections(screen), pane_name(screen.focused), note=note)
