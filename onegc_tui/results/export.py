"""Export of the agent × task matrix and of per-session results, as strings.

:func:`render_matrix` writes one or more :class:`~onegc_tui.results.matrix.Matrix` (our studies and,
unless ``include_paper=False``, the paper's reference rows) as

- ``table``: aligned plain text, for the terminal and logs;
- ``md``: a GitHub-flavoured Markdown table, best per column in bold;
- ``latex``: the paper's Table 4 layout (agents as rows, T1…T7, mean $\\pm$ std, Agg; best per
  column in bold; needs ``booktabs``);
- ``csv``: long format, one line per (study, agent, task) cell plus one ``task=agg`` line per
  row whose ``mean`` is Agg, ``best`` is Agg_max, ``n_success``/``n_total`` the tasks it covers
  out of those expected, and ``partial`` set when some are missing (``r_ours``: per cell, r against
  the baseline measured here; on the agg line, Agg_ours);
- ``json``: the full matrices (every cell field, session ids, aggregates, flags).

:func:`sessions_csv` writes one line per session. Markers in the text formats: ``*`` = the cell
pools sessions run under different task contracts; ``†`` = partial aggregate (some of its tasks
have no result); ``(n/N)`` = not every repeat produced a scorable checkpoint; ``‡`` = the cell
pools sessions with the val-test gap flag (runner/integrity/selection_gap.py). ``Agg``/``Agg_max`` are
relative to the paper's baselines; ``Agg_ours`` (shown when baseline sessions were run here with
``onegc baseline``) relative to the baselines measured under the same contract.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, get_args

from onegc_tui.results.matrix import Aggregate, Cell, Matrix, TaskColumn, paper_matrix, task_sort_key
from onegc_tui.views.format import arrow
from onegc_tui.views.outcomes import SessionOutcome, resolve_task
from onegc_tui.views.sessions_view import CONTENDED_MARK
from onegc_tui.views.statistics import relative_improvement
from runner.wire.textsafe import safe_text
from tasks import TaskSpec, best_of

Format = Literal["table", "csv", "md", "latex", "json"]
FORMATS: tuple[str, ...] = get_args(Format)
DECIMALS = 4  # the paper's Table 4 prints scores with four decimals
AGG_DECIMALS = 3  # and aggregates with three, signed
MISSING = "-"  # no session on this task
FAILED = "N/A"  # sessions ran, none produced a scorable checkpoint (the paper's N/A)
MIXED_MARK = "*"
PARTIAL_MARK = "†"
JSON_SCHEMA = "onegc.matrix/1"


def _studies(matrix: Matrix | Sequence[Matrix], include_paper: bool, paper: Matrix | None) -> list[Matrix]:
    studies = [matrix] if isinstance(matrix, Matrix) else list(matrix)
    if include_paper and not any(m.is_paper for m in studies):
        studies.append(paper if paper is not None else paper_matrix())
    return studies


def _columns(studies: Sequence[Matrix]) -> list[TaskColumn]:
    cols: dict[str, TaskColumn] = {}
    for m in studies:
        for c in m.tasks:
            cols.setdefault(c.task, c)
    return sorted(cols.values(), key=lambda c: task_sort_key(c.task))


def _num(x: float, decimals: int = DECIMALS) -> str:
    return f"{x:.{decimals}f}"


def _agg_num(x: float) -> str:
    return f"{x:+.{AGG_DECIMALS}f}"


def _best_means(studies: Sequence[Matrix], cols: Sequence[TaskColumn]) -> dict[str, float]:
    """Best displayed mean per task over every row shown (ties in print are all best)."""
    best: dict[str, float] = {}
    for col in cols:
        vals = [
            round(c.mean, DECIMALS)
            for m in studies
            for r in m.rows
            if (c := r.cell(col.task)) and c.mean is not None
        ]
        if vals:
            best[col.task] = best_of(vals, col.direction)
    return best


def _best_agg(studies: Sequence[Matrix], which: Literal["agg", "agg_max"]) -> float | None:
    """Best displayed aggregate; partial aggregates do not compete."""
    vals = [
        round(a.value, AGG_DECIMALS)
        for m in studies
        for r in m.rows
        if (a := getattr(r, which)).value is not None and not a.partial
    ]
    return max(vals) if vals else None


def _is_best(cell: Cell | None, task: str, best: dict[str, float]) -> bool:
    return (
        cell is not None
        and cell.mean is not None
        and task in best
        and round(cell.mean, DECIMALS) == best[task]
    )


def _agg_is_best(agg: Aggregate, best: float | None) -> bool:
    return (
        agg.value is not None
        and not agg.partial
        and best is not None
        and round(agg.value, AGG_DECIMALS) == best
    )


# ----------------------------------------------------------------------------- text tables


INTEGRITY_MARK = "⚠"
# CONTENDED_MARK (§, onegc_tui/views/sessions_view.py): sessions of the cell ran contended (with their count)
CAPPED_MARK = "¢"  # runner/sandbox/caps.py: a memory, process or disk cap stopped the agent of some of its sessions
CUT_MARK = "✂"  # runner/wire/record_caps.py: some of its sessions' records were cut past their caps
VAL_GAP_MARK = "‡"  # runner/integrity/selection_gap.py: the selected checkpoint's val beats its test beyond the baseline's gap
TAMPERED_MARK = "✗"  # runner/scoring/seal.py: some of its sessions' records were edited after them (not in the mean)
DIFFERS_MARK = "≠"  # onegc verify: a number of some of its sessions does not reproduce
VERIFIED_MARK = "✓"  # onegc verify reproduced every one of its sessions


# each mark a cell can carry: when a cell needs it, its note under a text table, and under a LaTeX one
MARK_NOTES: tuple[tuple[Callable[[Cell], Any], str, str], ...] = (
    (lambda c: c.mixed_contracts,
     f"{MIXED_MARK} pools sessions run under different contracts (task files, sandbox, selection, …)",
     "$^{*}$ pools sessions run under different task contracts."),
    (lambda c: c.n_flagged or c.n_unsealed or c.n_open_network,
     f"{INTEGRITY_MARK}n pools n sessions run --unsealed, with --network open (the host's network) or with "
     "integrity-flagged scores (onegc sessions --json)",
     "$^{!}$ pools sessions run unsealed, with the host's network, or with integrity-flagged scores."),
    (lambda c: c.n_val_gap,
     f"{VAL_GAP_MARK}n pools n sessions whose selected checkpoint's val score beats its test score beyond the "
     "baseline's own val-test gap (trained on val, or overfit to it; docs/selection.md)",
     "$^{\\ddagger}$ pools sessions with the val-test gap flag."),
    (lambda c: c.n_disqualified,
     "DQ<n>: sessions disqualified (counted in n/N, not in the mean), as the paper's protocol violations",
     "$^{DQ n}$: n sessions disqualified (in n/N, not in the mean)."),
    (lambda c: c.n_contended,
     f"{CONTENDED_MARK}n: n of its sessions ran contended (a foreign process on the GPU, memory in use at start, "
     "throttling, other sessions on the host, operator pauses; onegc sessions --json says which)",
     "$^{\\S n}$: n of its sessions ran contended."),
    (lambda c: c.n_capped,
     f"{CAPPED_MARK}n: the memory, process or disk cap stopped the agent of n of its sessions (its processes "
     "killed or refused; onegc sessions --json: caps_reached)",
     "$^{c n}$: a memory, process or disk cap stopped the agent of n sessions."),
    (lambda c: c.n_tampered,
     f"{TAMPERED_MARK}n: n of its sessions' records were edited after the session, or their folder copied from "
     "elsewhere (counted in n/N, not in the mean; onegc verify names the place)",
     "$^{\\times n}$: n sessions' records were tampered with (in n/N, not in the mean)."),
    (lambda c: c.n_differs,
     f"{DIFFERS_MARK}n: onegc verify scored n of its sessions again and a number differs from the record",
     "$^{\\neq n}$: n sessions did not reproduce under onegc verify."),
    (lambda c: c.n_total and c.n_reproduced == c.n_total,
     f"{VERIFIED_MARK}: onegc verify re-derived every session of the cell from its stored checkpoints",
     "$^{\\checkmark}$: every session re-derived by onegc verify."),
    (lambda c: c.n_truncated,
     f"{CUT_MARK}n: n of its sessions' records were cut past the session's caps on the agent's output "
     "(onegc sessions --json: truncated; the score is whole)",
     "$^{t n}$: n sessions' records were cut past their caps."),
)


def integrity_marks(cell: Cell | None) -> str:
    """What a cell's figure needs beside it, each with the count of its sessions (issue 37: every
    cell holding such a session says so, and how many): ``⚠n`` sessions run ``--unsealed``, with
    ``--network open`` or with integrity-flagged scores, ``‡n`` with the val-test gap flag, ``§n``
    run contended (a foreign GPU process, throttling, …: runner/session/contention.py), ``¢n`` whose
    agent a memory, process or disk cap stopped, ``✂n`` whose record was cut past its caps, ``✗n``
    whose record was tampered with (not in the mean), ``≠n`` that ``onegc verify`` did not reproduce,
    ``✓`` every session reproduced, `` DQ<n>`` disqualified (in n/N, not in the mean)."""
    if cell is None:
        return ""
    flagged = max(cell.n_flagged, cell.n_unsealed, cell.n_open_network)  # each counts sessions; one may be all three
    return (f"{INTEGRITY_MARK}{flagged}" if flagged else "") + (f"{VAL_GAP_MARK}{cell.n_val_gap}" if cell.n_val_gap else "") + (
        f"{CONTENDED_MARK}{cell.n_contended}" if cell.n_contended else "") + (
        f"{CAPPED_MARK}{cell.n_capped}" if cell.n_capped else "") + (
        f"{CUT_MARK}{cell.n_truncated}" if cell.n_truncated else "") + (
        f"{TAMPERED_MARK}{cell.n_tampered}" if cell.n_tampered else "") + (
        f"{DIFFERS_MARK}{cell.n_differs}" if cell.n_differs else "") + (
        VERIFIED_MARK if cell.n_total and cell.n_reproduced == cell.n_total else "") + (
        f" DQ{cell.n_disqualified}" if cell.n_disqualified else "")


def cell_text(cell: Cell | None, mode: str = "mean", live: bool = False, compact: bool = False) -> str:
    """The one rendering of a matrix cell, in the text and Markdown tables and the monitor's
    matrix: mean±std (``mode="best"``: the best of N), then n/N where some repeats failed, ``*``
    for mixed contracts and the integrity marks; ``-`` for no session, ``N/A`` when none
    succeeded. ``live`` (the monitor): the counts bare (`` 2/3``) for its narrow columns, and a
    cell whose sessions all still run says how many. ``compact`` (a monitor under 150 columns): the
    figure and its marks only, so that every task and Agg fit 100 columns; the highlighted cell's
    statistics below give the std and n/N."""
    running = len(cell.running_ids) if cell is not None and live else 0
    if cell is None or (cell.n_total == 0 and not running):
        return MISSING
    if cell.n_total == 0:
        return f"({running} running)"
    counts = ""
    if cell.n_success < cell.n_total and not compact:
        counts = f" {cell.n_success}/{cell.n_total}" if live else f" ({cell.n_success}/{cell.n_total})"
    if cell.mean is None:
        text = FAILED
    elif mode == "best" and cell.best is not None:
        text = _num(cell.best)
    elif cell.std is None or compact:
        text = _num(cell.mean)
    else:
        text = f"{_num(cell.mean)}±{_num(cell.std)}"
    return text + counts + (MIXED_MARK if cell.mixed_contracts else "") + integrity_marks(cell)


def _agg_text(agg: Aggregate) -> str:
    if agg.value is None:
        return FAILED if agg.expected else MISSING
    return _agg_num(agg.value) + (PARTIAL_MARK if agg.partial else "")


def _grid(studies: Sequence[Matrix], bold: tuple[str, str] | None) -> tuple[list[str], list[list[str]]]:
    """Header and body cells shared by the plain and Markdown tables."""
    cols = _columns(studies)
    best, best_agg, best_max = (
        _best_means(studies, cols),
        _best_agg(studies, "agg"),
        _best_agg(studies, "agg_max"),
    )

    def b(text: str, on: bool) -> str:
        return f"{bold[0]}{text}{bold[1]}" if bold and on else text

    ours = _has_ours(studies)
    header = ["study", "agent", *(f"{c.label} {arrow(c.direction)}" for c in cols), "Agg", "Agg_max"]
    header += ["Agg_ours"] if ours else []
    body = []
    for m in studies:
        for r in m.rows:
            cells = [b(cell_text(r.cell(c.task)), _is_best(r.cell(c.task), c.task, best)) for c in cols]
            agg = b(_agg_text(r.agg), _agg_is_best(r.agg, best_agg))
            agg_max = b(_agg_text(r.agg_max), _agg_is_best(r.agg_max, best_max))
            extra = [_agg_text(r.agg_ours) if r.agg_ours is not None else MISSING] if ours else []
            body.append([_one_line(m.study), _one_line(r.label), *cells, agg, agg_max, *extra])
    return header, body


def _has_ours(studies: Sequence[Matrix]) -> bool:
    """Whether any row has an Agg against baselines measured here (then the tables show Agg_ours)."""
    return any(r.agg_ours is not None for m in studies for r in m.rows)


def footnotes(studies: Sequence[Matrix], name: Callable[[str], str] = lambda text: safe_text(text, one_line=True)
               ) -> list[str]:
    cells = [c for m in studies for r in m.rows for c in r.cells.values()]
    notes = [text for present, text, _ in MARK_NOTES if any(map(present, cells))]
    if _has_ours(studies):
        notes.append("Agg, Agg_max: relative to the paper's baselines (task.toml); Agg_ours: relative to the baselines "
                     "measured here under the same contract (onegc baseline TASK)")
    for m in studies:
        for r in m.rows:
            if r.agg.partial:
                missing = ", ".join(t.upper() for t in r.agg.missing)
                covered = f"{r.agg.n_tasks} of {len(r.agg.expected)} tasks"
                notes.append(
                    f"{PARTIAL_MARK} {name(m.study)} / {name(r.label)}: Agg over {covered} (no result on {missing})"
                )
    return notes


def _table(studies: Sequence[Matrix]) -> str:
    header, body = _grid(studies, None)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(
            v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    previous = None
    for row in body:
        if previous is not None and row[0] != previous:
            out.append("")
        out.append(line(row))
        previous = row[0]
    notes = footnotes(studies)
    return "\n".join(out + ([""] + notes if notes else [])) + "\n"


def _one_line(text: object) -> str:
    """Text from a session (a study or agent name, a model id) as the exports write it: one line,
    no terminal controls (:func:`runner.wire.textsafe.safe_text`)."""
    return safe_text(text, one_line=True)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


_MD_SPECIALS = re.compile(r"([\\`\[\]<>|])")


def _md_text(text: str) -> str:
    """Free text from a session in Markdown (a study or agent name): what would make a link, an
    image, an HTML tag, code or a new cell is backslash-escaped. Emphasis (``*``, ``_``) is left:
    it changes no more than a name's look, and ``opus_x`` stays readable in the source."""
    return _MD_SPECIALS.sub(r"\\\1", text)


def _md(studies: Sequence[Matrix]) -> str:
    header, body = _grid(studies, ("**", "**"))
    align = ["---", "---", *(["---:"] * (len(header) - 2))]
    rows = [[_md_escape(v) for v in row] for row in [header, align]]
    rows += [[_md_text(row[0]), _md_text(row[1]), *(_md_escape(v) for v in row[2:])] for row in body]
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    notes = footnotes(studies, name=lambda text: _md_text(_one_line(text)))
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


# ----------------------------------------------------------------------------- LaTeX

_TEX_ESCAPES = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in _one_line(text))


def _tex_cell(cell: Cell | None, bold: bool) -> str:
    if cell is None or cell.n_total == 0:
        return "--"
    if cell.mean is None:
        return "N/A"
    body = _num(cell.mean) if cell.std is None else f"{_num(cell.mean)} \\pm {_num(cell.std)}"
    mark = "^{*}" if cell.mixed_contracts else ""
    mark += "^{!}" if cell.n_flagged or cell.n_unsealed or cell.n_open_network else ""
    mark += "^{\\ddagger}" if cell.n_val_gap else ""
    mark += f"^{{\\S{cell.n_contended}}}" if cell.n_contended else ""
    mark += f"^{{c{cell.n_capped}}}" if cell.n_capped else ""
    mark += f"^{{t{cell.n_truncated}}}" if cell.n_truncated else ""
    mark += f"^{{\\times{cell.n_tampered}}}" if cell.n_tampered else ""
    mark += f"^{{\\neq{cell.n_differs}}}" if cell.n_differs else ""
    mark += "^{\\checkmark}" if cell.n_total and cell.n_reproduced == cell.n_total else ""
    mark += f"^{{DQ{cell.n_disqualified}}}" if cell.n_disqualified else ""
    return f"$\\mathbf{{{body}}}{mark}$" if bold else f"${body}{mark}$"


def _tex_agg(agg: Aggregate, bold: bool) -> str:
    if agg.value is None:
        return "--"
    body = _agg_num(agg.value)
    mark = "^{\\dagger}" if agg.partial else ""
    return f"$\\mathbf{{{body}}}{mark}$" if bold else f"${body}{mark}$"


def _latex(studies: Sequence[Matrix]) -> str:
    cols = _columns(studies)
    best, best_agg = _best_means(studies, cols), _best_agg(studies, "agg")
    width = len(cols) + 2
    arrows = {"higher": "$\\uparrow$", "lower": "$\\downarrow$"}
    lines = [
        "% needs \\usepackage{booktabs,graphicx}",
        "\\begin{table}[t]",
        "\\centering",
        "\\caption{Mean $\\pm$ std (ddof = 1) over successful repeats; Agg is the mean relative "
        "improvement over the baselines. Best per column in bold.}",
        "\\label{tab:onegc-results}",
        "\\resizebox{\\textwidth}{!}{%",
        f"\\begin{{tabular}}{{l{'c' * len(cols)}c}}",
        "\\toprule",
        "Agent & " + " & ".join(f"{c.label} ({arrows[c.direction]})" for c in cols) + " & Agg \\\\",
    ]
    for m in studies:
        lines.append("\\midrule")
        if len(studies) > 1:
            lines.append(f"\\multicolumn{{{width}}}{{l}}{{\\textit{{{_tex(m.study)}}}}} \\\\")
        for r in m.rows:
            cells = [_tex_cell(r.cell(c.task), _is_best(r.cell(c.task), c.task, best)) for c in cols]
            lines.append(
                " & ".join([_tex(r.label), *cells, _tex_agg(r.agg, _agg_is_best(r.agg, best_agg))]) + " \\\\"
            )
    lines += ["\\bottomrule", "\\end{tabular}}"]
    all_cells = [c for m in studies for r in m.rows for c in r.cells.values()]
    notes = [tex for present, _, tex in MARK_NOTES if any(map(present, all_cells))]
    if any(r.agg.partial for m in studies for r in m.rows):
        notes.append("$^{\\dagger}$ partial: over the tasks with a result only.")
    if notes:
        lines.append("\\par\\smallskip{\\footnotesize " + " ".join(notes) + "}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- CSV and JSON

MATRIX_CSV_FIELDS = (
    "study",
    "agent",
    "model",
    "label",
    "task",
    "direction",
    "baseline",
    "n_success",
    "n_total",
    "mean",
    "std",
    "sem",
    "best",
    "r_mean",
    "r_best",
    "mixed_contracts",
    "n_disqualified",
    "n_flagged",
    "n_unsealed",
    "n_open_network",
    "partial",
    "scripts_mean",
    "session_ids",
    "n_val_gap",
    "r_ours",
    "n_contended",
    "n_clean",
    "n_capped",
    "n_truncated",
    "n_tampered",
    "n_reproduced",
    "n_differs",
)


CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run as a formula


def _csv_text(text: str) -> str:
    """A text cell that a spreadsheet shows as text: one line, no terminal controls, and a
    leading ``'`` when it starts like a formula (OWASP's CSV injection rule)."""
    shown = _one_line(text)
    risky = text.startswith(CSV_FORMULA_STARTS) or shown.lstrip().startswith(CSV_FORMULA_STARTS)
    return "'" + shown if risky else shown


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, str):
        return _csv_text(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return v


def _csv(studies: Sequence[Matrix]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(MATRIX_CSV_FIELDS)
    for m in studies:
        cols = {c.task: c for c in m.tasks}
        for r in m.rows:
            for task, c in sorted(r.cells.items(), key=lambda kv: task_sort_key(kv[0])):
                col = cols[task]
                row = [
                    m.study,
                    r.agent,
                    r.model,
                    r.label,
                    task,
                    col.direction,
                    col.baseline,
                    c.n_success,
                    c.n_total,
                    c.mean,
                    c.std,
                    c.sem,
                    c.best,
                    r.agg.per_task.get(task),
                    r.agg_max.per_task.get(task),
                    c.mixed_contracts,
                    c.n_disqualified,
                    c.n_flagged,
                    c.n_unsealed,
                    c.n_open_network,
                    None,
                    c.scripts_mean,
                    " ".join(c.session_ids),
                    c.n_val_gap,
                    r.agg_ours.per_task.get(task) if r.agg_ours is not None else None,
                    c.n_contended,
                    c.n_clean,
                    c.n_capped,
                    c.n_truncated,
                    c.n_tampered,
                    c.n_reproduced,
                    c.n_differs,
                ]
                w.writerow([_csv_value(v) for v in row])
            w.writerow(
                [
                    _csv_value(v)
                    for v in [
                        m.study,
                        r.agent,
                        r.model,
                        r.label,
                        "agg",
                        "higher",
                        None,
                        r.agg.n_tasks,
                        len(r.agg.expected),
                        r.agg.value,
                        None,
                        None,
                        r.agg_max.value,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        r.agg.partial,
                        None,
                        "",
                        None,
                        r.agg_ours.value if r.agg_ours is not None else None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                    ]
                ]
            )
    return buf.getvalue()


def _aggregate_dict(a: Aggregate) -> dict[str, Any]:
    return {
        "value": a.value,
        "per_task": dict(a.per_task),
        "expected": list(a.expected),
        "missing": list(a.missing),
        "partial": a.partial,
    }


def matrix_to_dict(matrix: Matrix) -> dict[str, Any]:
    """A JSON-ready dict of one matrix: columns, rows, every cell field, aggregates and flags."""
    rows = []
    for r in matrix.rows:
        cells = {}
        for task, c in r.cells.items():
            d = {f.name: getattr(c, f.name) for f in _CELL_FIELDS}  # (asdict copied each of 100 000 session ids)
            d.update(mixed_contracts=c.mixed_contracts, success_rate=c.success_rate, mixed_conditions=c.mixed_conditions)
            cells[task] = d
        rows.append(
            {
                "label": r.label,
                "agent": r.agent,
                "model": r.model,
                "cells": cells,
                "agg": _aggregate_dict(r.agg),
                "agg_max": _aggregate_dict(r.agg_max),
                "agg_ours": _aggregate_dict(r.agg_ours) if r.agg_ours is not None else None,
            }
        )
    return {
        "study": matrix.study,
        "tasks": [dataclasses.asdict(c) for c in matrix.tasks],
        "rows": rows,
        "unknown_tasks": list(matrix.unknown_tasks),
        "n_aborted": matrix.n_aborted,
    }


_CELL_FIELDS = dataclasses.fields(Cell)


def json_text(doc: Any, level: int = 0) -> str:
    """``doc`` as ``json.dumps(doc, indent=2, allow_nan=False)`` lays it out, but a list of plain
    values on one line: a cell's session ids (100 000 over a big home) are written by the C
    encoder in one call, not by the indenting one in Python, an element at a time."""
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(doc, dict):
        if not doc:
            return "{}"
        items = (f"{inner}{json.dumps(str(k))}: {json_text(v, level + 1)}" for k, v in doc.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(doc, list | tuple) and any(isinstance(v, dict | list | tuple) for v in doc):
        return "[\n" + ",\n".join(f"{inner}{json_text(v, level + 1)}" for v in doc) + f"\n{pad}]"
    return json.dumps(doc, allow_nan=False)


def json_doc(matrix: Matrix | Sequence[Matrix], include_paper: bool = True, paper: Matrix | None = None) -> dict[str, Any]:
    """The JSON export of one matrix or several studies (with the paper's rows, as
    :func:`render_matrix`), as a document to add to (``onegc history --paired``)."""
    return {"schema": JSON_SCHEMA, "studies": [matrix_to_dict(m) for m in _studies(matrix, include_paper, paper)]}


def _json(studies: Sequence[Matrix]) -> str:
    return json_text(json_doc(studies, include_paper=False)) + "\n"


_RENDERERS = {"table": _table, "md": _md, "latex": _latex, "csv": _csv, "json": _json}


def render_matrix(
    matrix: Matrix | Sequence[Matrix],
    fmt: str,
    include_paper: bool = True,
    paper: Matrix | None = None,
) -> str:
    """Render one matrix (or several studies) in ``fmt`` (one of :data:`FORMATS`), followed by
    the paper's reference rows unless ``include_paper`` is false or a paper matrix is already
    given. ``paper`` overrides the reference (default :func:`~onegc_tui.results.matrix.paper_matrix`)."""
    key = fmt.strip().lower()
    if key not in _RENDERERS:
        raise ValueError(f"unknown export format '{fmt}': choose one of {', '.join(FORMATS)}")
    return _RENDERERS[key](_studies(matrix, include_paper, paper))


DEMO_TITLE = "Demo tasks: not part of the benchmark, so not compared with the paper (Agg over these tasks only)"


def render_history(
    benchmark: Matrix,
    demo: Matrix | None,
    fmt: str,
    include_paper: bool = True,
    paper: Matrix | None = None,
) -> str:
    """The history as ``onegc history`` and the monitor's export write it: the paper's tasks
    beside the paper's rows, and the demo tasks (``demo``, when it has rows) on their own — a
    second table in the text formats, a study of its own in CSV and JSON."""
    key = fmt.strip().lower()
    if key in ("csv", "json"):
        return render_matrix(history_studies(benchmark, demo), key, include_paper, paper)
    if demo is None or not demo.rows:
        return render_matrix(benchmark, key, include_paper, paper)
    first = render_matrix(benchmark, key, include_paper, paper) if benchmark.rows or include_paper else ""
    title = {"md": f"**{DEMO_TITLE}**\n\n", "latex": f"% {DEMO_TITLE}\n"}.get(key, f"{DEMO_TITLE}\n")
    return first + ("\n" if first else "") + title + render_matrix(demo, key, include_paper=False)


def history_studies(benchmark: Matrix, demo: Matrix | None) -> list[Matrix]:
    """The studies of the history's CSV and JSON: the demo tasks a study of their own when they have rows."""
    return [benchmark] if demo is None or not demo.rows else [m for m in (benchmark, demo) if m.rows or m is demo]


SESSION_FIELDS = tuple(f.name for f in dataclasses.fields(SessionOutcome))
SESSIONS_CSV_FIELDS = (*SESSION_FIELDS, "direction", "baseline", "relative_improvement")


def sessions_csv(outcomes: Iterable[SessionOutcome], specs: Iterable[TaskSpec] | None = None) -> str:
    """One CSV line per session: every :class:`SessionOutcome` field, then the task's direction,
    baseline and the session's r (relative improvement over the baseline; empty on failure)."""
    spec_list = None if specs is None else list(specs)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SESSIONS_CSV_FIELDS)
    for o in outcomes:
        spec = resolve_task(o.task, spec_list)
        r = None
        if spec is not None and spec.baseline_score and o.succeeded and o.score is not None:
            r = relative_improvement(o.score, spec.baseline_score, spec.direction)
        values = [getattr(o, name) for name in SESSION_FIELDS]
        values += [spec.direction if spec else None, spec.baseline_score if spec else None, r]
        w.writerow([_csv_value(v) for v in values])
    return buf.getvalue()


__all__ = [
    "FORMATS",
    "MATRIX_CSV_FIELDS",
    "SESSIONS_CSV_FIELDS",
    "Format",
    "history_studies",
    "json_doc",
    "json_text",
    "matrix_to_dict",
    "render_history",
    "render_matrix",
    "sessions_csv",
]
