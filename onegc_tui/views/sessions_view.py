"""The sessions table computed without a screen: which columns fit a width, the text of each
cell, how rows sort, and which rows a filter keeps.

Pure functions over the store's summary rows, shared by the Textual app and its tests.

Column priority (decided here, README "The monitor"): what a person watching a study needs at a
glance comes first — the state, the budget left, the best score — then the session id (cut in
the middle, so the unique suffix of ids started in the same second stays visible), then the
task, agent, GPU, model, start time, repeat, tokens, cost and scripts. Narrower terminals drop
columns from the end of that list; the session column takes the room that is left.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from onegc_tui.store.session_pages import Filter
from onegc_tui.views.countdown import Countdown
from onegc_tui.views.format import bar, clock, fmt_bytes, fmt_cost, fmt_score, fmt_tokens, short_task
from runner.wire.defaults import SHORT_SPLIT_MARKS, scored_split_sealed

ELLIPSIS = "…"
STATE_LABELS = {"queued": "queued", "running": "running", "paused": "PAUSED", "ended": "ended", "failed": "FAILED"}
ACTIVE_STATES = ("running", "paused", "queued")
CELL_PADDING = 1  # DataTable's default: one blank cell each side of every column


@dataclass(frozen=True)
class ColumnSpec:
    key: str
    label: str
    width: int  # the width it is shown at (the session column: its narrowest)
    sort: str | None  # the sort it stands for (clicking its header), None: not sortable
    descending: bool = False  # the sort's natural direction: the largest value first


MARK = ColumnSpec("mark", "", 1, None)
SESSION = ColumnSpec("session", "Session", 20, "session")  # the width the further columns leave it at least
SESSION_MIN = 14  # below this an id is unreadable even cut in the middle
SESSION_MAX = 64
# in priority order: the first ones are always shown, the rest while they fit (see the docstring)
COLUMNS: tuple[ColumnSpec, ...] = (
    MARK,
    ColumnSpec("state", "State", 7, "state"),
    ColumnSpec("left", "Budget left", 14, "left"),  # "▉▉▉▉▉▉▉· 42m"; an end: "exhausted", "harness error"
    ColumnSpec("best", "Best val", 8, "best", descending=True),  # the best live val score (docs/numbers.md)
    # the result, with its split and how that split was held: "0.9933 val sealed", "0.3792 test paper"
    ColumnSpec("official", "Official", 17, "official", descending=True),
    SESSION,
    ColumnSpec("task", "Task", 4, "task"),
    ColumnSpec("agent", "Agent", 11, "agent"),  # "claude-code": at 100 columns beside the task and GPU
    ColumnSpec("gpu", "GPU", 4, "gpu", descending=True),
    ColumnSpec("model", "Model", 18, "model"),
    ColumnSpec("started", "Started", 11, "started", descending=True),
    ColumnSpec("rep", "#", 2, "rep"),
    ColumnSpec("tokens", "Tokens", 6, "tokens", descending=True),
    ColumnSpec("cost", "Cost", 7, "cost", descending=True),  # format.fmt_cost: "$0.0021", "<$0.001"
    ColumnSpec("scripts", "Scripts", 7, "scripts", descending=True),
)
ALWAYS = 6  # mark, state, budget left, best live val, official score, session
BY_KEY = {c.key: c for c in COLUMNS}
SORTS = tuple(c.sort for c in COLUMNS if c.sort)  # 's' cycles through the visible ones of these
DEFAULT_SORT = "state"  # on attach: running sessions first, the most recent on top




def fit_columns(width: int, longest_id: int = SESSION.width, repeats: int = 1) -> list[tuple[ColumnSpec, int]]:
    """The columns shown in ``width`` cells and the width of each: the first :data:`ALWAYS`,
    then each further column in priority order while it fits beside a session column of
    :data:`SESSION.width`; the session column then takes what is left (up to the longest id).
    ``repeats``: the highest repeat number listed, which the ``#`` column holds whole."""
    def shown(c: ColumnSpec) -> int:
        if c.key == "rep":
            return max(c.width, len(str(repeats)))
        return c.width

    def cost(c: ColumnSpec) -> int:
        return shown(c) + 2 * CELL_PADDING

    chosen = list(COLUMNS[:ALWAYS])
    used = sum(cost(c) for c in chosen)
    for col in COLUMNS[ALWAYS:]:
        if used + cost(col) > width:
            break
        chosen.append(col)
        used += cost(col)
    fixed = used - cost(SESSION)
    session_w = max(SESSION_MIN, min(max(longest_id, SESSION_MIN), SESSION_MAX, width - fixed - 2 * CELL_PADDING))
    return [(c, session_w if c is SESSION else shown(c)) for c in chosen]


def middle_cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, cut in the middle with ``…``: the head (a date, a study) and the
    tail (the unique suffix of a session id) both stay; the tail gets the larger share."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = (width - 1) * 2 // 5
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail:]


def label_cut(label: str, width: int) -> str:
    """A row's label in ``width`` cells, its split mark kept whole in its short form at the end
    (``claude…4-6) [sealed]``): a cut never leaves a sealed row and a paper row looking alike."""
    if len(label) <= width:
        return label
    for mark, short in SHORT_SPLIT_MARKS.items():
        if f" {mark}" in label and width > len(short) + 2:
            return f"{middle_cut(label.replace(f' {mark}', '', 1), width - len(short) - 1)} {short}"
    return middle_cut(label, width)


def end_cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, ending in ``…`` when it had to be cut."""
    if len(text) <= width:
        return text
    return text[:max(0, width - 1)] + ELLIPSIS if width > 0 else ""


def row_split_sealed(row: dict) -> bool:
    """Whether a summary row's session ran with its scored split sealed (the default on t0, T1-T3
    and T7: the agent never held its targets; a contract other than the paper's, never pooled with it)."""
    contract = row.get("contract") or ""
    if '"scored_split"' not in contract:  # the store's json.dumps of the contract: the key is absent otherwise
        return False
    try:
        return scored_split_sealed(json.loads(contract))
    except ValueError:
        return False


def split_mode(row: dict) -> str:
    """How a summary row's scored split was held: ``sealed`` or ``paper`` (the word beside each number)."""
    return "sealed" if row_split_sealed(row) else "paper"


def official_cell(row: dict) -> str:
    """The official score with the split it was measured on and how that split was held ("0.9933 val
    sealed": its private part's, the targets never in the workspace; "0.3792 test paper": the paper's
    workspace); "N/A" for a session that ended without one (the paper's failed run), "-" while none
    is known."""
    if row.get("score") is not None:
        from onegc_tui.views.task_facts import scored_split

        return f"{fmt_score(row['score'])} {scored_split(row.get('task'))} {split_mode(row)}"
    return "N/A" if row.get("state") in ("ended", "failed") else "-"


def whole_note(row: dict) -> str | None:
    """A sealed session's official score said in full: its private part's, beside the whole split's
    figure (what the paper compares against); None under the paper's split or without a score."""
    if not row_split_sealed(row) or row.get("score") is None:
        return None
    from onegc_tui.views.task_facts import scored_split

    split = scored_split(row.get("task"))
    whole = f"; whole {split} {fmt_score(row['whole'])} (what the paper compares against)" \
        if row.get("whole") is not None else ""
    return f"official {split} sealed {fmt_score(row['score'])}: its private part, which no answer touched{whole}"


INTEGRITY_MARK = "⚠"


def integrity_note(row: dict) -> str | None:
    """Why a session's result needs a second look, or None: how it was sealed (``--unsealed``: the
    agent saw the host; ``--network open``), integrity verdicts on its scores (a look or stronger),
    the threat rows nothing checked (:func:`unchecked_note`), and the conditions it was measured
    under (:func:`conditions_note`)."""
    notes = []
    containment = row.get("containment") or ""
    if containment and not containment.startswith("bwrap"):
        notes.append("unsealed: the agent saw the host (not comparable)")
    if '"network": "open"' in (row.get("contract") or ""):  # the store's json.dumps of the contract
        notes.append("network open: the agent shared this machine's network")
    if row.get("flagged"):
        notes.append(f"{row['flagged']} score{'s' if row['flagged'] != 1 else ''} with integrity verdicts")
    unchecked = unchecked_note(row)
    if unchecked:
        notes.append(unchecked)
    record = record_note(row)
    if record and record_mark(row) != VERIFIED_MARK:
        notes.append(record)
    conditions = conditions_note(row, record=False)  # a cut record has its own mark (✂) and line
    if conditions:
        notes.append(conditions)
    return "; ".join(notes) or None


def not_checked(row: dict) -> list[str]:
    """The threat rows of ../shared/INTEGRITY.md that no check and no construction met in the session
    (runner/integrity/checks.py; the store keeps them as a JSON list)."""
    raw = row.get("not_checked")
    try:
        found = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return [str(t) for t in found] if isinstance(found, list) else []


def unchecked_note(row: dict) -> str | None:
    """``not checked: V1, V2`` where the session's task has no check for those threat rows, else None."""
    rows = not_checked(row)
    return f"not checked: {', '.join(rows)} (onegc tasks lists each task's checks)" if rows else None




def conditions_note(row: dict, record: bool = True) -> str | None:
    """The conditions a session's number was measured under, where they were not clean (issue 37):
    contention and throttling (runner/session/contention.py: its reasons), a cap the agent reached
    (its end detail names it), checkpoints the official phase's bounds left out
    (:func:`reevaluation_note`) and, with ``record``, a record cut short (:func:`truncation_note`)."""
    notes = []
    if row.get("contended"):
        notes.append("contended: " + (row.get("conditions") or "see its result.json"))
    if row.get("caps_reached"):
        notes.append(f"a cap reached {row['caps_reached']}× (memory, processes or disk: see its end)")
    left = reevaluation_note(row)
    if left:
        notes.append(left)
    cut = truncation_note(row) if record else None
    if cut:
        notes.append(cut)
    return "; ".join(notes) or None


def reevaluation_note(row: dict) -> str | None:
    """How many checkpoints the official phase's bounds (its time, its count) left without a
    re-evaluation, where any (runner/scoring/official.py; result.json's ``not_reevaluated`` says why)."""
    n = row.get("not_reevaluated")
    if not isinstance(n, int) or n <= 0:
        return None
    return (f"{n} checkpoint{'s' if n != 1 else ''} not re-evaluated within the official phase's bounds "
            "(result.json: not_reevaluated)")


TRUNCATED_MARK = "✂"
CONTENDED_MARK = "§"  # runner/session/contention.py: it ran contended (history's cells count these: §n)
TAMPERED_MARK, DIFFERS_MARK, VERIFIED_MARK = "✗", "≠", "✓"  # onegc_tui/results/export.py's cell marks too


def record_mark(row: dict) -> str:
    """A session's record at a glance: ``✗`` tampered (runner/scoring/seal.py, or onegc verify
    found it so), ``≠`` a number onegc verify did not reproduce, ``✓`` reproduced, ``""`` not verified."""
    if row.get("record") == "tampered" or row.get("verified") == "tampered":
        return TAMPERED_MARK
    return {"differs": DIFFERS_MARK, "reproduced": VERIFIED_MARK}.get(row.get("verified") or "", "")


def record_word(row: dict) -> str:
    """The record's state in a word (``onegc sessions``): TAMPERED, DIFFERS, verified, sealed,
    chained, unchained; ``-`` where the store has not checked it."""
    mark = record_mark(row)
    if mark == TAMPERED_MARK:
        return "TAMPERED"
    if mark == DIFFERS_MARK:
        return "DIFFERS"
    if mark == VERIFIED_MARK:
        return "verified"
    return row.get("record") or "-"


def record_note(row: dict) -> str | None:
    """What stands against a session's record, in words, or None: tampered (and where), a number
    that does not reproduce (the first), reproduced."""
    mark = record_mark(row)
    if mark == TAMPERED_MARK:
        where = row.get("record_detail") if row.get("record") == "tampered" else row.get("verified_detail")
        return f"record tampered: {where or 'see onegc verify'}"
    if mark == DIFFERS_MARK:
        return f"onegc verify did not reproduce it: {row.get('verified_detail') or 'see its verify.json'}"
    if mark == VERIFIED_MARK:
        return "onegc verify reproduced it from its stored checkpoints"
    return None


def truncation_note(row: dict) -> str | None:
    """What of the agent's output the record left out past the session's caps (`truncated` events,
    runner/wire/record_caps.py), or None: the record is whole."""
    n = row.get("truncated") or 0
    if not n:
        return None
    return (f"record cut: {n:,} line{'s' if n != 1 else ''} of the agent's output ({fmt_bytes(row.get('truncated_bytes'))}) "
            "left out past the session's caps")


LEFT_ENDS = {"budget_exhausted": "exhausted"}  # an end reason as the Budget left column words it


def left_cell(row: dict, now: float | None = None) -> str:
    """The "left" column of a summary row: the budget left (a bar and the time), or why it ended."""
    if row.get("state") in ("ended", "failed"):  # under "Budget left", budget_exhausted is "exhausted"
        return LEFT_ENDS.get(row.get("end_reason") or "", (row.get("end_reason") or "").replace("_", " "))
    countdown = Countdown.of_row(row)
    return f"{bar(countdown.fraction_left(now), 8)} {clock(countdown.remaining_now(now), coarse=True)}"


def session_cells(row: dict, now: float | None = None) -> dict[str, str]:
    """The sessions-table cells of one summary row, keyed by column."""
    left_text = left_cell(row, now)
    util = row.get("gpu_util")
    started = row.get("started_ts")
    return {
        "mark": "",
        "session": (f"{INTEGRITY_MARK} " if integrity_note(row) else "")
                   + (f"{TRUNCATED_MARK} " if row.get("truncated") else "")
                   + (f"{mark} " if (mark := record_mark(row)) else "") + row["session_id"],
        "task": short_task(row.get("task")),
        "agent": row.get("agent") or "",
        "model": row.get("model") or "-",
        "started": "-" if started is None else time.strftime("%m-%d %H:%M", time.localtime(started)),
        "rep": str(row.get("repeat") or 1),
        "state": STATE_LABELS.get(row.get("state") or "", row.get("state") or ""),
        "left": left_text,
        "best": fmt_score(row.get("best_live")),
        "official": official_cell(row),
        "gpu": "-" if util is None else f"{util:.0f}%",
        "scripts": str(row.get("scripts_launched") or 0),
        "tokens": fmt_tokens((row.get("tokens_in") or 0) + (row.get("tokens_out") or 0)),
        "cost": fmt_cost(row.get("cost_usd")),
    }


def cell_tone(key: str, row: dict) -> str:
    """What a cell should look like, by meaning (the app maps these to theme colours):
    ``failed``, ``paused``, ``running``, ``ended``, ``flagged`` or ``""`` (plain)."""
    state = row.get("state") or ""
    if key == "session":
        return "flagged" if integrity_note(row) else ""
    if key == "state":
        return state if state in ("failed", "paused", "running", "ended") else ""
    if key == "left" and state == "failed":
        return "failed"
    if key == "left" and state == "paused":
        return "paused"
    return ""


# ----------------------------------------------------------------------------- sorting
# Each sort's order is SQL over the summary rows, served by an index (onegc_tui/store/session_pages.py
# ``SORTS``): the table reads the rows it shows by page. What each puts first: ``state``, running,
# paused, queued, then finished sessions, the most recent first within each; the value columns
# marked ``descending``, the largest; ``left``, the least budget left.


def sort_arrow(by: str, reverse: bool) -> str:
    """▼ when the shown order puts the largest value first, ▲ otherwise (``state``: ▲ = active first)."""
    column = next((c for c in COLUMNS if c.sort == by), None)
    return "▼" if (column is not None and column.descending) != reverse else "▲"


# ----------------------------------------------------------------------------- filtering

FILTER_FIELDS = ("state", "agent", "task", "model", "study", "id")
FILTER_HELP = ("words must all match (any case): state:running agent:codex task:t1 model:sonnet study:demo id:r2; "
               "a bare word matches anywhere")


def parse_filter(query: str) -> Filter:
    """A filter as typed: ``field:value`` terms and bare words, all of which must match (any case),
    as the store applies it (onegc_tui/store/session_pages.py)."""
    terms, words = [], []
    for token in query.lower().split():
        name, sep, value = token.partition(":")
        if sep and name in FILTER_FIELDS and value:
            terms.append((name, value))
        else:
            words.append(token)
    return Filter(tuple(terms), tuple(words), task_shorts() if terms or words else ())


def task_shorts() -> tuple[tuple[str, str], ...]:
    """Each known task and its short name as the table shows it ("T1"): what ``task:t1`` finds."""
    from onegc_tui.views.task_facts import task_facts

    return tuple((name, facts.short.upper()) for facts in task_facts().values() for name in (facts.id, facts.short))
