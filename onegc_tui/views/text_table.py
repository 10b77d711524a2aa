"""Plain-text tables for the command line: every column as wide as its widest cell, so nothing is
cut; only when a terminal is narrower than the table is one chosen column cut, and then with ``…``
(a session id in the middle, keeping its unique suffix). Piped output is never cut."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

from onegc_tui.views.sessions_view import end_cut, middle_cut

MIN_CUT = 12  # a cut column keeps at least this many characters


def terminal_width() -> int | None:
    """The terminal's width, or None when stdout is not a terminal (a pipe, a file: keep it all)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset(),
               width: int | None = None, shrink: int | None = None, middle: bool = False) -> list[str]:
    """The lines of an aligned table (two spaces between columns; ``right``: right-aligned columns).
    With ``width`` and ``shrink``, column ``shrink`` is cut (with ``…``) until the table fits."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    if width is not None and shrink is not None:
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over > 0:
            widths[shrink] = max(MIN_CUT, widths[shrink] - over)
    cut = middle_cut if middle else end_cut

    def line(row: Sequence[str]) -> str:
        cells = []
        for i, (value, w) in enumerate(zip(row, widths, strict=False)):
            text = cut(str(value), w) if i == shrink else str(value)
            cells.append(text.rjust(w) if i in right else text.ljust(w))
        return "  ".join(cells).rstrip()

    return [line(header), *(line(r) for r in rows)]


_NUMBER_CHARS = frozenset("0123456789.,%+-eE")


def figure_safe_cut(text: str, keep: int) -> int:
    """Where to cut ``text`` to show at most ``keep`` characters before an ellipsis, such that no
    figure is cut: a number the edge would split (``val_acc 0.9…``) is left out whole instead
    (``val_acc …``), because a cut figure reads as another figure. Text is cut anywhere."""
    if keep >= len(text) or keep <= 0:
        return max(0, min(keep, len(text)))
    cut = keep
    if text[cut] in _NUMBER_CHARS and any(ch.isdigit() for ch in text[max(0, cut - 1):cut + 2]):
        while cut > 0 and text[cut - 1] in _NUMBER_CHARS and text[cut - 1] not in "eE":
            cut -= 1
        if cut > 0 and text[cut - 1] in "eE" and cut - 1 > 0 and text[cut - 2].isdigit():  # 1e-3: one figure
            cut -= 1
            while cut > 0 and text[cut - 1] in _NUMBER_CHARS and text[cut - 1] not in "eE":
                cut -= 1
    return cut
