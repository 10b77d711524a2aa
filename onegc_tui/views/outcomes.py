"""A session as the matrix, the history and the monitor see it (:class:`SessionOutcome`, the store
turns its rows into these), the task it names (:func:`resolve_task`) and the baselines measured
here (:func:`measured_baselines`: ``onegc baseline`` sessions). Pure; no UI, and no I/O beyond
reading the task registry (``tasks.all_tasks``) when no specs are passed."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from onegc_tui.views.statistics import mean_or_none, sample_std
from onegc_tui.views.task_facts import facts_of
from runner.integrity.selection_gap import BASELINE_STUDY
from runner.wire.defaults import split_mark
from tasks import TaskSpec, all_tasks


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
    truncated: int = 0  # lines of the agent's output its record left out past the caps (runner/wire/record_caps.py)
    caps_reached: int = 0  # times a memory, process or disk cap stopped its agent (runner.wire.defaults.CAP_WARNINGS)
    # UNOFFICIAL, never ranked: the best scored-split score over all checkpoints (runner/scoring/unofficial.py)
    unofficial_test_best: float | None = None
    scored_split: str | None = None  # "sealed": its targets were never in the workspace (runner/integrity/sealed_split.py)
    whole: float | None = None  # sealed: the whole split's figure beside ``score`` (its private part's)
    # its record against its chain and seal: sealed, chained, unchained, tampered (runner/scoring/seal.py; None: not checked)
    record: str | None = None
    verified: str | None = None  # what `onegc verify` found: reproduced, differs, tampered (None: not verified)
    rescore: float | None = None  # the official score a newer harness re-derived (`onegc verify --rescore`)
    rescore_by: str | None = None  # which harness, when (None: never re-scored)

    @property
    def tampered(self) -> bool:
        """Its record was edited after the session (or its folder is not where it was made): its
        number is never trusted, in n/N but not in the mean."""
        return self.record == "tampered" or self.verified == "tampered"

    @property
    def row_agent(self) -> str:
        """The agent as rows name it, with how its scored split was held where the task leaves a
        choice (:func:`runner.wire.defaults.split_mark`): ``scripted [sealed split]`` (its targets
        never in the workspace), ``scripted [paper split]`` (the paper's workspace, targets the
        agent could read; a session recorded before the choice existed had that too). The two are
        contracts of their own: never pooled, each with rows of its own. On T4-T6 the scored split
        is never in the workspace whatever the mode: ``scripted``, unmarked."""
        facts = facts_of(self.task)
        sealed = self.scored_split == "sealed"
        mark = split_mark(sealed, facts is not None and facts.sealable)
        return f"{self.agent} {mark}" if mark else self.agent

    @property
    def finished(self) -> bool:
        return self.end_reason is not None

    @property
    def succeeded(self) -> bool:
        """Finished with a score that counts: a disqualified session counts as the paper's protocol
        violations do, in n/N but not in the mean; so does one whose record was tampered with."""
        return (self.finished and self.score is not None and math.isfinite(self.score) and not self.disqualified
                and not self.tampered)


def task_table(specs: Iterable[TaskSpec] | None) -> dict[str, TaskSpec]:
    """Task lookup by folder name and short id, lower case."""
    table: dict[str, TaskSpec] = {}
    for spec in all_tasks().values() if specs is None else specs:
        table[spec.id.lower()] = spec
        table[spec.short.lower()] = spec
    return table


def resolve_task(name: str, specs: Iterable[TaskSpec] | None = None) -> TaskSpec | None:
    """The spec a session's task name (folder or short id, any case) refers to, if any."""
    return task_table(specs).get(name.strip().lower())


@dataclass(frozen=True, slots=True)
class MeasuredBaseline:
    """A task's baseline as measured here: mean ± std of ``n`` baseline sessions' official scores."""

    task: str
    mean: float
    std: float | None
    n: int


def measured_baselines(outcomes: Iterable[SessionOutcome], specs: Iterable[TaskSpec] | None = None
                       ) -> dict[str, MeasuredBaseline]:
    """The baseline measured here, per task short id: the mean official score of the successful
    sessions of the ``baseline`` study (``onegc baseline TASK`` runs the task's baseline
    ``train.py`` as the agent under the same contract as any session). Tasks whose baseline
    sessions pool different task contracts take only the newest contract's sessions."""
    table = task_table(specs)
    by_task: dict[str, list[SessionOutcome]] = {}
    for o in outcomes:
        spec = table.get(o.task.strip().lower())
        if spec is not None and o.study == BASELINE_STUDY and o.succeeded and o.score is not None:
            by_task.setdefault(spec.short, []).append(o)
    out: dict[str, MeasuredBaseline] = {}
    for task, sessions in by_task.items():
        newest = max(sessions, key=lambda s: s.started_at or 0.0).contract_hash
        scores = [s.score for s in sessions if s.contract_hash == newest and s.score is not None]
        mean = mean_or_none(scores)
        if mean is not None and mean != 0:
            out[task] = MeasuredBaseline(task, mean, sample_std(scores), len(scores))
    return out


def scores_note(outcomes: Iterable[SessionOutcome], rescored: bool) -> str:
    """Which scores the figures are: as recorded, or re-scores by a newer harness (and how many)."""
    outcomes = list(outcomes)
    n = sum(1 for o in outcomes if o.rescore_by)
    if not rescored:
        return (f"Scores: as each session recorded them ({n} sessions also have a re-score by a newer harness: "
                "--rescored shows those)" if n else "Scores: as each session recorded them.")
    harnesses = sorted({o.rescore_by for o in outcomes if o.rescore_by})
    return (f"Scores: re-scored by a newer harness ({'; '.join(harnesses) or 'none'}) for {n} of {len(outcomes)} "
            "sessions (onegc verify --rescore); the others as recorded")


__all__ = ["MeasuredBaseline", "SessionOutcome", "measured_baselines", "resolve_task", "scores_note", "task_table"]
