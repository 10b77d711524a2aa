"""The stall: no model response for a while, and the agent is not running a tool.

An agent whose model endpoint fails may print nothing at all (OpenCode retries a failing
endpoint for ever in silence), and a 40-minute budget then burns with no hint. The runner
counts the time the agent spends waiting on its model: the clock runs while no tool process
is alive (the CLIs start every tool in a session of its own, so a process of the tree outside
the agent's session is a tool at work: a training run, a background task) and the session is
not paused, and restarts at every model response. After ``stall_s`` of it (runner.wire.defaults.STALL_S,
the one meaning of "stalled": the monitor shows this warning, it makes up none of its own), one
``stall`` warning; the stall ends at the next model response or when a tool runs again, which
is one ``stall_cleared`` warning (a pause stops the clock and ends nothing). Silence alone is
never a stall: a long training run is silent work.

A model stream that hangs mid-response looks the same from here: the CLI prints nothing and runs
no tool. So it is named twice: as the ``stall`` warning once ``stall_s`` has passed, and, when the
session ends while the stall still stands, in the end detail (:meth:`StallWatch.end_note`): a
session that burnt its budget on a hung stream says so instead of only "active time reached the
budget" (issue 37).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class StallChange:
    """A stall began (``stalled``) or ended; ``waited_s``: the agent's wait on its model so far;
    ``answered``: it ended by a model response (else by a tool at work)."""

    stalled: bool
    waited_s: float
    answered: bool = False

    def message(self, why: str | None = None) -> str:
        """The warning's text; ``why``: the agent's last error, where one is known."""
        waited = took(self.waited_s)
        if self.stalled:
            return f"no model response for {waited} while the agent runs no tool" + (f"; its last error: {why}" if why else "")
        return f"the model answered again after {waited}" if self.answered else f"a tool runs again after {waited}"


def took(seconds: float) -> str:
    """A wait in words: "75 s", "12 min"."""
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


class StallWatch:
    def __init__(self, stall_s: float, clock: Callable[[], float] = time.monotonic):
        self.stall_s = stall_s
        self.clock = clock
        self._since = clock()  # when the agent last stopped being busy or heard from its model
        self._stalled_since: float | None = None  # the wait's start, while a stall is reported
        self._answered = threading.Event()  # a model response since the last check (the stdout thread sets it)

    def start(self) -> None:
        """The agent started: its wait on its model begins now (the session's set-up before it is
        not the agent's wait)."""
        self._since = self.clock()

    def model_answered(self) -> None:
        self._since = self.clock()
        self._answered.set()

    def check(self, tool_running: bool, paused: bool = False) -> StallChange | None:
        """Once a second from the runner's loop: a :class:`StallChange` when a stall begins (once
        per stall) or ends, else ``None``."""
        now = self.clock()
        answered = self._answered.is_set()
        self._answered.clear()
        if self._stalled_since is not None and (answered or tool_running):
            waited, self._stalled_since = now - self._stalled_since, None
            self._since = now
            return StallChange(False, waited, answered)
        if tool_running or paused:
            self._since = now
            return None
        waited = now - self._since
        if waited < self.stall_s or self._stalled_since is not None:
            return None
        self._stalled_since = self._since
        return StallChange(True, waited)

    def end_note(self) -> str | None:
        """For the end detail: the stall still standing as the session ends (no model response and
        no tool since it was reported), else None."""
        if self._stalled_since is None:
            return None
        return (f"the model stream stalled: no model response in its last {took(self.clock() - self._stalled_since)} "
                f"while no tool ran (named after {took(self.stall_s)})")


def tool_pids(pids: Iterable[int], agent_sid: int, scaffolding: Iterable[int] = ()) -> list[int]:
    """The processes of ``pids`` outside the agent's own session: its tools. ``scaffolding``: the
    harness's own processes around the agent (bubblewrap, ``unshare``), left out."""
    out = []
    skip = set(scaffolding)
    for pid in pids:
        if pid in skip:
            continue
        try:
            if os.getsid(pid) != agent_sid:
                out.append(pid)
        except OSError:  # gone
            continue
    return out
