"""The unofficial test-best (runner/scoring/unofficial.py): best scored-split score, labelled, never ranked."""

from __future__ import annotations

import math

from runner.scoring.unofficial import KEY, LABEL, best_scored, candidates, still_to_evaluate


def higher(a: float, b: float) -> bool:
    return a > b


def lower(a: float, b: float) -> bool:
    return a < b


ROWS = [
    {"checkpoint": "a", "budget_elapsed_s": 10.0, "official": 0.50},
    {"checkpoint": "b", "budget_elapsed_s": 20.0, "official": 0.70},
    {"checkpoint": "c", "budget_elapsed_s": 30.0, "official": 0.70},  # a tie: the earlier stands
    {"checkpoint": "d", "budget_elapsed_s": 40.0, "official": None},  # its evaluation failed
    {"checkpoint": "e", "budget_elapsed_s": 50.0, "official": math.nan},
]


def test_best_by_the_tasks_direction_ties_to_the_earlier_and_it_says_what_it_is():
    block = best_scored(ROWS, higher, "test", found=5)[KEY]
    assert (block["value"], block["checkpoint"], block["budget_elapsed_s"]) == (0.70, "b", 20.0)
    assert block["label"] == LABEL and LABEL.startswith("unofficial") and "ranking key" in LABEL
    assert block["checkpoints_scored"] == 3 and block["checkpoints_found"] == 5 and block["complete"] is False
    low = best_scored(ROWS, lower, "test", found=3)[KEY]
    assert (low["value"], low["checkpoint"], low["complete"]) == (0.50, "a", True)


def test_no_scored_checkpoint_gives_no_value():
    block = best_scored([], higher, "val", found=0)[KEY]
    assert block["value"] is None and block["checkpoint"] is None and block["complete"] is True


def test_the_rest_is_evaluated_in_budget_order_and_capped():
    found_at = {"x": 30.0, "y": 10.0, "z": 20.0, "w": 5.0}
    assert still_to_evaluate(found_at, {"w"}) == ["y", "z", "x"]
    assert still_to_evaluate(found_at, set(), limit=2) == ["w", "y"]
    assert still_to_evaluate(found_at, set(), limit=-1) == []


def test_where_the_scored_split_is_val_the_live_scores_stand_for_the_checkpoints_not_re_evaluated():
    rows = [{"checkpoint": "a", "budget_elapsed_s": 10.0, "official": 0.60}]  # its re-evaluation replaces 0.9
    live = {"a": 0.90, "b": 0.70, "c": None}
    at = {"a": 10.0, "b": 20.04, "c": 30.0}
    val_task = candidates(rows, live, at, scored_is_selection=True)
    assert [(r["checkpoint"], r["official"]) for r in val_task] == [("a", 0.60), ("b", 0.70), ("c", None)]
    block = best_scored(val_task, higher, "val", found=3)[KEY]
    assert (block["value"], block["checkpoint"], block["budget_elapsed_s"]) == (0.70, "b", 20.0)
    assert block["checkpoints_scored"] == 2 and not block["complete"]
    assert candidates(rows, live, at, scored_is_selection=False) == rows  # a held-out split: re-evaluations only
