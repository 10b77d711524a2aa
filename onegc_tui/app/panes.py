"""The four panes of the selected session: transcript, budget, GPU and checkpoint scores."""

from __future__ import annotations

import time
from collections import deque

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Log, ProgressBar, Sparkline, Static

from onegc_tui.store import Store
from onegc_tui.view import PANE_EVENT_TYPES, BudgetView, bar, clock, event_line, fmt_score
from runner.events import Event
from tasks import UnknownTask, get_task

TRANSCRIPT_LINES = 2_000  # in the widget; the full transcript lives in SQLite
GPU_HISTORY = 120  # samples (seconds) in the sparkline


class TranscriptPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("Transcript", classes="pane-title")
        yield Log(max_lines=TRANSCRIPT_LINES, id="transcript-log", auto_scroll=True)

    def load(self, sid: str, store: Store) -> None:
        log = self.query_one(Log)
        log.clear()
        lines = [line for e in store.recent_events(sid, PANE_EVENT_TYPES, TRANSCRIPT_LINES) if (line := event_line(e))]
        errors = [f"⚠ {e['path']}:{e['line_no']}: corrupt event line skipped ({e['error']})" for e in store.ingest_errors(sid)]
        log.write_lines(errors + lines if lines or errors else ["(no transcript yet)"])
        log.auto_scroll = True
        log.scroll_end(animate=False)

    def add_events(self, events: list[Event]) -> None:
        lines = [line for e in events if (line := event_line(e))]
        if lines:
            log = self.query_one(Log)
            log.write_lines(lines)
            log.refresh()  # Textual 8.2.8: a full Log(max_lines) stops repainting without this

    def follow(self) -> None:
        log = self.query_one(Log)
        log.auto_scroll = True
        log.scroll_end(animate=False)

    def on_mount(self) -> None:
        log = self.query_one(Log)
        log.can_focus = True

    def on_mouse_scroll_up(self) -> None:  # scrolling up stops following; 'f' resumes
        self.query_one(Log).auto_scroll = False


class BudgetPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("Budget", classes="pane-title")
        yield Static("--:--", id="countdown")
        yield ProgressBar(total=1.0, show_eta=False, show_percentage=True, id="budget-bar")
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

    def _draw(self) -> None:
        v = self.view
        left = v.remaining_now()
        state = v.state
        if state in ("ended", "failed") and v.budget_s:
            text = f"{state.upper()} · used {clock(v.budget_s - (left or 0))} of {clock(v.budget_s)}"
        else:
            label = {"paused": "  PAUSED", "queued": "  QUEUED"}.get(state, "")
            text = f"{clock(left)} left{label}"
        self.query_one("#countdown", Static).update(text)
        self.query_one(ProgressBar).update(total=1.0, progress=v.fraction_left())
        row = getattr(self, "row", {}) or {}
        detail = f"budget {clock(v.budget_s)}"
        if row.get("end_reason"):
            detail += f" · {row['end_reason'].replace('_', ' ')}: {row.get('end_detail') or ''}"
        self.query_one("#budget-detail", Static).update(detail)
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
        self.history = deque((r["util_pct"] for r in store.gpu_samples(sid, GPU_HISTORY)), maxlen=GPU_HISTORY)
        self.no_gpu = None
        for w in store.events_of(sid, ["warning"]):
            if w.get("code") == "no_gpu":
                self.no_gpu = w.get("message")
        last = store.gpu_samples(sid, 1)
        self._draw(last[-1] if last else None)

    def apply(self, events: list[Event]) -> None:
        last = None
        for e in events:
            if e.type == "gpu":
                self.history.append(e.util_pct)
                last = {"util_pct": e.util_pct, "mem_used_mb": e.mem_used_mb, "mem_total_mb": e.mem_total_mb,
                        "power_w": e.power_w, "temp_c": e.temp_c}
            elif e.type == "warning" and e.code == "no_gpu":
                self.no_gpu = e.message
        if last or any(e.type == "warning" for e in events):
            self._draw(last)

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
                           f"busy {busy:.0%} of the last {len(self.history)} s")


class CheckpointsPane(Vertical):
    COLUMNS = [("name", "Checkpoint", 22), ("at", "At", 5), ("score", "Score", 7), ("note", "", 30)]

    def compose(self) -> ComposeResult:
        yield Static("Checkpoint scores", classes="pane-title", id="ckpt-title")
        yield DataTable(id="ckpt-table", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in self.COLUMNS:
            table.add_column(label, key=key, width=width)
        self.higher = True
        self.values: dict[str, float] = {}
        self.best: str | None = None

    def load(self, sid: str, row: dict, store: Store) -> None:
        table = self.query_one(DataTable)
        table.clear()  # a different session: the cursor has nothing to keep
        self.values, self.best = {}, None
        try:
            spec = get_task(row.get("task") or "")
            self.higher = spec.higher_is_better
            metric = spec.metric_label
        except UnknownTask:
            self.higher, metric = True, "score"
        self.query_one("#ckpt-title", Static).update(f"Checkpoint scores · {metric} {'↑' if self.higher else '↓'}")
        for r in store.checkpoints(sid):
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

    def _mark_best(self) -> None:
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
