"""Selection of the official checkpoint (paper step 5) by the harness's validation scores."""

from runner.scoring.official import Candidate, Evaluation, ranked, select, window_best

HIGHER = lambda a, b: a > b  # noqa: E731
LOWER = lambda a, b: a < b  # noqa: E731


def fake(evals: dict[str, Evaluation]):
    calls: list[str] = []

    def evaluate(label: str) -> Evaluation:
        calls.append(label)
        return evals[label]

    return evaluate, calls


def test_the_val_best_is_official_even_where_another_checkpoint_has_a_better_test_score():
    cands = [Candidate("a", 10, 0.70), Candidate("b", 20, 0.75)]
    evaluate, calls = fake({"a": Evaluation(0.70, 0.90), "b": Evaluation(0.75, 0.60)})
    sel = select(cands, HIGHER, evaluate)
    assert sel.best == "b" and sel.evaluations["b"].official == 0.60  # not a's 0.90: no selection on test
    assert calls == ["b"]  # one window: its best is the val-best


def test_each_windows_val_best_is_re_evaluated_as_the_trajectory_but_does_not_compete():
    cands = [Candidate("w0a", 10, 0.5), Candidate("w0b", 200, 0.6), Candidate("w1", 400, 0.4), Candidate("w2", 700, 0.55)]
    evals = {c.label: Evaluation(c.val, c.val + 0.3 if c.label == "w1" else c.val) for c in cands}
    evaluate, calls = fake(evals)
    sel = select(cands, HIGHER, evaluate)
    assert sel.best == "w0b" and sel.trajectory == ["w0b", "w1", "w2"]
    assert sorted(calls) == ["w0b", "w1", "w2"]  # w1's better test score does not make it official


def test_a_checkpoint_whose_live_scoring_failed_is_judged_and_can_win():
    cands = [Candidate("cpu-ok", 10, 0.50), Candidate("cuda-only", 20, None)]
    evaluate, calls = fake({"cpu-ok": Evaluation(0.50, 0.49), "cuda-only": Evaluation(0.80, 0.78)})
    sel = select(cands, HIGHER, evaluate)
    assert calls[0] == "cuda-only" and sel.best == "cuda-only" and sel.evaluations["cuda-only"].official == 0.78


def test_when_the_val_best_fails_its_official_evaluation_the_next_by_val_is_official():
    cands = [Candidate("top", 10, 0.9), Candidate("second", 20, 0.8), Candidate("third", 30, 0.7)]  # one window
    evaluate, calls = fake({"top": Evaluation(None, None, "CUDA out of memory"), "second": Evaluation(0.8, 0.77),
                            "third": Evaluation(0.7, 0.7)})
    sel = select(cands, HIGHER, evaluate)
    assert sel.best == "second" and calls == ["top", "second"]  # not N/A although others scored


def test_a_self_reported_nan_or_any_self_reported_figure_ranks_nothing():
    # only trusted validation scores rank; NaN and inf from anywhere are unknown, not best
    cands = [Candidate("nan", 10, float("nan")), Candidate("real", 20, 0.3)]
    assert [c.label for c in ranked(cands, LOWER)] == ["real"]
    evaluate, calls = fake({"nan": Evaluation(float("nan"), None, "the metric is nan"), "real": Evaluation(0.3, 0.38)})
    sel = select(cands, LOWER, evaluate)
    assert sel.best == "real"


def test_lower_is_better_and_ties_go_to_the_earlier_checkpoint():
    cands = [Candidate("late", 250, 0.40), Candidate("early", 100, 0.40), Candidate("worse", 50, 0.45)]
    assert [c.label for c in ranked(cands, LOWER)] == ["early", "late", "worse"]
    assert [c.label for c in window_best(cands, LOWER)] == ["early"]


def test_no_scorable_checkpoint_and_the_fallback_is_bounded():
    cands = [Candidate(f"c{i}", i, 0.5 + i / 100) for i in range(30)]
    evaluate, calls = fake({c.label: Evaluation(c.val, None, "crashed") for c in cands})
    sel = select(cands, HIGHER, evaluate, max_fallback=5)
    assert sel.best is None and len(calls) == 1 + 5  # the val-best, then five more
    assert select([], HIGHER, evaluate).best is None


def test_the_integrity_rule_strikes_by_strength_never_by_wording():
    from runner.integrity.checks import verdict
    from runner.wire.verdicts import disqualifying

    notes = [verdict("scorer_observed", "note", "wrote to stdout"),
             # what the scorer's child says about itself never decides (issue 28): its code can write it
             verdict("child_report", "note", "the code replaces prepare: judge (disqualifies)")]
    assert disqualifying(notes) is None
    assert disqualifying([verdict("code_unscanned", "look", "run.py runs code from a string (exec)")]) is None
    struck = verdict("evaluator_replaced", "disqualifies", "the code replaces onegc_kit: check_predictions")
    assert disqualifying([*notes, struck]) is struck
    assert disqualifying([]) is None


def test_where_the_disk_filled_up_the_live_scores_choose_and_give_the_value_only_for_a_val_scored_task():
    """Issue 13: a full disk must not lose a checkpoint scored live. Without a re-evaluation the
    val-best of the live scores is official; its live (val) score is the result where the task
    scores val, and no value is invented where it scores test."""
    from runner.scoring.official import from_live_scores

    cands = [Candidate("early", 10, 0.80), Candidate("failed-live", 20, None), Candidate("best", 30, 0.88)]
    on_val = from_live_scores(cands, HIGHER, scored_is_selection=True)
    assert (on_val.label, on_val.val, on_val.official) == ("best", 0.88, 0.88)
    on_test = from_live_scores(cands, HIGHER, scored_is_selection=False)
    assert (on_test.label, on_test.val, on_test.official) == ("best", 0.88, None)
    assert from_live_scores([Candidate("x", 1, None)], LOWER, scored_is_selection=True) is None


def test_a_checkpoint_saved_after_the_budget_never_competes_and_is_labelled():
    from runner.scoring.official import within_budget

    cands = [Candidate("early", 10.0, 0.5), Candidate("at-end", 600.0, 0.6), Candidate("grace", 612.4, 0.99)]
    inside, late = within_budget(cands, 600.0)
    assert [c.label for c in inside] == ["early", "at-end"]
    assert list(late) == ["grace"] and (late["grace"].check, late["grace"].strength) == ("after_budget", "disqualifies")
    assert "saved 12 s after the budget ran out (600 s)" in late["grace"].evidence
    vals = {c.label: c.val for c in cands}
    assert select(inside, lambda a, b: a > b, lambda label: Evaluation(vals[label], vals[label])).best == "at-end"
