"""What each matrix row spent: sessions, tokens in and out, and cost, for ``onegc history``.

Rows are the matrix's own (:func:`onegc_tui.results.matrix.row_key`, named by
:func:`~onegc_tui.results.matrix.row_label`), so each line of this table sits beside a line of the
matrix. The figures are the per-session summary's (the agent CLI's usage items, summed; its
final ``result`` item replaces them), read in one query. Every session counts, finished or not:
running ones have spent what they have spent so far. Cost is what the agent CLI reported, or
onegc's price table where the CLI reports none; a session with no price known shows ``-`` and
adds nothing to its row's cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from onegc_tui.results.matrix import row_key, row_label, shown_rows
from onegc_tui.store import Store
from onegc_tui.views.format import count, fmt_cost, fmt_tokens
from onegc_tui.views.outcomes import SessionOutcome
from runner.wire.textsafe import safe_text

_CHUNK = 500  # up to this many ids: looked up by key; more: one pass over the table (SQLite's parameter limit)


@dataclass
class RowUsage:
    label: str
    sessions: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


def session_usage(store: Store, session_ids: Sequence[str]) -> dict[str, tuple[int, int, float]]:
    """``(tokens_in, tokens_out, cost_usd)`` of each session, by id: a lookup by key for a few
    (a history cell), one pass over the summary table for many (a history of 100 000 sessions)."""
    columns = "SELECT session_id, tokens_in, tokens_out, cost_usd FROM sessions"
    if not session_ids:
        return {}
    rows: Iterable[tuple]
    if len(session_ids) > _CHUNK:
        wanted = set(session_ids)
        rows = (r for r in store.conn.execute(columns) if r[0] in wanted)
    else:
        rows = store.conn.execute(f"{columns} WHERE session_id IN ({','.join('?' * len(session_ids))})",
                                  list(session_ids))
    return {sid: (int(t_in or 0), int(t_out or 0), float(cost or 0.0)) for sid, t_in, t_out, cost in rows}


def usage_rows(outcomes: Sequence[SessionOutcome], usage: dict[str, tuple[int, int, float]]) -> list[RowUsage]:
    """One :class:`RowUsage` per matrix row of ``outcomes``, sorted as the matrix sorts its rows."""
    several_studies = len({o.study for o in outcomes if o.label is not None}) > 1
    rows: dict[tuple, RowUsage] = {}
    shown = shown_rows(row_key(o) for o in outcomes)  # as the matrix joins T4-T6's unmarked sessions
    for o in outcomes:
        key = shown[row_key(o)]
        study, label, agent, model = key
        row = rows.get(key)
        if row is None:
            row = rows[key] = RowUsage(row_label(agent, model, label, study if several_studies else None))
        t_in, t_out, cost = usage.get(o.session_id, (0, 0, 0.0))
        row.sessions += 1
        row.tokens_in += t_in
        row.tokens_out += t_out
        row.cost_usd += cost
    return sorted(rows.values(), key=lambda r: r.label.lower())


def usage_table(rows: Sequence[RowUsage], title: str) -> list[str]:
    """The lines of the usage table (empty without rows): agent, sessions, tokens, cost, cost per session."""
    if not rows:
        return []
    from onegc_tui.views.text_table import text_table

    header = ["agent", "sessions", "tokens in", "tokens out", "cost", "per session"]
    body = [[safe_text(r.label, one_line=True),
             str(r.sessions), fmt_tokens(r.tokens_in), fmt_tokens(r.tokens_out), fmt_cost(r.cost_usd),
             fmt_cost(r.cost_usd / r.sessions if r.sessions else None)] for r in rows]
    lines = text_table(header, body, right=frozenset({1, 2, 3, 4, 5}))
    total = sum(r.cost_usd for r in rows)
    n = sum(r.sessions for r in rows)
    head = f"{safe_text(title, one_line=True)}: tokens and cost of {count(n, 'session')} (total {fmt_cost(total, '$0')})"
    return [head, *lines]


def usage_line(usage: Iterable[tuple[int, int, float]], sessions: int) -> str:
    """One line for a group of sessions (the history screen's highlighted cell): tokens in and
    out, cost, and cost per session."""
    t_in = t_out = 0
    cost = 0.0
    for i, o, c in usage:
        t_in, t_out, cost = t_in + i, t_out + o, cost + c
    per = fmt_cost(cost / sessions if sessions else None)
    return f"tokens {fmt_tokens(t_in)} in, {fmt_tokens(t_out)} out · cost {fmt_cost(cost)} ({per} a session)"
