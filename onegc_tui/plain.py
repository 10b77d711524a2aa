"""The line-oriented display, for when stdout is not a terminal (CI, nohup, Slurm logs).

One line per notable event, and a progress line per session every ``PROGRESS_EVERY_S``. It
ingests into SQLite as it goes, so the history is the same as with the monitor.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from onegc_tui.format import clock
from onegc_tui.ingest import Ingester
from onegc_tui.store import Store
from runner.events import Event

PROGRESS_EVERY_S = 10.0
POLL_S = 0.5


def describe(event: Event) -> str | None:
    """The one-line form of a notable event, or None for the routine ones."""
    t = event.type
    if t == "session_started":
        unsealed = ", UNSEALED (not comparable)" if event.contract.get("sealed") is False else ""
        return (f"started: {event.task} with {event.agent}{' (' + event.model + ')' if event.model else ''}, "
                f"budget {clock(event.budget_s)}{unsealed}")
    if t == "agent_started":
        return f"agent running (pid {event.pid}, containment {event.containment})"
    if t == "transcript" and event.kind in ("tool_call", "error", "result"):
        return f"{event.kind}: {event.text.splitlines()[0][:120] if event.text else event.tool or ''}"
    if t == "process":
        return f"script {event.action}: {event.script}" + (f" (exit {event.returncode})" if event.returncode is not None else "")
    if t == "checkpoint_scored":
        what = f"{event.value:.4f}" if event.value is not None else f"ERROR {event.error}"
        return f"{'official' if event.official else 'checkpoint'} {event.name}: {event.metric} {what}"
    if t == "budget" and event.state != "running":
        return f"budget {event.state}, {clock(event.remaining_s)} left"
    if t == "control":
        return f"control {event.action}: {'accepted' if event.accepted else 'refused'} {event.detail}".rstrip()
    if t == "warning":
        return f"WARNING {event.code}: {event.message}"
    if t == "session_ended":
        score = f", score {event.score:.4f}" if event.score is not None else ", no score"
        return f"ended: {event.reason}{score} ({event.detail})"
    return None


def follow(home: Path, session_ids: Iterable[str], out: TextIO = sys.stdout) -> dict[str, dict]:
    """Print the sessions' progress until all have ended; returns their summary rows."""
    wanted = set(session_ids)
    store = Store.open(home)
    errors: list[str] = []

    def on_events(sid: str, events: list[Event]) -> None:
        if sid not in wanted:
            return
        for e in events:
            line = describe(e)
            if line:
                print(f"[{time.strftime('%H:%M:%S', time.localtime(e.ts))}] {sid}: {line}", file=out, flush=True)

    ingester = Ingester(home, store, on_events, errors.append)
    next_progress = time.monotonic() + PROGRESS_EVERY_S
    try:
        while True:
            ingester.ingest_all()
            for msg in errors:
                print(f"warning: {msg}", file=out, flush=True)
            errors.clear()
            rows = {r["session_id"]: r for r in store.sessions() if r["session_id"] in wanted}
            if time.monotonic() >= next_progress:
                for sid, r in rows.items():
                    best = f"{r['best_live']:.4f}" if r["best_live"] is not None else "-"
                    print(f"[{time.strftime('%H:%M:%S')}] {sid}: {r['state']}, {clock(r['remaining_s'])} left, "
                          f"{r['n_checkpoints']} checkpoints, best {best}", file=out, flush=True)
                next_progress = time.monotonic() + PROGRESS_EVERY_S
            if rows and len(rows) == len(wanted) and all(r["state"] in ("ended", "failed") for r in rows.values()):
                return rows
            ingester.check_liveness()
            time.sleep(POLL_S)
    finally:
        store.close()
