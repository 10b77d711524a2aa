"""``onegc sessions`` as a plain table: whole session ids (an id cut in the middle is no id a
command takes), one line per session, never a wrapped column; each record's state (verified, sealed,
chained, unchained, TAMPERED, DIFFERS: docs/verify.md), and a line naming where for each one that is
tampered or not reproduced. Where the terminal is narrower
than the table, the columns go from the end of :data:`COLUMNS` (their priority), and a line
under the table names them; a pipe gets every column."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence

from onegc_tui.views.format import clock, fmt_score
from onegc_tui.views.sessions_view import (
    CONTENDED_MARK,
    INTEGRITY_MARK,
    TRUNCATED_MARK,
    integrity_note,
    left_cell,
    official_cell,
    record_note,
    record_word,
)
from onegc_tui.views.task_facts import find, task_facts
from onegc_tui.views.text_table import text_table
from runner.wire.defaults import scored_split_sealed, split_mark
from runner.wire.textsafe import safe_text

# in priority order: the first ones stay on any terminal (the id is whole), the rest while they fit
COLUMNS = ("session", "state", "left / end", "official", "record", "best val", "task", "agent", "ckpts")
RIGHT = frozenset({"official", "best val", "ckpts"})
MARKS = ((INTEGRITY_MARK, "unsealed, network open or integrity-flagged scores (onegc monitor's detail says which)"),
         (CONTENDED_MARK, "ran contended: another session on the host, a foreign GPU process, throttling or pauses "
                          "(onegc sessions --json: conditions)"),
         (TRUNCATED_MARK, "the record was cut past the session's caps (onegc sessions --json: truncated, "
                          "truncated_bytes)"))


def session_row(r: dict) -> dict[str, str]:
    """One summary row's cells, marks after the left/end cell (the id stays a whole id)."""
    facts = task_facts()
    task = find(facts, r["task"]) if r.get("task") else None
    short = task.short if task else (r.get("task") or "?")[:4]  # a task of another onegc version
    ended = r.get("state") in ("ended", "failed")
    left = left_cell(r) if ended else ("" if r.get("remaining_s") is None else clock(r["remaining_s"]))
    marks = "".join(mark for mark, on in ((INTEGRITY_MARK, integrity_note({**r, "contended": 0})),
                                          (CONTENDED_MARK, r.get("contended")), (TRUNCATED_MARK, r.get("truncated")))
                    if on)
    contract = json.loads(r["contract"]) if r.get("contract") else {}
    mark = split_mark(scored_split_sealed(contract), task is not None and task.sealable)  # as history's rows
    agent = f"{r.get('agent') or ''} {mark}".strip()
    cells = {"session": r["session_id"], "state": r.get("state") or "", "left / end": f"{left} {marks}".strip(),
             "official": official_cell(r), "record": record_word(r),
             "best val": fmt_score(r.get("best_live")) if r.get("best_live") is not None else "", "task": short,
             "agent": agent, "ckpts": str(r.get("n_checkpoints") or 0)}
    return {k: safe_text(v, one_line=True) for k, v in cells.items()}  # one line, no terminal controls


def plain_sessions(rows: Sequence[dict], width: int | None) -> list[str]:
    """The table's lines, for a terminal ``width`` cells wide (None: a pipe, every column), then a
    line naming the columns left out and one per mark shown."""
    cells = [session_row(r) for r in rows]
    widths = [max(len(name), *(len(c[name]) for c in cells)) for name in COLUMNS]
    shown = len(COLUMNS)
    while width is not None and shown > 1 and sum(widths[:shown]) + 2 * (shown - 1) > width:
        shown -= 1
    names = COLUMNS[:shown]
    lines = text_table(list(names), [[c[n] for n in names] for c in cells],
                       right=frozenset(i for i, n in enumerate(names) if n in RIGHT))
    notes = [f"not shown at {width} columns: {', '.join(COLUMNS[shown:])} (--json has them)"] if shown < len(COLUMNS) else []
    notes += [f"{mark}: {meaning}" for mark, meaning in MARKS if any(mark in c["left / end"] for c in cells)]
    # a record tampered with or not reproduced (docs/verify.md) is never silently trusted: where, in words
    notes += [safe_text(f"{r['session_id']}: {record_note(r)}", one_line=True) for r in rows
              if record_word(r) in ("TAMPERED", "DIFFERS")]
    for note in notes:  # prose under the table, wrapped at words with an indent (never a column of it)
        lines += textwrap.wrap(note, width, subsequent_indent="   ") if width else [note]
    return lines
