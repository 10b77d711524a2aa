"""The budget clock: active time excludes pauses; the deadline moves on resume.

Time comes from injectable clocks (``monotonic`` for durations, ``wall`` for epoch deadlines),
so the arithmetic is tested without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class BudgetClock:
    budget_s: float
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    _active_before: float = 0.0
    _running_since: float | None = None
    _paused_s: float = 0.0
    _paused_since: float | None = None
    _started_at: float | None = field(default=None)

    def start(self) -> None:
        now = self.monotonic()
        self._started_at = now
        self._running_since = now

    @property
    def running(self) -> bool:
        return self._running_since is not None

    @property
    def paused(self) -> bool:
        return self._paused_since is not None

    def active_s(self) -> float:
        extra = self.monotonic() - self._running_since if self._running_since is not None else 0.0
        return self._active_before + extra

    def paused_s(self) -> float:
        extra = self.monotonic() - self._paused_since if self._paused_since is not None else 0.0
        return self._paused_s + extra

    def wall_s(self) -> float:
        return 0.0 if self._started_at is None else self.monotonic() - self._started_at

    def remaining_s(self) -> float:
        return max(0.0, self.budget_s - self.active_s())

    def expired(self) -> bool:
        return self.active_s() >= self.budget_s

    def deadline(self) -> float:
        """Epoch seconds at which the budget runs out if nothing pauses it."""
        return self.wall() + self.remaining_s()

    def pause(self) -> bool:
        if self._running_since is None:
            return False
        now = self.monotonic()
        self._active_before += now - self._running_since
        self._running_since = None
        self._paused_since = now
        return True

    def resume(self) -> bool:
        if self._paused_since is None:
            return False
        now = self.monotonic()
        self._paused_s += now - self._paused_since
        self._paused_since = None
        self._running_since = now
        return True

    def stop(self) -> None:
        """Freeze the clocks at the end of the session."""
        if self._paused_since is not None:
            self.resume()
        if self._running_since is not None:
            now = self.monotonic()
            self._active_before += now - self._running_since
            self._running_since = None
