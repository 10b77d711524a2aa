"""The transcript pane computed without a screen: the mark and line of each step or notable
event, and which of them a filter and search words keep.

Pure functions over events and transcript rows, shared by the Textual app, the store's read
queries and the tests.
"""

from __future__ import annotations

import time

from onegc_tui.views.format import fmt_score
from runner.wire.end_reasons import FAILED_REASONS
from runner.wire.events import Event

KIND_MARKS = {"text": "»", "thinking": "…", "tool_call": "▶", "tool_result": "◀", "progress": "⏱", "usage": "$", "result": "■",
              "error": "✖", "raw": "·"}
# the marks of the harness's own lines in the transcript pane (event_line)
EVENT_MARKS = {"warning": "⚠", "checkpoint_scored": "★", "control": "⏯", "process": "⚙", "session_ended": "■",
               "truncated": "✂"}
# what each mark in the transcript pane means (the help screen shows this; a test keeps it complete)
MARK_LEGEND: dict[str, str] = {
    "»": "the agent's text", "…": "the agent thinking", "▶": "a tool call [tool]", "◀": "its result [exit code]",
    "■": "the agent's final result; the session's end", "✖": "an error", "·": "a raw line the parser did not know",
    "$": "token usage (not shown as a line)", "⚠": "a warning from the harness (blocked network, no GPU…)",
    "★": "a checkpoint scored (ERROR: scoring failed)", "⏯": "pause/resume/abort, accepted or refused",
    "⚙": "a training script started or ended", "⏱": "a tool still running (one line per tool, updated)",
    "✂": "the agent's output past the session's record caps, left out and counted",
}


def transcript_line(ts: float, role: str, kind: str, tool: str | None, text: str, exit_code: int | None = None) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(ts))
    mark = KIND_MARKS.get(kind, "·")
    head = f"{stamp} {mark} "
    if kind == "tool_call":
        head += f"[{tool or 'tool'}] "
    elif kind == "tool_result" and exit_code is not None:
        head += f"[exit {exit_code}] "
    elif kind == "usage":
        return head + "usage"
    first, *rest = (text or "").splitlines() or [""]
    return head + first[:500] + (f"  (+{len(rest)} lines)" if rest else "")


PANE_EVENT_TYPES = ("transcript", "warning", "checkpoint_scored", "control", "process", "session_ended", "truncated")


def truncated_text(stream: str, dropped: int, dropped_bytes: int, final: bool) -> str:
    """A ``truncated`` event in words (runner/wire/record_caps.py), the same in every view."""
    what = {"transcript": "transcript events not recorded", "stdout": "stdout lines not copied to agent.stdout.jsonl",
            "stderr": "stderr lines not copied to agent.stderr.log"}.get(stream, f"{stream} lines not recorded")
    more = " (the last count, at the session's end)" if final else ""
    return f"record cap reached: {dropped:,} more {what} ({dropped_bytes:,} bytes){more}"


def event_line(event: Event) -> str | None:
    """A transcript-pane line for an event: transcript steps and the harness's notable events."""
    if event.type == "transcript":
        if event.kind in ("usage", "progress"):  # a heartbeat updates its one stored row; it adds no line
            return None
        return transcript_line(event.ts, event.role, event.kind, event.tool, event.text, event.exit_code)
    stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
    mark = EVENT_MARKS.get(event.type)
    if event.type == "warning":
        return f"{stamp} {mark} {event.code}: {event.message}"
    if event.type == "checkpoint_scored":
        what = fmt_score(event.value) if event.value is not None else f"ERROR {event.error}"
        return f"{stamp} {mark} {'official ' if event.official else ''}{event.name}: {what}"
    if event.type == "control":
        return f"{stamp} {mark} {event.action} {'accepted' if event.accepted else 'refused: ' + event.detail}"
    if event.type == "process":
        return f"{stamp} {mark} {event.script} {event.action}"
    if event.type == "session_ended":
        return f"{stamp} {mark} session ended: {event.reason} ({event.detail})"
    if event.type == "truncated":
        return f"{stamp} {mark} {truncated_text(event.stream, event.dropped, event.dropped_bytes, event.final)}"
    return None


# ----------------------------------------------------------------------------- filters

FILTERS = ("all", "text", "tools", "errors")  # 't' cycles through these
FILTER_KINDS = {"text": ("text", "thinking", "result"), "tools": ("tool_call", "tool_result", "progress"),
                "errors": ("error",)}


def event_matches(event: Event, mode: str, words: tuple[str, ...] = ()) -> bool:
    """Does a pane event pass the transcript filter (mode) and the search words (all, any case)?"""
    if mode != "all":
        if event.type == "transcript":
            ok = event.kind in FILTER_KINDS[mode] or (
                mode == "errors" and event.kind == "tool_result" and event.exit_code not in (None, 0))
        elif mode == "errors":
            ok = (event.type == "warning" or (event.type == "checkpoint_scored" and bool(event.error))
                  or (event.type == "session_ended" and event.reason in FAILED_REASONS))
        else:
            ok = False
        if not ok:
            return False
    if words:
        text = (getattr(event, "text", None) or getattr(event, "message", None) or getattr(event, "error", None)
                or getattr(event, "detail", None) or "").lower()
        return all(w in text for w in words)
    return True


def search_words(query: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in query.split())

