"""How the history screen shares a short terminal: the matrix first (its header, our rows and the
paper's rows), the highlighted cell's statistics and anytime plot below it with what is left.

The bottom box is ``BOTTOM_ROWS`` high where there is room (app.tcss). On a short terminal (80×24)
it took the rows the matrix needed, and the matrix showed its header and no row; now it shrinks
to leave the matrix every row, and below ``BOTTOM_MIN`` rows, where its statistics and plot
would say too little, it is hidden (a taller terminal shows it again).
"""

from __future__ import annotations

BOTTOM_ROWS = 12  # app.tcss #hist-bottom
BOTTOM_MIN = 6  # its border, four lines of statistics: less says too little
MATRIX_EXTRA = 2  # the matrix's header line, and a horizontal scrollbar where it is wider than the screen


def bottom_rows(screen_rows: int, fixed_rows: int, matrix_rows: int) -> int:
    """The bottom box's height (0: hidden) on a screen ``screen_rows`` high whose other widgets
    (title, summary, demo table, footer) take ``fixed_rows``, beside a matrix of ``matrix_rows``."""
    room = screen_rows - fixed_rows - matrix_rows - MATRIX_EXTRA
    rows = min(BOTTOM_ROWS, room)
    return rows if rows >= BOTTOM_MIN else 0
