"""Every number names its split and role (issue 37 item 1, docs/numbers.md): the plain display,
the transcript pane's lines, the sessions table's cells and the score terms themselves."""

from __future__ import annotations

import json

from onegc_tui.cli.plain import describe, official_words
from onegc_tui.views.sessions_view import official_cell
from onegc_tui.views.transcript_view import event_line
from runner.integrity import sealed_split
from runner.wire.events import CheckpointScored, SessionEnded
from runner.wire.score_terms import best_name, measure, score_name
from tasks import get_task

COMMON = {"v": 1, "session_id": "s", "seq": 3, "ts": 1_790_000_000.0}


def scored(**fields) -> CheckpointScored:
    return CheckpointScored(**COMMON, **{"name": "run_1-ep3", "metric": "test_mse", "split": "val",
                                         "budget_elapsed_s": 60.0, **fields})


def test_the_terms():
    assert measure("test MSE") == "MSE" and measure("val accuracy (official test file)") == "accuracy (official test file)"
    assert score_name("test MSE", "val", "live") == "live val MSE"
    assert score_name("test MSE", "test", "official") == "official test MSE"
    assert best_name("test AUROC") == "best live val AUROC"


def test_a_t6_val_score_never_reads_as_a_test_score():
    line = describe(scored(value=0.6669), "t6_etth1")
    assert line == "checkpoint run_1-ep3: live val MSE 0.6669"
    line = describe(scored(value=0.3947, split="test", official=True, val=0.6669), "t6_etth1")
    assert line.startswith("re-evaluated run_1-ep3: test MSE 0.3947, live val 0.6669")
    assert official_words(0.3792, "t6_etth1", "run_1-ep3", 0.6533) == \
        "official test MSE 0.3792 (run_1-ep3, live val MSE 0.6533)"
    assert official_words(None, "t6_etth1") == "no valid score (N/A: a failed run)"
    ended = SessionEnded(**COMMON, reason="budget_exhausted", detail="d", active_s=1, wall_s=1, paused_s=0,
                         score=0.3792, best_checkpoint="run_1-ep3", val=0.6533)
    assert describe(ended, "t6_etth1") == "ended: budget_exhausted, official test MSE 0.3792 (run_1-ep3, live val MSE 0.6533) (d)"


def test_the_transcript_pane_puts_the_figure_first_with_its_split_and_role():
    assert event_line(scored(value=0.6669)).endswith("★ live val 0.6669 · run_1-ep3")
    assert event_line(scored(value=0.3947, split="test", official=True)).endswith("★ re-evaluated test 0.3947 · run_1-ep3")
    # once the session has ended (issue 50), each re-evaluation is the official one or an unofficial one
    chosen = scored(value=0.3947, split="test", official=True)
    assert event_line(chosen, "test", "run_1-ep3").endswith("★ official test 0.3947 · run_1-ep3")
    assert event_line(chosen, "test", "run_2-ep1").endswith("★ unofficial test 0.3947 · run_1-ep3")
    ended = SessionEnded(**COMMON, reason="completed", detail="d", active_s=1, wall_s=1, paused_s=0, score=0.3792)
    assert "official test 0.3792" in event_line(ended, "test")  # the end names the split (it said "official 0.3792")


def test_a_cursor_line_is_cut_before_a_figure_never_inside_it():
    from onegc_tui.app.screens.detail import figure_whole

    line = "cursor 40:00 (100% of budget) · best live val 0.6533 · GPU 97%"
    assert figure_whole(line, len(line)) == line
    for width in range(len("cursor 40:00 (100% of budget) · best live val "), len(line)):
        cut = figure_whole(line, width)
        assert len(cut) <= width and cut.endswith("…") and "0.65…" not in cut and "0.653…" not in cut, cut


def test_the_sessions_table_names_the_official_split():
    assert official_cell({"task": "t6_etth1", "score": 0.3792, "state": "ended"}) == "0.3792 test"
    assert official_cell({"task": "t0_demo", "score": 0.9, "state": "ended"}) == "0.9000 val"
    sealed = json.dumps({"scored_split": sealed_split.contract(get_task("t0"), 200)})  # as the store keeps it
    assert official_cell({"task": "t0_demo", "score": 0.9, "state": "ended", "contract": sealed}) == "0.9000 val sealed"
    assert official_cell({"task": "t0_demo", "score": 0.9, "state": "ended", "contract": "{}"}) == "0.9000 val"
    assert official_cell({"task": "t6_etth1", "score": None, "state": "ended"}) == "N/A"
    assert official_cell({"task": "t6_etth1", "score": None, "state": "running"}) == "-"


def test_the_conditions_of_a_measurement_go_with_its_row():
    from onegc_tui.views.sessions_view import conditions_note, integrity_note

    clean = {"contended": 0, "conditions": "", "end_detail": "active time reached the 40 s budget"}
    assert conditions_note(clean) is None and integrity_note(clean) is None
    contended = {"contended": 1, "conditions": "1 foreign process(es) on the session's GPU: python; throttled: "
                 "hw_slowdown 50 s", "end_detail": "active time reached the budget; 3 processes killed at the memory cap"
                 " (512 MiB)", "caps_reached": 3, "truncated": 1200, "truncated_bytes": 2 << 20}
    note = conditions_note(contended)
    assert note.startswith("contended: 1 foreign process(es) on the session's GPU: python; throttled: hw_slowdown 50 s; "
                           "a cap reached 3× (memory, processes or disk: see its end); "
                           "record cut: 1,200 lines of the agent's output")
    # the ⚠ mark of the monitor's row and its detail (a cut record has its own ✂ mark and line)
    assert integrity_note(contended) == ("contended: 1 foreign process(es) on the session's GPU: python; throttled: "
                                         "hw_slowdown 50 s; a cap reached 3× (memory, processes or disk: see its end)")


def test_a_cut_line_never_cuts_a_figure():
    from onegc_tui.views.text_table import figure_safe_cut

    line = "epoch 2/12 loss 0.3016 val_acc 0.9860"
    for keep in range(len("epoch 2/12 loss 0.3016 val_acc "), len(line)):  # every edge inside the last figure
        assert line[:figure_safe_cut(line, keep)] == "epoch 2/12 loss 0.3016 val_acc "
    assert line[:figure_safe_cut(line, 20)] == "epoch 2/12 loss "  # inside 0.3016: left out whole
    assert line[:figure_safe_cut(line, 9)] == "epoch 2/"  # inside "12" of 2/12
    assert "lr 1e-3 then"[:figure_safe_cut("lr 1e-3 then", 5)] == "lr "  # 1e-3 is one figure
    assert figure_safe_cut("some text here", 6) == 6 and figure_safe_cut("short", 10) == 5
