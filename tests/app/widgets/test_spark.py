"""The GPU pane's utilisation bars: a fixed 0-100 % scale, one column per sample up to the width."""

from onegc_tui.app.widgets.spark import EIGHTHS, bar_heights, bar_rows


def test_the_scale_is_fixed_so_a_busy_gpu_looks_busy():
    # textual's Sparkline scaled min..max: 95 % and 100 % were an empty and a full bar
    assert bar_heights([95.0, 100.0], 2, 1) == [8, 8]
    assert bar_heights([0.0, 50.0, 100.0, 250.0, -3.0], 5, 2) == [1, 8, 16, 16, 1]  # clamped; 0 % is a floor


def test_few_samples_fill_from_the_right_and_many_share_columns_by_their_highest():
    assert bar_heights([100.0], 4, 1) == [0, 0, 0, 8]
    assert bar_heights([0.0, 100.0, 0.0, 0.0, 50.0, 0.0], 3, 1) == [8, 1, 4]
    assert bar_heights([10.0] * 5, 0, 1) == []


def test_rows_are_drawn_from_the_top_in_runs_of_one_colour():
    rows = bar_rows([0, 4, 16], 2)
    assert ["".join(t for t, _ in r) for r in rows] == ["  █", f" {EIGHTHS[4]}█"]
    assert rows == [[("  ", -1), ("█", 7)], [(" ", -1), (EIGHTHS[4], 2), ("█", 7)]]  # a colour per whole column
