"""Three panes of the selected session: budget, GPU and checkpoint scores (the transcript: ``transcript.py``)."""

from __future__ import annotations

from collections import deque
from typing import cast

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from onegc_tui.app.host import host
from onegc_tui.app.layout import GrowsInPlace
from onegc_tui.app.safe import content_escape, plain
from onegc_tui.app.widgets.plot import Plot, Series
from onegc_tui.app.widgets.spark import EIGHTHS, UtilSpark, bar_heights
from onegc_tui.store import Store
from onegc_tui.views.checkpoint_names import fit_checkpoint_label
from onegc_tui.views.countdown import Countdown
from onegc_tui.views.format import arrow, bar, clock, fmt_score, verdicts_note
from onegc_tui.views.metric_range import UNBOUNDED, Bounds, task_bounds
from onegc_tui.views.plot import best_so_far
from runner.wire.defaults import NO_GPM
from runner.wire.events import Event
from runner.wire.score_terms import ROLE_WIDTHS, Role, measure, role_legend, role_mark
from runner.wire.verdicts import Verdict, read_json
from runner.wire.verdicts import read as read_verdicts
from tasks import Direction, UnknownTask, best_of, direction_of, get_task

GPU_HISTORY = 120  # samples (seconds) in the utilisation bars
BUDGET_BAR_WIDTH = 28  # before the pane has a size; then as wide as the pane allows
BUDGET_EVENTS = frozenset({"session_started", "heartbeat", "budget", "session_ended"})  # the events that move the countdown


def budget_bar_text(view: Countdown, now: float, width: int) -> str:
    """The budget bar: the share left while a session runs, the share used once it has ended
    (an ended session has nothing left: what matters is how much of the budget it took)."""
    ended = view.state in ("ended", "failed")
    left = view.fraction_left(now)
    fraction, label = (1.0 - left, "used") if ended else (left, "left")
    room = width - 10  # " 100% left"; redrawn each second
    return f"{bar(fraction, room if room >= 4 else BUDGET_BAR_WIDTH)} {fraction:4.0%} {label}"


class CheckpointTable(GrowsInPlace, DataTable):
    """The selected session's checkpoints: refilled on each selection without a relayout."""


class BudgetPane(Vertical):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # set here, not on mount: the dashboard may load the focused session's row before this pane
        # is mounted, and a mount that reset the view would lose it
        self.view = Countdown()
        self.row: dict = {}

    def compose(self) -> ComposeResult:
        yield Static("Budget", classes="pane-title")
        yield Static("--:--", id="countdown")
        yield Static("", id="budget-bar")
        yield Static("", id="budget-detail")

    def load(self, row: dict) -> None:
        self.view = Countdown.of_row(row)
        self.row = row
        self._draw()

    def update_row(self, row: dict) -> None:
        """The store's newer row: an end, or a start the pane's events did not bring (a row loaded
        while still queued, its session_started ingested before the pane followed it)."""
        self.row = row
        state = row.get("state")
        ended = state in ("ended", "failed") and self.view.state not in ("ended", "failed")
        started = self.view.state == "queued" and state not in (None, "queued")
        if ended or started:
            self.view.update_from_row(row)
            self._draw()

    def apply(self, events: list[Event]) -> None:
        """A change of state (started, paused, resumed, ended) is drawn now; a heartbeat only
        corrects the countdown, which the next tick draws (each redraw between ticks costs the
        idle monitor a frame of its own: a heartbeat every 5 s, a GPU sample every second)."""
        changed = False
        for e in events:
            if e.type in BUDGET_EVENTS:
                self.view.see(e)
                changed = changed or e.type != "heartbeat"
        if changed:
            self._draw()

    def tick(self) -> None:
        if hasattr(self, "row") and self.query("#budget-bar"):  # not while the app takes its widgets down
            self._draw()

    def on_resize(self) -> None:
        """The bar is as wide as the pane: drawn before the first layout (or before the terminal was
        resized), it had the old width until the next tick, and its percentage was cut off."""
        self.tick()

    def _set(self, selector: str, text: str, layout: bool = True) -> None:
        """Update a Static only when its text changes (each update costs a repaint), and relayout
        the screen only when it takes another number of lines: a relayout redraws every widget
        (on a key press that moves the selection, it was half of the drawing thread's time)."""
        shown: dict[str, str] | None = getattr(self, "_shown", None)
        if shown is None:
            shown = {}
            self._shown = shown
        old = shown.get(selector)
        if old != text:
            shown[selector] = text
            static = self.query_one(selector, Static)
            if layout and old is not None and (width := static.content_region.width) > 0:
                console = self.app.console
                layout = len(Text(old).wrap(console, width)) != len(Text(text).wrap(console, width))
            static.update(text, layout=layout)

    def _draw(self) -> None:
        v = self.view
        now = host(self).now()  # the app's clock: frozen in tests and snapshots
        left = v.remaining_now(now)
        state = v.state
        if state in ("ended", "failed") and v.budget_s:
            text = f"{state.upper()} · used {clock(v.budget_s - (left or 0))} of {clock(v.budget_s)}"
        else:
            label = {"paused": "  PAUSED", "queued": "  QUEUED"}.get(state, "")
            text = f"{clock(left)} left{label}"
        self._set("#countdown", text, layout=False)  # fixed size (app.tcss): no relayout every second
        self._set("#budget-bar", budget_bar_text(v, now, self.query_one("#budget-bar").size.width), layout=False)
        row = getattr(self, "row", {}) or {}
        detail = f"budget {clock(v.budget_s)}"
        if row.get("end_reason"):
            detail += f" · {row['end_reason'].replace('_', ' ')}: {content_escape(row.get('end_detail') or '')}"
        self._set("#budget-detail", detail)
        self.set_class(state == "paused", "-paused")
        self.set_class(state == "failed", "-failed")
        self.set_class(state == "ended", "-ended")


def no_gpu_text(message: str) -> str:
    """The runner's no-GPU warning, said once: "no GPU visible: NVML unavailable" stays as it is,
    a bare reason gets the prefix ("no GPU: driver not loaded")."""
    return message if message.lower().startswith("no gpu") else f"no GPU: {message}"


GPM_ROWS = (("sm_pct", "SM"), ("tensor_pct", "tensor"), ("dram_pct", "DRAM"))  # store column, label
GPM_EVENT = {"sm_pct": "sm_active_pct", "tensor_pct": "tensor_active_pct", "dram_pct": "dram_bw_pct"}


def gpm_text(history: dict[str, deque[float]], width: int) -> Text:
    """GPM's three one-line sparklines (0–100 %, the newest at the right, as the utilisation bars),
    each with its label and its latest figure: what the SMs, the tensor cores and the DRAM did."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    label_w = max(len(label) for _, label in GPM_ROWS) + 1
    bars_w = max(1, width - label_w - 5)  # " 100%"
    for i, (key, label) in enumerate(GPM_ROWS):
        values = list(history[key])
        bars = "".join(EIGHTHS[min(8, h)] for h in bar_heights(values, bars_w, 1))
        out.append(("\n" if i else "") + label.ljust(label_w), style="bold")
        out.append(bars, style="magenta")
        out.append(f" {values[-1]:3.0f}%" if values else "    -")
    return out


class GpuPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("GPU", classes="pane-title")
        yield UtilSpark(id="gpu-spark")
        yield Static("", id="gpm")  # GPM's sparklines, or one line saying the GPU has none
        yield Static("waiting for samples…", id="gpu-figures")

    def on_mount(self) -> None:
        self.history: deque[float] = deque(maxlen=GPU_HISTORY)
        self.gpm: dict[str, deque[float]] = {key: deque(maxlen=GPU_HISTORY) for key, _ in GPM_ROWS}
        self.no_gpu: str | None = None
        self.no_gpm: str | None = None

    @staticmethod
    def fetch(store: Store, sid: str) -> tuple[list[float], str | None, dict | None, dict[str, list[float]], str | None]:
        samples = store.gpu_samples(sid, GPU_HISTORY)
        no_gpu = no_gpm = None
        for w in store.events_of(sid, ["warning"]):
            if w.get("code") == "no_gpu":
                no_gpu = w.get("message")
            elif w.get("code") == NO_GPM:
                no_gpm = w.get("message")
        gpm = {key: [r[key] for r in samples if r.get(key) is not None] for key, _ in GPM_ROWS}
        return [r["util_pct"] for r in samples], no_gpu, (samples[-1] if samples else None), gpm, no_gpm

    def show(self, fetched: tuple[list[float], str | None, dict | None, dict[str, list[float]], str | None]) -> None:
        utils, self.no_gpu, last, gpm, self.no_gpm = fetched
        self.history = deque(utils, maxlen=GPU_HISTORY)
        self.gpm = {key: deque(gpm.get(key, ()), maxlen=GPU_HISTORY) for key, _ in GPM_ROWS}
        self._pending = None
        self._draw(last)

    def apply(self, events: list[Event]) -> None:
        """Take new samples; they are drawn at the next :meth:`tick` (samples come at 1 Hz)."""
        for e in events:
            if e.type == "gpu":
                self.history.append(e.util_pct)
                for key, field in GPM_EVENT.items():
                    if (value := getattr(e, field)) is not None:
                        self.gpm[key].append(value)
                self._pending = {"util_pct": e.util_pct, "mem_used_mb": e.mem_used_mb,
                                 "mem_total_mb": e.mem_total_mb, "power_w": e.power_w, "temp_c": e.temp_c}
            elif e.type == "warning" and e.code == "no_gpu":
                self.no_gpu = e.message
                self._pending = self._pending or {}
            elif e.type == "warning" and e.code == NO_GPM:
                self.no_gpm = e.message
                self._pending = self._pending or {}

    _pending: dict | None = None

    def tick(self) -> None:
        if self._pending is not None:
            last, self._pending = self._pending, None
            self._draw(last or None)

    def _draw(self, last: dict | None) -> None:
        self.query_one(UtilSpark).show(self.history)
        figures = self.query_one("#gpu-figures", Static)
        gpm = self.query_one("#gpm", Static)
        self.set_class(not self.history, "-nosamples")  # (app.tcss: no GPM line before the first sample)
        if self.no_gpu and not self.history:
            figures.update(no_gpu_text(self.no_gpu))
            self.set_class(True, "-nogpu")
            return
        self.set_class(False, "-nogpu")
        if any(self.gpm.values()):
            gpm.update(gpm_text(self.gpm, gpm.size.width or GPU_LINE_W))
        elif self.history:  # where GPM is missing, one line says so, and nothing else changes
            gpm.update(plain(no_gpm_text(self.no_gpm), overflow="ellipsis", no_wrap=True, end=""))
        if last:
            figures.update("\n".join(gpu_lines(last, list(self.history))), layout=False)
        title = f"GPU · bars 0–100 % util, last {len(self.history)} s" if self.history else "GPU"
        if title != getattr(self, "_title", None):  # the bars' scale and time span (one line: no relayout)
            self._title = title
            self.query_one(".pane-title", Static).update(title, layout=False)


def no_gpm_text(message: str | None) -> str:
    """The one line of a GPU pane without GPM: the runner's reason, or an older record's silence."""
    return message or "no GPM figures in this record (SM and tensor activity: Hopper GPUs and later)"


GPU_LINE_W = 26  # the GPU pane's figure lines fit a 30-column pane (its border and padding): none is cut


def gpu_lines(last: dict, history: list[float]) -> list[str]:
    """The GPU pane's three figure lines, each at most :data:`GPU_LINE_W` characters: utilisation
    with power and temperature, memory, and the share of the shown span the GPU was busy."""
    util = f"util {last['util_pct']:.0f}%"
    util += f" · {last['power_w']:.0f} W" if last.get("power_w") else ""
    util += f" · {last['temp_c']:.0f}°C" if last.get("temp_c") else ""
    mem = f"mem {last['mem_used_mb'] / 1024:.1f}/{last['mem_total_mb'] / 1024:.0f} GiB"
    busy = sum(1 for u in history if u > 10) / max(1, len(history))
    return [util, mem, f"busy {busy:.0%} of last {len(history)} s"]


def cut(text: str) -> Text:
    """A table cell that ends in ``…`` when its column is too narrow for it."""
    return plain(text, overflow="ellipsis", no_wrap=True, end="")  # a checkpoint's name or error: the agent's


class CheckpointsPane(Vertical):
    help_name = "Checkpoint scores"
    # name, score, its role and split, when it appeared, and a note (an error, "scoring…", "★ best");
    # in a narrow pane the role and split shorten to marks ("v", "t★", "(t)": runner/wire/score_terms.py)
    # and the time goes, so that every score keeps what it is (docs/numbers.md) beside its name
    LABELS = {"name": "Checkpoint", "score": "Score", "at": "At", "note": ""}
    ROLE_LABELS = {ROLE_WIDTHS[0]: "Role, split", ROLE_WIDTHS[1]: "On", ROLE_WIDTHS[2]: "v/t"}
    SCORE_W, AT_W = 6, 5
    NAME_MIN, NAME_MAX, NOTE_MIN = 8, 24, 8
    NAME_KEEP = 14  # "run_1…poch10-1": cut in the middle, a checkpoint keeps its run and its epoch
    NOTE_SHORT = 2  # "★…": the mark at least (the row's detail has the rest)

    def compose(self) -> ComposeResult:
        yield Static("Checkpoint scores", classes="pane-title", id="ckpt-title")
        yield CheckpointTable(id="ckpt-table", cursor_type="row")
        yield Plot(id="score-plot")

    def on_mount(self) -> None:
        self.direction: Direction = "higher"
        self.scored_split = "val"  # the split the session's task scores officially (set by show)
        self.metric = "score"
        self.official: str | None = None  # the session's official checkpoint, once it has ended
        self.values: dict[str, float] = {}
        self.at: dict[str, float] = {}
        self.best: str | None = None
        self.budget_s = 1.0
        self.bounds: Bounds = UNBOUNDED
        self.cells: dict[str, dict[str, str]] = {}  # row key -> the text of each cell (the role: "split role")
        self.widths: dict[str, int] = {}  # the columns shown, in order, and their widths
        self._fit(self.size.width or 40)

    def on_resize(self) -> None:
        self._fit(self.size.width)

    @classmethod
    def fit(cls, width: int) -> dict[str, int]:
        """The columns a pane ``width`` cells wide shows, and their widths: the name (its run and
        epoch), the score and its role and split always; then, while the note keeps
        :data:`NOTE_MIN`, the role in words of six, the time, the role in whole words, a longer name."""
        room = width - 4  # border and scrollbar
        role, with_at = ROLE_WIDTHS[-1], False
        used = cls.NAME_KEEP + cls.SCORE_W + role + 2 * 4  # one blank each side of every column, the note's too
        for step, cost in (("role", ROLE_WIDTHS[1] - ROLE_WIDTHS[2]), ("at", cls.AT_W + 2),
                           ("role", ROLE_WIDTHS[0] - ROLE_WIDTHS[1])):
            if room - used - cost < cls.NOTE_MIN:
                break
            used += cost
            if step == "at":
                with_at = True
            else:
                role = next(w for w in reversed(ROLE_WIDTHS) if w > role)
        note = room - used
        name = cls.NAME_KEEP
        if note < cls.NOTE_SHORT:  # a very narrow pane: the name gives way, down to NAME_MIN
            name = max(cls.NAME_MIN, name - (cls.NOTE_SHORT - note))
            note = max(1, room - used + cls.NAME_KEEP - name)
        elif note > cls.NOTE_MIN:
            grow = min(cls.NAME_MAX - name, note - cls.NOTE_MIN)
            name, note = name + grow, note - grow
        return {"name": name, "score": cls.SCORE_W, "role": role, **({"at": cls.AT_W} if with_at else {}), "note": note}

    def _fit(self, width: int) -> None:
        widths = self.fit(width)
        if widths == self.widths:
            return
        self.widths = widths
        table = self.query_one(DataTable)
        table.clear(columns=True)
        for key, w in widths.items():
            label = self.ROLE_LABELS[w] if key == "role" else self.LABELS[key]
            table.add_column(cut(label), key=key, width=w)
        for key, cells in self.cells.items():
            table.add_row(*(self._cell(c, cells[c]) for c in widths), key=key)
        self._title()

    def _title(self) -> None:
        """The pane's title: the measure, its direction, and what the role marks at this width mean."""
        role_w = self.widths.get("role", ROLE_WIDTHS[0])
        legend = role_legend(self.scored_split, role_w)
        what = f"{measure(self.metric)} {arrow(self.direction)}"
        # narrow: the measure and the marks' legend (a bare split, cut off first, is live)
        title = f"Checkpoint scores · {what} · {legend}" if role_w > ROLE_WIDTHS[-1] else f"{what} · {legend}"
        if title != getattr(self, "_shown_title", None):  # one line (.pane-title): no relayout of the screen
            self._shown_title = title
            self.query_one("#ckpt-title", Static).update(title, layout=False)

    def _cell(self, col: str, text: str) -> Text:
        """A cell as drawn: the name cut in the middle (its distinguishing tail stays), the role and
        split in the words or marks of the column's width, the rest end-first."""
        if col == "name":
            return cut(fit_checkpoint_label(text, self.widths[col]))
        if col == "role":
            split, _, role = text.partition(" ")
            return cut(role_mark(split, cast(Role, role), self.widths[col]))
        if col == "note" and len(text) > self.widths[col] <= self.NOTE_SHORT + 1:
            return cut(text.split(" ", 1)[0])  # its mark alone ("★", "✖"), not "★ …"
        return cut(text)

    def _role(self, key: str) -> str:
        """A row's split and role: live val, or a re-evaluation on the scored split, official once
        the session's end names it, unofficial otherwise (docs/numbers.md)."""
        if not key.endswith("#official"):
            return "val live"
        name = key.removesuffix("#official")
        return f"{self.scored_split} {'official' if name == self.official else 'unofficial'}"

    @staticmethod
    def fetch(store: Store, sid: str) -> list[dict]:
        return store.checkpoints(sid)

    def show(self, row: dict, checkpoints: list[dict]) -> None:
        table = self.query_one(DataTable)
        table.clear()  # a different session: the cursor has nothing to keep
        self.cells.clear()
        self.values, self.at, self.best = {}, {}, None
        self.notes: dict[str, str] = {}
        self.official = row.get("best_checkpoint")  # the session's official checkpoint, once it ended
        self.budget_s = row.get("budget_s") or 1.0
        self.direction = direction_of(row.get("task"))
        self.bounds = task_bounds(row.get("task"))  # the plot's axis keeps to the metric's range
        try:
            spec = get_task(row.get("task") or "")
            self.metric, self.scored_split = spec.metric_label, spec.scored_split
        except UnknownTask:
            self.metric, self.scored_split = "score", "val"
        self._title()
        for r in checkpoints:
            found = read_json(r.get("verdicts"), r.get("flags"))  # flags: a record made before typed verdicts
            self._put(r["name"], bool(r["official"]), r["budget_elapsed_s"], r["value"], r["error"], r["self_reported"],
                      found)
        self._mark_best()

    def apply(self, events: list[Event]) -> None:
        changed = False
        for e in events:
            if e.type == "checkpoint_found":
                self._put(e.name, False, e.budget_elapsed_s, None, None, e.self_reported)
                changed = True
            elif e.type == "checkpoint_scored":
                self._put(e.name, e.official, e.budget_elapsed_s, e.value, e.error, None,
                          read_verdicts(e.verdicts, e.flags))
                changed = True
            elif e.type == "session_ended":
                self.official = e.best_checkpoint
                for key in self.cells:  # the chosen re-evaluation is official now, the others unofficial
                    self._set(key, "role", self._role(key))
                changed = True
        if changed:
            self._mark_best()

    def _set(self, key: str, col: str, text: str) -> None:
        if self.cells[key][col] != text:
            self.cells[key][col] = text
            if col in self.widths:
                self.query_one(DataTable).update_cell(key, col, self._cell(col, text))

    def _put(self, name: str, official: bool, at: float | None, value: float | None, error: str | None,
             reported: float | None, found: list[Verdict] | None = None) -> None:
        key = f"{name}#official" if official else name
        if error:
            note = f"✖ {error}"
        elif value is None:
            note = "scoring…" + (f" (self-reported {reported:.4f})" if reported is not None else "")
        else:
            note = ""
        if found:  # what the integrity checks found, strongest first (runner/wire/verdicts.py)
            note = (note + " " if note else "") + verdicts_note(found)
        if not (key in self.notes and value is None and not error and self.notes[key]):
            self.notes[key] = note  # keep what we knew (e.g. the error) until a score arrives
        note = ("★ " if key == self.best else "") + self.notes[key]
        cells = {"name": name, "score": fmt_score(value), "role": self._role(key), "at": clock(at), "note": note}
        if key in self.cells:
            for col, text in cells.items():
                if col == "note" and value is None and not error and self.cells[key][col]:
                    continue  # keep what we knew (e.g. the error) until a score arrives
                self._set(key, col, text)
        else:
            self.cells[key] = cells
            self.query_one(DataTable).add_row(*(self._cell(c, cells[c]) for c in self.widths), key=key)
        if value is not None:
            self.values[key] = value
            self.at[key] = at or 0.0

    def _plot(self) -> None:
        live = [(self.at[k], v) for k, v in self.values.items() if not k.endswith("#official")]
        steps = best_so_far(live, self.direction)
        self.query_one(Plot).show([Series(tuple(steps), "green", "step"), Series(tuple(live), "bold cyan", "dots")],
                                  self.budget_s, bounds=self.bounds)

    def _mark_best(self) -> None:
        """★ on the official checkpoint once the session has one (chosen by validation, which is
        not always the best official figure on T4-T6), else on the best live score."""
        self._plot()
        if self.official and f"{self.official}#official" in self.cells:
            best = f"{self.official}#official"
        elif self.values:
            live = {k: v for k, v in self.values.items() if not k.endswith("#official")} or self.values
            best = best_of(live, self.direction, key=live.__getitem__)
        else:
            return
        if self.best and self.best != best and self.best in self.cells:
            self._set(self.best, "note", self.notes.get(self.best, ""))
        if best in self.cells:
            self._set(best, "note", "★ " + (self.notes.get(best) or ("result" if best.endswith("#official") else "best")))
        self.best = best
        if best.endswith("#official"):
            self._pin(best)

    def _pin(self, key: str) -> None:
        """The official checkpoint on the first row, with the cursor on it: after the end it is what
        the session scored, and below a long list of live checkpoints it was out of sight."""
        if next(iter(self.cells)) == key:
            return
        self.cells = {key: self.cells[key], **{k: v for k, v in self.cells.items() if k != key}}
        table = self.query_one(DataTable)
        table.clear()
        for k, cells in self.cells.items():
            table.add_row(*(self._cell(c, cells[c]) for c in self.widths), key=k)
        table.move_cursor(row=0, scroll=True)

