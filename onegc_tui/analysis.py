"""Analysis of finished sessions: the agent × task matrix, the paper's aggregate, anytime curves,
GPU busy/idle time and scripts launched. Pure functions on frozen records; no UI, and no I/O
beyond reading the task registry (``tasks.all_tasks``) when no specs are passed.

The store turns its rows into the input records below; the history screen and ``export.py``
render what these functions return.

Inputs
    :class:`SessionOutcome`  one finished (or running) session and its official score
    :class:`ScorePoint`      one scored checkpoint, at the budget time it appeared
    :class:`UtilSample`      one GPU utilisation sample (``gpu`` events)
    :class:`Activity`        an interval labelled with what the agent was doing

Outputs
    :func:`build_matrix` / :func:`paper_matrix` -> :class:`Matrix` (rows of :class:`Cell`, each row
    with its :class:`Aggregate` ``agg`` on means and ``agg_max`` on best-of-N)
    :func:`anytime_curve` / :func:`anytime_band` / :func:`scores_at`
    :func:`gpu_time_split` -> :class:`GpuSplit`; :func:`activities_from_events`
    :func:`count_scripts`, :func:`time_to_first_checkpoint`

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
import itertools
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from runner.scoring.selection_gap import BASELINE_STUDY
from runner.wire.events import (
    AgentStarted,
    BudgetEvent,
    ProcessEvent,
    SessionEnded,
    SessionStarted,
    TranscriptEvent,
)
from tasks import Direction, TaskSpec, all_tasks, best_of, better

ActivityKind = Literal["paused", "model_thinking", "tool_running", "no_training_process"]

PAPER_STUDY = "paper"  # the study name under which the paper's Table 4/6 rows appear
# NVML utilisation is the share of the sample period with a kernel running; a sample is busy
# above 10 %: at or below it the GPU is waiting (monitoring probes, a stray allocation).
BUSY_UTIL_PCT = 10.0
# A sample stands for at most this long: longer gaps (sampler stalled, machine suspended) are
# unknown time, counted neither busy nor idle.
MAX_SAMPLE_GAP_S = 5.0
DEFAULT_SAMPLE_S = 1.0  # what one sample stands for when there is no gap to measure it by
IDLE_PRIORITY: tuple[ActivityKind, ...] = ("paused", "model_thinking", "tool_running", "no_training_process")
# When labels overlap, idle time goes to the first that applies: a paused budget is nobody's
# fault; "no training process" is what is left when the agent is neither thinking nor in a tool.
UNATTRIBUTED = "unattributed"
FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # "score at 25/50/75/100 % of the budget"
GRID_POINTS = 101  # common budget-fraction grid for averaging anytime curves (every 1 %)


# ----------------------------------------------------------------------------- input records


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """One session as the matrix sees it. ``score`` is the official result: ``None`` = failure
    (no scorable checkpoint, N/A). ``end_reason`` is ``None`` while the session still runs;
    running sessions are left out of the statistics."""

    session_id: str
    study: str | None
    agent: str
    model: str | None
    task: str  # folder name ("t1_shakespeare") or short id ("t1")
    repeat: int
    score: float | None
    end_reason: str | None
    contract_hash: str | None  # task version hash: sessions compare only if these match
    budget_s: float
    active_s: float | None = None  # budget time actually used
    started_at: float | None = None  # epoch seconds
    scripts_launched: int | None = None  # training scripts the agent started (count_scripts)
    first_checkpoint_s: float | None = None  # budget seconds to the first checkpoint
    gpu_busy_s: float | None = None
    gpu_idle_s: float | None = None
    label: str | None = None  # the study's agent label (one configuration: adapter, model, args)
    disqualified: str | None = None  # why a person or an integrity rule struck the result (the paper's violations)
    flagged: int = 0  # scores with integrity flags (sealed scoring's notes: what the scored code did)
    sealed: bool | None = None  # None: the session predates the record
    network: str | None = None  # the contract's policy (open, api-only, none); None: not recorded
    val_gap_flag: str | None = None  # its selected checkpoint's val beats its test beyond the baseline's gap
    contended: bool | None = None  # ran with a foreign GPU process, throttling, other sessions, pauses (None: not recorded)
    # UNOFFICIAL, never ranked: the best scored-split score over all checkpoints (runner/scoring/unofficial.py)
    unofficial_test_best: float | None = None

    @property
    def finished(self) -> bool:
        return self.end_reason is not None

    @property
    def succeeded(self) -> bool:
        """Finished with a score that counts: a disqualified session counts as the paper's protocol
        violations do, in n/N but not in the mean."""
        return self.finished and self.score is not None and math.isfinite(self.score) and not self.disqualified


@dataclass(frozen=True, slots=True)
class ScorePoint:
    """One scored checkpoint: ``budget_elapsed_s`` is when it appeared (not when it was scored);
    ``value`` is ``None`` when scoring failed. Use the official re-evaluation where there is one."""

    session_id: str
    budget_elapsed_s: float
    value: float | None


@dataclass(frozen=True, slots=True)
class UtilSample:
    """One GPU utilisation sample (a ``gpu`` event): epoch seconds, percent, GPU index."""

    ts: float
    util_pct: float
    index: int = 0


@dataclass(frozen=True, slots=True)
class Activity:
    """What the agent was doing over ``[start, end)`` (epoch seconds)."""

    start: float
    end: float
    kind: ActivityKind


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
    n_val_gap: int = 0  # finished sessions with the val-test gap flag (runner/scoring/selection_gap.py)
    n_contended: int = 0  # finished sessions whose conditions record says contended (runner/session/contention.py)
    n_clean: int = 0  # finished sessions whose conditions record says clean

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


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof = 1); ``None`` below two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def sem(values: Sequence[float]) -> float | None:
    """Standard error of the mean, ``std / sqrt(n)`` with the sample std; ``None`` below two."""
    sd = sample_std(values)
    return None if sd is None else sd / math.sqrt(len(values))


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def relative_improvement(score: float, baseline: float, direction: Direction) -> float:
    """The paper's r_t: ``(s - b) / b`` where higher is better, ``(b - s) / b`` where lower is."""
    if baseline == 0:
        raise ValueError("relative improvement needs a non-zero baseline")
    return (score - baseline) / baseline if direction == "higher" else (baseline - score) / baseline


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
    value = _mean(list(per_task.values()))
    return Aggregate(value, per_task, tuple(expected), tuple(missing))


def task_sort_key(task: str) -> tuple[int, str]:
    """Order tasks by number (t2 before t10)."""
    m = re.match(r"[a-zA-Z]*(\d+)", task)
    return (int(m.group(1)) if m else 10**9, task)


def _resolve(specs: Iterable[TaskSpec] | None) -> dict[str, TaskSpec]:
    """Task lookup by folder name and short id, lower case."""
    table: dict[str, TaskSpec] = {}
    for spec in all_tasks().values() if specs is None else specs:
        table[spec.id.lower()] = spec
        table[spec.short.lower()] = spec
    return table


def resolve_task(name: str, specs: Iterable[TaskSpec] | None = None) -> TaskSpec | None:
    """The spec a session's task name (folder or short id, any case) refers to, if any."""
    return _resolve(specs).get(name.strip().lower())


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
    same label for different configurations), else the adapter and model."""
    return (o.study, o.label, o.agent, o.model) if o.label else (None, None, o.agent, o.model)


def split_demo(outcomes: Iterable[SessionOutcome], specs: Iterable[TaskSpec] | None = None
               ) -> tuple[list[SessionOutcome], list[SessionOutcome]]:
    """(the paper's tasks, the rest): only the first are compared with the paper; the demo task's
    matrix is shown on its own (its Agg is over T0 alone, not comparable with a seven-task Agg)."""
    table = _resolve(specs)
    bench: list[SessionOutcome] = []
    other: list[SessionOutcome] = []
    for o in outcomes:
        spec = table.get(o.task.strip().lower())
        (bench if spec is not None and spec.paper else other).append(o)
    return bench, other


def _cell(task: str, sessions: Sequence[SessionOutcome], col: TaskColumn) -> Cell:
    done = sorted(
        (s for s in sessions if s.finished), key=lambda s: (s.repeat, s.started_at or 0.0, s.session_id)
    )
    running = tuple(s.session_id for s in sessions if not s.finished)
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
        mean=_mean(scores),
        std=sample_std(scores),
        sem=sem(scores),
        best=best,
        best_session=best_session,
        session_ids=tuple(s.session_id for s in done),
        running_ids=running,
        contract_hashes=hashes,
        scripts_mean=_mean(scripts),
        first_checkpoint_mean_s=_mean(first_ck),
        budget_used_mean=_mean(used),
        gpu_busy_fraction=busy / (busy + idle) if busy + idle > 0 else None,
        n_disqualified=sum(1 for s in done if s.disqualified),
        n_flagged=sum(1 for s in done if s.flagged),
        n_unsealed=sum(1 for s in done if s.sealed is False),
        n_open_network=sum(1 for s in done if s.network == "open"),
        n_val_gap=sum(1 for s in done if s.val_gap_flag),
        n_contended=sum(1 for s in done if s.contended is True),
        n_clean=sum(1 for s in done if s.contended is False),
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
    table = _resolve(specs)
    groups: dict[tuple, dict[str, list[SessionOutcome]]] = {}
    unknown: set[str] = set()
    columns: dict[str, TaskColumn] = {}
    for o in outcomes:
        spec = table.get(o.task.strip().lower())
        if spec is None:
            unknown.add(o.task)
            continue
        if spec.short not in columns:
            columns[spec.short] = TaskColumn.from_spec(spec)
        groups.setdefault(row_key(o), {}).setdefault(spec.short, []).append(o)
    cols = tuple(sorted(columns.values(), key=lambda c: task_sort_key(c.task)))
    expected = _expected_tasks(cols, table, agg_tasks)
    rows = []
    several_studies = len({k[0] for k in groups if k[1] is not None}) > 1
    for (row_study, label, agent, model), by_task in groups.items():
        cells = {
            t: _cell(t, sessions, columns[t])
            for t, sessions in sorted(by_task.items(), key=lambda kv: task_sort_key(kv[0]))
        }
        name = row_label(agent, model, label, row_study if several_studies else None)
        rows.append(_row(name, agent, model, cells, cols, expected, measured))
    rows.sort(key=lambda r: r.label.lower())
    return Matrix(study, cols, tuple(rows), tuple(sorted(unknown)))


def measured_baselines(outcomes: Iterable[SessionOutcome], specs: Iterable[TaskSpec] | None = None
                       ) -> dict[str, MeasuredBaseline]:
    """The baseline measured here, per task short id: the mean official score of the successful
    sessions of the ``baseline`` study (``onegc baseline TASK`` runs the task's baseline
    ``train.py`` as the agent under the same contract as any session). Tasks whose baseline
    sessions pool different task contracts take only the newest contract's sessions."""
    table = _resolve(specs)
    by_task: dict[str, list[SessionOutcome]] = {}
    for o in outcomes:
        spec = table.get(o.task.strip().lower())
        if spec is not None and o.study == BASELINE_STUDY and o.succeeded and o.score is not None:
            by_task.setdefault(spec.short, []).append(o)
    out: dict[str, MeasuredBaseline] = {}
    for task, sessions in by_task.items():
        newest = max(sessions, key=lambda s: s.started_at or 0.0).contract_hash
        scores = [s.score for s in sessions if s.contract_hash == newest and s.score is not None]
        mean = _mean(scores)
        if mean is not None and mean != 0:
            out[task] = MeasuredBaseline(task, mean, sample_std(scores), len(scores))
    return out


@dataclass(frozen=True, slots=True)
class MeasuredBaseline:
    """A task's baseline as measured here: mean ± std of ``n`` baseline sessions' official scores."""

    task: str
    mean: float
    std: float | None
    n: int


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


# ----------------------------------------------------------------------------- anytime curves


@dataclass(frozen=True, slots=True)
class AnytimeCurve:
    """Best-so-far score against budget fraction, a right-continuous step function: ``steps``
    are (fraction, best) at each improvement; before the first it has no value."""

    session_id: str
    direction: Direction
    steps: tuple[tuple[float, float], ...]

    def at(self, fraction: float) -> float | None:
        value = None
        for f, v in self.steps:
            if f > fraction:
                break
            value = v
        return value


@dataclass(frozen=True, slots=True)
class AnytimeBand:
    """Anytime curves of several repeats on a common grid: at each fraction, the mean, sample
    std, min and max over the curves that have a checkpoint by then, and how many (``n``)."""

    grid: tuple[float, ...]
    mean: tuple[float | None, ...]
    std: tuple[float | None, ...]
    lo: tuple[float | None, ...]
    hi: tuple[float | None, ...]
    n: tuple[int, ...]
    n_curves: int


def anytime_curve(
    points: Iterable[ScorePoint], budget_s: float, direction: Direction, session_id: str = ""
) -> AnytimeCurve:
    """Best-so-far of a session's scored checkpoints. Failed scores are skipped; checkpoints
    saved in the grace period after the deadline count at fraction 1.0."""
    if budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    steps: list[tuple[float, float]] = []
    for p in sorted(points, key=lambda p: p.budget_elapsed_s):
        session_id = session_id or p.session_id
        if p.value is None or not math.isfinite(p.value):
            continue
        frac = min(1.0, max(0.0, p.budget_elapsed_s / budget_s))
        if steps and not better(p.value, steps[-1][1], direction):
            continue
        if steps and steps[-1][0] == frac:
            steps.pop()  # two checkpoints at the same moment: keep the better
        steps.append((frac, p.value))
    return AnytimeCurve(session_id, direction, tuple(steps))


def anytime_band(curves: Sequence[AnytimeCurve], grid: Sequence[float] | None = None) -> AnytimeBand:
    """Mean and spread of ``curves`` on ``grid`` (default: 0, 0.01, …, 1)."""
    pts = tuple(grid) if grid is not None else tuple(i / (GRID_POINTS - 1) for i in range(GRID_POINTS))
    mean, std, lo, hi, n = [], [], [], [], []
    for f in pts:
        vals = [v for v in (c.at(f) for c in curves) if v is not None]
        mean.append(_mean(vals))
        std.append(sample_std(vals))
        lo.append(min(vals) if vals else None)
        hi.append(max(vals) if vals else None)
        n.append(len(vals))
    return AnytimeBand(pts, tuple(mean), tuple(std), tuple(lo), tuple(hi), tuple(n), len(curves))


def scores_at(
    curve: AnytimeCurve, fractions: Sequence[float] = FRACTIONS, reached: float = 1.0
) -> dict[float, float | None]:
    """Best score reached by each budget fraction (``None``: no checkpoint by then). A session
    still running has ``reached`` only part of its budget: later fractions are left out (its
    score at 100 % is not today's best)."""
    return {f: curve.at(f) for f in fractions if f <= reached + 1e-9}


def time_to_first_checkpoint(points: Iterable[ScorePoint], scored_only: bool = False) -> float | None:
    """Budget seconds to the first checkpoint (with ``scored_only``, the first that scored)."""
    times = [
        p.budget_elapsed_s
        for p in points
        if not scored_only or (p.value is not None and math.isfinite(p.value))
    ]
    return min(times) if times else None


# ----------------------------------------------------------------------------- GPU time

Interval = tuple[float, float]


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _intersect(xs: Sequence[Interval], ys: Sequence[Interval]) -> list[Interval]:
    """Intersection of two sorted, disjoint interval lists."""
    out: list[Interval] = []
    i = j = 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _subtract(xs: Sequence[Interval], ys: Sequence[Interval]) -> list[Interval]:
    """``xs`` minus ``ys`` (both sorted and disjoint)."""
    out: list[Interval] = []
    j = 0
    for a, b in xs:
        while j < len(ys) and ys[j][1] <= a:
            j += 1
        k, start = j, a
        while k < len(ys) and ys[k][0] < b:
            if ys[k][0] > start:
                out.append((start, ys[k][0]))
            start = max(start, ys[k][1])
            k += 1
        if start < b:
            out.append((start, b))
    return out


def _total(xs: Iterable[Interval]) -> float:
    return math.fsum(b - a for a, b in xs)


@dataclass(frozen=True, slots=True)
class GpuSplit:
    """GPU time (GPU-seconds, summed over GPUs) busy and idle; ``idle_by`` splits the idle time
    by activity (:data:`IDLE_PRIORITY` order on overlaps) plus ``"unattributed"``."""

    busy_s: float
    idle_s: float
    idle_by: Mapping[str, float]

    @property
    def total_s(self) -> float:
        return self.busy_s + self.idle_s

    @property
    def busy_fraction(self) -> float | None:
        return self.busy_s / self.total_s if self.total_s > 0 else None


def gpu_time_split(
    samples: Iterable[UtilSample],
    activities: Iterable[Activity] = (),
    *,
    threshold_pct: float = BUSY_UTIL_PCT,
    max_gap_s: float = MAX_SAMPLE_GAP_S,
    window: Interval | None = None,
) -> GpuSplit:
    """Busy vs idle GPU time from utilisation samples, idle time split by what the agent did.

    Sample i stands for ``[ts_i, ts_{i+1})`` (at most ``max_gap_s``; the last one for the median
    spacing, or :data:`DEFAULT_SAMPLE_S`); it is busy when ``util_pct > threshold_pct``. With
    ``window`` (the session's start and end) time outside it is not counted.
    """
    by_gpu: dict[int, list[UtilSample]] = {}
    for s in samples:
        by_gpu.setdefault(s.index, []).append(s)
    kinds = {k: _union((a.start, a.end) for a in activities if a.kind == k) for k in IDLE_PRIORITY}
    busy_s = idle_s = 0.0
    idle_by = dict.fromkeys((*IDLE_PRIORITY, UNATTRIBUTED), 0.0)
    for series in by_gpu.values():
        series.sort(key=lambda s: s.ts)
        gaps = [b.ts - a.ts for a, b in itertools.pairwise(series) if b.ts > a.ts]
        nominal = min(statistics.median(gaps), max_gap_s) if gaps else DEFAULT_SAMPLE_S
        busy: list[Interval] = []
        idle: list[Interval] = []
        for i, s in enumerate(series):
            gap = series[i + 1].ts - s.ts if i + 1 < len(series) else nominal
            span = (s.ts, s.ts + min(gap, max_gap_s))
            (busy if s.util_pct > threshold_pct else idle).append(span)
        busy_u, idle_u = _union(busy), _union(idle)
        if window is not None:
            busy_u, idle_u = _intersect(busy_u, [window]), _intersect(idle_u, [window])
        busy_s += _total(busy_u)
        idle_s += _total(idle_u)
        remaining = idle_u
        for kind in IDLE_PRIORITY:
            hit = _intersect(remaining, kinds[kind])
            idle_by[kind] += _total(hit)
            remaining = _subtract(remaining, hit)
        idle_by[UNATTRIBUTED] += _total(remaining)
    return GpuSplit(busy_s, idle_s, idle_by)


class TimedEvent(Protocol):
    """Any ``runner.wire.events`` event: all the timeline needs of an event it does not look into."""

    @property
    def ts(self) -> float: ...

    @property
    def seq(self) -> int: ...


def activities_from_events(events: Iterable[TimedEvent], end_ts: float | None = None) -> list[Activity]:
    """Label a session's timeline from its events (``runner.wire.events`` objects, in any order).

    - ``model_thinking``: the agent waits for the model — between transcript events while no tool
      call is open, from ``agent_started`` (or the first transcript event) on;
    - ``tool_running``: from a ``tool_call`` until the ``tool_result`` with its ``call_id``
      (a call without an id is closed by the next result without one);
    - ``no_training_process``: no training script alive (``process`` events, ``training=True``);
    - ``paused``: budget ``paused`` until ``resumed``/``running``/``expired``.

    The timeline ends at ``session_ended`` or ``end_ts`` (for a live session: now).
    """
    return activities_in_order(sorted(events, key=lambda e: (e.ts, e.seq)), end_ts)


def activities_in_order(events: Iterable[TimedEvent], end_ts: float | None = None) -> list[Activity]:
    """:func:`activities_from_events` of events already in ``(ts, seq)`` order, read once: the
    record of a session of any size is streamed (issue 38: a flooded session's millions of
    transcript events), and what is held is its activities, a stretch of one kind being one
    activity however many events it spans."""
    start = end = last_ts = agent_start = None
    talk: list[Activity] = []  # model thinking / tool running, from the transcript (cut at the end)
    out: list[Activity] = []
    cursor: float | None = None
    open_calls: list[str | None] = []
    alive: set[int] = set()
    idle_from: float | None = None
    processes_seen = False
    paused_at: float | None = None
    for e in events:
        start = e.ts if start is None else start
        last_ts = e.ts
        if isinstance(e, SessionStarted) and not processes_seen:
            start = idle_from = e.ts
        elif isinstance(e, SessionEnded) and end is None:
            end = e.ts
        elif isinstance(e, AgentStarted) and agent_start is None:
            agent_start = e.ts
            talk.clear()  # the agent's time begins here (transcript lines dated before it add nothing)
            cursor = e.ts if cursor is None else max(cursor, e.ts)
        elif isinstance(e, TranscriptEvent):
            cursor = e.ts if cursor is None else cursor
            if e.ts > cursor:
                _extend(talk, cursor, e.ts, "tool_running" if open_calls else "model_thinking")
            cursor = max(cursor, e.ts)
            if e.kind == "tool_call":
                open_calls.append(e.call_id)
            elif e.kind == "tool_result" and open_calls:
                if e.call_id in open_calls:
                    open_calls.remove(e.call_id)
                elif e.call_id is None:
                    open_calls.pop(0)
        elif isinstance(e, ProcessEvent) and e.training:  # no training process alive
            processes_seen = True
            idle_from = start if idle_from is None else idle_from
            if e.action == "started":
                if not alive and e.ts > idle_from:
                    out.append(Activity(idle_from, e.ts, "no_training_process"))
                alive.add(e.pid)
            else:
                alive.discard(e.pid)
                if not alive:
                    idle_from = e.ts
        elif isinstance(e, BudgetEvent):  # paused budget
            if e.state == "paused" and paused_at is None:
                paused_at = e.ts
            elif e.state != "paused" and paused_at is not None:
                out.append(Activity(paused_at, e.ts, "paused"))
                paused_at = None
    if start is None or last_ts is None:
        return []
    end = end if end is not None else (end_ts if end_ts is not None else last_ts)
    if cursor is not None and cursor < end:
        _extend(talk, cursor, end, "tool_running" if open_calls else "model_thinking")
    talk = [Activity(a.start, min(a.end, end), a.kind) for a in talk]
    idle_from = start if idle_from is None else idle_from
    if not alive and idle_from < end:
        out.append(Activity(idle_from, end, "no_training_process"))
    if paused_at is not None and paused_at < end:
        out.append(Activity(paused_at, end, "paused"))
    return [a for a in talk + out if a.end > a.start]


def _extend(acts: list[Activity], start: float, end: float, kind: ActivityKind) -> None:
    """Add ``[start, end)`` of ``kind``, as a longer last activity where it goes on from it."""
    if acts and acts[-1].kind == kind and acts[-1].end == start:
        acts[-1] = Activity(acts[-1].start, end, kind)
    else:
        acts.append(Activity(start, end, kind))


def count_scripts(events: Iterable[TimedEvent]) -> int:
    """Training scripts the agent launched (the paper's Table 5): ``process`` ``started``
    events with ``training=True``."""
    return sum(1 for e in events if isinstance(e, ProcessEvent) and e.action == "started" and e.training)


def scripts_per_cell(matrix: Matrix) -> dict[tuple[str, str], float | None]:
    """Mean scripts launched per session, by (row label, task)."""
    return {(r.label, t): c.scripts_mean for r in matrix.rows for t, c in r.cells.items()}


__all__ = [
    "BUSY_UTIL_PCT",
    "FRACTIONS",
    "IDLE_PRIORITY",
    "MAX_SAMPLE_GAP_S",
    "PAPER_STUDY",
    "UNATTRIBUTED",
    "Activity",
    "ActivityKind",
    "Aggregate",
    "AnytimeBand",
    "AnytimeCurve",
    "Cell",
    "Direction",
    "GpuSplit",
    "Matrix",
    "Row",
    "ScorePoint",
    "SessionOutcome",
    "TaskColumn",
    "TimedEvent",
    "UtilSample",
    "activities_from_events",
    "aggregate",
    "anytime_band",
    "anytime_curve",
    "build_matrix",
    "count_scripts",
    "gpu_time_split",
    "paper_matrix",
    "relative_improvement",
    "resolve_task",
    "row_key",
    "row_label",
    "split_demo",
    "sample_std",
    "scores_at",
    "scripts_per_cell",
    "sem",
    "task_sort_key",
    "time_to_first_checkpoint",
]
