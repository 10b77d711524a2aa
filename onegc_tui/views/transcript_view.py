"""The transcript pane computed without a screen: the mark and line of each step or notable
event, and which of them a filter and search words keep; and the one wording of each event kind
(:func:`event_words`), which the pane and ``onegc run --plain`` both print.

Pure functions over events and transcript rows, shared by the Textual app, the plain display, the
store's read queries and the tests.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from onegc_tui.views.format import clock, fmt_score
from onegc_tui.views.task_facts import metric_label, scored_split
from runner.wire.defaults import scored_split_sealed
from runner.wire.end_reasons import FAILED_REASONS
from runner.wire.events import Event
from runner.wire.score_terms import measure, score_name

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


TOOL_NAME_MAX = 80  # a tool's name as a step shows it, at most (the name is the agent's to choose)


def step_words(kind: str, tool: str | None, text: str, exit_code: int | None = None, width: int = 500) -> str:
    """A transcript step's words: the tool or exit code in brackets, then the first line of its text
    (cut at ``width``) and how many lines follow."""
    name = ((tool or "").splitlines() or [""])[0][:TOOL_NAME_MAX] or "tool"  # the agent's: one line, bounded
    head = f"[{name}] " if kind == "tool_call" else f"[exit {exit_code}] " if (
        kind == "tool_result" and exit_code is not None) else ""
    if kind == "usage":
        return "usage"
    first, *rest = (text or "").splitlines() or [""]
    return head + first[:width] + (f"  (+{len(rest)} lines)" if rest else "")


def transcript_line(ts: float, role: str, kind: str, tool: str | None, text: str, exit_code: int | None = None) -> str:
    """A transcript step as the pane shows it: its time, its kind's mark, its words."""
    return f"{time.strftime('%H:%M:%S', time.localtime(ts))} {KIND_MARKS.get(kind, '·')} " + step_words(
        kind, tool, text, exit_code)


class Wording(NamedTuple):
    """What an event says: ``words``, the same in every display, behind ``label`` (the kind in
    words, ``--plain``'s) or the kind's mark (the transcript pane's, :data:`EVENT_MARKS`)."""

    label: str
    words: str

    @property
    def line(self) -> str:
        """``onegc run --plain``'s form (after the time and the session)."""
        return f"{self.label} {self.words}"


def event_words(event: Event, task: str | None = None) -> Wording | None:
    """What a notable event says, one wording per kind: ``onegc run --plain`` prints its label and
    words, the transcript pane its mark and the same words (:func:`event_line`). A transcript step
    is the agent's own text: its label says so first (``agent tool_call:``), so no agent can print
    a line that reads as the harness's. ``task``: the session's, which names a score by its role,
    split and measure (runner/wire/score_terms.py). None for the routine events (GPU samples,
    heartbeats)."""
    if event.type == "session_started":
        unsealed = ", UNSEALED (not comparable)" if event.contract.get("sealed") is False else ""
        unsealed += ", NETWORK OPEN (the host's)" if event.contract.get("network") == "open" else ""
        if scored_split_sealed(event.contract):  # runner/integrity/sealed_split.py
            unsealed += f", {event.contract['scored_split'].get('split', 'val')} SEALED (its targets withheld; " \
                        "the harness answers evaluate)"
        return Wording("started:", f"{event.task} with {event.agent}{' (' + event.model + ')' if event.model else ''}, "
                                   f"budget {clock(event.budget_s)}{unsealed}")
    if event.type == "agent_started":
        return Wording("agent", f"running (pid {event.pid}, containment {event.containment})")
    if event.type == "transcript" and event.kind in ("tool_call", "error", "result"):
        return Wording(f"agent {event.kind}:", step_words(event.kind, event.tool, event.text, event.exit_code, 120))
    if event.type == "process":
        code = f" (exit {event.returncode})" if event.returncode is not None else ""
        return Wording("script", f"{event.action}: {event.script}{code}")
    if event.type == "checkpoint_scored":
        if event.value is None:
            return Wording("checkpoint", f"{event.name}: ERROR {event.error}")
        what = fmt_score(event.value)
        label = metric_label(task)
        if not event.official:
            return Wording("checkpoint", f"{event.name}: {score_name(label, event.split, 'live')} {what}")
        val = f", live val {event.val:.4f}" if event.val is not None else ""
        return Wording("re-evaluated", f"{event.name}: {event.split} {measure(label)} {what}{val} "
                                       "(a candidate: the official result is the val-best's)")
    if event.type == "budget" and event.state != "running":
        return Wording("budget", f"{event.state}, {clock(event.remaining_s)} left")
    if event.type == "control":
        return Wording("control", f"{event.action}: {'accepted' if event.accepted else 'refused'} {event.detail}".rstrip())
    if event.type == "warning":
        times = f" (×{event.count})" if event.count > 1 else ""
        return Wording("WARNING", f"{event.code}{times}: {event.message}")
    if event.type == "session_ended":
        return ended_words(event.reason, event.score, event.detail, task, event.best_checkpoint, event.val)
    if event.type == "truncated":  # runner/wire/record_caps.py
        return Wording("record cap reached:", truncated_words(event.stream, event.dropped, event.dropped_bytes, event.final))
    if event.type == "conditions":  # runner/session/contention.py
        return Wording("conditions:", "CONTENDED: " + "; ".join(event.reasons) if event.contended else "clean")
    return None


def truncated_words(stream: str, dropped: int, dropped_bytes: int, final: bool) -> str:
    """What a ``truncated`` event counts (runner/wire/record_caps.py)."""
    what = {"transcript": "transcript events not recorded", "stdout": "stdout lines not copied to agent.stdout.jsonl",
            "stderr": "stderr lines not copied to agent.stderr.log",
            "process": "script starts and ends not recorded"}.get(stream, f"{stream} lines not recorded")
    more = " (the last count, at the session's end)" if final else ""
    if stream == "checkpoints":  # files, not bytes of output: the watcher took no more past its cap
        return f"{dropped:,} more checkpoints not taken past the session's cap (not snapshotted or scored){more}"
    return f"{dropped:,} more {what} ({dropped_bytes:,} bytes){more}"


def official_words(score: float | None, task: str | None, checkpoint: str | None = None,
                   val: float | None = None) -> str:
    """A session's result in words: "official test MSE 0.3792 (run_1-ep3, live val MSE 0.6533)",
    or that it has none (the paper's failed run, N/A)."""
    if score is None:
        return "no valid score (N/A: a failed run)"
    label = metric_label(task)
    split = scored_split(task)
    why = [checkpoint] if checkpoint else []
    if val is not None and split != "val":
        why.append(f"{score_name(label, 'val', 'live')} {val:.4f}")
    return f"{score_name(label, split, 'official')} {score:.4f}" + (f" ({', '.join(why)})" if why else "")


def ended_words(reason: str, score: float | None, detail: str, task: str | None = None,
                checkpoint: str | None = None, val: float | None = None) -> Wording:
    """A session's end: its ``session_ended``, or a liveness verdict."""
    return Wording("ended:", f"{reason}, {official_words(score, task, checkpoint, val)} ({detail})")


PANE_EVENT_TYPES = ("transcript", "warning", "checkpoint_scored", "control", "process", "session_ended", "truncated")


def event_line(event: Event, split: str | None = None, official: str | None = None) -> str | None:
    """A transcript-pane line for an event: transcript steps, and the harness's notable events in
    the words ``--plain`` prints (:func:`event_words`) behind their mark. ``split``: the session's
    scored split, which its end's official score names (``official test 0.3818``); ``official``:
    its official checkpoint once it has ended, which makes each re-evaluation official or
    unofficial (before the end they are "re-evaluated": candidates, docs/numbers.md)."""
    if event.type == "transcript":
        if event.kind in ("usage", "progress"):  # a heartbeat updates its one stored row; it adds no line
            return None
        return transcript_line(event.ts, event.role, event.kind, event.tool, event.text, event.exit_code)
    stamp, mark = time.strftime("%H:%M:%S", time.localtime(event.ts)), EVENT_MARKS.get(event.type)
    if event.type == "checkpoint_scored" and event.value is not None:
        # the figure first, with its split and role: a narrow pane cuts the name (docs/numbers.md)
        role = ("live" if not event.official else "re-evaluated" if official is None
                else "official" if event.name == official else "unofficial")
        return f"{stamp} {mark} {role} {event.split} {fmt_score(event.value)} · {event.name}"
    if event.type == "session_ended":
        official = f"official {split}" if split else "official"
        result = f"{official} {fmt_score(event.score)}" if event.score is not None else "no valid score"
        return f"{stamp} {mark} session ended: {event.reason}, {result} ({event.detail})"
    said = event_words(event) if mark else None
    return None if said is None else f"{stamp} {mark} {said.words}"


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

