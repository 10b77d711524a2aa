"""The agent's output, read as it comes: stdout line by line into ``transcript`` events (the
adapter's parse; a line the adapter cannot parse is kept raw), stderr into its log and a bounded
tail for the end detail. Every model response re-arms the stall watch (runner/session/stall.py)
and every priced item counts toward ``--cost-limit`` (runner/session/cost_limit.py)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import IO

from runner.agents.base import AgentAdapter, TranscriptItem
from runner.agents.item import raw_item
from runner.agents.open_tools import OpenTools
from runner.session.cost_limit import CostMeter
from runner.session.stall import StallWatch
from runner.wire.jsonl import EventWriter, OnNoSpace, RawLog
from runner.wire.paths import SessionPaths
from runner.wire.record_caps import StreamCap

STDERR_TAIL_LINES = 50  # kept in memory for the failure message; all of it is on disk


class AgentOutput:
    """``on_no_space``: what a full disk while writing the raw copies trips (the disk guard)."""

    def __init__(self, adapter: AgentAdapter, paths: SessionPaths, events: EventWriter, stall: StallWatch,
                 cost: CostMeter, on_no_space: OnNoSpace):
        self.adapter = adapter
        self.paths = paths
        self.events = events
        self.stall = stall
        self.cost = cost
        self.on_no_space = on_no_space
        self.open_tools = OpenTools()  # tool calls without a result yet (runner/agents/open_tools.py)
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._cost_warned = False

    def _cap(self, stream: str) -> StreamCap | None:
        """The byte cap of a raw copy of the agent's output (runner/wire/record_caps.py)."""
        return self.events.limits.raw[stream] if self.events.limits is not None else None

    def pump_stdout(self, stream: IO[bytes]) -> None:
        """Until the agent's stdout ends: each line to agent_stdout and to transcript events."""
        line_no = 0
        raw = RawLog(self.paths.agent_stdout, self.on_no_space, self._cap("stdout"))  # read whatever the copy
        try:
            for line in iter(stream.readline, b""):
                raw.write(line)
                line_no += 1
                text = line.decode("utf-8", errors="replace")
                try:
                    items = self.adapter.parse(text)
                except Exception:  # an adapter bug must not lose the line
                    items = [raw_item(text)]
                self.emit(items, line_no)
            self.emit(self.adapter.finish())
            self.emit(self.open_tools.killed())  # the agent's output ended: a tool still running dies with it
        finally:
            raw.close()

    def pump_stderr(self, stream: IO[bytes]) -> None:
        """Until the agent's stderr ends: each line to agent_stderr and the tail."""
        log = RawLog(self.paths.agent_stderr, self.on_no_space, self._cap("stderr"))
        try:
            for line in iter(stream.readline, b""):
                log.write(line)
                self.stderr_tail.append(line.decode("utf-8", errors="replace").rstrip())
        finally:
            log.close()

    def emit(self, items: Iterable[TranscriptItem], raw_line: int | None = None) -> None:
        """``transcript`` events of ``items`` (``raw_line``: the stdout line they came from)."""
        for item in items:
            self.open_tools.seen(item)
            if item.role == "assistant" or item.kind == "usage":
                self.stall.model_answered()
            self.events.emit("transcript", raw_line=raw_line, **item.bounded())
            if self.cost.limit_usd is not None:
                self.cost.add(item)
                if self.cost.unpriced and not self._cost_warned:
                    self._cost_warned = True
                    self.events.emit("warning", code="cost_limit", message=self.cost.unpriced_warning())
