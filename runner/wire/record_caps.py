"""Caps on what the agent's output may add to a session's record (INTEGRITY.md R2).

An agent decides how much it prints; the record must not grow with it. Each session gets caps,
scaled to its budget, on its transcript events (a count and their bytes in ``events.jsonl``), on
its ``process`` events (the training scripts it starts) and on each raw copy of its output
(``agent.stdout.jsonl``, ``agent.stderr.log``). Past a cap:

- a transcript event is dropped, except one that carries usage (tokens, cost: the cost views and
  the cost limit need them), which is written with its text cut off, within a second allowance
  as large as the byte cap (so the transcript's part of ``events.jsonl`` stays under
  :data:`EVENTS_FILE_MULTIPLE` times the byte cap);
- a raw line is not copied (whole lines only); a ``process`` event is not written (the session's
  count of scripts launched then stops at the cap: the ``truncated`` events count the rest);
- what was left out is counted in a ``truncated`` event (runner/wire/events.py): the first one at
  once, then one per :data:`SUMMARY_S` while the flood goes on, and a last one (``final``) before
  ``session_ended``. Its ``dropped``/``dropped_bytes`` add up, like a warning's ``count``.

The defaults are the real agent transcripts × :data:`HEADROOM` (docs/record-caps.md has the
table): the captures with a real wall clock (Claude Code's 65.4 s ``heartbeat`` and 149.2 s
``http500``) give at most 11.0 transcript events, 2.5 KB of events and 11.2 KB of raw stdout per
minute; the largest capture of one whole exchange (Claude Code's ``background``) 15 events,
4.0 KB of events and 21.1 KB raw. A session's caps are the per-minute figures × 100 × its budget
in minutes, and never less than the whole-exchange figures × 100.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

HEADROOM = 100  # × what a real agent writes: a busy agent is far from a cap, a flood meets it
# per minute of budget, from the captures with a real wall clock (the largest of the two)
EVENTS_PER_MIN = 11.0  # claude-2.1.332-heartbeat.jsonl: 12 transcript events in 65.4 s
EVENT_BYTES_PER_MIN = 2_517  # its 2 743 bytes of transcript events
RAW_BYTES_PER_MIN = 11_221  # its 12 231 bytes of raw stdout
# the floor, for short sessions: the largest capture of one exchange (claude-2.1.332-background.jsonl)
SESSION_EVENTS = 15
SESSION_EVENT_BYTES = 3_981
SESSION_RAW_BYTES = 21_125
# training scripts: the paper's agents launched 4 to 25 per run (Table 5), each a started and an
# ended ``process`` event; a session's cap is that × 100 (the most per 40-minute run, per minute
# for a longer budget)
SCRIPTS_PER_RUN = 25
SCRIPTS_PER_MIN = SCRIPTS_PER_RUN / 40
# checkpoints: a best and a last per script, so the paper's most scripts × 2 per run; a session's
# cap is that × 100 (5 000 for a 40-minute run). Past it the checkpoint watcher takes no more: none
# is snapshotted, found or scored, and the ones left in checkpoints/ at the end are counted
CHECKPOINTS_PER_RUN = 2 * SCRIPTS_PER_RUN
CHECKPOINTS_PER_MIN = CHECKPOINTS_PER_RUN / 40
PROCESS_EVENT_BYTES = 1_024  # a process event's line at the most (its command line is cut at 300 characters)
SUMMARY_S = 30.0  # while a flood goes on, one truncated event per stream per this many seconds
EVENTS_FILE_MULTIPLE = 2  # the transcript's bytes in events.jsonl stay under this × the byte cap


@dataclass(frozen=True)
class RecordCaps:
    """One session's caps."""

    events: int  # transcript events
    event_bytes: int  # their lines' bytes in events.jsonl
    raw_bytes: int  # each raw copy of the agent's output (stdout, stderr)
    process_events: int = HEADROOM * 2 * SCRIPTS_PER_RUN  # ``process`` events (a script started, ended)
    checkpoints: int = HEADROOM * CHECKPOINTS_PER_RUN  # checkpoint versions taken (snapshotted, found, scored)

    @classmethod
    def for_budget(cls, budget_s: float, checkpoints: int | None = None) -> RecordCaps:
        """The caps of a session of ``budget_s``; ``checkpoints``: a session's own checkpoint cap
        (``max_checkpoints`` in its config), else the budget's."""
        minutes = max(0.0, budget_s) / 60
        return cls(events=int(HEADROOM * max(SESSION_EVENTS, EVENTS_PER_MIN * minutes)),
                   event_bytes=int(HEADROOM * max(SESSION_EVENT_BYTES, EVENT_BYTES_PER_MIN * minutes)),
                   raw_bytes=int(HEADROOM * max(SESSION_RAW_BYTES, RAW_BYTES_PER_MIN * minutes)),
                   process_events=int(HEADROOM * 2 * max(SCRIPTS_PER_RUN, SCRIPTS_PER_MIN * minutes)),
                   checkpoints=checkpoints or int(HEADROOM * max(CHECKPOINTS_PER_RUN, CHECKPOINTS_PER_MIN * minutes)))

    def contract(self) -> dict[str, int]:
        """The caps as the session's contract records them."""
        return {"transcript_events": self.events, "transcript_bytes": self.event_bytes, "raw_bytes": self.raw_bytes,
                "process_events": self.process_events, "checkpoints": self.checkpoints}


class StreamCap:
    """The cap of one stream and what it left out; thread-safe (a raw copy is written on the
    stream's reading thread, its ``truncated`` events by the event writer)."""

    def __init__(self, stream: str, limit_bytes: int, limit_events: int | None = None, allowance_bytes: int = 0,
                 summary_s: float = SUMMARY_S):
        self.stream = stream
        self.limit_bytes = limit_bytes
        self.limit_events = limit_events
        self.allowance_bytes = allowance_bytes  # past the cap, for what must still be kept (usage)
        self.summary_s = summary_s
        self.used_events = 0
        self.used_bytes = 0
        self.total_dropped = 0
        self.total_dropped_bytes = 0
        self._extra_bytes = 0
        self._pending = 0
        self._pending_bytes = 0
        self._last_summary: float | None = None  # None: nothing reported yet
        self._lock = threading.Lock()

    @property
    def reached(self) -> bool:
        return self.used_bytes >= self.limit_bytes or (self.limit_events is not None and self.used_events >= self.limit_events)

    def admit(self, size: int, keep: bool = False) -> bool:
        """True: write this item of ``size`` bytes. False: it is left out, and counted. ``keep``:
        the item must be kept if it can be (usage), from the allowance past the cap."""
        with self._lock:
            fits = self.used_bytes + size <= self.limit_bytes and (
                self.limit_events is None or self.used_events < self.limit_events)
            if fits:
                self.used_events += 1
                self.used_bytes += size
                return True
            if keep and self._extra_bytes + size <= self.allowance_bytes:
                self._extra_bytes += size
                self.used_bytes = max(self.used_bytes, self.limit_bytes)  # the cap stays reached
                return True
            self._pending += 1
            self._pending_bytes += size
            self.total_dropped += 1
            self.total_dropped_bytes += size
            return False

    def due(self, now: float) -> dict[str, Any] | None:
        """The fields of a ``truncated`` event to write now, if any: the first drop at once, then
        one per :attr:`summary_s` while more are left out."""
        with self._lock:
            if not self._pending or (self._last_summary is not None and now - self._last_summary < self.summary_s):
                return None
            self._last_summary = now
            return self._take(final=False)

    def drain(self) -> dict[str, Any] | None:
        """The last ``truncated`` event's fields (the session is ending); None if nothing was left out since."""
        with self._lock:
            return self._take(final=True) if self._pending else None

    def _take(self, final: bool) -> dict[str, Any]:
        fields = {"stream": self.stream, "dropped": self._pending, "dropped_bytes": self._pending_bytes,
                  "limit_events": self.limit_events, "limit_bytes": self.limit_bytes, "final": final}
        self._pending = self._pending_bytes = 0
        return fields


class RecordLimits:
    """The caps of one session's streams: its transcript and the raw copies of stdout and stderr."""

    def __init__(self, caps: RecordCaps, summary_s: float = SUMMARY_S):
        self.caps = caps
        self.transcript = StreamCap("transcript", caps.event_bytes, caps.events,
                                    allowance_bytes=(EVENTS_FILE_MULTIPLE - 1) * caps.event_bytes, summary_s=summary_s)
        self.raw = {name: StreamCap(name, caps.raw_bytes, summary_s=summary_s) for name in ("stdout", "stderr")}
        # an agent that starts scripts without end (a loop of `python x.py`) meets this one
        self.process = StreamCap("process", caps.process_events * PROCESS_EVENT_BYTES, caps.process_events,
                                 summary_s=summary_s)

    @property
    def streams(self) -> tuple[StreamCap, ...]:
        return (self.transcript, *self.raw.values(), self.process)

    def due(self, now: float) -> list[dict[str, Any]]:
        return [f for f in (s.due(now) for s in self.streams) if f is not None]

    def drain(self) -> list[dict[str, Any]]:
        return [f for f in (s.drain() for s in self.streams) if f is not None]


def carries_usage(fields: dict[str, Any]) -> bool:
    """A transcript item whose figures the cost views and the cost limit need."""
    return any(fields.get(key) for key in ("tokens_in", "tokens_out", "cache_read", "cache_write", "cost_usd"))
