"""Session detail and side-by-side replay, on one budget-time axis with a cursor.

Detail: the checkpoint scores (dots) and best so far (step line), the GPU utilisation strip and
the transcript, aligned on budget time (active seconds: pauses excluded); left/right move the
cursor (shift: ten times further), and the transcript shows what happened up to it. Beside it,
the analytics: GPU busy vs idle and idle split by what the agent was doing, time to first
checkpoint, the best live val score at 25/50/75/100 % of the budget, scripts launched.

Replay: 2–4 sessions in columns on the same axis, one cursor moving them all.
Timelines are read in a worker (its own SQLite connection) and handed over by message.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Log, Static

from onegc_tui.app.host import host
from onegc_tui.app.layout import SteadyScreen
from onegc_tui.app.safe import markup_escape, plain
from onegc_tui.app.widgets.cutlog import CutLog
from onegc_tui.app.widgets.footer import KeyFooter
from onegc_tui.app.widgets.header import MonitorHeader
from onegc_tui.app.widgets.plot import GUTTER, Plot, Series
from onegc_tui.store import Store
from onegc_tui.views import monitor_data
from onegc_tui.views.anytime import FRACTIONS, scores_at
from onegc_tui.views.format import clock, fmt_score, short_task
from onegc_tui.views.gpu_activity import share_words
from onegc_tui.views.metric_range import UNBOUNDED, padded_range, task_bounds
from onegc_tui.views.plot import best_so_far, level_strip
from onegc_tui.views.sessions_view import (
    INTEGRITY_MARK,
    TRUNCATED_MARK,
    integrity_note,
    row_split_sealed,
    truncation_note,
)
from onegc_tui.views.task_facts import scored_split
from onegc_tui.views.text_table import figure_safe_cut
from onegc_tui.views.time_ledger import IDLE_PRIORITY, UNATTRIBUTED, ledger_line
from onegc_tui.views.timeline import Timeline, timeline_ledger
from onegc_tui.views.transcript_view import official_words
from runner.wire.score_terms import best_name, measure
from runner.wire.textsafe import safe_text

STEP = 0.01  # of the budget per left/right press
RELOAD_S = 5.0  # a live session's timeline is re-read this often while the cursor sits at its end
REPLAY_LINES = 200  # transcript lines per replay column
DETAIL_LINES = 2_000  # transcript lines up to the cursor in the detail view (SQLite has them all)
IDLE_LABELS = {"paused": "paused", "model_thinking": "model thinking", "tool_running": "tool running",
               "no_training_process": "no training process", UNATTRIBUTED: "other"}

CURSOR_BINDINGS: list[BindingType] = [
    Binding("left", "move(-1)", "◀ cursor"),
    Binding("right", "move(1)", "cursor ▶"),
    Binding("shift+left", "move(-10)", "◀◀", show=False),
    Binding("shift+right", "move(10)", "▶▶", show=False),
    Binding("home", "jump(0)", "Start", show=False),
    Binding("end", "jump(1)", "End", show=False),
    Binding("escape", "app.pop_screen", "Back"),
]


class CursorLog(CutLog, can_focus=False):
    """A transcript that never takes focus: left/right belong to the cursor, not to scrolling; a
    line wider than its column ends in ``…``."""


class TimelinesLoaded(Message):
    def __init__(self, timelines: list[Timeline]):
        super().__init__()
        self.timelines = timelines


def score_series(t: Timeline, until: float | None = None) -> list[Series]:
    scores = t.scores()
    return [Series(tuple(best_so_far(scores, t.direction, until if until is not None else t.end_s)), "green", "step"),
            Series(tuple(scores), "bold cyan", "dots")]  # dots last: each checkpoint stays visible


def gpu_line(t: Timeline, width: int, x_max: float, cursor: float | None) -> Text:
    """The GPU utilisation strip under a plot, with the cursor column marked."""
    pw = max(1, width - GUTTER)
    text = Text("GPU %".rjust(GUTTER - 1) + "┤", style="dim", no_wrap=True, overflow="crop")
    body = level_strip(list(t.gpu), pw, x_max) if t.gpu else "no GPU samples".ljust(pw)
    col = None if cursor is None else min(pw - 1, max(0, int(cursor / x_max * pw)))
    for i, ch in enumerate(body):
        text.append(ch, style="reverse yellow" if i == col else "magenta")
    return text


def at_cursor(t: Timeline, cursor: float) -> str:
    best = None
    for x, v in best_so_far(t.scores(), t.direction):
        if x <= cursor:
            best = v
    util = [u for x, u in t.gpu if x <= cursor]
    return (f"cursor {clock(cursor)} ({cursor / t.budget_s:.0%} of budget) · best live val {fmt_score(best)} · "
            f"GPU {'-' if not util else f'{util[-1]:.0f}%'}")


def figure_whole(text: str, width: int) -> str:
    """``text`` in ``width`` cells, cut before a figure rather than inside it ("best live val …",
    never "0.65…", which reads as another value)."""
    if len(text) <= width:
        return text
    return text[:figure_safe_cut(text, max(0, width - 1))].rstrip() + "…"


def analytics_text(t: Timeline) -> Text:
    row = {k: markup_escape(v) if isinstance(v, str) else v for k, v in t.row.items()}  # from sessions: no markup
    lines = [f"[b]{markup_escape(t.session_id)}[/b]", f"{short_task(t.row.get('task'))} · {row.get('agent')}"
             + (f" · {row.get('model')}" if row.get("model") else "") + f" · repeat {row.get('repeat') or 1}",
             f"state {row.get('state')}" + (f" · {row['end_reason'].replace('_', ' ')}" if row.get("end_reason") else ""),
             # the result with its role, split and measure, and the live val score that chose it (docs/numbers.md)
             markup_escape(official_words(t.row.get("score"), t.row.get("task"), t.row.get("best_checkpoint"),
                                          t.row.get("val")) if t.row.get("state") in ("ended", "failed")
                           else f"official {scored_split(t.row.get('task'))} {measure(t.metric)}: not yet (at the end)")
             + f" · {t.direction} is better"]
    if row_split_sealed(t.row):
        lines.append("scored split sealed: the agent never held its targets, and the harness answered its evaluate "
                     "(a contract of its own, never pooled with the paper's)")
    note = integrity_note(t.row)
    if note:
        lines.append(f"[b yellow]{INTEGRITY_MARK} {markup_escape(note)}[/b yellow] (the checkpoints pane lists the flags)")
    cut = truncation_note(t.row)
    if cut:
        lines.append(f"[yellow]{TRUNCATED_MARK} {markup_escape(cut)}[/yellow]")
    lines.append("")
    if t.curve is not None:
        live = t.row.get("state") not in ("ended", "failed")
        at = scores_at(t.curve, FRACTIONS, reached=t.end_s / t.budget_s if live else 1.0)
        lines.append(f"[b]{best_name(t.metric)} at budget[/b]  " + "  ".join(
            f"{f:.0%} {fmt_score(at[f]) if f in at else 'not yet'}" for f in FRACTIONS))
    lines.append(f"first checkpoint at {clock(t.first_checkpoint_s)} · {len(t.scores())} scored · "
                 f"scripts launched {t.row.get('scripts_launched') or 0}")
    ledger = timeline_ledger(t)
    if ledger is not None:
        lines.append("[b]time ledger[/b] " + escape(ledger_line(ledger)))
    if t.split is not None and t.split.total_s > 0:
        s = t.split
        lines += ["", f"[b]GPU time[/b] busy {clock(s.busy_s)} ({s.busy_fraction:.0%}) · idle {clock(s.idle_s)}"]
        for kind in (*IDLE_PRIORITY, UNATTRIBUTED):
            v = s.idle_by.get(kind, 0.0)
            if v > 0:
                lines.append(f"  idle while {IDLE_LABELS[kind]:<20} {clock(v):>8} ({v / s.idle_s:.0%})")
    elif t.split is not None:
        lines += ["", "[b]GPU time[/b] no GPU samples (no GPU, or none yet)"]
    if t.split is not None and t.split.total_s > 0:
        lines.append(escape(share_words(t.tensor_share)))  # GPM: what the GPU's tensor cores did
    return Text.from_markup("\n".join(lines))


class CursorScreen(SteadyScreen):
    """A screen with a budget-time cursor over one or more timelines."""

    BINDINGS: ClassVar[list[BindingType]] = CURSOR_BINDINGS

    def __init__(self, ids: list[str]):
        super().__init__()
        self.ids = ids
        self.timelines: list[Timeline] = []
        self.cursor = 0.0
        self.at_end = True

    @property
    def x_max(self) -> float:
        return max((t.budget_s for t in self.timelines), default=1.0)

    @property
    def end(self) -> float:
        return max((t.end_s for t in self.timelines), default=0.0)

    def on_mount(self) -> None:
        self.load()
        self.set_interval(RELOAD_S, self._maybe_reload)

    def _maybe_reload(self) -> None:
        if self.at_end and any(t.row.get("state") in ("running", "paused", "queued") for t in self.timelines):
            self.load()

    @work(thread=True, exit_on_error=False, exclusive=True)
    def load(self) -> None:
        store = Store.open(host(self).home)
        try:
            now = host(self).now()
            out = [t for sid in self.ids if (t := monitor_data.timeline(store, sid, self.analytics, now)) is not None]
        finally:
            store.close()
        self.post_message(TimelinesLoaded(out))

    analytics = True

    def on_timelines_loaded(self, msg: TimelinesLoaded) -> None:
        self.timelines = msg.timelines
        if self.at_end:
            self.cursor = self.end
        self.draw()

    def action_move(self, steps: int) -> None:
        if not self.timelines:
            return
        self.cursor = min(self.end, max(0.0, self.cursor + steps * STEP * self.x_max))
        self.at_end = self.cursor >= self.end
        self.move()

    def draw(self) -> None:
        """Draw the timelines and the cursor (each screen its own)."""
        raise NotImplementedError

    def move(self) -> None:
        """Move the cursor; by default, draw again."""
        self.draw()

    def action_jump(self, where: int) -> None:
        self.cursor = self.end if where else 0.0
        self.at_end = bool(where)
        self.move()


class DetailScreen(CursorScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("l", "raw_files", "Raw logs")]
    help_name = "Session detail"

    def __init__(self, sid: str):
        super().__init__([sid])

    def action_raw_files(self) -> None:
        """agent.stdout.jsonl, agent.stderr.log, runner.log and events.jsonl of this session."""
        from onegc_tui.app.screens.viewer import RawFileScreen

        store = host(self).store
        row = store.session(self.ids[0]) if store else None
        if row is None:
            self.notify(f"no session {self.ids[0]} in the store", severity="warning")
            return
        self.app.push_screen(RawFileScreen(Path(row["folder"])))

    def compose(self) -> ComposeResult:
        yield MonitorHeader(show_clock=host(self).show_clock)
        with Horizontal(id="detail-top"):
            with Vertical(id="detail-plots"):
                yield Static("Live val scores against budget time (dots: each checkpoint, line: best so far)",
                             classes="pane-title")
                yield Plot(id="detail-plot", empty="loading…")
                yield Static("", id="detail-gpu")
                yield Static("", id="detail-cursor")
            yield Static("loading…", id="analytics")
        yield Static("Transcript up to the cursor", classes="pane-title")
        yield CursorLog(id="detail-log", max_lines=DETAIL_LINES, auto_scroll=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"detail · {self.ids[0]}"
        super().on_mount()

    def draw(self) -> None:
        if not self.timelines:
            self.query_one("#analytics", Static).update(f"no session {self.ids[0]} in the store")
            return
        t = self.timelines[0]
        self.query_one("#detail-plot", Plot).show(score_series(t), t.budget_s, self.cursor,
                                                  bounds=task_bounds(t.row.get("task")))
        self.query_one("#analytics", Static).update(analytics_text(t))
        self.move()

    def move(self) -> None:
        if not self.timelines:
            return
        t = self.timelines[0]
        self.query_one("#detail-plot", Plot).move_cursor(self.cursor)
        width = self.query_one("#detail-plot", Plot).size.width or 80
        self.query_one("#detail-gpu", Static).update(gpu_line(t, width, t.budget_s, self.cursor))
        self.query_one("#detail-cursor", Static).update(figure_whole(at_cursor(t, self.cursor), width))
        log = self.query_one("#detail-log", Log)
        log.clear()
        log.write_lines([safe_text(line, one_line=True) for line in t.lines_until(self.cursor, DETAIL_LINES)]
                        or ["(nothing yet at this point)"])
        log.scroll_end(animate=False)

    def on_resize(self) -> None:
        self.move()


class ReplayColumn(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("", classes="pane-title replay-title")
        yield Plot(classes="replay-plot", empty="no scored checkpoint")
        yield Static("", classes="replay-gpu")
        yield Static("", classes="replay-cursor")
        yield CursorLog(classes="replay-log", max_lines=REPLAY_LINES, auto_scroll=True)


class ReplayScreen(CursorScreen):
    """2–4 sessions side by side, aligned by budget time; one cursor."""

    analytics = False

    def compose(self) -> ComposeResult:
        yield MonitorHeader(show_clock=host(self).show_clock)
        yield Static("Replay: sessions aligned by budget time · ←/→ move the cursor (shift: 10 %) · Home/End",
                     id="replay-summary")
        with Horizontal(id="replay"):
            for _ in self.ids:
                yield ReplayColumn()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"replay · {len(self.ids)} sessions"
        super().on_mount()

    def draw(self) -> None:
        y = [v for t in self.timelines for _, v in t.scores()]
        bounds = {task_bounds(t.row.get("task")) for t in self.timelines}  # one metric: keep to its range
        # one y scale: columns compare at a glance
        self.y_range = padded_range(y, bounds.pop() if len(bounds) == 1 else UNBOUNDED)
        for col, t in zip(self.query(ReplayColumn), self.timelines, strict=False):
            col.query_one(".replay-title", Static).update(plain(
                f"{t.session_id} · {short_task(t.row.get('task'))} · {t.row.get('agent')} · "
                f"official {scored_split(t.row.get('task'))} {fmt_score(t.row.get('score'))}"))
        self.move()

    def move(self) -> None:
        for col, t in zip(self.query(ReplayColumn), self.timelines, strict=False):
            plot = col.query_one(Plot)
            plot.show(score_series(t, min(self.cursor, t.end_s)), self.x_max, self.cursor, self.y_range)
            col.query_one(".replay-gpu", Static).update(gpu_line(t, plot.size.width or 40, self.x_max, self.cursor))
            col.query_one(".replay-cursor", Static).update(
                figure_whole(at_cursor(t, min(self.cursor, t.budget_s)), plot.size.width or 40))
            log = col.query_one(Log)
            log.clear()
            log.write_lines([safe_text(line, one_line=True) for line in t.lines_until(self.cursor, REPLAY_LINES)]
                            or ["(nothing yet)"])
            log.scroll_end(animate=False)

    def on_resize(self) -> None:
        if self.timelines:
            self.move()
