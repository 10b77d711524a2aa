"""When the monitor's full garbage collections run: at a quiet moment, not under a key press.

A full collection walks every tracked object the monitor holds that is not frozen: while 8
sessions stream, what came since the last freeze (transcript lines, their rendered strips, the
panes of each session looked at) is 100 000+ objects, and Python ran one every few seconds, each
50-150 ms on the drawing thread (measured: 6 in 16 s of key presses, p50 97 ms; they were the key
presses over 100 ms). Python's own trigger for them is turned off while the monitor runs; the
monitor's once-a-second tick runs one when ``FULL_EVERY_S`` have passed and no key or mouse
button has come for ``QUIET_INPUT_S`` (and after ``FULL_AT_MOST_S`` whatever comes), so cycles
are still collected, a minute late at most. Young collections run as Python runs them.

A burst (a stream of ``BURST_EVENTS`` or more since the last collection) brings the next one
forward to the first quiet moment after it, ``QUIET_EVENTS_S`` without a busy drain and without
input, ``BURST_GAP_S`` at least after the last: what the burst left (100 000+ objects, ~200 ms to
walk on this VM) is walked once, while nothing happens, not a minute later under whatever the
monitor is doing then (an idle monitor's CPU showed it as a 1 % step in one 20 s window of three).

What survives a full collection is frozen out of the next ones (as what the monitor builds at
start is: ``settle``), so each walks only the last minute's objects, not the whole heap again.
Frozen objects are still freed by reference counting; cycles among them (a closed screen's
widgets) are collected by the next thawing collection, every ``THAW_EVERY_S``, which walks all.
"""

from __future__ import annotations

import gc

FULL_EVERY_S = 60.0
QUIET_INPUT_S = 2.0
FULL_AT_MOST_S = 300.0
THAW_EVERY_S = 600.0
BURST_EVENTS = 20_000
BUSY_DRAIN = 50  # events in one drain of the queue (FLUSH_HZ a second) that make it a busy one
QUIET_EVENTS_S = 2.0
BURST_GAP_S = 10.0
NEVER = 1 << 30  # as gc's third threshold: no full collection of Python's own


def settle() -> None:
    """Freeze what the monitor has built so far (no collection first: over 10 000 sessions that
    alone would hold the first key press ~100 ms)."""
    gc.freeze()


class FullCollections:
    """The monitor's full collections; ``start`` on mount, ``stop`` on unmount."""

    def __init__(self, now: float):
        self.last_full = self.last_thaw = now
        self.last_input = now - QUIET_INPUT_S
        self.runs = 0
        self.since_full = 0  # events drawn since the last full collection
        self.last_busy = now - QUIET_EVENTS_S
        self._thresholds: tuple[int, int, int] | None = None

    def start(self) -> None:
        self._thresholds = gc.get_threshold()
        young, middle, _ = self._thresholds
        gc.set_threshold(young, middle, NEVER)

    def stop(self) -> None:
        """Python's own thresholds back, and nothing frozen (the process may go on: tests,
        ``onegc demo`` after the monitor)."""
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
        gc.unfreeze()

    def touched(self, now: float) -> None:
        """A key or a mouse button: someone is waiting for the screen."""
        self.last_input = now

    def fed(self, now: float, events: int) -> None:
        """The app drained ``events`` from the ingest queue."""
        self.since_full += events
        if events >= BUSY_DRAIN:
            self.last_busy = now

    def due(self, now: float) -> bool:
        since = now - self.last_full
        if since >= FULL_AT_MOST_S:
            return True
        if now - self.last_input < QUIET_INPUT_S:
            return False
        after_burst = (self.since_full >= BURST_EVENTS and since >= BURST_GAP_S
                       and now - self.last_busy >= QUIET_EVENTS_S)
        return since >= FULL_EVERY_S or after_burst

    def tick(self, now: float) -> bool:
        """Run a full collection if one is due (of everything, every ``THAW_EVERY_S``), and freeze
        what survives it; returns whether one ran."""
        if not self.due(now):
            return False
        if now - self.last_thaw >= THAW_EVERY_S:
            gc.unfreeze()
            self.last_thaw = now
        gc.collect()
        gc.freeze()
        self.last_full = now
        self.since_full = 0
        self.runs += 1
        return True
