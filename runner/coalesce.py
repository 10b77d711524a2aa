"""Warnings coalesced per cause, with counts: a flood becomes one report every few seconds.

The first warning of a cause (its ``code``: ``network_blocked``, ``checkpoint``, …) is written at
once; further ones within :data:`FOLD_S` of the last report are counted, and when that window has
passed they go out as one warning that says how many there were and quotes the latest, with
``count`` set to that number. So 1 500 blocked DNS names in two seconds are two events, not
3 000, and the count of warnings stays exact (the store adds up ``count``). Nothing is held past
the session's end: ``session_ended`` drains every pending cause first.
"""

from __future__ import annotations

from dataclasses import dataclass

FOLD_S = 2.0  # a cause is reported at most once per this many seconds; the rest are counted into the next report


@dataclass
class _Cause:
    reported_at: float  # when this cause was last written
    count: int = 0  # folded since then
    latest: str = ""


class WarningFolder:
    """Decides, per warning, whether it is written now or folded into a later summary (not thread-safe:
    the event writer calls it under its lock)."""

    def __init__(self, window_s: float = FOLD_S):
        self.window_s = window_s
        self._causes: dict[str, _Cause] = {}

    def admit(self, code: str, message: str, now: float) -> bool:
        """True: write this warning now. False: it was counted into the cause's next summary."""
        cause = self._causes.get(code)
        if cause is None or (cause.count == 0 and now - cause.reported_at >= self.window_s):
            self._causes[code] = _Cause(reported_at=now)
            return True
        cause.count += 1
        cause.latest = message
        return False

    def due(self, now: float) -> list[tuple[str, str, int]]:
        """Summaries ``(code, message, count)`` of causes whose window has passed."""
        return [self._summary(code, now) for code, c in list(self._causes.items())
                if c.count and now - c.reported_at >= self.window_s]

    def drain(self) -> list[tuple[str, str, int]]:
        """Every pending summary, whatever its window (the session is ending)."""
        return [self._summary(code, None) for code, c in list(self._causes.items()) if c.count]

    def _summary(self, code: str, now: float | None) -> tuple[str, str, int]:
        cause = self._causes[code]
        within = f" in {now - cause.reported_at:.0f} s" if now is not None else ""
        message = f"{cause.count} more {code} warning{'s' if cause.count != 1 else ''}{within}; the latest: {cause.latest}"
        self._causes[code] = _Cause(reported_at=now if now is not None else cause.reported_at)
        return code, message[:2000], cause.count
