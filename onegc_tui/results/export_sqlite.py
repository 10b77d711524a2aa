"""``onegc export --format sqlite``: a tidy study database for Datasette and sqlite-utils.

Written with sqlite-utils (imported lazily: it is the ``[export]`` extra, ``pip install
'onegc[export]'``; onegc's own store needs nothing but the standard library). Tables:

- ``sessions``     one row per session (primary key ``session_id``): the configuration, the
                   official result, the UNOFFICIAL test-best (``unofficial_test_best``, labelled
                   in ``_notes``), tokens, cost, end reason, integrity marks;
- ``checkpoints``  one row per checkpoint score (live val score, ``official = 0``; the harness's
                   re-evaluation on the scored split, ``official = 1``), foreign key to sessions;
- ``transcript``   every transcript step, foreign key to sessions, full-text search on ``text``;
- ``cells``        the agent × task matrix (mean, SD, SEM, n/N, best of N), the paper's rows too;
- ``time_ledger``  each session's time split (onegc_tui/views/time_ledger.py), foreign key to sessions;
- ``paired``       paired comparisons per task (mean difference, SD, SEM, bootstrap CI, noise floor);
- ``_notes``       what the columns that need a word mean (SD vs SEM, unofficial, the ranking key).

Everything in it comes from the store, which holds what the runner recorded; the transcript's text
is the agent's and untrusted: it is data here, never markup (Datasette escapes it).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from onegc_tui.results.matrix import Matrix, build_matrix, paper_matrix, split_demo
from onegc_tui.results.paired import CI_LABEL, NOISE_LABEL, SD_LABEL, SEM_LABEL
from onegc_tui.results.paired_table import as_record
from onegc_tui.results.study_data import StudyData
from onegc_tui.store import Store
from onegc_tui.views.sessions_view import conditions_note, not_checked
from onegc_tui.views.task_facts import scored_split
from runner.errors import OnegcError
from runner.scoring.unofficial import LABEL as UNOFFICIAL_LABEL
from runner.wire.verdicts import read_json, records

EXTRA_HINT = "pip install 'onegc[export]' (or: pip install sqlite-utils)"
BATCH_ROWS = 1000  # transcript rows per insert: a session of any size is streamed through in bounded memory
NOTES = {
    "sessions.score": "the official result: the val-best checkpoint's score on the task's scored split (score_split)",
    "sessions.conditions": "what the score was measured under where not clean: contention, throttling, caps reached, "
                           "a truncated record (empty: clean)",
    "sessions.unofficial_test_best": UNOFFICIAL_LABEL,
    "cells.std": "SD: sample standard deviation (ddof=1) over successful repeats",
    "cells.sem": "SEM: SD / sqrt(n_success)",
    "paired.sd": SD_LABEL,
    "paired.sem": SEM_LABEL,
    "paired.ci_lo": CI_LABEL,
    "paired.mean_diff": "mean paired difference, oriented: positive = configuration a did better",
    "paired.noise_floor": NOISE_LABEL,
    "sessions.truncated": "lines and transcript events of the agent's output left out of the record past the "
                          "session's caps (counted by the runner; the transcript table lacks them)",
    "sessions.truncated_bytes": "their bytes",
    "sessions.caps_reached": "how often a memory, process or disk cap of the session stopped the agent (its warnings)",
    "checkpoints.official": "0: live score on the validation split (ranks); 1: the harness's re-evaluation on the scored split",
}


class MissingExtra(OnegcError, RuntimeError):
    """An optional dependency an export needs is not installed."""


def _sqlite_utils() -> Any:
    try:
        import sqlite_utils
    except ImportError:
        raise MissingExtra(f"the sqlite export needs sqlite-utils: {EXTRA_HINT}") from None
    return sqlite_utils


def _cells(matrices: list[Matrix]) -> list[dict]:
    out = []
    for m in matrices:
        for row in m.rows:
            for task, c in row.cells.items():
                out.append({"study": m.study, "config": row.label, "agent": row.agent, "model": row.model,
                            "task": task, "n_success": c.n_success, "n_total": c.n_total, "mean": c.mean,
                            "std": c.std, "sem": c.sem, "best": c.best, "best_session": c.best_session,
                            "n_disqualified": c.n_disqualified, "n_flagged": c.n_flagged,
                            "mixed_contracts": c.mixed_contracts, "n_tampered": c.n_tampered,
                            "n_reproduced": c.n_reproduced, "n_differs": c.n_differs})
    return out


def write_sqlite(store: Store, data: StudyData, out: Path) -> dict[str, int]:
    """Write ``data`` (and the transcripts from ``store``) to a new database at ``out``; returns
    the row count of each table. An existing file is replaced (written aside, then moved)."""
    su = _sqlite_utils()
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.unlink(missing_ok=True)
    db = su.Database(tmp)
    try:
        sessions = []
        for s in data.sessions:
            o = s.outcome
            sessions.append({**dataclasses.asdict(o), "cost_usd": s.cost_usd, "tokens_in": s.row.get("tokens_in"),
                             "tokens_out": s.row.get("tokens_out"), "end_detail": s.row.get("end_detail"),
                             "best_checkpoint": s.row.get("best_checkpoint"), "gpu_name": s.row.get("gpu_name"),
                             "contract": s.row.get("contract"), "truncated": s.row.get("truncated") or 0,
                             "truncated_bytes": s.row.get("truncated_bytes") or 0, "score_split": scored_split(o.task),
                             "conditions": conditions_note(s.row),
                             "not_checked": ", ".join(not_checked(s.row)) if s.row.get("not_checked") is not None else None})
        db["sessions"].insert_all(sessions, pk="session_id", alter=True)
        ids = {s["session_id"] for s in sessions}
        checkpoints = [{**{k: r[k] for k in ("session_id", "name", "official", "budget_elapsed_s", "value", "error",
                                             "eval_s", "self_reported", "script")},
                        "verdicts": json.dumps(records(read_json(r.get("verdicts"), r.get("flags"))))}
                       for sid in ids for r in store.checkpoints(sid)]
        db["checkpoints"].create({"session_id": str, "name": str, "official": int, "budget_elapsed_s": float,
                                  "value": float, "error": str, "eval_s": float, "self_reported": float,
                                  "verdicts": str, "script": str}, pk=("session_id", "name", "official"),
                                 foreign_keys=[("session_id", "sessions", "session_id")])
        db["checkpoints"].insert_all(checkpoints)
        db["transcript"].create({"session_id": str, "seq": int, "ts": float, "role": str, "kind": str, "tool": str,
                                 "call_id": str, "exit_code": int, "text": str}, pk=("session_id", "seq"),
                                foreign_keys=[("session_id", "sessions", "session_id")])
        for sid in sorted(ids):  # every step, streamed from the store (issue 38: a flooded session)
            db["transcript"].insert_all(
                ({k: r[k] for k in ("session_id", "seq", "ts", "role", "kind", "tool", "call_id", "exit_code", "text")}
                 for r in store.stream_transcript(sid)), batch_size=BATCH_ROWS)
        db["transcript"].enable_fts(["text"], create_triggers=True)
        bench, demo = split_demo(data.outcomes)
        matrices = [build_matrix(bench, study=data.study or "ours"), paper_matrix()]
        if demo:
            matrices.append(build_matrix(demo, study=f"{data.study or 'ours'} (demo tasks)"))
        db["cells"].insert_all(_cells(matrices), pk=("study", "config", "task"), replace=True)
        ledgers = [s.ledger.as_dict() for s in data.sessions if s.ledger is not None]
        if ledgers:
            db["time_ledger"].insert_all(ledgers, pk="session_id", alter=True,
                                         foreign_keys=[("session_id", "sessions", "session_id")])
        paired = [{k: json.dumps(v) if isinstance(v, list) else v for k, v in as_record(c).items()}
                  for c in data.comparisons()]
        if paired:
            db["paired"].insert_all(paired, pk=("task", "a", "b"))
        db["_notes"].insert_all(({"column": k, "note": v} for k, v in NOTES.items()), pk="column")
        counts = {name: db[name].count for name in db.table_names() if not name.startswith("transcript_fts")}
    finally:
        db.close()
    tmp.replace(out)
    return counts


__all__ = ["EXTRA_HINT", "MissingExtra", "write_sqlite"]
