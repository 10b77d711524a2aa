"""The study analyses of issue 30: anytime curves by the official rule across repeats (scales,
best-of-k, a shorter budget), paired comparisons (SD, SEM, bootstrap CI, noise floor), the time
ledger, the cost view and the SVG charts the report draws them with."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from onegc_tui.results.cost_views import cost_cells
from onegc_tui.results.paired import BOOTSTRAP_SEED, bootstrap_ci, compare, noise_floor, study_comparisons
from onegc_tui.results.svg_chart import Series, line_chart, stacked_bar
from onegc_tui.views.anytime import (
    AnytimeCurve,
    CheckpointScore,
    expected_best_of_k,
    official_curve,
    repeat_curves,
    rescale,
    rescale_curve,
    score_at_budget,
)
from onegc_tui.views.outcomes import SessionOutcome
from onegc_tui.views.time_ledger import Activity, GpuSplit, calls_a_model, ledger_line, time_ledger
from tasks import get_task


def ck(name, at, val, scored):
    return CheckpointScore(name, at, val, scored)


# ----------------------------------------------------------------------------- anytime


def test_the_official_curve_follows_the_val_best_and_its_test_score_even_down():
    cks = [ck("a", 60, 0.50, 0.40), ck("b", 120, 0.45, 0.90),  # b: worse on val, never chosen
           ck("c", 180, 0.60, 0.35),  # the new val-best does worse on test: the curve goes down
           ck("d", 240, 0.70, None)]  # no scored-split score: passed over, as the official rule does
    curve = official_curve(cks, 300, "higher", "s")
    assert curve.steps == ((0.2, 0.40), (0.6, 0.35))
    assert curve.at(0.1) is None and curve.at(0.5) == 0.40 and curve.at(1.0) == 0.35


def test_lower_is_better_and_grace_checkpoints_count_at_the_end():
    cks = [ck("a", 10, 0.5, 0.52), ck("b", 20, 0.4, 0.41), ck("c", 400, 0.3, 0.33)]
    assert official_curve(cks, 300, "lower").steps == ((10 / 300, 0.52), (20 / 300, 0.41), (1.0, 0.33))
    with pytest.raises(ValueError):
        official_curve(cks, 0, "lower")


def test_a_shorter_budget_is_the_official_rule_on_the_checkpoints_by_then():
    cks = [ck("a", 60, 0.50, 0.40), ck("b", 500, 0.60, 0.45), ck("c", 1300, 0.70, 0.50)]
    assert score_at_budget(cks, 0.5, "higher") is None
    assert score_at_budget(cks, 10, "higher") == 0.45
    assert score_at_budget(cks, 20, "higher") == 0.45  # c appeared at 21:40
    assert score_at_budget(cks, 40, "higher") == 0.50


def test_expected_best_of_k_is_exact_over_every_draw():
    values = [0.1, 0.7, 0.4, 0.9, 0.2]
    for k in range(1, 6):
        draws = list(itertools.combinations(values, k))
        assert expected_best_of_k(values, k, "higher") == pytest.approx(statistics.fmean(max(d) for d in draws))
        assert expected_best_of_k(values, k, "lower") == pytest.approx(statistics.fmean(min(d) for d in draws))
    assert expected_best_of_k(values, 9, "higher") == 0.9 and expected_best_of_k([], 2, "higher") is None


def test_scales_paper_relative_and_rebench_baseline_zero_reference_one():
    t6 = get_task("t6")  # lower is better: MSE
    assert t6.baseline_score is not None and t6.paper_reference is not None
    assert rescale(t6.baseline_score, "relative", t6) == pytest.approx(0.0)
    assert rescale(t6.baseline_score, "rebench", t6) == pytest.approx(0.0)
    assert rescale(t6.paper_reference, "rebench", t6) == pytest.approx(1.0)
    better = t6.baseline_score * 0.9
    assert rescale(better, "relative", t6) == pytest.approx(0.1)
    t0 = get_task("t0")  # no paper reference: no RE-Bench scale
    assert rescale(0.9, "rebench", t0) is None
    assert rescale_curve(AnytimeCurve("s", "higher", ((0.5, 0.9),)), "rebench", t0) is None
    assert rescale_curve(AnytimeCurve("s", "higher", ((0.5, 0.81),)), "relative", t0).steps == (
        (0.5, pytest.approx((0.81 - 0.405) / 0.405)),)


def test_repeat_curves_band_and_best_of_k_on_a_grid():
    curves = [AnytimeCurve("a", "higher", ((0.1, 0.5), (0.6, 0.8))), AnytimeCurve("b", "higher", ((0.3, 0.6),)),
              AnytimeCurve("c", "higher", ((0.5, 0.4),))]
    rc = repeat_curves("x", "t0", curves, "higher", grid=(0.0, 0.2, 0.5, 1.0))
    assert rc.band.n == (0, 1, 3, 3) and rc.band.mean[2] == pytest.approx(0.5)
    assert rc.band.lo[3] == 0.4 and rc.band.hi[3] == 0.8
    assert rc.k == 3 and rc.best_of_k == (None, 0.5, 0.6, 0.8)
    two = repeat_curves("x", "t0", curves, "higher", k=2, grid=(1.0,))
    assert two.best_of_k[0] == pytest.approx((0.8 + 0.8 + 0.6) / 3)


# ----------------------------------------------------------------------------- paired


def run(sid, score, repeat, label, agent="claude-code", end="completed", task="t1"):
    return SessionOutcome(sid, "st", agent, None, task, repeat, score, end, "h", 2400.0, label=label)


def test_paired_differences_by_repeat_with_sd_sem_and_a_reproducible_ci():
    a = [run(f"a{i}", s, i, "A") for i, s in enumerate([1.50, 1.52, 1.47, 1.55], 1)]
    b = [run(f"b{i}", s, i, "B") for i, s in enumerate([1.60, 1.58, 1.61, 1.57], 1)]
    c = compare("t1", "A", a, "B", b, "lower")  # T1: bits per byte, lower is better: A is better
    diffs = [0.10, 0.06, 0.14, 0.02]
    assert c.differences == pytest.approx(diffs) and c.n == 4 and not c.unpaired
    assert c.mean == pytest.approx(0.08) and c.sd == pytest.approx(statistics.stdev(diffs))
    assert c.sem == pytest.approx(statistics.stdev(diffs) / 2)
    assert c.ci is not None and 0 < c.ci[0] < c.mean < c.ci[1] and c.verdict == "A better"
    assert compare("t1", "A", a, "B", b, "lower").ci == c.ci  # a fixed seed: the same interval every time
    assert bootstrap_ci(diffs, seed=BOOTSTRAP_SEED + 1) != c.ci
    assert c.beyond_noise is None  # no noise floor given


def test_failures_and_missing_repeats_are_unpaired_not_dropped_silently():
    a = [run("a1", 0.9, 1, "A"), run("a2", None, 2, "A"), run("a3", 0.8, 3, "A")]
    b = [run("b1", 0.7, 1, "B"), run("b2", 0.6, 2, "B")]
    c = compare("t2", "A", a, "B", b, "higher")
    assert c.pairs == ((1, 0.9, 0.7),) and set(c.unpaired) == {"a2", "b2", "a3"}
    assert c.sd is None and c.sem is None and c.ci is None and "too few" in c.verdict


def test_the_noise_floor_pools_reruns_within_configurations():
    fixed1 = [run(f"f{i}", s, i, "F1", agent="scripted") for i, s in enumerate([1.0, 1.2, 1.1], 1)]
    fixed2 = [run(f"g{i}", s, i, "F2", agent="scripted") for i, s in enumerate([5.0, 5.2], 1)]
    nf = noise_floor("F", [fixed1, fixed2])
    # pooled: (0.02 + 0.02) / (2 + 1) — the gap between the two means is not noise
    assert nf.sd == pytest.approx(math.sqrt(0.04 / 3)) and nf.diff_sd == pytest.approx(math.sqrt(2 * 0.04 / 3))
    assert noise_floor("none", [fixed1[:1]]).sd is None


def test_study_comparisons_pair_every_two_configurations_with_the_scripted_noise_floor():
    outs = [run(f"{lab}{i}", s, i, lab, agent="scripted" if lab == "S" else "codex", task="t0")
            for lab, scores in (("A", [0.90, 0.92]), ("B", [0.80, 0.83]), ("S", [0.50, 0.51]))
            for i, s in enumerate(scores, 1)]
    comps = study_comparisons(outs)  # t0's paper split: each configuration's row says so
    a, b, s = "A (codex [paper split])", "B (codex [paper split])", "S (scripted [paper split])"
    assert [(c.a, c.b) for c in comps] == [(a, b), (a, s), (b, s)]
    ab = comps[0]
    assert ab.mean == pytest.approx(0.095) and ab.noise is not None and ab.noise.source == s
    assert ab.noise.diff_sd == pytest.approx(0.01) and ab.beyond_noise is True
    named = study_comparisons(outs, noise_from=[a, b])
    assert named[0].noise is not None and named[0].noise.n == 4


# ----------------------------------------------------------------------------- ledger, cost, charts


def test_the_time_ledger_adds_up_to_the_wall_time_paused_first():
    acts = [Activity(0, 40, "model_thinking"), Activity(40, 70, "tool_running"), Activity(70, 100, "model_thinking"),
            Activity(60, 80, "paused"), Activity(0, 100, "no_training_process")]
    gpu = GpuSplit(busy_s=30.0, idle_s=60.0, idle_by={"paused": 20.0, "model_thinking": 40.0})
    led = time_ledger("s", (0.0, 110.0), acts, gpu, n_gpus=1)
    assert (led.model_s, led.tool_s, led.paused_s, led.other_s) == (60.0, 20.0, 20.0, 10.0)
    assert led.model_s + led.tool_s + led.paused_s + led.other_s == led.wall_s == 110.0
    assert led.gpu_unsampled_s == 20.0 and led.share("gpu_busy_s") == pytest.approx(30 / 110)
    assert led.as_dict()["gpu_idle_model_thinking_s"] == 40.0
    cpu = time_ledger("c", (0.0, 10.0), [], None, n_gpus=0)
    assert cpu.other_s == 10.0 and cpu.gpu_unsampled_s == 0.0
    # an agent without a model (command, scripted): its time between tool calls is its own, never model generation
    own = time_ledger("m", (0.0, 110.0), acts, gpu, n_gpus=1, has_model=calls_a_model("command"))
    assert (own.model_s, own.own_s, own.tool_s) == (0.0, 60.0, 20.0)
    assert "model generation" not in ledger_line(own) and "agent's own work (no model) 60 s (55%)" in ledger_line(own)
    assert calls_a_model("codex") and not calls_a_model("scripted")


def test_cost_per_score_needs_every_cost_and_never_calls_a_missing_one_free():
    outs = [run("a1", 0.81, 1, "A", agent="codex", task="t0"), run("a2", None, 2, "A", agent="codex", task="t0"),
            run("s1", 0.81, 1, "S", agent="scripted", task="t0")]
    cells = {c.label: c for c in cost_cells(outs, {"a1": 2.0, "a2": 1.0, "s1": None})}
    a = cells["A (codex [paper split])"]
    assert a.n_costed == 2 and a.mean_cost_usd == 1.5 and a.mean_relative == pytest.approx(1.0)
    assert a.per_dollar == pytest.approx(1.0 / 1.5)
    s = cells["S (scripted [paper split])"]
    assert s.mean_cost_usd is None and s.per_dollar is None


def test_charts_are_inline_svg_with_escaped_text_and_no_reference_outside():
    svg = line_chart([Series("<script>alert(1)</script>", [(0.0, 1.0), (0.5, 2.0)], "#123456",
                             band=[(0.0, 0.5, 1.5), (0.5, 1.5, 2.5)])],
                     title="a & b", x_label="x", y_label="y", x_range=(0.0, 1.0))
    assert svg.startswith("<svg") and "<script>" not in svg and "&lt;script&gt;" in svg and "a &amp; b" in svg
    assert "<polygon" in svg and "<polyline" in svg and "href" not in svg
    bar = stacked_bar([("model", 3.0, "#111"), ("tool", 1.0, "#222")])
    assert bar.count("<rect") == 2 and 'width="270.0"' in bar
