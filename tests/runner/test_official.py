"""Paper step 5: the overall best plus the best of each 5-minute window."""

from runner.official import Candidate, pick_best, select_candidates


def test_best_overall_plus_best_per_window_higher_is_better():
    cands = [
        Candidate("a", 10, 0.5, None), Candidate("b", 200, 0.7, None),  # window 0
        Candidate("c", 310, 0.6, None),  # window 1
        Candidate("d", 620, None, 0.9), Candidate("e", 650, None, None),  # window 2: self-reported ranks
        Candidate("f", 700, None, None, live_failed=True),
    ]
    chosen = [c.label for c in select_candidates(cands, higher_is_better=True)]
    assert chosen == ["b", "c", "d"]


def test_lower_is_better_and_unscored_windows_take_the_latest():
    cands = [Candidate("a", 10, 3.0, None), Candidate("b", 20, 2.5, None), Candidate("c", 400, None, None),
             Candidate("d", 450, None, None)]
    chosen = [c.label for c in select_candidates(cands, higher_is_better=False)]
    assert chosen == ["b", "d"]


def test_pick_best_respects_direction():
    assert pick_best({"a": 1.0, "b": 2.0}, True) == ("b", 2.0)
    assert pick_best({"a": 1.0, "b": 2.0}, False) == ("a", 1.0)
    assert pick_best({}, True) is None
