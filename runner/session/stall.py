"""The stall alert: no model response for a while, and the agent is not running a tool.

An agent whose model endpoint fails may print nothing at all (OpenCode retries a failing
endpoint for ever in silence), and a 40-minute budget then burns with no hint. The runner
counts the time the agent spends waiting on its model: the clock runs while no tool process
is alive (the CLIs start every tool in a session of its own, so a process of the tree outside
the agent's session is a tool at work: a training run, a background task) and the session is
not paused, and restarts at every model response. After ``stall_s`` of it, one ``stall``
warning; the next model response re-arms it.

A model stream that hangs mid-response looks the same from here: the CLI prints nothing and runs
no tool. So the stall is named twice: as the ``stall`` warning once ``stall_s`` has passed (5 min
by default, ``SessionConfig.stall_s``), and, when the session ends while the agent still waits,
in the end detail (:meth:`StallWatch.end_note`): a session that burnt its budget on a hung
stream says so instead of only "active time reached the budget".
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable


class StallWatch:
    def __init__(self, stall_s: float, clock: Callable[[], float] = time.monotonic):
        self.stall_s = stall_s
        self.clock = clock
        self._since = clock()  # when the agent last stopped being busy or heard from its model
        self._alerted = False

    def model_answered(self) -> None:
        self._since = self.clock()
        self._alerted = False

    def check(self, busy: bool) -> float | None:
        """``busy``: a tool runs or the session is paused. Returns the seconds the agent has waited
        on its model when an alert is due (once per stall), else ``None``."""
        now = self.clock()
        if busy:
            self._since = now
            return None
        waited = now - self._since
        if waited < self.stall_s or self._alerted:
            return None
        self._alerted = True
        return waited

    def end_note(self) -> str | None:
        """For the end detail: the stall still going on as the session ends (alerted and no model
        response since), else None."""
        if not self._alerted:
            return None
        return (f"the model stream stalled: no model response in its last {took(self.clock() - self._since)} "
                f"while no tool ran (named after {took(self.stall_s)})")


def took(seconds: float) -> str:
    """A wait in words: "75 s", "12 min"."""
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


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
