"""Agg against both references (the paper's baselines, and the baselines measured here by
`onegc baseline`), the val-test gap count and the contended/clean mix, on plain records."""

from __future__ import annotations

import json

import pytest

from onegc_tui.results.export import render_matrix
from onegc_tui.results.matrix import build_matrix
from onegc_tui.views.outcomes import SessionOutcome, measured_baselines
from tasks import get_task


def outcome(sid, task, score, study="s", started=0.0, contract="c1", **kw) -> SessionOutcome:
    return SessionOutcome(session_id=sid, study=study, agent=kw.pop("agent", "claude-code"), model=None, task=task,
                          repeat=1, score=score, end_reason="completed", contract_hash=contract, budget_s=2400.0,
                          started_at=started, **kw)


def test_measured_baselines_are_the_mean_of_the_newest_contracts_baseline_sessions():
    base = [outcome("b1", "t6", 0.370, study="baseline", agent="command", started=1, contract="old"),
            outcome("b2", "t6", 0.376, study="baseline", agent="command", started=3),
            outcome("b3", "t6", 0.372, study="baseline", agent="command", started=2),
            outcome("b4", "t6", None, study="baseline", agent="command", started=4),  # a failure: not counted
            outcome("x1", "t6", 0.1, study="other")]  # not a baseline session
    got = measured_baselines(base)
    assert list(got) == ["t6"] and got["t6"].n == 2 and got["t6"].mean == pytest.approx(0.374)
    assert got["t6"].std == pytest.approx(0.002828, abs=1e-6)


def test_each_row_has_agg_against_the_paper_and_against_the_measured_baseline():
    paper_b = get_task("t6").baseline_score
    sessions = [outcome("a1", "t6", 0.370), outcome("a2", "t6", 0.380)]
    plain = build_matrix(sessions)
    assert plain.rows[0].agg_ours is None  # nothing measured here: no second reference
    matrix = build_matrix(sessions, measured={"t6": 0.374})
    row = matrix.rows[0]
    assert row.agg.per_task["t6"] == pytest.approx((paper_b - 0.375) / paper_b)
    assert row.agg_ours is not None and row.agg_ours.per_task["t6"] == pytest.approx((0.374 - 0.375) / 0.374)
    assert row.agg_ours.partial and "t1" in row.agg_ours.missing  # no measured T1 baseline: partial, as Agg
    table = render_matrix(matrix, "table", include_paper=True)
    header = table.splitlines()[0]
    assert header.split()[-3:] == ["Agg", "Agg_max", "Agg_ours"]
    assert "Agg_ours: relative to the baselines measured here" in table
    data = json.loads(render_matrix(matrix, "json", include_paper=False))
    assert data["studies"][0]["rows"][0]["agg_ours"]["per_task"]["t6"] == pytest.approx(row.agg_ours.per_task["t6"])
    csv_text = render_matrix(matrix, "csv", include_paper=False).splitlines()
    header = csv_text[0].split(",")
    agg_line = next(line.split(",") for line in csv_text if ",agg," in line)
    assert float(agg_line[header.index("r_ours")]) == pytest.approx(row.agg_ours.value)


def test_a_cell_marks_val_gap_flags_and_a_mix_of_contended_and_clean_sessions():
    gap = "val-test gap: ..."
    mixed = build_matrix([outcome("a1", "t6", 0.37, contended=True), outcome("a2", "t6", 0.38, contended=False),
                          outcome("a3", "t6", 0.39, val_gap_flag=gap)])
    cell = mixed.rows[0].cell("t6")
    assert cell.n_contended == 1 and cell.n_clean == 1 and cell.mixed_conditions and cell.n_val_gap == 1
    table = render_matrix(mixed, "table", include_paper=False)
    assert "‡1§1" in table.splitlines()[2]  # each mark with its count of sessions (issue 37)
    assert any(line.startswith("§n: n of its sessions ran contended") for line in table.splitlines())
    assert any(line.startswith("‡n pools n sessions whose selected checkpoint") for line in table.splitlines())
    assert "^{\\ddagger}^{\\S1}" in render_matrix(mixed, "latex", include_paper=False)
    all_contended = build_matrix([outcome("a1", "t6", 0.37, contended=True), outcome("a2", "t6", 0.38, contended=True),
                                  outcome("a3", "t6", 0.39)])  # None: a session from before the record
    assert not all_contended.rows[0].cell("t6").mixed_conditions  # compared alike: not a mix ...
    assert "§2" in render_matrix(all_contended, "table", include_paper=False)  # ... yet measured contended: said
