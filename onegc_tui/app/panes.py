"""The four panes of the selected session: transcript, budget, GPU and checkpoint scores."""

from __future__ import annotations

from collections import deque

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Log, Sparkline, Static

from onegc_tui.app.plot import Plot, Series
from onegc_tui.queries import pane_lines
from onegc_tui.store import Store
from onegc_tui.view import FILTERS, BudgetView, bar, best_so_far, clock, event_line, event_matches, fmt_score, search_words
from runner.events import Event
from tasks import UnknownTask, get_task

TRANSCRIPT_LINES = 2_000  # in the widget; the full transcript lives in SQLite
LOAD_LINES = 500  # read on selection: a screenful many times over, cheap enough to keep keys snappy
GPU_HISTORY = 120  # samples (seconds) in the sparkline
BUDGET_BAR_WIDTH = 28  # before the pane has a size; then as wide as the pane allows


class FollowLog(Log):
    """A Log that stops following new lines when the user scrolls up, and follows again at the end."""

    class FollowChanged(Message):
        def __init__(self, following: bool):
            super().__init__()
            self.following = following

    def _set_follow(self, on: bool) -> None:
        if self.auto_scroll != on:
            self.auto_scroll = on
            self.post_message(self.FollowChanged(on))

    def on_mouse_scroll_up(self) -> None:
        self._set_follow(False)

    def action_scroll_up(self) -> None:
        self._set_follow(False)
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._set_follow(False)
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._set_follow(False)
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        super().action_scroll_end()
        self._set_follow(True)

    def follow(self) -> None:
        self._set_follow(True)
        self.scroll_end(animate=False)


class TranscriptPane(Vertical):
    """The selected session's transcript: a filter (all, text, tool calls, errors), full-text search, follow."""

    def compose(self) -> ComposeResult:
        yield Static("Transcript", classes="pane-title", id="transcript-title")
        yield Input(placeholder="search the transcript: words, Enter; Esc clears", id="search")
        yield FollowLog(max_lines=TRANSCRIPT_LINES, id="transcript-log", auto_scroll=True)

    def on_mount(self) -> None:
        self.mode = "all"
        self.query_text = ""
        self.words: tuple[str, ...] = ()
        self.sid: str | None = None
        self.query_one(Log).can_focus = True
        self.query_one("#search", Input).display = False
        self._title()

    def _title(self) -> None:
        log = self.query_one(Log)
        parts = [f"Transcript · {self.mode}"]
        if self.words:
            parts.append(f"“{self.query_text}”")
        parts.append("following" if log.auto_scroll else "scrolled back: f follows")
        self.query_one("#transcript-title", Static).update(" · ".join(parts))

    def load(self, sid: str, store: Store) -> None:
        self.show(sid, self.fetch(store, sid, self.mode, self.query_text))

    @staticmethod
    def fetch(store: Store, sid: str, mode: str, query_text: str) -> tuple[list[str], list[str]]:
        """The pane's lines and corrupt-line notes (SQLite only: safe on a worker thread)."""
        lines = pane_lines(store, sid, mode, query_text, LOAD_LINES)
        errors = [] if mode not in ("all", "errors") or search_words(query_text) else [
            f"⚠ {e['path']}:{e['line_no']}: corrupt event line skipped ({e['error']})" for e in store.ingest_errors(sid)]
        return lines, errors

    def show(self, sid: str, fetched: tuple[list[str], list[str]]) -> None:
        self.sid = sid
        lines, errors = fetched
        log = self.query_one(Log)
        log.clear()
        empty = "(no transcript yet)" if self.mode == "all" and not self.words else "(nothing matches the filter)"
        log.write_lines(errors + lines if lines or errors else [empty])
        log.follow()
        self._title()

    def add_events(self, events: list[Event]) -> None:
        lines = [line for e in events if event_matches(e, self.mode, self.words) and (line := event_line(e))]
        if lines:
            log = self.query_one(Log)
            log.write_lines(lines)
            log.refresh()  # Textual 8.2.8: a full Log(max_lines) stops repainting without this

    def cycle_filter(self, store: Store) -> None:
        self.mode = FILTERS[(FILTERS.index(self.mode) + 1) % len(FILTERS)]
        if self.sid:
            self.load(self.sid, store)

    def open_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    def set_search(self, text: str, store: Store) -> None:
        self.query_text = text.strip()
        self.words = search_words(self.query_text)
        box = self.query_one("#search", Input)
        if not self.words:
            box.value = ""
            box.display = False
        if self.sid:
            self.load(self.sid, store)

    def follow(self) -> None:
        self.query_one(FollowLog).follow()

    def on_follow_log_follow_changed(self, _: FollowLog.FollowChanged) -> None:
        self._title()


class BudgetPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("Budget", classes="pane-title")
        yield Static("--:--", id="countdown")
        yield Static("", id="budget-bar")
        yield Static("", id="budget-detail")

    def on_mount(self) -> None:
        self.view = BudgetView()

    def load(self, row: dict) -> None:
        self.view = BudgetView()
        self.view.update_from_row(row)
        self.row = row
        self._draw()

    def update_row(self, row: dict) -> None:
        self.row = row
        if row.get("state") in ("ended", "failed") and self.view.state not in ("ended", "failed"):
            self.view.update_from_row(row)
            self._draw()

    def apply(self, events: list[Event]) -> None:
        for e in events:
            self.view.apply(e)
        self._draw()

    def tick(self) -> None:
        if hasattr(self, "row"):
            self._draw()

    def _set(self, selector: str, text: str, layout: bool = True) -> None:
        """Update a Static only when its text changes (each update costs a repaint, or a relayout)."""
        shown = getattr(self, "_shown", None)
        if shown is None:
            shown = self._shown = {}
        if shown.get(selector) != text:
            shown[selector] = text
            self.query_one(selector, Static).update(text, layout=layout)

    def _draw(self) -> None:
        v = self.view
        left = v.remaining_now()
        state = v.state
        if state in ("ended", "failed") and v.budget_s:
            text = f"{state.upper()} · used {clock(v.budget_s - (left or 0))} of {clock(v.budget_s)}"
        else:
            label = {"paused": "  PAUSED", "queued": "  QUEUED"}.get(state, "")
            text = f"{clock(left)} left{label}"
        self._set("#countdown", text, layout=False)  # fixed size (app.tcss): no relayout every second
        left_fraction = v.fraction_left()
        width = self.query_one("#budget-bar").size.width - 5  # room for " 100%"; redrawn each second
        self._set("#budget-bar", f"{bar(left_fraction, width if width >= 4 else BUDGET_BAR_WIDTH)} "
                                 f"{left_fraction:4.0%}", layout=False)
        row = getattr(self, "row", {}) or {}
        detail = f"budget {clock(v.budget_s)}"
        if row.get("end_reason"):
            detail += f" · {row['end_reason'].replace('_', ' ')}: {row.get('end_detail') or ''}"
        self._set("#budget-detail", detail)
        self.set_class(state == "paused", "-paused")
        self.set_class(state == "failed", "-failed")
        self.set_class(state == "ended", "-ended")


class GpuPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("GPU", classes="pane-title")
        yield Sparkline([], id="gpu-spark", summary_function=max)
        yield Static("waiting for samples…", id="gpu-figures")

    def on_mount(self) -> None:
        self.history: deque[float] = deque(maxlen=GPU_HISTORY)
        self.no_gpu: str | None = None

    def load(self, sid: str, store: Store) -> None:
        self.show(self.fetch(store, sid))

    @staticmethod
    def fetch(store: Store, sid: str) -> tuple[list[float], str | None, dict | None]:
        samples = store.gpu_samples(sid, GPU_HISTORY)
        no_gpu = None
        for w in store.events_of(sid, ["warning"]):
            if w.get("code") == "no_gpu":
                no_gpu = w.get("message")
        return [r["util_pct"] for r in samples], no_gpu, (samples[-1] if samples else None)

    def show(self, fetched: tuple[list[float], str | None, dict | None]) -> None:
        utils, self.no_gpu, last = fetched
        self.history = deque(utils, maxlen=GPU_HISTORY)
        self._pending = None
        self._draw(last)

    def apply(self, events: list[Event]) -> None:
        """Take new samples; they are drawn at the next :meth:`tick` (samples come at 1 Hz)."""
        for e in events:
            if e.type == "gpu":
                self.history.append(e.util_pct)
                self._pending = {"util_pct": e.util_pct, "mem_used_mb": e.mem_used_mb,
                                 "mem_total_mb": e.mem_total_mb, "power_w": e.power_w, "temp_c": e.temp_c}
            elif e.type == "warning" and e.code == "no_gpu":
                self.no_gpu = e.message
                self._pending = self._pending or {}

    _pending: dict | None = None

    def tick(self) -> None:
        if self._pending is not None:
            last, self._pending = self._pending, None
            self._draw(last or None)

    def _draw(self, last: dict | None) -> None:
        spark = self.query_one(Sparkline)
        spark.data = list(self.history) or [0.0]
        figures = self.query_one("#gpu-figures", Static)
        if self.no_gpu and not self.history:
            figures.update(f"no GPU: {self.no_gpu}")
            self.set_class(True, "-nogpu")
            return
        self.set_class(False, "-nogpu")
        if last:
            mem = f"{last['mem_used_mb'] / 1024:.1f}/{last['mem_total_mb'] / 1024:.0f} GiB"
            extra = f" · {last['power_w']:.0f} W" if last.get("power_w") else ""
            extra += f" · {last['temp_c']:.0f}°C" if last.get("temp_c") else ""
            busy = sum(1 for u in self.history if u > 10) / max(1, len(self.history))
            figures.update(f"util {last['util_pct']:.0f}% {bar(last['util_pct'] / 100)} · mem {mem}{extra}\n"
                           f"busy {busy:.0%} of the last {len(self.history)} s", layout=False)


class CheckpointsPane(Vertical):
    COLUMNS = [("name", "Checkpoint", 22), ("at", "At", 5), ("score", "Score", 7), ("note", "", 30)]

    def compose(self) -> ComposeResult:
        yield Static("Checkpoint scores", classes="pane-title", id="ckpt-title")
        yield DataTable(id="ckpt-table", cursor_type="row")
        yield Plot(id="score-plot")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in self.COLUMNS:
            table.add_column(label, key=key, width=width)
        self.higher = True
        self.values: dict[str, float] = {}
        self.at: dict[str, float] = {}
        self.best: str | None = None
        self.budget_s = 1.0

    def load(self, sid: str, row: dict, store: Store) -> None:
        self.show(row, self.fetch(store, sid))

    @staticmethod
    def fetch(store: Store, sid: str) -> list[dict]:
        return store.checkpoints(sid)

    def show(self, row: dict, checkpoints: list[dict]) -> None:
        table = self.query_one(DataTable)
        table.clear()  # a different session: the cursor has nothing to keep
        self.values, self.at, self.best = {}, {}, None
        self.budget_s = row.get("budget_s") or 1.0
        try:
            spec = get_task(row.get("task") or "")
            self.higher = spec.higher_is_better
            metric = spec.metric_label
        except UnknownTask:
            self.higher, metric = True, "score"
        self.query_one("#ckpt-title", Static).update(f"Checkpoint scores · {metric} {'↑' if self.higher else '↓'}")
        for r in checkpoints:
            self._put(r["name"], bool(r["official"]), r["budget_elapsed_s"], r["value"], r["error"], r["self_reported"])
        self._mark_best()

    def apply(self, events: list[Event]) -> None:
        changed = False
        for e in events:
            if e.type == "checkpoint_found":
                self._put(e.name, False, e.budget_elapsed_s, None, None, e.self_reported)
                changed = True
            elif e.type == "checkpoint_scored":
                self._put(e.name, e.official, e.budget_elapsed_s, e.value, e.error, None)
                changed = True
        if changed:
            self._mark_best()

    def _put(self, name: str, official: bool, at: float | None, value: float | None, error: str | None,
             reported: float | None) -> None:
        table = self.query_one(DataTable)
        key = f"{name}#official" if official else name
        label = f"{name} (official)" if official else name
        if error:
            note = f"✖ {error}"
        elif value is None:
            note = "scoring…" + (f" (self-reported {reported:.4f})" if reported is not None else "")
        else:
            note = ""
        cells = {"name": label, "at": clock(at), "score": fmt_score(value), "note": note}
        if key in table.rows:
            old = table.get_row(key)
            for (col, _, _), before in zip(self.COLUMNS, old):
                if col == "note" and value is None and not error and before:
                    continue  # keep what we knew (e.g. the error) until a score arrives
                if cells[col] != before:
                    table.update_cell(key, col, cells[col])
        else:
            table.add_row(*(cells[c] for c, _, _ in self.COLUMNS), key=key)
        if value is not None:
            self.values[key] = value
            self.at[key] = at or 0.0

    def _plot(self) -> None:
        live = [(self.at[k], v) for k, v in self.values.items() if not k.endswith("#official")]
        best = best_so_far(live, self.higher)
        self.query_one(Plot).show([Series(tuple(best), "green", "step"), Series(tuple(live), "bold cyan", "dots")],
                                  self.budget_s)

    def _mark_best(self) -> None:
        self._plot()
        if not self.values:
            return
        pick = max if self.higher else min
        official = {k: v for k, v in self.values.items() if k.endswith("#official")}
        pool = official or self.values  # once re-evaluated, the official figure is the one that counts
        best = pick(pool, key=pool.__getitem__)
        table = self.query_one(DataTable)
        if self.best and self.best != best and self.best in table.rows:
            table.update_cell(self.best, "note", "")
        if best in table.rows:
            table.update_cell(best, "note", "★ best")
        self.best = best
