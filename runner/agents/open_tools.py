"""Tool calls still running when the agent CLI exits (issue 28).

A CLI that exits while one of its tools runs (Codex ending its turn during a training) never
writes that tool's result; the runner then stops the tree, which kills the tool. Without a record
the transcript shows a call with no result and nothing says why. :class:`OpenTools` follows every
``tool_call`` and ``tool_result`` by ``call_id`` as the runner emits them; at the end of the
agent's output each call left open gets a ``tool_result`` saying it was killed, and the end detail
carries one note naming them. Calls without a ``call_id`` cannot be matched and are left alone.
"""

from __future__ import annotations

import threading

from runner.agents.base import TranscriptItem

KILLED = "[killed] still running when the agent CLI exited; the runner stopped it with the agent's process tree"
NAMED = 3  # calls named in the end detail; the rest are counted


class OpenTools:
    def __init__(self) -> None:
        self._open: dict[str, TranscriptItem] = {}  # call_id -> its tool_call, in call order
        self._killed: list[TranscriptItem] = []
        self._lock = threading.Lock()

    def seen(self, item: TranscriptItem) -> None:
        if not item.call_id:
            return
        with self._lock:
            if item.kind == "tool_call":
                self._open.setdefault(item.call_id, item)
            elif item.kind == "tool_result":
                self._open.pop(item.call_id, None)

    def killed(self) -> list[TranscriptItem]:
        """A ``tool_result`` for each call still open (once): the agent's output has ended."""
        with self._lock:
            calls = list(self._open.values())
            self._open.clear()
            self._killed += calls
        return [TranscriptItem(role="tool", kind="tool_result", tool=c.tool, call_id=c.call_id, text=KILLED)
                for c in calls]

    def note(self) -> str | None:
        """One line for the end detail, or None when no tool was left running."""
        with self._lock:
            calls = list(self._killed)
        if not calls:
            return None
        named = ", ".join(repr(_short(c.text or c.tool or "?")) for c in calls[:NAMED])
        more = f" and {len(calls) - NAMED} more" if len(calls) > NAMED else ""
        noun = "tool was" if len(calls) == 1 else "tools were"
        return f"{len(calls)} {noun} still running when the agent exited and killed with it: {named}{more}"


def _short(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"
