"""``onegc report -o report.html``: one self-contained, static HTML page of a study.

Sections: the agent × task matrix beside the paper's rows, anytime curves across repeats (mean
with a min-max band, and the expected best-of-k; raw, the paper's relative scale and RE-Bench's
normalisation where the task has a reference), "what would a shorter budget have scored",
paired comparisons (SD, SEM and the bootstrap CI labelled, the noise floor), integrity flags,
each session's time ledger, cost per score, and each session's score and GPU timeline.

The page is static and works offline: inline CSS and inline SVG drawn here (onegc_tui/results/svg_chart.py),
no script, no font, no image or stylesheet from anywhere, and a Content-Security-Policy that
forbids the browser to fetch anything at all. Every text that came from a session (labels, ids,
end details) is HTML-escaped: the agent's words are never markup.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence

from onegc_tui.results.cost_views import PER_DOLLAR_LABEL
from onegc_tui.results.export import DECIMALS, cell_text, footnotes
from onegc_tui.results.matrix import Matrix, build_matrix, outcome_row_label, paper_matrix, split_demo
from onegc_tui.results.paired import CI_LABEL, NOISE_LABEL, SD_LABEL, SEM_LABEL
from onegc_tui.results.study_data import SessionData, StudyData, at_budget_cells
from onegc_tui.results.svg_chart import PALETTE, Series, line_chart, stacked_bar
from onegc_tui.views.anytime import FRACTIONS, SCALE_LABELS, SCALES, RepeatCurves
from onegc_tui.views.gpu_activity import mean_share
from onegc_tui.views.outcomes import resolve_task, scores_note
from onegc_tui.views.sessions_view import conditions_note, record_note, record_word, unchecked_note
from onegc_tui.views.task_facts import scored_split
from onegc_tui.views.time_ledger import PART_LABELS
from runner import HARNESS_VERSION
from runner.scoring.unofficial import LABEL as UNOFFICIAL_LABEL
from runner.wire.score_terms import measure, score_name

MAX_TIMELINES = 100  # sessions whose own score and GPU charts the page draws (about 4 KiB each)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
LEDGER_COLOURS = {"model_s": "#1f77b4", "own_s": "#2ca02c", "tool_s": "#ff7f0e", "paused_s": "#999999",
                  "other_s": "#dddddd"}
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1400px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}table{border-collapse:collapse;margin:6px 0 10px}
td,th{border:1px solid #ddd;padding:2px 6px;font-size:13px;text-align:right;white-space:nowrap}th{background:#f3f3f3}
td.l,th.l{text-align:left}tr.paper td{color:#666;background:#fbfbf4}.note{color:#555;font-size:12.5px;max-width:1000px}
.charts{display:flex;flex-wrap:wrap;gap:12px}svg.chart text.t{font-size:13px;font-weight:600}svg text.k{font-size:11px;fill:#444}
.wide{overflow-x:auto}.flag{color:#b00}.ok{color:#070}code{background:#f4f4f4;padding:0 3px}
"""


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def _n(x: float | None, d: int = DECIMALS) -> str:
    return "–" if x is None else f"{x:.{d}f}"


def _s(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f}"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, classes: Sequence[str] = ()) -> str:
    """An HTML table; cells are already escaped; the first ``left`` columns align left."""
    th = "".join(f'<th class="{"l" if i < left else ""}">{h}</th>' for i, h in enumerate(head))
    body = []
    for r_i, r in enumerate(rows):
        cls = f' class="{classes[r_i]}"' if r_i < len(classes) and classes[r_i] else ""
        body.append(f"<tr{cls}>" + "".join(f'<td class="{"l" if i < left else ""}">{c}</td>'
                                           for i, c in enumerate(r)) + "</tr>")
    return f'<div class="wide"><table><tr>{th}</tr>{"".join(body)}</table></div>'


# ----------------------------------------------------------------------------- sections


def _matrix_section(data: StudyData) -> str:
    bench, demo = split_demo(data.outcomes)
    parts = []
    paper = paper_matrix()
    ours = build_matrix(bench, study=data.study or "ours")
    if ours.rows:
        parts.append(_matrix_table([ours, paper]))
    else:
        parts.append('<p class="note">No session on the paper\'s tasks in this study: the paper\'s rows alone.</p>'
                     + _matrix_table([paper]))
    if demo:
        parts.append("<h3>Demo tasks (not part of the benchmark, not compared with the paper)</h3>"
                     + _matrix_table([build_matrix(demo, study="demo tasks")]))
    return ("<h2>Matrix beside the paper</h2><p class=\"note\">mean ± SD (sample, ddof=1) over successful "
            "repeats, (n/N) where some failed, best of N; Agg = mean relative improvement over the baseline. "
            "The paper's rows (Table 4) are shaded.</p>" + "".join(parts))


def _matrix_table(matrices: Sequence[Matrix]) -> str:
    tasks: list[str] = []
    for m in matrices:
        tasks += [c.task for c in m.tasks if c.task not in tasks]
    head = ["configuration", *[t.upper() for t in tasks], "Agg", "Agg (best of N)"]
    rows, classes = [], []
    for m in matrices:
        for r in m.rows:
            cells = [_e(cell_text(r.cell(t))) for t in tasks]
            agg = "–" if r.agg.value is None else f"{r.agg.value:+.3f}{'†' if r.agg.partial else ''}"
            agg_max = "–" if r.agg_max.value is None else f"{r.agg_max.value:+.3f}{'†' if r.agg_max.partial else ''}"
            rows.append([_e(("paper: " if m.is_paper else "") + r.label), *cells, agg, agg_max])
            classes.append("paper" if m.is_paper else "")
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in footnotes(matrices))  # what each mark means
    return _table(head, rows, classes=classes) + notes


def _curve_chart(cells: Sequence[RepeatCurves], task: str, scale: str, budget_min: float | None) -> str:
    series: list[Series] = []
    for i, rc in enumerate(cells):
        color = PALETTE[i % len(PALETTE)]
        band = [(f, lo, hi) for f, lo, hi in zip(rc.band.grid, rc.band.lo, rc.band.hi, strict=True)
                if lo is not None and hi is not None]
        mean = [(f, m) for f, m in zip(rc.band.grid, rc.band.mean, strict=True) if m is not None]
        bok = [(f, b) for f, b in zip(rc.band.grid, rc.best_of_k, strict=True) if b is not None]
        series.append(Series(f"{rc.label}: mean of {rc.band.n_curves} (band: min–max)", mean, color, step=False,
                             band=band))
        series.append(Series(f"{rc.label}: best of {rc.k}", bok, color, dashed=True, step=False, width=1.5))
    x_label = "fraction of the active budget" + (f" (1.0 = {budget_min:g} min)" if budget_min else "")
    return line_chart(series, title=f"{task.upper()}: {SCALE_LABELS[scale]}", x_label=x_label,  # type: ignore[index]
                      y_label=SCALE_LABELS[scale].split(":")[0].split(" (")[0], x_range=(0.0, 1.0))  # type: ignore[index]


def _curves_section(data: StudyData) -> str:
    out = ["<h2>Anytime curves across repeats</h2><p class=\"note\">Best-so-far by the official rule (at each "
           "moment, the val-best checkpoint so far and its score on the scored split) against the fraction of the "
           "active budget. Solid: the mean over repeats with a min–max band; dashed: the expected best of k "
           "repeats. The mean and band are over the repeats with a scored checkpoint by then (a repeat whose first "
           "checkpoint comes late and low pulls the mean down when it enters). Scales: the task's metric, the "
           "paper's relative improvement over the baseline, and RE-Bench's normalisation (baseline 0, reference 1) "
           "where the task has a paper reference.</p>"]
    budgets = {s.outcome.task: s.outcome.budget_s for s in data.sessions if s.outcome.budget_s}
    rows: dict[str, list[str]] = {}  # by task: its charts, one per scale, side by side
    for scale in SCALES:
        by_task: dict[str, list[RepeatCurves]] = {}
        for rc in data.curves(scale):
            by_task.setdefault(rc.task, []).append(rc)
        if not by_task:
            out.append(f'<p class="note">{_e(SCALE_LABELS[scale])}: no task of this study has it '
                       "(it needs a baseline, and a reference for RE-Bench's scale).</p>")
        for task, rcs in by_task.items():
            spec = resolve_task(task)
            budget = next((b for t, b in budgets.items() if spec is not None and resolve_task(t) == spec), None)
            rows.setdefault(task, []).append(_curve_chart(rcs, task, scale, budget / 60 if budget else None))
    out += [f'<div class="charts">{"".join(charts)}</div>' for charts in rows.values()]
    out.append(_at_budget_table(data))
    return "".join(out)


def _at_budget_table(data: StudyData) -> str:
    """Mean score per configuration × task had the budget been 25/50/75/100 % of what it was."""
    columns = [at_budget_cells(data, fraction=f) for f in FRACTIONS]
    rows = []
    for cells in zip(*columns, strict=True):
        rows.append([_e(cells[0].task), _e(cells[0].label),
                     *[f"{_n(c.mean)} ({c.n_scored}/{c.n})" if c.mean is not None else "–" for c in cells]])
    if not rows:
        return ""
    head = ["task", "configuration", *[f"{f:.0%} of the budget" for f in FRACTIONS]]
    return ("<h3>What a shorter budget would have scored</h3><p class=\"note\">Mean over repeats of the official "
            "rule applied to the checkpoints that had appeared by then (repeats with one / all). A truncation of "
            "the sessions as they ran, not a rerun: an agent told it had less time might have worked "
            "differently.</p>" + _table(head, rows, left=2))


def _paired_section(data: StudyData) -> str:
    comps = data.comparisons()
    head = ["task", "A", "B", "pairs", "mean diff (A−B, + = A better)", "SD", "SEM", "95% CI (bootstrap)",
            "noise floor", "beyond noise", "verdict", "unpaired"]
    rows = []
    for c in comps:
        ci = f"[{_n(c.ci[0])}, {_n(c.ci[1])}]" if c.ci else "–"
        noise = (f'<span title="from the reruns of {_e(c.noise.source)}">{_n(c.noise.diff_sd)}</span>'
                 if c.noise and c.noise.diff_sd is not None else "–")
        beyond = {True: "yes", False: "no", None: "–"}[c.beyond_noise]
        rows.append([_e(c.task), _e(c.a), _e(c.b), str(c.n), _n(c.mean), _n(c.sd), _n(c.sem), ci, noise, beyond,
                     _e(c.verdict), str(len(c.unpaired))])
    named = sorted({c.noise.source for c in comps if c.noise is not None})
    sources = f": here {'; '.join(named)}" if named else ""
    notes = (f"<p class=\"note\">Repeat k of A is paired with repeat k of B. {_e(SD_LABEL)}. {_e(SEM_LABEL)}. "
             f"{_e(CI_LABEL)}. {_e(NOISE_LABEL)}; by default the reruns of the scripted agent (fixed edits){_e(sources)}.</p>")
    body = _table(head, rows, left=3) if rows else "<p>No two configurations share a task.</p>"
    return "<h2>Paired comparisons</h2>" + notes + body


def _integrity_section(data: StudyData) -> str:
    rows = []
    for s in data.sessions:
        o = s.outcome
        marks = []
        if o.disqualified:
            marks.append(f"disqualified: {o.disqualified}")
        if o.flagged:
            marks.append(f"{o.flagged} score(s) with integrity verdicts")
        if unchecked := unchecked_note(s.row):
            marks.append(unchecked)
        if o.sealed is False:
            marks.append("run --unsealed")
        if conditions := conditions_note(s.row):  # contention, a cap reached, a record cut
            marks.append(conditions)
        split = scored_split(o.task)  # each figure with its split: t0-T3 and T7 score val, T4-T6 test
        word, note = record_word(s.row), record_note(s.row)
        bad = word in ("TAMPERED", "DIFFERS")
        record = f'<span class="{"flag" if bad else "ok"}" title="{_e(s.row.get("record_detail") or "")}">{_e(word)}</span>'
        rows.append([_e(o.session_id), f'<span class="{"flag" if marks else "ok"}">'
                     f'{_e("; ".join(marks) or "none")}</span>', record, _e(note or "not verified"), _e(o.end_reason),
                     _split_figure(o.score, split),
                     _split_figure(o.rescore, split) + (f" ({_e(o.rescore_by)})" if o.rescore_by else ""),
                     _split_figure(o.unofficial_test_best, split)])
    head = ["session", "integrity", "record (chain, seal)", "onegc verify", "end reason", "official score (its split)",
            "re-scored (its split)", "unofficial best on the scored split"]
    return ("<h2>Integrity and results</h2><p class=\"note\">The official score is the val-best checkpoint's "
            f"score on the task's scored split. {_e(UNOFFICIAL_LABEL)}. The record column is its events' hash chain "
            "and the runner's seal (sealed; chained: not sealed; unchained: made before the chain; TAMPERED: edited "
            "after the session); onegc verify scores its stored checkpoints again (docs/verify.md). Re-scored: the "
            "official score a newer harness gave it, beside the original, never over it.</p>" + _table(head, rows, left=4))


def _split_figure(value: float | None, split: str) -> str:
    """A score and the split it was measured on ("0.3818 test"), or a dash."""
    return f"{_n(value)} {split}" if value is not None else _n(value)


def _ledger_section(data: StudyData) -> str:
    rows = []
    for s in data.sessions:
        led = s.ledger
        if led is None:
            continue
        parts = [(PART_LABELS[k], getattr(led, k), LEDGER_COLOURS[k]) for k in LEDGER_COLOURS]
        gpu = (f"{_s(led.gpu_busy_s)} / {_s(led.gpu_idle_s)}" if led.n_gpus else "no GPU sampled")
        idle = ", ".join(f"{_e(k)} {v:.0f}" for k, v in led.idle_by.items() if v > 0.5) or "–"
        rows.append([_e(s.outcome.session_id), _s(led.wall_s), _s(led.model_s), _s(led.own_s), _s(led.tool_s),
                     _s(led.paused_s), _s(led.other_s), stacked_bar(parts, total=led.wall_s), gpu, idle,
                     _share(_tensor(s))])
    legend = " ".join(f'<span style="color:{c}">■</span> {_e(PART_LABELS[k])}' for k, c in LEDGER_COLOURS.items())
    head = ["session", "wall s", "model s", "own s (no model)", "tool s", "paused s", "other s", "split", "GPU busy / idle s",
            "GPU idle by cause (s)", "tensor cores active, share of the budget (GPM)"]
    return ("<h2>Time ledger</h2><p class=\"note\">Model generation and tool time from the transcript's "
            "timestamps; GPU busy (utilisation above 10 %) and idle time by cause from the GPU samples; the "
            "tensor cores' active share of the budget from NVML's GPM (Hopper and later GPUs; \"no GPM\" elsewhere). "
            f"{legend}</p>" + (_table(head, rows) if rows else "<p>No finished session.</p>"))


def _tensor(s: SessionData) -> float | None:
    return s.timeline.tensor_share if s.timeline is not None else None


def _share(share: float | None) -> str:
    return "no GPM" if share is None else f"{share:.1%}"


def _gpu_activity_section(data: StudyData) -> str:
    """Per configuration × task: the mean share of the budget the tensor cores were active (GPM)."""
    cells: dict[tuple[str, str], list[float | None]] = {}
    for s in data.sessions:
        if s.outcome.end_reason is not None:  # finished sessions, as every cell of the report
            spec = resolve_task(s.outcome.task)
            key = (outcome_row_label(s.outcome), spec.short if spec else s.outcome.task)  # as the cost table
            cells.setdefault(key, []).append(_tensor(s))
    rows = []
    for (label, task), shares in sorted(cells.items()):
        mean, n = mean_share(shares)
        rows.append([_e(label), _e(task), f"{n}/{len(shares)}", _share(mean)])
    head = ["configuration", "task", "sessions with GPM", "tensor cores active, mean share of the budget"]
    return ("<h2>What the GPU did</h2><p class=\"note\">NVML's utilisation says a kernel ran; GPM says what share "
            "of the time any tensor core worked (Hopper and later GPUs). Each session's share of its budget, averaged "
            "over the cell's sessions that have GPM figures (the others, on an older GPU or none, are left out and "
            "counted).</p>" + (_table(head, rows, left=2) if rows else "<p>No finished session.</p>"))


def _cost_section(data: StudyData) -> str:
    rows = [[_e(c.label), _e(c.task), f"{c.n_costed}/{c.n_finished}",
             "–" if c.mean_cost_usd is None else f"${c.mean_cost_usd:.2f}", _n(c.mean_relative, 3),
             _n(c.per_dollar, 3)] for c in data.costs()]
    head = ["configuration", "task", "sessions with a cost", "mean cost", "mean relative improvement", "per dollar"]
    return (f"<h2>Cost</h2><p class=\"note\">Per dollar: {_e(PER_DOLLAR_LABEL)}. Sessions without a recorded cost "
            "(the scripted agent, an unpriced model) have none: never $0.</p>" + _table(head, rows, left=2))


def _timelines_section(data: StudyData) -> str:
    charts = []
    finished = [s for s in data.sessions if s.outcome.finished and s.timeline is not None]
    for s in finished[:MAX_TIMELINES]:
        tl = s.timeline
        assert tl is not None
        live = sorted((t, v) for t, v in tl.scores())
        # two splits on one axis where the task scores test (T4-T6): each series and the axis name theirs
        what, split = measure(tl.metric), scored_split(s.outcome.task)
        series = [Series(f"{score_name(tl.metric, 'val', 'live')}", live, PALETTE[0], step=False, markers=True,
                         width=1.0)]
        if s.curve is not None and s.curve.steps:
            series.append(Series(f"official rule on {split}, best so far", [(f * tl.budget_s, v) for f, v in s.curve.steps],
                                 PALETTE[1]))
        y_label = what if split == "val" else f"{what} (live: val · official: {split})"
        charts.append(line_chart(series, title=f"{s.outcome.session_id}: score", x_label="budget seconds",
                                 y_label=y_label, x_range=(0.0, max(tl.budget_s, tl.end_s)), width=380, height=220))
        if tl.gpu:
            charts.append(line_chart([Series("GPU utilisation %", list(tl.gpu), PALETTE[2], step=False, width=1.0)],
                                     title=f"{s.outcome.session_id}: GPU", x_label="budget seconds",
                                     y_label="util %", x_range=(0.0, max(tl.budget_s, tl.end_s)), width=380,
                                     height=220))
    note = ('<p class="note">Each session\'s live validation scores as its checkpoints appeared, the official-rule '
            "curve, and its GPU utilisation where a GPU was sampled"
            + (f"; the first {MAX_TIMELINES} of {len(finished)} finished sessions (the page stays small: "
               "<code>--study</code> narrows it)" if len(finished) > MAX_TIMELINES else "") + ".</p>")
    return "<h2>Per-session score and GPU timelines</h2>" + note + f'<div class="charts">{"".join(charts)}</div>'


def render_report(data: StudyData, now: float | None = None) -> str:
    """The whole page."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(now if now is not None else time.time()))
    n = len(data.sessions)
    finished = sum(1 for s in data.sessions if s.outcome.finished)
    title = f"onegc report: {data.study or 'all studies'}"
    sections = [_matrix_section(data), _curves_section(data), _paired_section(data), _integrity_section(data),
                _ledger_section(data), _gpu_activity_section(data), _cost_section(data), _timelines_section(data)]
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{_e(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>"
            f'<p class="note">{n} sessions ({finished} finished) · made {when} by onegc {_e(HARNESS_VERSION)} · '
            "static and offline: no script, nothing fetched.</p>"
            f'<p class="note">{_e(scores_note(data.outcomes, data.rescored))}</p>' + "".join(sections) + "</body></html>\n")



__all__ = ["CSP", "render_report"]
