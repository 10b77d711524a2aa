"""Warnings coalesced per cause, with counts: a flood becomes a few reports every few seconds.

A cause is a warning's ``code`` (``network_blocked``, ``checkpoint``, …). In each window of
:data:`FOLD_S` seconds the first :data:`BURST` warnings of a cause are written as they come (a
handful of distinct problems stay distinct); the rest are counted, and when the window has passed
they go out as one warning that says how many there were and quotes the latest, with ``count``
set to that number. While the flood goes on, each further window is one such summary; a cause
quiet for a whole window starts again with its burst. So 1 500 blocked DNS names in a second are
a dozen events, not 3 000, and the count of warnings stays exact (the store adds up ``count``). Nothing is held past the session's
end: ``session_ended`` drains every pending cause first.
"""

from __future__ import annotations

from dataclasses import dataclass

FOLD_S = 2.0  # the window: a cause writes at most BURST warnings and one summary per this many seconds
BURST = 10  # warnings of one cause written one by one per window before the rest are counted


@dataclass
class _Cause:
    since: float  # when the current window began
    written: int = 0  # written one by one in this window
    count: int = 0  # folded in this window
    latest: str = ""


class WarningFolder:
    """Decides, per warning, whether it is written now or folded into a later summary (not
    thread-safe: the event writer calls it under its lock)."""

    def __init__(self, window_s: float = FOLD_S, burst: int = BURST):
        self.window_s = window_s
        self.burst = burst
        self._causes: dict[str, _Cause] = {}

    def admit(self, code: str, message: str, now: float) -> bool:
        """True: write this warning now. False: it was counted into the cause's next summary."""
        cause = self._causes.get(code)
        if cause is None or (cause.count == 0 and now - cause.since >= self.window_s):
            cause = self._causes[code] = _Cause(since=now)
        if cause.count == 0 and cause.written < self.burst:  # once folding has begun, the window's rest is folded
            cause.written += 1
            return True
        cause.count += 1
        cause.latest = message
        return False

    def due(self, now: float) -> list[tuple[str, str, int]]:
        """Summaries ``(code, message, count)`` of causes whose window has passed."""
        return [self._summary(code, now) for code, c in list(self._causes.items())
                if c.count and now - c.since >= self.window_s]

    def drain(self) -> list[tuple[str, str, int]]:
        """Every pending summary, whatever its window (the session is ending)."""
        return [self._summary(code, None) for code, c in list(self._causes.items()) if c.count]

    def _summary(self, code: str, now: float | None) -> tuple[str, str, int]:
        cause = self._causes[code]
        within = f" in {now - cause.since:.0f} s" if now is not None else ""
        message = f"{cause.count} more {code} warning{'s' if cause.count != 1 else ''}{within}; the latest: {cause.latest}"
        # a flood that goes on folds from the start of its next window: one summary per window, not
        # another burst; a cause quiet for a whole window gets its burst back (admit)
        self._causes[code] = _Cause(since=now if now is not None else cause.since, written=self.burst)
        return code, message[:2000], cause.count
