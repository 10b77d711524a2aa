"""The analysis layer: the paper's aggregates from its own tables, cell statistics on hand-computed
examples, anytime curves, GPU busy/idle split and the event-derived activity timeline."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onegc_tui.results.matrix import build_matrix, paper_matrix
from onegc_tui.views.anytime import ScorePoint, anytime_band, anytime_curve, scores_at, time_to_first_checkpoint
from onegc_tui.views.outcomes import SessionOutcome
from onegc_tui.views.statistics import relative_improvement
from onegc_tui.views.time_ledger import Activity, UtilSample, activities_from_events, count_scripts, gpu_time_split
from runner.wire.events import (
    AgentStarted,
    BudgetEvent,
    ProcessEvent,
    SessionEnded,
    SessionStarted,
    TranscriptEvent,
)
from tasks import benchmark_tasks
from tests.helpers import REPO

# shared/TASKS.md: paper Table 4 (Agg from means) and Table 6 (Agg_max from best-of-5).
TABLE4_AGG = {
    "Sonnet 4.6": 0.293,
    "Opus 4.6": 0.281,
    "Opus 4.7": 0.302,
    "GPT 5.5": 0.287,
    "Kimi K2.5": 0.190,
    "Kimi K2.6": 0.233,
    "Qwen 3.6+": 0.188,
}
TABLE6_AGG_MAX = {
    "Sonnet 4.6": 0.320,
    "Opus 4.6": 0.315,
    "Opus 4.7": 0.325,
    "GPT 5.5": 0.325,
    "Kimi K2.5": 0.257,
    "Kimi K2.6": 0.292,
    "Qwen 3.6+": 0.273,
}


def outcome(
    sid: str,
    task: str,
    score: float | None,
    *,
    agent: str = "scripted",
    model: str | None = None,
    repeat: int = 1,
    contract: str | None = "c1",
    end: str | None = "completed",
    **kw,
) -> SessionOutcome:
    return SessionOutcome(
        session_id=sid,
        study="s",
        agent=agent,
        model=model,
        task=task,
        repeat=repeat,
        score=score,
        end_reason=end,
        contract_hash=contract,
        budget_s=2400.0,
        **kw,
    )


# ----------------------------------------------------------------------------- the paper


@pytest.mark.parametrize("agent", list(TABLE4_AGG))
def test_paper_table4_aggregate(agent):
    row = paper_matrix().row(agent)
    assert round(row.agg.value, 3) == pytest.approx(TABLE4_AGG[agent], abs=1e-9)
    assert not row.agg.partial and row.agg.n_tasks == 7


@pytest.mark.parametrize("agent", list(TABLE6_AGG_MAX))
def test_paper_table6_aggregate_max(agent):
    row = paper_matrix().row(agent)
    assert round(row.agg_max.value, 3) == pytest.approx(TABLE6_AGG_MAX[agent], abs=1e-9)


def test_opus47_beats_gpt55_on_agg_max_in_the_sixth_decimal():
    m = paper_matrix()
    opus, gpt = m.row("Opus 4.7").agg_max.value, m.row("GPT 5.5").agg_max.value
    assert round(opus, 6) == pytest.approx(0.325093, abs=1e-12)
    assert round(gpt, 6) == pytest.approx(0.325085, abs=1e-12)
    assert opus > gpt


def test_paper_matrix_shape_uses_t3_baseline_and_success_counts():
    m = paper_matrix()
    assert m.study == "paper" and m.is_paper
    assert [c.label for c in m.tasks] == ["T1", "T2", "T3", "T4", "T5", "T6", "T7"]
    assert m.column("t3").baseline == pytest.approx(0.660)  # no paper reference, but a baseline
    sonnet = m.row("Sonnet 4.6")
    assert "t3" in sonnet.agg.per_task
    assert sonnet.agg.per_task["t3"] == pytest.approx((0.8322 - 0.660) / 0.660)
    t1 = sonnet.cell("t1")
    assert (t1.n_success, t1.n_total) == (3, 5)
    assert t1.sem == pytest.approx(0.2097 / math.sqrt(3))
    assert paper_matrix().row("Qwen 3.6+").cell("t3").n_success == 4


def test_our_sessions_reproduce_the_paper_aggregate_when_given_its_means():
    sonnet = {
        spec.short: next(p for p in spec.paper if p.agent == "Sonnet 4.6") for spec in benchmark_tasks()
    }
    outs = [outcome(f"s{t}", t, p.mean, agent="claude-code", model="sonnet") for t, p in sonnet.items()]
    row = build_matrix(outs).row("claude-code [paper split] (sonnet)")  # T4-T6's unmarked sessions join it: one row
    assert round(row.agg.value, 3) == pytest.approx(0.293)
    assert row.agg.value == pytest.approx(paper_matrix().row("Sonnet 4.6").agg.value, abs=1e-12)


def test_relative_improvement_direction():
    assert relative_improvement(0.9, 0.8, "higher") == pytest.approx(0.125)
    assert relative_improvement(2.0, 4.0, "lower") == pytest.approx(0.5)
    assert relative_improvement(5.0, 4.0, "lower") == pytest.approx(-0.25)
    with pytest.raises(ValueError):
        relative_improvement(1.0, 0.0, "higher")


# ----------------------------------------------------------------------------- cells


def test_cell_mean_sample_std_sem_and_success_rate():
    outs = [
        outcome("a", "t2", 0.5, repeat=2),
        outcome("b", "t2", 0.7, repeat=1),
        outcome("c", "t2", 0.6, repeat=3),
        outcome("d", "t2", None, repeat=4, end="budget_exhausted"),  # failure: N/A
        outcome("e", "t2", None, repeat=5, end=None),  # still running: not counted
    ]
    cell = build_matrix(outs).row("scripted [paper split]").cell("t2")
    assert cell.mean == pytest.approx(0.6)
    assert cell.std == pytest.approx(0.1)  # sqrt(((-.1)^2 + .1^2 + 0) / (3 - 1))
    assert cell.sem == pytest.approx(0.1 / math.sqrt(3))
    assert (cell.n_success, cell.n_total) == (3, 4)
    assert cell.success_rate == pytest.approx(0.75)
    assert cell.session_ids == ("b", "a", "c", "d")
    assert cell.running_ids == ("e",)


def test_single_success_has_no_std():
    cell = build_matrix([outcome("a", "t7", 0.9), outcome("b", "t7", None)]).row("scripted [paper split]").cell("t7")
    assert cell.mean == pytest.approx(0.9) and cell.std is None and cell.sem is None
    assert cell.best == pytest.approx(0.9)


def test_non_finite_score_is_a_failure():
    cell = (
        build_matrix([outcome("a", "t6", float("nan")), outcome("b", "t6", 0.4)]).row("scripted").cell("t6")
    )
    assert (cell.n_success, cell.n_total) == (1, 2) and cell.mean == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("task", "best", "best_session"), [("t1", 2.1, "b"), ("t6", 2.1, "b"), ("t2", 2.5, "c")]
)
def test_best_of_n_is_direction_aware(task, best, best_session):
    outs = [
        outcome("a", task, 2.3),
        outcome("b", task, 2.1),
        outcome("c", task, 2.5),
        outcome("d", task, None),
    ]
    cell = build_matrix(outs).row("scripted" if task == "t6" else "scripted [paper split]").cell(task)  # T6: no choice
    assert cell.best == pytest.approx(best) and cell.best_session == best_session


def test_contract_mixing_flag():
    same = build_matrix(
        [
            outcome("a", "t4", 0.7, contract="h1"),
            outcome("b", "t4", 0.8, contract="h1"),
            outcome("c", "t4", 0.8, contract=None),
        ]
    )
    assert not same.row("scripted").cell("t4").mixed_contracts
    mixed = build_matrix([outcome("a", "t4", 0.7, contract="h1"), outcome("b", "t4", None, contract="h2")])
    cell = mixed.row("scripted").cell("t4")
    assert cell.mixed_contracts and cell.contract_hashes == ("h1", "h2")


def test_rows_split_by_agent_and_model_and_tasks_named_either_way():
    outs = [
        outcome("a", "t1_shakespeare", 2.5, agent="codex", model="gpt-5.5"),
        outcome("b", "T1", 2.4, agent="codex", model="gpt-5.5"),
        outcome("c", "t1", 2.2, agent="claude-code", model="opus"),
    ]
    m = build_matrix(outs)
    assert [r.label for r in m.rows] == ["claude-code [paper split] (opus)", "codex [paper split] (gpt-5.5)"]
    assert m.row("codex [paper split] (gpt-5.5)").cell("t1").n_total == 2


def test_partial_aggregate_when_tasks_are_missing_or_all_failed():
    outs = [outcome("a", "t1", 3.0), outcome("b", "t2", 0.5), outcome("c", "t3", None)]
    row = build_matrix(outs).row("scripted [paper split]")
    r1, r2 = (3.438 - 3.0) / 3.438, (0.5 - 0.343) / 0.343
    assert row.agg.value == pytest.approx((r1 + r2) / 2)
    assert row.agg.partial and row.agg.n_tasks == 2
    assert row.agg.missing == ("t3", "t4", "t5", "t6", "t7")  # t3 ran but every repeat failed
    fixed = build_matrix(outs, agg_tasks=["T1", "t2_tinyimagenet"]).row("scripted [paper split]")
    assert fixed.agg.expected == ("t1", "t2") and not fixed.agg.partial


def test_demo_only_study_aggregates_over_its_own_task():
    row = build_matrix([outcome("a", "t0", 0.5)]).row("scripted [paper split]")
    assert row.agg.expected == ("t0",) and not row.agg.partial
    assert row.agg.value == pytest.approx((0.5 - 0.405) / 0.405)


def test_unknown_task_is_reported_not_raised():
    m = build_matrix([outcome("a", "t99_gone", 0.5), outcome("b", "t5", 0.9)])
    assert m.unknown_tasks == ("t99_gone",) and [c.task for c in m.tasks] == ["t5"]


def test_cell_means_of_scripts_budget_and_gpu():
    outs = [
        outcome("a", "t5", 0.9, scripts_launched=4, active_s=1200.0, gpu_busy_s=30.0, gpu_idle_s=10.0),
        outcome("b", "t5", None, scripts_launched=6, active_s=2400.0, gpu_busy_s=10.0, gpu_idle_s=50.0),
        outcome("c", "t5", 0.8),
    ]
    cell = build_matrix(outs).row("scripted").cell("t5")
    assert cell.scripts_mean == pytest.approx(5.0)
    assert cell.budget_used_mean == pytest.approx(0.75)
    assert cell.gpu_busy_fraction == pytest.approx(40 / 100)


# ----------------------------------------------------------------------------- anytime curves


def test_anytime_curve_best_so_far_step_function():
    pts = [
        ScorePoint("s", 50, 0.7),
        ScorePoint("s", 10, 0.5),
        ScorePoint("s", 20, 0.4),
        ScorePoint("s", 30, None),
        ScorePoint("s", 60, 0.7),
        ScorePoint("s", 120, 0.8),
    ]  # 120 s: saved in the grace period
    curve = anytime_curve(pts, budget_s=100, direction="higher")
    assert curve.session_id == "s"
    assert curve.steps == ((0.1, 0.5), (0.5, 0.7), (1.0, 0.8))
    assert scores_at(curve) == {0.25: 0.5, 0.5: 0.7, 0.75: 0.7, 1.0: 0.8}
    assert curve.at(0.05) is None
    low = anytime_curve(
        [ScorePoint("t", 10, 3.0), ScorePoint("t", 40, 3.2), ScorePoint("t", 80, 2.5)], 100, "lower"
    )
    assert low.steps == ((0.1, 3.0), (0.8, 2.5))
    with pytest.raises(ValueError):
        anytime_curve(pts, budget_s=0, direction="higher")


def test_anytime_band_mean_and_spread_on_a_common_grid():
    a = anytime_curve([ScorePoint("a", 10, 0.5), ScorePoint("a", 60, 0.9)], 100, "higher")
    b = anytime_curve([ScorePoint("b", 40, 0.7)], 100, "higher")
    band = anytime_band([a, b], grid=[0.25, 0.5, 1.0])
    assert band.n == (1, 2, 2) and band.n_curves == 2
    assert band.mean == pytest.approx((0.5, 0.6, 0.8))
    assert band.std[0] is None and band.std[1] == pytest.approx(math.sqrt(0.02))
    assert (band.lo[2], band.hi[2]) == (0.7, 0.9)
    assert len(anytime_band([a, b]).grid) == 101


def test_time_to_first_checkpoint():
    pts = [ScorePoint("s", 300, 0.5), ScorePoint("s", 120, None)]
    assert time_to_first_checkpoint(pts) == 120
    assert time_to_first_checkpoint(pts, scored_only=True) == 300
    assert time_to_first_checkpoint([]) is None


# ----------------------------------------------------------------------------- GPU time


def test_gpu_busy_idle_split_by_activity():
    utils = [90, 90, 0, 0, 0, 50, 0, 0, 0, 90]  # one sample a second; idle over [2, 5) and [6, 9)
    samples = [UtilSample(float(t), u) for t, u in enumerate(utils)]
    acts = [
        Activity(2, 3, "paused"),
        Activity(2.5, 4.5, "model_thinking"),
        Activity(4.5, 7, "tool_running"),
        Activity(7, 8, "no_training_process"),
        Activity(0, 3, "no_training_process"),
    ]
    split = gpu_time_split(samples, acts)
    assert split.busy_s == pytest.approx(4.0)  # t = 0, 1, 5, 9 (the last stands for the median 1 s)
    assert split.idle_s == pytest.approx(6.0)
    assert split.busy_fraction == pytest.approx(0.4)
    assert split.idle_by["paused"] == pytest.approx(1.0)  # paused wins its overlap with thinking
    assert split.idle_by["model_thinking"] == pytest.approx(1.5)
    assert split.idle_by["tool_running"] == pytest.approx(1.5)  # [4.5, 5) + [6, 7)
    assert split.idle_by["no_training_process"] == pytest.approx(1.0)
    assert split.idle_by["unattributed"] == pytest.approx(1.0)  # [8, 9)


def test_gpu_split_threshold_gaps_window_and_gpus():
    at_threshold = gpu_time_split([UtilSample(0, 10.0), UtilSample(1, 10.1)])
    assert (at_threshold.busy_s, at_threshold.idle_s) == (pytest.approx(1.0), pytest.approx(1.0))
    gap = gpu_time_split([UtilSample(0, 90), UtilSample(1, 90), UtilSample(30, 0)])
    assert gap.busy_s == pytest.approx(1 + 5)  # the sample before the 29 s gap stands for 5 s at most
    assert gap.idle_s == pytest.approx(5)  # the last stands for the median spacing, capped at 5 s
    windowed = gpu_time_split([UtilSample(float(t), 90) for t in range(10)], window=(2.5, 6.0))
    assert windowed.busy_s == pytest.approx(3.5)
    two = gpu_time_split(
        [UtilSample(0, 90, 0), UtilSample(1, 90, 0), UtilSample(0, 0, 1), UtilSample(1, 0, 1)]
    )
    assert (two.busy_s, two.idle_s) == (pytest.approx(2.0), pytest.approx(2.0))
    assert gpu_time_split([]).busy_fraction is None


@settings(max_examples=60, deadline=None)
@given(
    utils=st.lists(st.floats(0, 100), min_size=1, max_size=40),
    spans=st.lists(
        st.tuples(
            st.floats(-5, 45),
            st.floats(0, 20),
            st.sampled_from(["paused", "model_thinking", "tool_running", "no_training_process"]),
        ),
        max_size=8,
    ),
)
def test_gpu_split_accounts_for_every_second(utils, spans):
    samples = [UtilSample(float(t), u) for t, u in enumerate(utils)]
    split = gpu_time_split(samples, [Activity(a, a + d, k) for a, d, k in spans])
    assert split.total_s == pytest.approx(len(utils))
    assert sum(split.idle_by.values()) == pytest.approx(split.idle_s)
    assert all(v >= -1e-9 for v in split.idle_by.values())


def _session_events():
    sid, n = "x", iter(range(1, 100))
    kw = lambda ts: dict(session_id=sid, seq=next(n), ts=ts)  # noqa: E731
    return [
        SessionStarted(**kw(0), task="t0", agent="scripted", budget_s=60, grace_s=5),
        AgentStarted(**kw(1), pid=10, argv=["a"], containment="none"),
        TranscriptEvent(**kw(5), role="assistant", kind="text", text="plan"),
        TranscriptEvent(**kw(6), role="assistant", kind="tool_call", tool="Bash", call_id="a"),
        ProcessEvent(**kw(7), action="started", pid=11, script="run_1.py", cmdline="python run_1.py"),
        ProcessEvent(
            **kw(8), action="started", pid=12, script="nvidia-smi", cmdline="nvidia-smi", training=False
        ),
        TranscriptEvent(**kw(20), role="tool", kind="tool_result", call_id="a"),
        ProcessEvent(
            **kw(30), action="ended", pid=11, script="run_1.py", cmdline="python run_1.py", returncode=0
        ),
        BudgetEvent(**kw(40), state="paused", remaining_s=20, deadline=100),
        BudgetEvent(**kw(50), state="resumed", remaining_s=20, deadline=70),
        ProcessEvent(**kw(52), action="started", pid=13, script="run_2.py", cmdline="python run_2.py"),
        SessionEnded(**kw(60), reason="budget_exhausted", active_s=50, wall_s=60, paused_s=10),
    ]


def test_activities_from_events_and_their_idle_split():
    events = _session_events()
    acts = activities_from_events(list(reversed(events)))  # order of input does not matter

    def total(kind):
        return sum(a.end - a.start for a in acts if a.kind == kind)

    assert total("model_thinking") == pytest.approx(4 + 1 + 40)  # [1, 5), [5, 6), [20, 60)
    assert total("tool_running") == pytest.approx(14)  # [6, 20)
    assert total("no_training_process") == pytest.approx(7 + 22)  # [0, 7), [30, 52)
    assert total("paused") == pytest.approx(10)  # [40, 50)
    assert count_scripts(events) == 2  # nvidia-smi is not a training script

    idle_gpu = [UtilSample(float(t), 0.0) for t in range(60)]
    split = gpu_time_split(idle_gpu, acts, window=(0, 60))
    assert split.idle_s == pytest.approx(60)
    assert split.idle_by["paused"] == pytest.approx(10)
    assert split.idle_by["tool_running"] == pytest.approx(14)
    assert split.idle_by["model_thinking"] == pytest.approx(35)  # 45 less the 10 paused
    assert split.idle_by["no_training_process"] == pytest.approx(1)  # [0, 1): before the agent started
    assert split.idle_by["unattributed"] == pytest.approx(0)


def test_live_session_timeline_ends_at_end_ts():
    events = [e for e in _session_events() if e.type != "session_ended"]
    acts = activities_from_events(events, end_ts=70)
    assert max(a.end for a in acts) == 70
    assert activities_from_events([]) == []


# ----------------------------------------------------------------------------- the core/UI split


@pytest.mark.slow
def test_analysis_and_export_import_no_ui_library():
    code = (
        "import sys, onegc_tui.results.matrix, onegc_tui.results.export; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- study agent labels, demo apart


def test_a_studys_agent_configurations_are_rows_of_their_own():
    """quick and steady run the same adapter: two rows, not one pooled scripted row (issue 15)."""
    from onegc_tui.results.matrix import split_demo

    quick = [outcome(f"demo--quick--t0--r{k}", "t0", s, label="quick", repeat=k) for k, s in ((1, 0.97), (2, 0.9746))]
    steady = [outcome(f"demo--steady--t0--r{k}", "t0", s, label="steady", repeat=k) for k, s in ((1, 0.70), (2, 0.6586))]
    bench, demo = split_demo(quick + steady)
    assert bench == [] and len(demo) == 4
    m = build_matrix(demo)
    assert [r.label for r in m.rows] == ["quick (scripted [paper split])", "steady (scripted [paper split])"]
    assert m.row("quick (scripted [paper split])").cell("t0").mean == pytest.approx(0.9723)
    assert m.row("steady (scripted [paper split])").cell("t0").mean == pytest.approx(0.6793)


def test_the_same_label_in_two_studies_is_two_rows_named_by_study():
    a = outcome("a--fast--t1--r1", "t1", 3.3, label="fast")
    b = dataclasses.replace(a, session_id="b--fast--t1--r1", study="b")
    m = build_matrix([a, b])
    assert sorted(r.label for r in m.rows) == ["b/fast (scripted [paper split])", "s/fast (scripted [paper split])"]


def test_the_demo_task_is_kept_apart_from_the_papers_tasks():
    from onegc_tui.results.matrix import split_demo

    bench, demo = split_demo([outcome("x", "t1", 3.3), outcome("y", "t0_demo", 0.9)])
    assert [o.session_id for o in bench] == ["x"] and [o.session_id for o in demo] == ["y"]
