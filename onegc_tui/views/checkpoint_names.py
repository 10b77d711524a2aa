"""A checkpoint's name in a narrow column: cut in the middle, so that the tail that tells one
checkpoint from the next (``…epoch_12``) stays, and an official checkpoint keeps its
``(official)`` mark whole where there is room for it beside six characters of the name (the
checkpoints pane also says "★ result" in that row's note). Cut end-first, every row of a run
read ``run_1_epoch…``."""

from __future__ import annotations

from onegc_tui.views.sessions_view import middle_cut

OFFICIAL = " (official)"
NAME_KEEP = 6  # the name keeps at least this much beside the mark; narrower, the mark is cut too


def checkpoint_label(name: str, official: bool) -> str:
    """The whole label of a checkpoint row."""
    return f"{name}{OFFICIAL}" if official else name


def fit_checkpoint_label(label: str, width: int) -> str:
    """``label`` (from :func:`checkpoint_label`) in ``width`` cells: the name cut in the middle
    (its head and its distinguishing tail stay), the official mark kept when there is room."""
    if len(label) <= width:
        return label
    if label.endswith(OFFICIAL):  # too narrow for the mark beside the name: the name (its note says official)
        name = label[:-len(OFFICIAL)]
        if width - len(OFFICIAL) >= NAME_KEEP:
            return middle_cut(name, width - len(OFFICIAL)) + OFFICIAL
        return middle_cut(name, width)
    return middle_cut(label, width)
