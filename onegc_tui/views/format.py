"""How quantities read on screen and in plain output: one formatter per quantity.

A time span is a clock, ``MM:SS`` below an hour and ``H:MM:SS`` from one (7 200 s is ``2:00:00``)
wherever it appears: the monitor, ``onegc run --plain`` and ``onegc sessions``. Only the sessions
table coarsens it (``coarse=True``), to whole minutes while plenty is left, so that a table of
running sessions does not repaint every row every second.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from runner.wire.verdicts import STRENGTHS, Verdict

if TYPE_CHECKING:  # the registry (pydantic) is imported once a task is named: `onegc sessions` starts without it
    from tasks import Direction

BAR_WIDTH = 10
COARSE_FROM_S = 600  # the sessions table shows whole minutes above this: a per-second change repaints every row


def count(n: int, noun: str) -> str:
    """``1 session``, ``2 sessions``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def fmt_bytes(n: int | None) -> str:
    """A byte count in the unit that reads best (``512 B``, ``3.2 MB``, ``1.4 GB``; decimal units)."""
    n = n or 0
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def clock(seconds: float | None, coarse: bool = False) -> str:
    """A time span: ``05:07``, ``1:02:03``; ``--:--`` when unknown. ``coarse``: from
    :data:`COARSE_FROM_S` on, whole minutes (``2h00m``, ``42m``), seconds near the end."""
    if seconds is None:
        return "--:--"
    if coarse and seconds >= COARSE_FROM_S:
        h, m = divmod(int(seconds // 60), 60)
        return f"{h}h{m:02d}m" if h else f"{m}m"
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """A share as a bar of eighth blocks on a dotted track: ``███▌······``."""
    fraction = min(1.0, max(0.0, fraction))
    full = int(fraction * width)
    part = " ▏▎▍▌▋▊▉"[int((fraction * width - full) * 8)] if full < width else ""
    return ("█" * full + part).ljust(width, "·")[:width]


def short_task(task: str | None) -> str:
    """``T6`` for ``t6_etth1``; an unknown task as it is named."""
    if not task:
        return "?"
    from tasks import UnknownTask, get_task

    try:
        return get_task(task).short.upper()
    except UnknownTask:
        return task


def fmt_score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def fmt_tokens(n: int | None) -> str:
    if not n:
        return "-"
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(n)


def fmt_cost(usd: float | None, none: str = "-") -> str:
    """Dollars with the precision they need, in seven characters at most: two significant digits
    below ten cents (``$0.0021``, ``$0.042``), cents up to a thousand dollars (``$0.38``, ``$0.02``,
    ``$12.40``), whole dollars above (``$1234``); under a tenth of a cent ``<$0.001``. ``none`` for
    no cost (nothing spent, or no price known)."""
    if not usd or usd <= 0 or usd != usd:
        return none
    if usd < 0.001:
        return "<$0.001"
    if usd >= 1000:
        return f"${usd:.0f}"
    if usd >= 0.1 or abs(usd - round(usd, 2)) < 1e-9:
        return f"${usd:.2f}"
    return f"${usd:.3f}" if usd >= 0.01 else f"${usd:.4f}"


def arrow(direction: Direction) -> str:
    """↑ where higher is better, ↓ where lower is."""
    return "↑" if direction == "higher" else "↓"


STRENGTH_MARKS = {"disqualifies": "⛔ disqualifies:", "look": "⚠", "note": "·"}


def verdicts_note(found: Iterable[Verdict]) -> str:
    """A score's verdicts in one line, strongest first, each marked by its strength (runner/wire/verdicts.py):
    ``⛔ disqualifies: …`` / ``⚠ …`` (asks for a look) / ``· …`` (a note: what the scored code did)."""
    ordered = sorted(found, key=lambda v: STRENGTHS.index(v.strength))
    return "; ".join(f"{STRENGTH_MARKS[v.strength]} {v.evidence}" for v in ordered)
