"""The GPU's thread in a session: a ``gpu`` event per GPU each sample period, and on the same
samples the contention watch's polls (runner/session/contention.py)."""

from __future__ import annotations

import threading
import time

from runner.session import contention
from runner.session.contention import ContentionWatch
from runner.session.gpu import SAMPLE_PERIOD_S, GpuSampler
from runner.wire.jsonl import EventWriter


def sample_until(done: threading.Event, sampler: GpuSampler, events: EventWriter, watch: ContentionWatch) -> None:
    """Sample until ``done`` is set; a sampling failure is one warning and the end of sampling."""
    next_poll = next_sessions = time.monotonic()
    while not done.wait(SAMPLE_PERIOD_S):
        try:
            samples = sampler.sample()
            for s in samples:
                events.emit("gpu", **vars(s))
            now = time.monotonic()
            if now >= next_poll:
                watch.poll({s.index: s.util_pct for s in samples}, contention.POLL_S)
                next_poll = now + contention.POLL_S
            if now >= next_sessions:
                watch.poll_sessions()
                next_sessions = now + contention.CONCURRENCY_PERIOD_S
        except Exception as exc:
            events.emit("warning", code="gpu", message=f"GPU sampling stopped: {exc}")
            return
