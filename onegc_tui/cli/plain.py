"""The line-oriented display, for when stdout is not a terminal (CI, nohup, Slurm logs).

One line per notable event, and a progress line per session every ``PROGRESS_EVERY_S``. It reads
each session's own ``events.jsonl`` (so it prints every event whoever else ingests the same home:
a monitor, ``onegc sessions``, a second run), and ingests into SQLite as it goes, so the history
is the same as with the monitor. A store that cannot be written (a full disk, a damaged file) is
said once and does not stop the following: the session folders are the source of truth.
"""

from __future__ import annotations

import io
import os
import sqlite3
import sys
import time
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.views.format import clock
from onegc_tui.views.task_facts import metric_label, scored_split
from onegc_tui.views.transcript_view import truncated_text
from runner.errors import OnegcError
from runner.launch.reconcile import reconcile
from runner.wire.events import Event
from runner.wire.jsonl import JsonlTail
from runner.wire.paths import SessionPaths, runs_dir
from runner.wire.score_terms import best_name, measure, score_name
from runner.wire.summary import Summary
from runner.wire.textsafe import safe_text

PROGRESS_EVERY_S = 10.0
POLL_S = 0.5
LIVENESS_EVERY_S = 2.0  # how often a session without session_ended is asked whether its runner lives


def describe(event: Event, task: str | None = None) -> str | None:
    """The one-line form of a notable event, or None for the routine ones. ``task``: the session's
    (a score is named by its role, split and measure: runner/wire/score_terms.py)."""
    if event.type == "session_started":
        unsealed = ", UNSEALED (not comparable)" if event.contract.get("sealed") is False else ""
        unsealed += ", NETWORK OPEN (the host's)" if event.contract.get("network") == "open" else ""
        return (f"started: {event.task} with {event.agent}{' (' + event.model + ')' if event.model else ''}, "
                f"budget {clock(event.budget_s)}{unsealed}")
    if event.type == "agent_started":
        return f"agent running (pid {event.pid}, containment {event.containment})"
    if event.type == "transcript" and event.kind in ("tool_call", "error", "result"):
        # "agent": what follows is the agent's own text, not a line of the harness's
        return f"agent {event.kind}: {event.text.splitlines()[0][:120] if event.text else event.tool or ''}"
    if event.type == "process":
        code = f" (exit {event.returncode})" if event.returncode is not None else ""
        return f"script {event.action}: {event.script}{code}"
    if event.type == "checkpoint_scored":
        what = f"{event.value:.4f}" if event.value is not None else f"ERROR {event.error}"
        label = metric_label(task)
        if not event.official:
            return f"checkpoint {event.name}: {score_name(label, event.split, 'live')} {what}"
        val = f", live val {event.val:.4f}" if event.val is not None else ""
        return (f"re-evaluated {event.name}: {event.split} {measure(label)} {what}{val} "
                "(a candidate: the official result is the val-best's)")
    if event.type == "budget" and event.state != "running":
        return f"budget {event.state}, {clock(event.remaining_s)} left"
    if event.type == "control":
        return f"control {event.action}: {'accepted' if event.accepted else 'refused'} {event.detail}".rstrip()
    if event.type == "warning":
        times = f" (×{event.count})" if event.count > 1 else ""
        return f"WARNING {event.code}{times}: {event.message}"
    if event.type == "session_ended":
        return ended(event.reason, event.score, event.detail, task, event.best_checkpoint, event.val)
    if event.type == "truncated":  # runner/wire/record_caps.py
        return truncated_text(event.stream, event.dropped, event.dropped_bytes, event.final)
    if event.type == "conditions":  # runner/session/contention.py
        return "conditions: " + ("CONTENDED: " + "; ".join(event.reasons) if event.contended else "clean")
    return None


def row(line: str, width: int | None) -> str:
    """One printed row: terminal controls removed, on one line, and — when the output is a
    terminal ``width`` columns wide — cut to fit it (INTEGRITY.md R4). A row that wrapped would
    let an agent's padded text (a scoring error, a tool call) start the next screen row with
    words that read as the harness's own ``[12:00:00] s1: ended: completed, score …``; a row
    that never wraps cannot. Every character counts as one column at least and a wide or
    ambiguous one (CJK, most emoji, East Asian "ambiguous") as two, so the estimate is never short of what the terminal draws."""
    text = safe_text(line, one_line=True)
    if width is None or len(text) * 2 <= width or _cells(text) <= width:
        return text
    kept, used = 0, 0
    while used + _cells(text[kept]) <= width - 2:  # "…" may be drawn two columns wide (East Asian "ambiguous")
        used += _cells(text[kept])
        kept += 1
    return text[:kept] + "…"


def _cells(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WFA" else 1 for ch in text)


def terminal_width(out: TextIO) -> int | None:
    """The width of the terminal ``out`` writes to (or, when ``out`` is a pipe, say into ``tee``,
    the terminal of stderr), read at each row so a resize is followed; None when none is."""
    for stream in (out, sys.stderr):
        try:
            return os.get_terminal_size(stream.fileno()).columns or None
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            continue
    return None


def still_running(session_ids: list[str]) -> str:
    """What to tell someone who stops watching (Ctrl-C, a monitor that failed): the sessions run on
    without a viewer, and the commands that watch and end them."""
    if len(session_ids) == 1:
        sid = session_ids[0]
        return (f"; session {sid} goes on: 'onegc monitor --session {sid}' watches it, "
                f"'onegc abort {sid}' ends it")
    return (f"; the {len(session_ids)} sessions go on: 'onegc sessions' lists them, "
            "'onegc abort ID' ends one")


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


def ended(reason: str, score: float | None, detail: str, task: str | None = None, checkpoint: str | None = None,
          val: float | None = None) -> str:
    """The line of a session's end: its ``session_ended``, or a liveness verdict."""
    return f"ended: {reason}, {official_words(score, task, checkpoint, val)} ({detail})"


class Progress(Summary):
    """What the progress line and the final line say about one session, from its own events."""

    @property
    def reason(self) -> str | None:
        """Why the session ended (None while it runs): its ``session_ended``, or a liveness verdict."""
        return self.end_reason


class _StoreCopy:
    """Ingests the home into SQLite beside the following; gives up, saying so once, if it cannot."""

    def __init__(self, home: Path, say):
        self.say = say
        self.store: Store | None = None
        self.ingester: Ingester | None = None
        try:
            self.store = Store.open(home)
            self.ingester = Ingester(home, self.store)
        except (OnegcError, sqlite3.Error, OSError) as exc:
            self._give_up(exc)

    def update(self, liveness: bool = False) -> None:
        """Ingest what is new (and, with ``liveness``, mark sessions whose runner is gone)."""
        if self.ingester is None:
            return
        try:
            self.ingester.ingest_all()
            if liveness:
                self.ingester.check_liveness()
        except (OnegcError, sqlite3.Error, OSError) as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        self.say(f"warning: the store is not updated ({' '.join(str(exc).split())[:200]}); the session goes on, "
                 "and 'onegc reindex' rebuilds the store from the session folders later")
        self.close()

    def close(self) -> None:
        if self.store is not None:
            try:
                self.store.close()
            except sqlite3.Error:
                pass
        self.store = self.ingester = None


def follow(home: Path, session_ids: Iterable[str], out: TextIO = sys.stdout) -> dict[str, Progress]:
    """Print the sessions' progress until all have ended; returns how each one ended."""
    def say(line: str) -> None:  # one screen row each, whatever an agent put in its text
        print(row(line, terminal_width(out)), file=out, flush=True)

    paths = {sid: SessionPaths(runs_dir(home) / sid) for sid in session_ids}
    tails = {sid: JsonlTail(p.events) for sid, p in paths.items()}
    seen = {sid: Progress() for sid in paths}
    store = _StoreCopy(home, say)
    next_progress = time.monotonic() + PROGRESS_EVERY_S
    next_liveness = time.monotonic() + LIVENESS_EVERY_S
    try:
        while True:
            for sid, tail in tails.items():
                events, bad = tail.read_events()
                for b in bad:
                    say(f"warning: {b}")
                for e in events:
                    if e.session_id != sid:
                        continue  # only its runner writes this file (the reader reports the rest)
                    seen[sid].see(e)
                    line = describe(e, seen[sid].task)
                    if line:
                        say(f"[{time.strftime('%H:%M:%S', time.localtime(e.ts))}] {sid}: {line}")
            now = time.monotonic()
            store.update(liveness=now >= next_liveness)
            if all(p.reason is not None for p in seen.values()):
                return seen
            if now >= next_liveness:
                for sid, p in seen.items():
                    if p.reason is None and tails[sid].at_end and (why := reconcile(paths[sid])):
                        p.end("harness_error", why)
                        say(f"[{time.strftime('%H:%M:%S')}] {sid}: {ended('harness_error', None, why)}")
                next_liveness = now + LIVENESS_EVERY_S
            if now >= next_progress:
                for sid, p in seen.items():
                    if p.reason is None:
                        best = f"{p.best_live:.4f}" if p.best_live is not None else "-"
                        say(f"[{time.strftime('%H:%M:%S')}] {sid}: {p.state}, {clock(p.remaining_s)} left, "
                            f"{p.n_checkpoints} checkpoints, {best_name(metric_label(p.task))} {best}")
                next_progress = now + PROGRESS_EVERY_S
            time.sleep(POLL_S)
    finally:
        store.close()
