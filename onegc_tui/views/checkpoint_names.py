"""A checkpoint's name in a narrow column: cut in the middle, so that the tail that tells one
checkpoint from the next (``…epoch_12``) stays. Cut end-first, every row of a run read
``run_1_epoch…``. (What a row's score is, live, official or unofficial, and on which split, is the
checkpoints pane's role column: runner/wire/score_terms.py ``role_mark``.)"""

from __future__ import annotations

from onegc_tui.views.sessions_view import middle_cut


def fit_checkpoint_label(name: str, width: int) -> str:
    """``name`` in ``width`` cells, cut in the middle: its head and its distinguishing tail stay."""
    return middle_cut(name, width)
