"""The agent × task matrix and the paper's aggregate: :func:`build_matrix` / :func:`paper_matrix`
-> :class:`Matrix` (rows of :class:`Cell`, each row with its :class:`Aggregate` ``agg`` on means
and ``agg_max`` on best-of-N), from :class:`onegc_tui.views.outcomes.SessionOutcome` records.
Pure functions on frozen records; no UI, and no I/O beyond reading the task registry
(``tasks.all_tasks``) when no specs are passed. (Anytime curves: onegc_tui/views/anytime.py; GPU
and agent time: onegc_tui/views/time_ledger.py; statistics: onegc_tui/views/statistics.py.)

Statistics follow the paper (Table 4; its rows are in each ``task.toml``): failures (no scorable
checkpoint, score ``None``) are left out of mean, std and best and counted in the success rate
n/N; std is the sample standard deviation (ddof = 1).

Missing tasks in the aggregate: ``Agg`` is the mean of r_t over the tasks a row has a result on
(at least one successful repeat). When that is not the whole expected set (the paper's seven
tasks, see :func:`build_matrix`), ``Aggregate.partial`` is set and ``missing`` names the rest:
a partial Agg is shown with a mark and never competes for "best" with complete ones.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from onegc_tui.views.outcomes import SessionOutcome, task_table
from onegc_tui.views.statistics import mean_or_none, relative_improvement, sample_std, sem
from runner.wire.defaults import without_split_mark
from tasks import Direction, TaskSpec, all_tasks, best_of, better

PAPER_STUDY = "paper"  # the study name under which the paper's Table 4/6 rows appear


# ----------------------------------------------------------------------------- the matrix


@dataclass(frozen=True, slots=True)
class TaskColumn:
    """One task column: short id key (``t1``), label (``T1``), metric direction and baseline."""

    task: str
    label: str
    direction: Direction
    baseline: float | None
    metric: str
    benchmark: bool  # one of the paper's tasks (it has paper rows); only these enter Agg by default

    @classmethod
    def from_spec(cls, spec: TaskSpec) -> TaskColumn:
        return cls(
            spec.short, spec.short.upper(), spec.direction, spec.baseline_score, spec.metric, bool(spec.paper)
        )

    def better(self, a: float, b: float) -> bool:
        return better(a, b, self.direction)

    def best(self, values: Iterable[float]) -> float | None:
        vals = list(values)
        return best_of(vals, self.direction) if vals else None


@dataclass(frozen=True, slots=True)
class Cell:
    """One agent × task cell. ``mean``/``std``/``sem``/``best`` are over successful repeats;
    ``std`` and ``sem`` are ``None`` below two successes; ``mixed_contracts`` is set when the
    cell pools sessions run under different task contracts (different ``contract_hash``)."""

    task: str
    n_success: int
    n_total: int  # finished sessions
    mean: float | None
    std: float | None
    sem: float | None
    best: float | None
    best_session: str | None = None
    session_ids: tuple[str, ...] = ()  # finished sessions, by repeat, for drill-down
    running_ids: tuple[str, ...] = ()
    contract_hashes: tuple[str, ...] = ()  # distinct known hashes
    scripts_mean: float | None = None
    first_checkpoint_mean_s: float | None = None
    budget_used_mean: float | None = None  # mean active_s / budget_s
    gpu_busy_fraction: float | None = None  # busy / (busy + idle), pooled over sessions
    n_disqualified: int = 0  # finished sessions struck out (counted in n_total, not in the mean)
    n_flagged: int = 0  # finished sessions with integrity-flagged scores
    n_unsealed: int = 0  # finished sessions run --unsealed
    n_open_network: int = 0  # finished sessions whose agent shared the host's network (--network open)
    n_val_gap: int = 0  # finished sessions with the val-test gap flag (runner/integrity/selection_gap.py)
    n_contended: int = 0  # finished sessions whose conditions record says contended (runner/session/contention.py)
    n_clean: int = 0  # finished sessions whose conditions record says clean
    n_truncated: int = 0  # finished sessions whose record was cut past its caps (runner/wire/record_caps.py)
    n_capped: int = 0  # finished sessions whose agent a memory, process or disk cap stopped (runner/sandbox/caps.py)
    n_tampered: int = 0  # finished sessions whose record was edited after them (runner/scoring/seal.py): not in the mean
    n_reproduced: int = 0  # finished sessions `onegc verify` reproduced
    n_differs: int = 0  # finished sessions `onegc verify` found a number of that does not reproduce

    @property
    def mixed_conditions(self) -> bool:
        """The cell pools contended and clean sessions: their scores are not measured alike."""
        return self.n_contended > 0 and self.n_clean > 0

    @property
    def mixed_contracts(self) -> bool:
        return len(self.contract_hashes) > 1

    @property
    def success_rate(self) -> float | None:
        return self.n_success / self.n_total if self.n_total else None


@dataclass(frozen=True, slots=True)
class Aggregate:
    """The paper's ``Agg = mean_t r_t`` over the tasks this row has a result on.

    ``expected`` is the task set the aggregate is meant to cover; when some are ``missing``
    (never run, or every repeat failed) ``value`` is the mean over the rest and ``partial`` is
    set — it is then not comparable with a full aggregate, and the exports mark it."""

    value: float | None
    per_task: Mapping[str, float]  # r_t by task
    expected: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    @property
    def n_tasks(self) -> int:
        return len(self.per_task)


@dataclass(frozen=True, slots=True)
class Row:
    """One agent (and model) across tasks."""

    label: str
    agent: str
    model: str | None
    cells: Mapping[str, Cell]  # by task short id; tasks with no session are absent
    agg: Aggregate  # relative to the paper's baselines (task.toml's baseline_score)
    agg_max: Aggregate
    agg_ours: Aggregate | None = None  # Agg relative to the baselines measured here (onegc baseline), if any

    def cell(self, task: str) -> Cell | None:
        return self.cells.get(task)


@dataclass(frozen=True, slots=True)
class Matrix:
    """Agents × tasks for one study (``study == "paper"`` for the paper's reference rows)."""

    study: str
    tasks: tuple[TaskColumn, ...]
    rows: tuple[Row, ...]
    unknown_tasks: tuple[str, ...] = ()  # task names in the input that match no task spec
    # aborted sessions (a person ended them: not a run of the protocol) are left out of the cells,
    # neither in the mean nor in n/N, and counted here: history says how many (onegc rm removes them)
    n_aborted: int = 0

    @property
    def is_paper(self) -> bool:
        return self.study == PAPER_STUDY

    def row(self, label: str) -> Row:
        for row in self.rows:
            if row.label == label:
                return row
        raise KeyError(f"no row '{label}' in study '{self.study}'")

    def column(self, task: str) -> TaskColumn:
        for col in self.tasks:
            if col.task == task:
                return col
        raise KeyError(f"no task '{task}' in study '{self.study}'")


# ----------------------------------------------------------------------------- statistics

def aggregate(
    scores: Mapping[str, float | None], columns: Iterable[TaskColumn], expected: Sequence[str]
) -> Aggregate:
    """Agg over ``expected`` tasks: mean of r_t over those with a score (see :class:`Aggregate`)."""
    by_task = {c.task: c for c in columns}
    per_task: dict[str, float] = {}
    missing: list[str] = []
    for task in expected:
        col, score = by_task.get(task), scores.get(task)
        if col is None or col.baseline is None or score is None:
            missing.append(task)
            continue
        per_task[task] = relative_improvement(score, col.baseline, col.direction)
    value = mean_or_none(list(per_task.values()))
    return Aggregate(value, per_task, tuple(expected), tuple(missing))


def task_sort_key(task: str) -> tuple[int, str]:
    """Order tasks by number (t2 before t10)."""
    m = re.match(r"[a-zA-Z]*(\d+)", task)
    return (int(m.group(1)) if m else 10**9, task)


def _expected_tasks(
    columns: Sequence[TaskColumn], specs: Mapping[str, TaskSpec], agg_tasks: Sequence[str] | None
) -> tuple[str, ...]:
    """Default Agg task set: the paper's benchmark tasks whenever the matrix has any of them
    (so a study that ran T1 and T4 only is marked partial, as against the paper's seven), else
    the matrix's own columns with a baseline (a demo-only study)."""
    if agg_tasks is not None:
        return tuple(specs[t.lower()].short if t.lower() in specs else t for t in agg_tasks)
    if any(c.benchmark for c in columns):
        shorts = {s.short for s in specs.values() if s.paper and s.baseline_score is not None}
        return tuple(sorted(shorts, key=task_sort_key))
    return tuple(c.task for c in columns if c.baseline is not None)


def row_label(agent: str, model: str | None, label: str | None = None, study: str | None = None) -> str:
    """How a row is named: the agent, with its model when there is one; a study's agent
    configuration by its label, with what it runs (``quick (scripted)``), and its study in front
    when the matrix pools several studies (``demo/quick (scripted)``)."""
    runs = agent if not model else f"{agent} ({model})"
    if label is None:
        return runs
    named = f"{label} ({agent}{', ' + model if model else ''})"
    return f"{study}/{named}" if study else named


def row_key(o: SessionOutcome) -> tuple[str | None, str | None, str, str | None]:
    """What makes a matrix row: a study's agent label (within its study: two studies may use the
    same label for different configurations), else the adapter and model; a sealed scored split and
    the paper's apart, each marked (``SessionOutcome.row_agent``; :func:`shown_rows` joins T4-T6's
    unmarked sessions to their configuration's one marked row)."""
    return (o.study, o.label, o.row_agent, o.model) if o.label else (None, None, o.row_agent, o.model)


def shown_rows(keys: Iterable[tuple[str | None, str | None, str, str | None]]) -> dict[tuple, tuple]:
    """The row each :func:`row_key` is shown in. A row of T4-T6 sessions carries no split mark (their
    scored split is never in the workspace: no choice), so it joins the one marked row of the same
    configuration (``scripted [paper split]``: the paper's protocol run on all seven tasks is one
    row, its Agg whole); where the configuration has both a sealed and a paper row it stays a row
    of its own, unmarked (it belongs to neither more than the other). Every other key is its own."""
    keys = list(dict.fromkeys(keys))
    marked: dict[tuple, list[tuple]] = {}
    for key in keys:
        base = without_split_mark(key[2])
        if base != key[2]:
            marked.setdefault((key[0], key[1], base, key[3]), []).append(key)
    return {key: found[0] if len(found := marked.get(key, [])) == 1 else key for key in keys}


def outcome_row_label(o: SessionOutcome) -> str:
    """:func:`row_label` of a session's row."""
    return row_label(o.row_agent, o.model, o.label)


def split_demo(outcomes: Iterable[SessionOutcome], specs: Iterable[TaskSpec] | None = None
               ) -> tuple[list[SessionOutcome], list[SessionOutcome]]:
    """(the paper's tasks, the rest): only the first are compared with the paper; the demo task's
    matrix is shown on its own (its Agg is over T0 alone, not comparable with a seven-task Agg)."""
    table = task_table(specs)
    bench: list[SessionOutcome] = []
    other: list[SessionOutcome] = []
    for o in outcomes:
        spec = table.get(o.task.strip().lower())
        (bench if spec is not None and spec.paper else other).append(o)
    return bench, other


def _cell(task: str, sessions: Sequence[SessionOutcome], col: TaskColumn) -> Cell:
    ordered = sorted(sessions, key=lambda s: (s.repeat, s.started_at or 0.0, s.session_id))  # whatever order they came in
    done = [s for s in ordered if s.finished]
    running = tuple(s.session_id for s in ordered if not s.finished)
    ok = [s for s in done if s.succeeded]
    scores = [s.score for s in ok if s.score is not None]
    best = col.best(scores)
    best_session = next((s.session_id for s in ok if s.score == best), None)
    scripts = [float(s.scripts_launched) for s in done if s.scripts_launched is not None]
    first_ck = [s.first_checkpoint_s for s in done if s.first_checkpoint_s is not None]
    used = [s.active_s / s.budget_s for s in done if s.active_s is not None and s.budget_s > 0]
    busy = math.fsum(s.gpu_busy_s for s in done if s.gpu_busy_s is not None and s.gpu_idle_s is not None)
    idle = math.fsum(s.gpu_idle_s for s in done if s.gpu_busy_s is not None and s.gpu_idle_s is not None)
    hashes = tuple(sorted({s.contract_hash for s in sessions if s.contract_hash}))
    return Cell(
        task=task,
        n_success=len(scores),
        n_total=len(done),
        mean=mean_or_none(scores),
        std=sample_std(scores),
        sem=sem(scores),
        best=best,
        best_session=best_session,
        session_ids=tuple(s.session_id for s in done),
        running_ids=running,
        contract_hashes=hashes,
        scripts_mean=mean_or_none(scripts),
        first_checkpoint_mean_s=mean_or_none(first_ck),
        budget_used_mean=mean_or_none(used),
        gpu_busy_fraction=busy / (busy + idle) if busy + idle > 0 else None,
        n_disqualified=sum(1 for s in done if s.disqualified),
        n_flagged=sum(1 for s in done if s.flagged),
        n_unsealed=sum(1 for s in done if s.sealed is False),
        n_open_network=sum(1 for s in done if s.network == "open"),
        n_val_gap=sum(1 for s in done if s.val_gap_flag),
        n_contended=sum(1 for s in done if s.contended is True),
        n_clean=sum(1 for s in done if s.contended is False),
        n_truncated=sum(1 for s in done if s.truncated),
        n_capped=sum(1 for s in done if s.caps_reached),
        n_tampered=sum(1 for s in done if s.tampered),
        n_reproduced=sum(1 for s in done if s.verified == "reproduced" and not s.tampered),
        n_differs=sum(1 for s in done if s.verified == "differs" and not s.tampered),
    )


def _row(
    label: str,
    agent: str,
    model: str | None,
    cells: dict[str, Cell],
    columns: Sequence[TaskColumn],
    expected: Sequence[str],
    measured: Mapping[str, float] | None = None,
) -> Row:
    means = {t: c.mean for t, c in cells.items()}
    bests = {t: c.best for t, c in cells.items()}
    ours = None
    if measured:
        ours_cols = [dataclasses.replace(c, baseline=measured.get(c.task)) for c in columns]
        ours = aggregate(means, ours_cols, expected)
    return Row(
        label, agent, model, cells, aggregate(means, columns, expected), aggregate(bests, columns, expected), ours
    )


def build_matrix(
    outcomes: Iterable[SessionOutcome],
    study: str = "ours",
    specs: Iterable[TaskSpec] | None = None,
    agg_tasks: Sequence[str] | None = None,
    measured: Mapping[str, float] | None = None,
) -> Matrix:
    """The agent × task matrix of ``outcomes`` (pooled as given: filter by study first).

    Rows are agent configurations (:func:`row_key`: a study's agent label, else the adapter and
    model), sorted by label; columns are the tasks that appear, in task
    order. ``specs`` defaults to the task registry; names that match no spec are reported in
    ``unknown_tasks`` and left out. ``agg_tasks`` fixes the aggregate's task set (default: see
    :func:`_expected_tasks`). ``measured``: baselines measured under the same contract, by task
    short id (:func:`measured_baselines`); each row then has ``agg_ours``, its Agg against them.
    """
    table = task_table(specs)
    groups: dict[tuple, dict[str, list[SessionOutcome]]] = {}
    unknown: set[str] = set()
    n_aborted = 0
    for o in outcomes:
        if o.end_reason == "aborted":
            n_aborted += 1
            continue
        spec = table.get(o.task.strip().lower())
        if spec is None:
            unknown.add(o.task)
            continue
        groups.setdefault(row_key(o), {}).setdefault(spec.short, []).append(o)
    columns = {t: TaskColumn.from_spec(table[t]) for by_task in groups.values() for t in by_task}
    cells = {key: {t: _cell(t, sessions, columns[t]) for t, sessions in by_task.items()} for key, by_task in groups.items()}
    return assemble(cells, study, table, agg_tasks, measured, unknown, n_aborted)


def cell_of(task: str, sessions: Sequence[SessionOutcome], table: Mapping[str, TaskSpec] | None = None) -> Cell:
    """One cell: ``sessions`` of one row on ``task`` (a short id), as :func:`build_matrix` makes it
    (``table``: :func:`~onegc_tui.views.outcomes.task_table`'s, default the registry's)."""
    return _cell(task, sessions, TaskColumn.from_spec((task_table(None) if table is None else table)[task]))


def assemble(
    cells: Mapping[tuple, Mapping[str, Cell]],
    study: str,
    table: Mapping[str, TaskSpec],
    agg_tasks: Sequence[str] | None = None,
    measured: Mapping[str, float] | None = None,
    unknown: Iterable[str] = (),
    n_aborted: int = 0,
) -> Matrix:
    """The matrix of its cells, by :func:`row_key` and task short id (built here, or read from the
    store's summary of them: onegc_tui/results/history_cells.py): columns, rows and aggregates."""
    columns = {t: TaskColumn.from_spec(table[t]) for by_task in cells.values() for t in by_task}
    cols = tuple(sorted(columns.values(), key=lambda c: task_sort_key(c.task)))
    expected = _expected_tasks(cols, table, agg_tasks)
    joined: dict[tuple, dict[str, Cell]] = {}
    for key, shown in shown_rows(cells).items():
        joined.setdefault(shown, {}).update(cells[key])  # an unmarked row's tasks (T4-T6) are no marked row's
    rows = []
    several_studies = len({k[0] for k in cells if k[1] is not None}) > 1
    for (row_study, label, agent, model), by_task in joined.items():
        ordered = dict(sorted(by_task.items(), key=lambda kv: task_sort_key(kv[0])))
        name = row_label(agent, model, label, row_study if several_studies else None)
        rows.append(_row(name, agent, model, ordered, cols, expected, measured))
    rows.sort(key=lambda r: r.label.lower())
    return Matrix(study, cols, tuple(rows), tuple(sorted(unknown)), n_aborted)


def paper_matrix(specs: Iterable[TaskSpec] | None = None) -> Matrix:
    """The paper's Table 4 (mean ± std, n/N) and Table 6 (best of 5) as a matrix named "paper",
    built from the ``[[paper]]`` rows of each ``task.toml``; Agg and Agg_max are recomputed from
    them with the task baselines (all seven tasks, T3 included, though it has no reference)."""
    chosen = [s for s in (all_tasks().values() if specs is None else specs) if s.paper]
    chosen.sort(key=lambda s: task_sort_key(s.short))
    cols = tuple(TaskColumn.from_spec(s) for s in chosen)
    expected = tuple(c.task for c in cols if c.baseline is not None)
    agents: dict[str, dict[str, Cell]] = {}
    for spec in chosen:
        for p in spec.paper:
            n = p.n_success
            agents.setdefault(p.agent, {})[spec.short] = Cell(
                task=spec.short,
                n_success=n,
                n_total=p.n_total,
                mean=p.mean,
                std=p.std if n >= 2 else None,
                sem=p.std / math.sqrt(n) if p.std is not None and n >= 2 else None,
                best=p.best,
            )
    rows = tuple(_row(a, a, None, cells, cols, expected) for a, cells in agents.items())
    return Matrix(PAPER_STUDY, cols, rows)


def scripts_per_cell(matrix: Matrix) -> dict[tuple[str, str], float | None]:
    """Mean scripts launched per session, by (row label, task)."""
    return {(r.label, t): c.scripts_mean for r in matrix.rows for t, c in r.cells.items()}


__all__ = [
    "PAPER_STUDY", "Aggregate", "Cell", "Matrix", "Row", "TaskColumn",
    "aggregate", "assemble", "build_matrix", "cell_of", "paper_matrix", "row_key", "row_label", "scripts_per_cell",
    "shown_rows", "split_demo",
    "task_sort_key",
]
