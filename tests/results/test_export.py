"""Exports of the matrix and of sessions: every format parsed back or checked for its layout."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from onegc_tui.results.export import FORMATS, MATRIX_CSV_FIELDS, SESSIONS_CSV_FIELDS, render_matrix, sessions_csv
from onegc_tui.results.matrix import build_matrix, paper_matrix
from onegc_tui.views.outcomes import SessionOutcome


def outcome(sid, task, score, *, agent="claude-code", model="opus_x", repeat=1, contract="h1", **kw):
    return SessionOutcome(
        session_id=sid,
        study="ours",
        agent=agent,
        model=model,
        task=task,
        repeat=repeat,
        score=score,
        end_reason="completed",
        contract_hash=contract,
        budget_s=2400.0,
        **kw,
    )


@pytest.fixture
def ours():
    """One row beating the paper on T1 (2.0 < Opus 4.7's 2.0863), with a failure, a mixed cell and
    only three tasks (a partial Agg)."""
    return build_matrix(
        [
            outcome("a1", "t1", 2.0, repeat=1),
            outcome("a2", "t1", 2.02, repeat=2),
            outcome("a3", "t1", None, repeat=3),
            outcome("b1", "t2", 0.60, contract="h1"),
            outcome("b2", "t2", 0.62, repeat=2, contract="h2"),
            outcome("c1", "t4", 0.75, scripts_launched=7),
        ],
        study="ours",
    )


def test_unknown_format_names_the_choices(ours):
    with pytest.raises(ValueError, match="choose one of table, csv, md, latex, json"):
        render_matrix(ours, "xlsx")
    assert FORMATS == ("table", "csv", "md", "latex", "json")


def test_csv_parses_back_with_cells_and_aggregates(ours):
    rows = list(csv.DictReader(io.StringIO(render_matrix(ours, "csv"))))
    assert tuple(rows[0]) == MATRIX_CSV_FIELDS
    t1 = next(r for r in rows if r["study"] == "ours" and r["task"] == "t1")
    assert (t1["n_success"], t1["n_total"]) == ("2", "3")
    assert float(t1["mean"]) == pytest.approx(2.01) and float(t1["std"]) == pytest.approx(0.0141421356)
    assert float(t1["best"]) == pytest.approx(2.0) and t1["session_ids"] == "a1 a2 a3"
    assert next(r for r in rows if r["task"] == "t2" and r["study"] == "ours")["mixed_contracts"] == "true"
    agg = next(r for r in rows if r["study"] == "paper" and r["agent"] == "Opus 4.7" and r["task"] == "agg")
    assert round(float(agg["mean"]), 3) == 0.302 and round(float(agg["best"]), 6) == 0.325093
    assert (agg["n_success"], agg["n_total"]) == ("7", "7")
    ours_agg = next(r for r in rows if r["study"] == "ours" and r["task"] == "agg")
    assert ours_agg["partial"] == "true" and (ours_agg["n_success"], ours_agg["n_total"]) == ("3", "7")
    assert agg["partial"] == "false" and t1["partial"] == ""
    assert {
        r["study"] for r in csv.DictReader(io.StringIO(render_matrix(ours, "csv", include_paper=False)))
    } == {"ours"}


def test_json_parses_back(ours):
    doc = json.loads(render_matrix(ours, "json"))
    assert doc["schema"] == "onegc.matrix/1"
    assert [s["study"] for s in doc["studies"]] == ["ours", "paper"]
    row = doc["studies"][0]["rows"][0]
    assert row["label"] == "claude-code [paper split] (opus_x)"  # t1, t2 the paper's; t4 (no choice) joins it
    assert row["cells"]["t1"]["session_ids"] == ["a1", "a2", "a3"]
    assert row["cells"]["t1"]["success_rate"] == pytest.approx(2 / 3)
    assert row["cells"]["t2"]["mixed_contracts"] is True
    assert row["cells"]["t4"]["scripts_mean"] == 7
    assert row["agg"]["partial"] is True and row["agg"]["missing"] == ["t3", "t5", "t6", "t7"]
    paper = doc["studies"][1]
    sonnet = next(r for r in paper["rows"] if r["agent"] == "Sonnet 4.6")
    assert round(sonnet["agg"]["value"], 3) == 0.293 and sonnet["cells"]["t1"]["n_success"] == 3
    assert [s["study"] for s in json.loads(render_matrix(ours, "json", include_paper=False))["studies"]] == [
        "ours"
    ]


def test_paper_is_not_duplicated_when_rendered_itself():
    doc = json.loads(render_matrix(paper_matrix(), "json"))
    assert [s["study"] for s in doc["studies"]] == ["paper"]


def _latex_rows(tex: str) -> list[str]:
    return [ln for ln in tex.splitlines() if ln.endswith("\\\\") and "multicolumn" not in ln]


def test_latex_matches_the_paper_layout_with_pm_and_bold_best(ours):
    tex = render_matrix(ours, "latex")
    assert "\\begin{tabular}{lcccccccc}" in tex and "\\bottomrule" in tex and "\\end{table}" in tex
    rows = _latex_rows(tex)
    assert rows[0].startswith("Agent & T1 ($\\downarrow$) & T2 ($\\uparrow$)") and rows[0].endswith(
        "& Agg \\\\"
    )
    assert all(r.count("&") == 8 for r in rows)  # agent + 7 tasks + Agg
    ours_row = next(r for r in rows if r.startswith("claude-code [paper split] (opus\\_x)"))  # '_' escaped
    assert "$\\mathbf{2.0100 \\pm 0.0141}$" in ours_row  # ours beats the paper on T1 (lower)
    assert "$0.6100 \\pm 0.0141^{*}$" in ours_row  # mixed contracts marked
    assert "$^{\\dagger}$" in tex  # partial Agg footnote
    opus = next(r for r in rows if r.startswith("Opus 4.7"))
    assert "$2.0863 \\pm 0.0234$" in opus  # no longer the best T1
    assert "$\\mathbf{+0.302}$" in opus  # best full Agg; our partial Agg does not compete
    assert "\\multicolumn{9}{l}{\\textit{paper}}" in tex
    paper_only = render_matrix(paper_matrix(), "latex")
    assert "$\\mathbf{2.0863 \\pm 0.0234}$" in paper_only and "multicolumn" not in paper_only


def test_markdown_table_is_well_formed(ours):
    md = render_matrix(ours, "md")
    table = [ln for ln in md.splitlines() if ln.startswith("|")]
    pipes = {ln.count("|") - ln.count("\\|") for ln in table}
    assert pipes == {12}  # study, agent, 7 tasks, Agg, Agg_max
    assert re.fullmatch(r"\|( ---:? \|)+", table[1].replace("---: |", "--- |"))
    assert len(table) == 2 + 1 + 7
    assert "**2.0100±0.0141 (2/3)**" in md and "**+0.302**" in md
    assert any(
        ln.startswith("† ours / claude-code \\[paper split\\] (opus_x): Agg over 3 of 7 tasks")  # brackets escaped
        for ln in md.splitlines()
    )
    assert any(ln.startswith("* pools sessions") for ln in md.splitlines())


def test_plain_table_is_aligned(ours):
    text = render_matrix(ours, "table")
    table = [ln for ln in text.splitlines() if ln and not ln.startswith(("*", "†"))]
    assert len(table) == 2 + 1 + 7  # header, rule, our row, the paper's seven
    assert len({len(ln) for ln in table}) == 1  # right-aligned last column: every line ends together
    assert table[0].split()[:3] == ["study", "agent", "T1"]
    assert "2.0100±0.0141 (2/3)" in text and "N/A" not in text
    fail = build_matrix([outcome("z", "t3", None)])
    assert "N/A (0/1)" in render_matrix(fail, "table", include_paper=False)


def test_sessions_csv_parses_back():
    outs = [outcome("a", "t6_etth1", 0.37, active_s=1800.0), outcome("b", "t6", None)]
    rows = list(csv.DictReader(io.StringIO(sessions_csv(outs))))
    assert tuple(rows[0]) == SESSIONS_CSV_FIELDS
    assert rows[0]["session_id"] == "a" and float(rows[0]["score"]) == 0.37
    assert float(rows[0]["relative_improvement"]) == pytest.approx((0.384 - 0.37) / 0.384)
    assert rows[0]["direction"] == "lower" and rows[0]["active_s"] == "1800.0"
    assert rows[1]["score"] == "" and rows[1]["relative_improvement"] == ""
    assert sessions_csv([]).strip() == ",".join(SESSIONS_CSV_FIELDS)
