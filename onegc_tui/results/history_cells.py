"""The history matrix from its summary in the store: each cell kept whole, and computed again only
when the outcome of one of its sessions changed.

As the ingest writes a session's summary row, a trigger marks the session when what its cell reads
changed (schema.py migration 13: while it runs, who and what it is; once ended, its figures). A
reader first :func:`settle`\\ s the marked sessions: each one's cell keys (its row and task, over
the whole home and within its study), then each cell they left or joined, computed from that
cell's sessions alone by the matrix's own code (:func:`onegc_tui.results.matrix.cell_of`) and
stored. A new process over a home that did not change reads the stored cells and assembles the
matrix (:func:`onegc_tui.results.matrix.assemble`): it computes no cell (over 100 000 sessions,
docs/benchmarks.md). The cells equal :func:`~onegc_tui.results.matrix.build_matrix`'s of the same
sessions (tests/results/test_history_cells.py compares them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from onegc_tui.results.matrix import Cell, Matrix, assemble, build_matrix, cell_of, row_key, split_demo
from onegc_tui.store import Store
from onegc_tui.store import history as sql
from onegc_tui.views.monitor_data import outcome_of, outcomes
from onegc_tui.views.outcomes import SessionOutcome, task_table
from tasks import TaskSpec

_TUPLES = frozenset(f.name for f in fields(Cell) if f.type in ("tuple[str, ...]",))


def cell_keys(o: SessionOutcome, table: Mapping[str, TaskSpec],
              known: dict[tuple, tuple[str | None, str | None]] | None = None) -> tuple[str | None, str | None]:
    """A session's cell keys (over the whole home, within its study): its row (:func:`row_key`) and
    task as JSON; None where it is in no cell (an aborted session, a task no spec names). ``known``:
    the keys made so far, by what they are made of (a home's sessions share a few dozen)."""
    spec = table.get(o.task.strip().lower())
    if o.end_reason == "aborted" or spec is None:
        return None, None
    parts = (*row_key(o), spec.short, o.study)
    if known is not None and parts in known:
        return known[parts]
    keys = json.dumps(list(parts[:5])), (json.dumps([o.study, *parts[1:5]]) if o.study is not None else None)
    if known is not None:
        known[parts] = keys
    return keys


def _decode(key: str) -> tuple[tuple, str]:
    """A home key's (row key, task); a study key's row key as the home's (a label's study, else None)."""
    study, label, agent, model, task = json.loads(key)
    return ((study if label else None), label, agent, model), task


def cell_json(cell: Cell) -> str:
    return json.dumps({f.name: getattr(cell, f.name) for f in fields(Cell)})


def cell_from_json(text: str) -> Cell:
    doc: dict[str, Any] = json.loads(text)
    fields_: dict[str, Any] = {k: tuple(v) if k in _TUPLES else v for k, v in doc.items()}
    return Cell(**fields_)


def settle(store: Store) -> int:
    """Compute again, and store, the cells of the sessions marked since; returns how many cells.
    Each session is read once, whatever number of cells it is in (after a reindex, all of them)."""
    if not sql.marked(store):
        return 0
    table = task_table(None)
    with store.transaction(immediate=True):  # what it reads is what it writes over: no ingest commits between
        dirty = sql.marked(store)
        before = sql.memberships(store, dirty)
        now: dict[str, tuple[SessionOutcome, str | None, str | None]] = {}
        known: dict[tuple, tuple[str | None, str | None]] = {}
        for row in sql.outcome_rows_of(store, dirty):
            o = outcome_of(row)
            now[o.session_id] = (o, *cell_keys(o, table, known))
        sql.set_memberships(store, [(sid, *now[sid][1:]) if sid in now else (sid, None, None) for sid in dirty])
        touched: dict[str, set[str]] = {"home": set(), "study": set()}
        for sid in dirty:
            was = before.get(sid, (None, None))
            is_ = (now[sid][1], now[sid][2]) if sid in now else (None, None)
            touched["home"] |= {k for k in (was[0], is_[0]) if k}
            touched["study"] |= {k for k in (was[1], is_[1]) if k}
        members = sql.members_of(store, touched["home"], touched["study"])
        others = {o[0]: outcome_of(o) for o in sql.outcome_rows_of(store, [m[0] for m in members if m[0] not in now])}
        by_cell: dict[tuple[str, str], list[SessionOutcome]] = {}
        for sid, home, study_key in members:
            found = now[sid][0] if sid in now else others.get(sid)
            if found is None:
                continue
            o = found
            if home in touched["home"]:
                by_cell.setdefault(("home", home), []).append(o)
            if study_key in touched["study"]:
                by_cell.setdefault(("study", study_key), []).append(o)
        for scope, cell_keys_ in touched.items():
            for key in sorted(cell_keys_):
                outcomes = by_cell.get((scope, key), [])
                _row, task = _decode(key)
                sql.put_cell(store, "home" if scope == "home" else json.loads(key)[0], key, task,
                             cell_json(cell_of(task, outcomes, table)) if outcomes else None)
        sql.unmark(store, dirty)
    return len(touched["home"]) + len(touched["study"])


@dataclass(frozen=True)
class History:
    """The matrix of the paper's tasks, and of the rest (the demo task, tasks no spec names) where
    there are sessions of them."""

    bench: Matrix
    other: Matrix | None


def history(store: Store, study: str | None = None, include_demo: bool = False,
            measured: Mapping[str, float] | None = None, rescored: bool = False) -> History:
    """``onegc history``'s matrices (of ``study``: its own cells; without the demo task unless
    ``include_demo``), from the stored cells, after :func:`settle`. A store read in place (a home
    this user cannot write) whose cells are not current cannot store them: its matrices are
    computed from every session, as :func:`~onegc_tui.results.matrix.build_matrix` does; so are
    the ``rescored`` ones (each session's re-score by a newer harness where it has one: the cells
    kept are of the recorded scores)."""
    if rescored or (store.read_only and sql.marked(store)):
        paper_tasks, other_tasks = split_demo(outcomes(store, study, include_demo=include_demo, rescored=rescored))
        name = study or "ours"
        return History(build_matrix(paper_tasks, study=name, measured=measured),
                       build_matrix(other_tasks, study=f"{name} (demo tasks)") if other_tasks else None)
    settle(store)
    table = task_table(None)
    name = study or "ours"
    cells: dict[bool, dict[tuple, dict[str, Cell]]] = {True: {}, False: {}}
    for key, task, text in sql.cells(store, study if study is not None else "home"):
        spec = table[task]
        if not include_demo and (spec.id in sql.DEMO_TASKS or spec.short in sql.DEMO_TASKS):
            continue
        row, _task = _decode(key)
        cells[bool(spec.paper)].setdefault(row, {})[task] = cell_from_json(text)
    unknown: dict[bool, set[str]] = {True: set(), False: set()}
    aborted = {True: 0, False: 0}
    present = {True: False, False: False}
    for task, n, n_aborted in sql.task_counts(store, study, include_demo):
        named = table.get(task.strip().lower())
        paper = named is not None and bool(named.paper)
        present[paper] = True
        aborted[paper] += n_aborted or 0
        if named is None and n > (n_aborted or 0):
            unknown[paper].add(task)
    bench = assemble(cells[True], name, table, measured=measured, unknown=unknown[True], n_aborted=aborted[True])
    other = assemble(cells[False], f"{name} (demo tasks)", table, unknown=unknown[False], n_aborted=aborted[False]) \
        if present[False] else None
    return History(bench, other)


__all__ = ["History", "cell_from_json", "cell_json", "cell_keys", "history", "settle"]
