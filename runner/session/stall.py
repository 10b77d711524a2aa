"""The stall alert: no model response for a while, and the agent is not running a tool.

An agent whose model endpoint fails may print nothing at all (OpenCode retries a failing
endpoint for ever in silence), and a 40-minute budget then burns with no hint. The runner
counts the time the agent spends waiting on its model: the clock runs while no tool process
is alive (the CLIs start every tool in a session of its own, so a process of the tree outside
the agent's session is a tool at work: a training run, a background task) and the session is
not paused, and restarts at every model response. After ``stall_s`` of it, one ``stall``
warning; the next model response re-arms it.
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
