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


# Narrower than the matrix, the screen shows whole task columns only, beside a "‹" or "›" column
# that says more are that way (the cursor on it brings the next one in). Textual's sideways scroll
# clipped the columns at both edges: "+0.2" of "+0.293", ".6813" of "0.6813", each read as a value.
MORE_LEFT, MORE_RIGHT = "‹", "›"
MARK_COST = 1 + 2  # a mark column and its two blanks
PADDING = 2  # one blank each side of every column


def task_window(widths: list[int], first: int, room: int) -> tuple[int, int]:
    """The task columns ``[first, last)`` that fit ``room`` cells whole (each of ``widths``, plus
    :data:`PADDING`), with a mark column on each side that hides some; ``first`` moves back where
    the columns from it on leave room (the window is as full as it can be)."""
    n = len(widths)
    if n == 0:
        return 0, 0
    if sum(widths) + PADDING * n <= room:
        return 0, n
    first = max(0, min(first, n - 1))

    def used(a: int, b: int) -> int:
        return sum(widths[a:b]) + PADDING * (b - a) + MARK_COST * ((a > 0) + (b < n))

    last = first + 1
    while last < n and used(first, last + 1) <= room:
        last += 1
    while first > 0 and used(first - 1, last) <= room:
        first -= 1
    return first, last
