"""History: the agent × task matrix as the paper reports it, our study beside the paper's Table 4.

Cells show mean ± std (ddof = 1) over successful repeats with n/N when some failed, or best of N
(``b``); Agg and Agg_max per row. The highlighted cell's statistics (SEM, best session, time to
first checkpoint, scripts, GPU busy share, the tensor cores' active share of the budget (GPM),
the official score at 25/50/75/100 % of the budget and the anytime band) show below. Enter
drills into a cell's sessions; from there Enter opens one in the detail view and ``r`` replays
them side by side. The matrix is built in a worker from the per-session summary table only (no
event scan), so it opens fast over thousands of sessions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.css.scalar import Scalar
from textual.message import Message
from textual.widgets import DataTable, Static

from onegc_tui.app.host import host, refused, store_of
from onegc_tui.app.layout import SteadyScreen
from onegc_tui.app.safe import plain
from onegc_tui.app.screens.history_layout import (
    BOTTOM_ROWS,
    MORE_LEFT,
    MORE_RIGHT,
    PADDING,
    bottom_rows,
    task_window,
)
from onegc_tui.app.widgets.footer import KeyFooter
from onegc_tui.app.widgets.header import MonitorHeader
from onegc_tui.app.widgets.plot import Plot, Series
from onegc_tui.results.cell_insights import cell_insights, insight_lines
from onegc_tui.results.export import DEMO_TITLE, cell_text, render_history
from onegc_tui.results.history_cells import history as stored_history
from onegc_tui.results.matrix import Matrix, build_matrix, paper_matrix, task_sort_key
from onegc_tui.results.usage_table import session_usage, usage_line
from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.views import monitor_data
from onegc_tui.views.anytime import FRACTIONS, anytime_band, anytime_curve
from onegc_tui.views.format import arrow, clock, count, fmt_score
from onegc_tui.views.gpu_activity import mean_share, share_words, tensor_share
from onegc_tui.views.metric_range import UNBOUNDED, task_bounds
from onegc_tui.views.sessions_view import TRUNCATED_MARK, label_cut, official_cell
from onegc_tui.views.task_facts import metric_label, scored_split
from runner.wire.score_terms import score_name
from tasks import Direction

ALL = None  # the study filter value meaning "every session"
SEP = "\x1f"  # row keys: study SEP row label


def compute_history(home: Path, study: str | None, demo: bool | None, paper: Matrix | None):
    """The history screen's data (a ``HistoryScreen.Loaded``), from the matrix's cells the store
    keeps (onegc_tui/results/history_cells.py: only the cells whose sessions changed are computed
    again), as ``onegc history`` reads them: over 100 000 sessions, building the matrix from every
    session's row took the monitor ~2 s of CPU and ~90 MB at start.

    Runs on a worker thread, with its own connection; the app caches the result until a
    session starts or ends, and computes the default view ahead of the first ``h``."""
    store = Store.open(home)
    try:
        studies = monitor_data.studies(store)
        measured = {t: m.mean for t, m in monitor_data.measured_baselines(store).items()}
        shown = bool(demo)
        found = stored_history(store, study, include_demo=shown, measured=measured)
        if demo is None and not store_queries.session_count(store, study, include_demo=False):
            shown = True  # nothing but the demo task: show it rather than nothing
            found = stored_history(store, study, include_demo=True, measured=measured)
        n = store_queries.session_count(store, study, include_demo=shown)
        hidden = 0 if shown else monitor_data.demo_sessions(store, study)  # left out: the title says how to see them
    finally:
        store.close()
    name = study or "ours"
    other = f"{name} (demo)"  # the screen's name for the matrix of the other tasks (its rows' keys)
    demo_matrix = replace(found.other, study=other) if found.other is not None else build_matrix([], study=other)
    return HistoryScreen.Loaded(found.bench, paper or paper_matrix(), studies, n, shown, demo_matrix, hidden)


class HistoryViews:
    """The history screen's data per view (study, demo), computed once and shared.

    ``get`` runs on worker threads: the first caller of a view computes it, a second caller
    (the screen opened while the start-up prefetch is still running) waits for that result
    instead of computing it again. ``invalidate`` (the app, when a session starts or ends) drops
    every view; a computation in flight still answers its callers."""

    def __init__(self, home: Path):
        self.home = home
        self.paper: Matrix | None = None  # the paper's matrix: the same for every view
        self._lock = threading.Lock()
        self._views: dict[tuple, _View] = {}

    def get(self, study: str | None, demo: bool | None) -> HistoryScreen.Loaded:
        with self._lock:
            view = self._views.setdefault((study, demo), _View())
        with view.lock:
            if view.loaded is None:
                view.loaded = compute_history(self.home, study, demo, self.paper)
                self.paper = view.loaded.paper
        return view.loaded

    def ready(self, study: str | None, demo: bool | None) -> bool:
        view = self._views.get((study, demo))
        return view is not None and view.loaded is not None

    def invalidate(self) -> None:
        with self._lock:
            self._views.clear()

    def prefetch(self, done: Callable[[], None]) -> None:
        """The default view, computed ahead of the first ``h`` (kept until sessions change), on a
        thread of its own started at once (``done`` afterwards, if the computation succeeded): a
        Textual worker starts only after the mount handlers return, which over 10 000 sessions is
        after seconds of building the table, so an ``h`` pressed the moment the dashboard showed
        waited for the whole computation."""
        def run() -> None:
            try:
                self.get(ALL, None)
            except Exception:  # noqa: BLE001 - the screen computes its view again and shows the error
                return
            done()

        if not self.ready(ALL, None):
            threading.Thread(target=run, name="history-prefetch", daemon=True).start()


class _View:
    def __init__(self):
        self.lock = threading.Lock()
        self.loaded: HistoryScreen.Loaded | None = None


COMPACT_BELOW = 150  # columns: narrower, the matrix's cells show their figure and marks only
AGENT_CAP = 20  # the Agent column's width where every task does not fit (a longer label is cut in the middle, its
# split mark kept: sessions_view.label_cut)
SCROLLBAR_W = 2
BAND_TITLE = "Anytime {what} (official rule): mean, band min…max, yellow best of k"


def agg_text(agg) -> str:
    if agg.value is None:
        return "-"
    return f"{agg.value:+.3f}" + ("†" if agg.partial else "")


class HistoryScreen(SteadyScreen):
    AUTO_FOCUS = "#matrix"  # the arrows move the cell cursor at once (the app's "#sessions" is not on this screen)
    BINDINGS = [
        Binding("escape,h", "app.pop_screen", "Back"),
        Binding("b", "toggle_best", "Mean/best"),
        Binding("s", "next_study", "Study"),
        Binding("x", "toggle_demo", "Demo tasks"),
        Binding("e", "export", "Export"),
        Binding("enter", "drill", "Sessions", show=True),
    ]

    class Loaded(Message):
        def __init__(self, matrix: Matrix, paper: Matrix, studies: list[str], n: int, demo: bool,
                     demo_matrix: Matrix, hidden: int = 0):
            super().__init__()
            self.matrix, self.paper, self.studies, self.n, self.demo = matrix, paper, studies, n, demo
            self.demo_matrix = demo_matrix
            self.hidden = hidden  # demo-task sessions of the home not in this view

    def __init__(self, study: str | None = ALL):
        super().__init__()
        self.study = study
        self.mode = "mean"
        self.demo: bool | None = None  # None: include demo sessions only when there is nothing else
        self.studies: list[str] = []
        self.matrix: Matrix | None = None
        self.paper: Matrix | None = None
        self.demo_matrix: Matrix | None = None
        self.n_sessions = self.n_hidden = self.n_aborted = 0
        self.first_task = 0  # the first task column in sight, where the screen is narrower than the matrix

    def compose(self) -> ComposeResult:
        yield MonitorHeader(show_clock=host(self).show_clock)
        yield Static("loading the matrix…", id="hist-summary")
        # the study and agent columns stay in sight while the task columns scroll (they name each row)
        yield DataTable(id="matrix", cursor_type="cell", zebra_stripes=True, fixed_columns=2)
        yield Static(DEMO_TITLE, id="demo-title", classes="pane-title")
        yield DataTable(id="demo-matrix", cursor_type="cell", zebra_stripes=True, fixed_columns=2)
        with Horizontal(id="hist-bottom"):
            yield Static("", id="cell-detail")
            with Vertical(id="band-box"):
                yield Static(BAND_TITLE.format(what="official scores"), classes="pane-title", id="band-title")
                yield Plot(id="band-plot", empty="highlight one of our cells to see its anytime curves")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = "history"
        if host(self).history.ready(self.study, self.demo):  # prefetched: drawn in the screen's first frame
            self.on_history_screen_loaded(host(self).history.get(self.study, self.demo))  # (no second layout)
        else:
            self.load()

    def on_screen_resume(self) -> None:
        if self.matrix is not None and not host(self).history.ready(self.study, self.demo):
            self.load()  # sessions started or ended since it was drawn

    @work(thread=True, exit_on_error=False, exclusive=True)
    def load(self) -> None:
        self.post_message(host(self).history.get(self.study, self.demo))

    def on_history_screen_loaded(self, msg: Loaded) -> None:
        self.matrix, self.paper, self.studies, self.demo_shown = msg.matrix, msg.paper, msg.studies, msg.demo
        self.demo_matrix = msg.demo_matrix
        self.n_sessions = msg.n
        self.n_hidden = msg.hidden
        self.n_aborted = msg.matrix.n_aborted + msg.demo_matrix.n_aborted
        self.draw()

    @property
    def _tables(self) -> dict[str, list[Matrix]]:
        """Each table and the matrices in it: the paper's tasks beside the paper; the demo alone."""
        return {"matrix": [m for m in (self.matrix, self.paper) if m is not None],
                "demo-matrix": [m for m in (self.demo_matrix,) if m is not None]}

    def draw(self) -> None:
        matrix, paper, demo_matrix = self.matrix, self.paper, self.demo_matrix
        if matrix is None or paper is None:
            return  # not loaded yet
        has_demo = bool(demo_matrix and demo_matrix.rows)
        self.query_one("#demo-title").display = self.query_one("#demo-matrix").display = has_demo
        self._fill(self.query_one("#matrix", DataTable), [matrix, paper])
        if demo_matrix is not None and has_demo:
            self._fill(self.query_one("#demo-matrix", DataTable), [demo_matrix])
        what = "mean ± std over successful repeats (n/N when some failed)" if self.mode == "mean" else "best of N"
        if self._compact() and self.mode == "mean":
            what = "means over successful repeats (std and n/N of the highlighted cell below)"
        what = f"official scores on each task's scored split (test on T4–T6), {what}"  # docs/numbers.md
        study = self.study or "all sessions"
        demo = " · demo tasks in their own table below" if has_demo else ""
        # every session of the home is here, or the line says how to see the rest (issue 37)
        demo += f" · {count(self.n_hidden, 'demo-task session')} hidden: x shows them" if self.n_hidden else ""
        demo += (f" · {count(self.n_aborted, 'aborted session')} left out of the cells" if self.n_aborted else "")
        demo += f" · studies ({', '.join(self.studies)}): s picks one" if self.studies and not self.study else ""
        self.query_one("#hist-summary", Static).update(
            f"[b]{study}[/b]: {count(self.n_sessions, 'session')}{demo} · cells: {what} · bold: best per task · "
            f"Agg: mean relative improvement over the baselines (†: partial) · paper rows: its Table 4/6")
        if not matrix.rows and has_demo and self.focused is not self.query_one("#demo-matrix"):
            self.query_one("#demo-matrix").focus()  # nothing of ours beside the paper: start on the demo's cells
        if not matrix.rows:
            self.query_one("#cell-detail", Static).update(
                "No finished sessions of ours on the paper's tasks for this filter: only the paper's reference rows are shown."
                + (" The demo task's sessions are in the table below." if has_demo else ""))
        self._describe()
        self.call_after_refresh(self._fit_bottom)

    def _fit_bottom(self) -> None:
        """The matrix keeps its rows on a short terminal; the bottom box gets what is left
        (onegc_tui/app/screens/history_layout.py)."""
        if not self.is_attached:
            return
        others = (MonitorHeader, "#hist-summary", "#demo-title", "#demo-matrix", KeyFooter)
        fixed = sum(w.outer_size.height for sel in others for w in self.query(sel) if w.display)
        rows = bottom_rows(self.size.height, fixed, self.query_one("#matrix", DataTable).row_count)
        bottom = self.query_one("#hist-bottom")
        if bottom.display != bool(rows) or (rows and bottom.styles.height != Scalar.from_number(rows)):
            bottom.display = bool(rows)
            bottom.styles.height = rows or BOTTOM_ROWS

    def on_resize(self) -> None:
        if self.matrix is not None:
            if self._compact() != getattr(self, "_drawn_compact", None):
                self.draw()  # the cells' form follows the width (see _compact)
            self.call_after_refresh(self._fit_bottom)

    def _compact(self) -> bool:
        """Under :data:`COMPACT_BELOW` columns a cell shows its figure and marks only (its std and
        n/N in the statistics below): the label columns, every task and Agg fit 100 columns."""
        return self.app.size.width < COMPACT_BELOW

    def _fill(self, table: DataTable, matrices: list[Matrix], cursor_task: str | None = None) -> None:
        """The matrix in ``table``: under :data:`COMPACT_BELOW` columns a cell is its figure and
        marks, one Agg (the mode's), and where the screen is narrower than every task, whole task
        columns with "‹"/"›" beside them (history_layout.py ``task_window``), never a figure cut at
        an edge. ``cursor_task``: the task column the cursor goes to (the window follows it)."""
        keep = table.cursor_coordinate
        fresh = keep.column < 2 or keep.row >= table.row_count or keep.column >= len(table.columns)
        table.clear(columns=True)  # a new study or mode: a different table, not a live update
        compact = self._drawn_compact = self._compact()
        cols = sorted({c.task: c for m in matrices for c in m.tasks}.values(), key=lambda c: task_sort_key(c.task))
        if fresh and cursor_task is None:  # the cursor starts on our first result: the window shows it
            keep, cursor_task = self._first_result(matrices[0], cols)
        rows = [(m, r) for m in matrices for r in m.rows]
        aggs = [("agg", "Agg", lambda r: r.agg), ("agg_max", "Agg_max", lambda r: r.agg_max)]
        if compact:  # the mode's aggregate only: Agg on means, Agg_max on best of N
            aggs = aggs[:1] if self.mode == "mean" else aggs[1:]
        if any(r.agg_ours is not None for _, r in rows):  # Agg against the baselines measured here
            aggs.append(("agg_ours", "Agg_ours", lambda r: r.agg_ours))
        agg_w = {key: max([len(label)] + [len(agg_text(a)) for _, r in rows if (a := get(r)) is not None])
                 for key, label, get in aggs}
        task_w = [max([len(cell_text(r.cell(c.task), self.mode, live=True, compact=compact)) for _, r in rows]
                      + [len(f"{c.label} {arrow(c.direction)}")]) for c in cols]
        study_w = max([len(m.study) for m in matrices] + [5])
        label_w = max([len(r.label) for _, r in rows] + [5])
        room = (self.app.size.width or 160) - SCROLLBAR_W
        fixed = study_w + sum(agg_w.values()) + PADDING * (2 + len(aggs))
        if fixed + label_w + sum(task_w) + PADDING * len(cols) > room:
            label_w = min(label_w, AGENT_CAP)  # every task does not fit: a long label gives way first
        if cursor_task is not None:
            self.first_task = next((i for i, c in enumerate(cols) if c.task == cursor_task), self.first_task)
        first, last = task_window(task_w, self.first_task, room - fixed - label_w)
        if cursor_task is not None and cols:  # the window ends at the task moved to, going right
            want = next(i for i, c in enumerate(cols) if c.task == cursor_task)
            while want >= last and first < want:
                first, last = task_window(task_w, first + 1, room - fixed - label_w)
        self.first_task = first
        shown = cols[first:last]
        table.add_column("Study", key="study", width=study_w)
        table.add_column("Agent", key="agent", width=label_w)
        if first > 0:
            table.add_column(MORE_LEFT, key="more_left", width=1)
        for c, w in zip(shown, task_w[first:last], strict=True):  # as wide as the widest cell: whole figures
            table.add_column(f"{c.label} {arrow(c.direction)}", key=c.task, width=w)
        if last < len(cols):
            table.add_column(MORE_RIGHT, key="more_right", width=1)
        for key, label, _ in aggs:
            table.add_column(label, key=key, width=agg_w[key])
        best: dict[str, float] = {}
        for c in cols:
            vals = [v for _, r in rows if (cell := r.cell(c.task)) is not None and cell.mean is not None
                    and (v := cell.mean if self.mode == "mean" else cell.best) is not None]
            if (top := c.best(vals)) is not None:
                best[c.task] = top
        more = Text(MORE_LEFT, style="dim"), Text(MORE_RIGHT, style="dim")
        for m, r in rows:
            cells = []
            for c in shown:
                cell = r.cell(c.task)
                text = cell_text(cell, self.mode, live=True, compact=compact)
                value = None if cell is None or cell.mean is None else (cell.mean if self.mode == "mean" else cell.best)
                cells.append(Text(text, style="bold" if value is not None and value == best.get(c.task) else "",
                                  justify="right"))
            cells = ([more[0]] if first > 0 else []) + cells + ([more[1]] if last < len(cols) else [])
            study = plain(m.study, style="dim italic" if m.is_paper else "bold")
            totals = [Text(agg_text(get(r)) if get(r) is not None else "-", justify="right") for _, _, get in aggs]
            table.add_row(study, plain(label_cut(r.label, label_w)), *cells, *totals, key=f"{m.study}{SEP}{r.label}")
        if table.row_count:
            keys = [str(c.key.value) for c in table.ordered_columns]
            column = keys.index(cursor_task) if cursor_task in keys else min(keep.column, len(keys) - 1)
            table.cursor_coordinate = Coordinate(min(keep.row, table.row_count - 1), column)

    def _slide(self, table: DataTable, key: str) -> None:
        """The cursor reached a "‹" or "›" column: the next task that way comes into the window."""
        matrices = self._tables[str(table.id)]
        cols = sorted({c.task: c for m in matrices for c in m.tasks}.values(),
                      key=lambda c: task_sort_key(c.task))
        keys = [str(c.key.value) for c in table.ordered_columns]
        shown = [k for k in keys if k in {c.task for c in cols}]
        if not shown:
            return
        at = [c.task for c in cols].index(shown[0] if key == "more_left" else shown[-1])
        target = cols[max(0, at - 1) if key == "more_left" else min(len(cols) - 1, at + 1)].task
        if key == "more_left":
            self.first_task = max(0, at - 1)
        self._fill(table, matrices, cursor_task=target)

    @staticmethod
    def _first_result(matrix: Matrix, cols) -> tuple[Coordinate, str | None]:
        """Where the cursor starts: our first cell with a finished session (its row, and its task)."""
        for i, r in enumerate(matrix.rows):
            for c in cols:
                if (cell := r.cell(c.task)) is not None and cell.n_total:
                    return Coordinate(i, 2), c.task
        return Coordinate(0, 2), (cols[0].task if cols else None)

    # ------------------------------------------------------------------ the highlighted cell
    def _target(self):
        """(matrix, row, column key) under the cursor of the table that has the keyboard."""
        focused = self.focused
        table = focused if isinstance(focused, DataTable) and focused.id in self._tables else self.query_one("#matrix", DataTable)
        if not table.row_count or self.matrix is None:
            return None
        cell_key = table.coordinate_to_cell_key(table.cursor_coordinate)
        study, label = str(cell_key.row_key.value).split(SEP, 1)
        m = next(m for m in self._tables[table.id] if m.study == study)
        return m, m.row(label), str(cell_key.column_key.value)

    @on(DataTable.CellHighlighted)
    def _highlighted(self, event: DataTable.CellHighlighted) -> None:
        key = str(event.cell_key.column_key.value)
        if key in ("more_left", "more_right") and event.data_table.id in self._tables:
            self._slide(event.data_table, key)
            return
        self._describe()

    def on_descendant_focus(self) -> None:
        if self.matrix is not None:
            self._describe()  # Tab between the two tables: describe the cell that now has the cursor

    def _describe(self) -> None:
        """The highlighted cell in words, in the detail box (of a fixed size: no relayout per cell)."""
        target = self._target()
        detail = self.query_one("#cell-detail", Static)
        plot = self.query_one("#band-plot", Plot)
        if target is None:
            return
        m, row, col = target
        if col in ("agg", "agg_max") or (col == "agg_ours" and row.agg_ours is not None):
            agg = row.agg if col == "agg" else row.agg_max if col == "agg_max" else row.agg_ours
            what = {"agg": "Agg (on means)", "agg_max": "Agg_max (on best of N)",
                    "agg_ours": "Agg_ours (on means, vs the baselines measured here)"}[col]
            parts = [f"{row.label} · {what}: {agg_text(agg)}"]
            parts += [f"  {t.upper()}: r = {r:+.3f}" for t, r in agg.per_task.items()]
            if agg.missing:
                parts.append(f"  no result on {', '.join(t.upper() for t in agg.missing)}: partial aggregate")
            detail.update(plain("\n".join(parts), one_line=False), layout=False)
            plot.show([], 1.0)
            return
        cell = row.cell(col) if col not in ("study", "agent") else None
        if cell is None:
            detail.update(plain(f"{row.label}: no session on this task" if col not in ("study", "agent") else row.label),
                          layout=False)
            plot.show([], 1.0)
            return
        official = score_name(metric_label(col), scored_split(col), "official")  # docs/numbers.md
        lines = [f"{row.label} · {col.upper()} · {m.study}",
                 f"{official}: mean {fmt_score(cell.mean)}  std {fmt_score(cell.std)}  SEM {fmt_score(cell.sem)}  "
                 f"success {cell.n_success}/{cell.n_total}  best of {cell.n_success} {fmt_score(cell.best)}"]
        if m.is_paper:
            lines.append("reference figures from the paper (Table 4 mean ± std, Table 6 best of 5)")
            detail.update(plain("\n".join(lines), one_line=False), layout=False)
            plot.show([], 1.0)
            return
        ids = list(cell.session_ids)
        lines.append(f"best session {cell.best_session or '-'} · first checkpoint {clock(cell.first_checkpoint_mean_s)} "
                     f"(mean) · scripts {'-' if cell.scripts_mean is None else f'{cell.scripts_mean:.1f}'}"
                     f" · budget used {'-' if cell.budget_used_mean is None else f'{cell.budget_used_mean:.0%}'}")
        detail.update(plain("\n".join(lines + ["loading curves and GPU time…"]), one_line=False), layout=False)
        self._band_bounds = task_bounds(col)  # the anytime plot keeps to the metric's range
        self.query_one("#band-title", Static).update(BAND_TITLE.format(what=official), layout=False)
        self._cell_analytics(ids, m.column(col).direction, lines, len(cell.running_ids), col, row.label, official)

    class CellAnalytics(Message):
        def __init__(self, lines: list[str], band, budget: float, best_of_k=None):
            super().__init__()
            self.lines, self.band, self.budget, self.best_of_k = lines, band, budget, best_of_k

    @work(thread=True, exit_on_error=False, exclusive=True, group="cell")
    def _cell_analytics(self, ids: list[str], direction: Direction, lines: list[str], running: int, task: str = "",
                        label: str = "", official: str = "official score") -> None:
        """Anytime curves and GPU time of a cell's sessions: SQLite work, off the drawing thread;
        by the official rule with best-of-k, paired comparisons and the time ledger (cell_insights)."""
        store = Store.open(host(self).home)
        try:
            busy = monitor_data.gpu_busy_fraction(store, ids)
            tensor, n_tensor = mean_share(tensor_share(store, sid) for sid in ids)  # GPM: what the GPU did
            usage = session_usage(store, ids)
            points = monitor_data.score_points(store, ids)
            rows = store_queries.sessions_by_id(store, ids)
            budget = max((r["budget_s"] or 0 for r in rows.values()), default=0.0)
            cut = sum(1 for r in rows.values() if r.get("truncated"))
            insight = cell_insights(store, self.study, task, label, ids) if task else None
        finally:
            store.close()
        curves = [anytime_curve(p, budget, direction, sid) for sid, p in points.items()] if budget else []
        band = anytime_band(curves) if curves else None
        if insight is not None and insight.curves is not None:
            band = insight.curves.band  # the official rule's curves (val-best so far, its scored-split score)
        lines = list(lines)
        if band:
            at = {f: band.mean[round(f * (len(band.grid) - 1))] for f in FRACTIONS}
            lines.append(f"{official} at " + "  ".join(f"{f:.0%}: {fmt_score(v)}" for f, v in at.items())
                         + f"  (mean of {band.n_curves}, by the official rule)")
        lines.append(f"GPU busy {'-' if busy is None else f'{busy:.0%}'} of sampled time · "
                     f"{share_words(tensor, n_tensor, len(ids))} · {len(ids)} finished, {running} running · "
                     "Enter: list them")
        lines += insight_lines(insight) if insight is not None else []
        lines.append(usage_line(usage.values(), len(ids)))
        if cut:  # runner/wire/record_caps.py: the agent's output past the caps was left out of these records
            lines.append(f"{TRUNCATED_MARK} {cut} of these records cut past the session's caps (its detail says how much)")
        bok = insight.curves.best_of_k if insight is not None and insight.curves is not None else None
        self.post_message(self.CellAnalytics(lines, band, budget, bok))

    def on_history_screen_cell_analytics(self, msg: CellAnalytics) -> None:
        self.query_one("#cell-detail", Static).update(plain("\n".join(msg.lines), one_line=False), layout=False)
        band, budget, plot = msg.band, msg.budget, self.query_one("#band-plot", Plot)
        if band:
            mean = [(f * budget, v) for f, v in zip(band.grid, band.mean, strict=True) if v is not None]
            lo = [(f * budget, v) for f, v in zip(band.grid, band.lo, strict=True) if v is not None]
            hi = [(f * budget, v) for f, v in zip(band.grid, band.hi, strict=True) if v is not None]
            best = [(f * budget, v) for f, v in zip(band.grid, msg.best_of_k or (), strict=False) if v is not None]
            plot.show([Series(tuple(lo), "dim cyan", "line"), Series(tuple(hi), "dim cyan", "line"),
                       Series(tuple(best), "yellow", "line"), Series(tuple(mean), "bold green", "line")], budget,
                      bounds=getattr(self, "_band_bounds", UNBOUNDED))
        else:
            plot.show([], 1.0)

    # ------------------------------------------------------------------ actions
    def action_toggle_best(self) -> None:
        self.mode = "best" if self.mode == "mean" else "mean"
        if self.matrix:
            self.draw()

    def action_next_study(self) -> None:
        options = [ALL, *self.studies]
        self.study = options[(options.index(self.study) + 1) % len(options)] if self.study in options else ALL
        self.load()

    def action_toggle_demo(self) -> None:
        self.demo = not getattr(self, "demo_shown", False)
        self.load()

    def action_export(self) -> None:
        if self.matrix is None:
            return
        out = Path(host(self).home) / "exports"
        if refused(self, f"export the history to {out}"):
            return
        out.mkdir(exist_ok=True)
        name = (self.study or "all").replace("/", "_")
        for fmt, ext in (("md", "md"), ("csv", "csv"), ("latex", "tex"), ("json", "json")):
            (out / f"history-{name}.{ext}").write_text(render_history(self.matrix, self.demo_matrix, fmt, paper=self.paper))
        self.notify(f"wrote history-{name}.md/.csv/.tex/.json to {out}")

    def action_drill(self) -> None:
        target = self._target()
        if target is None:
            return
        m, row, col = target
        cell = row.cell(col) if col not in ("study", "agent", "agg", "agg_max", "agg_ours") else None
        if m.is_paper or cell is None:
            ids = [sid for c in row.cells.values() for sid in (*c.session_ids, *c.running_ids)] if not m.is_paper else []
            if not ids:
                self.notify("the paper's rows have no sessions here: pick one of our cells", severity="warning")
                return
            title = f"{row.label} · all tasks"
        else:
            ids = [*cell.session_ids, *cell.running_ids]
            title = f"{row.label} · {col.upper()}"
        self.app.push_screen(SessionsScreen(title, ids))

    def on_data_table_cell_selected(self, _: DataTable.CellSelected) -> None:
        self.action_drill()


class SessionsScreen(SteadyScreen):
    """The sessions behind a matrix cell: Enter opens one, space marks, r replays marked (or the first four)."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("space", "mark", "Mark"),
        Binding("r", "replay", "Replay"),
        Binding("d", "detail", "Detail"),
    ]
    COLUMNS = [("mark", "", 1), ("session", "Session", 34), ("rep", "#", 3), ("state", "State", 8),
               ("score", "Official", 11), ("end", "End", 16), ("first", "1st ckpt", 8), ("scripts", "Scripts", 7),
               ("used", "Budget used", 11), ("tensor", "Tensor-active", 13)]  # GPM: share of the budget

    def __init__(self, title: str, ids: list[str]):
        super().__init__()
        self.title_text, self.ids = title, ids
        self.marked: list[str] = []

    def compose(self) -> ComposeResult:
        yield MonitorHeader(show_clock=host(self).show_clock)
        yield Static(f"{self.title_text}: {count(len(self.ids), 'session')} · Enter opens one · space marks · r replays",
                     id="drill-summary")
        yield DataTable(id="drill", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = self.title_text
        table = self.query_one(DataTable)
        for key, label, width in self.COLUMNS:
            table.add_column(label, key=key, width=width)
        rows = store_queries.sessions_by_id(store_of(self), self.ids)
        for sid in self.ids:
            r = rows.get(sid)
            if r is None:
                continue
            used = f"{r['active_s'] / r['budget_s']:.0%}" if r.get("active_s") and r.get("budget_s") else "-"
            tensor = tensor_share(store_of(self), sid)
            table.add_row("", sid, str(r["repeat"] or 1), r["state"], official_cell(r),
                          (r["end_reason"] or "").replace("_", " "), clock(r["first_checkpoint_s"]),
                          str(r["scripts_launched"] or 0), used, "no GPM" if tensor is None else f"{tensor:.0%}",
                          key=sid)
        table.focus()

    def _current(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def action_detail(self) -> None:
        from onegc_tui.app.screens.detail import DetailScreen

        if sid := self._current():
            self.app.push_screen(DetailScreen(sid))

    def on_data_table_row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_detail()

    def action_mark(self) -> None:
        sid = self._current()
        if not sid:
            return
        if sid in self.marked:
            self.marked.remove(sid)
        elif len(self.marked) < 4:
            self.marked.append(sid)
        self.query_one(DataTable).update_cell(sid, "mark", "◆" if sid in self.marked else "")

    def action_replay(self) -> None:
        from onegc_tui.app.screens.detail import ReplayScreen

        ids = self.marked or self.ids[:4]
        if len(ids) < 2:
            self.notify("replay needs at least two sessions", severity="warning")
            return
        self.app.push_screen(ReplayScreen(ids))
