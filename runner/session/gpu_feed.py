"""The GPU's thread in a session: a ``gpu`` event per GPU each sample period (with its GPM
activity where the GPU has it: runner/session/gpm.py), and on the same samples the contention
watch's polls (runner/session/contention.py)."""

from __future__ import annotations

import threading
import time

from runner.session import contention
from runner.session.contention import ContentionWatch
from runner.session.gpu import SAMPLE_PERIOD_S, GpuSampler
from runner.wire.defaults import NO_GPM
from runner.wire.jsonl import EventWriter


def sample_until(done: threading.Event, sampler: GpuSampler, events: EventWriter, watch: ContentionWatch) -> None:
    """Sample until ``done`` is set; a sampling failure is one warning and the end of sampling.
    Where the GPU has no GPM (or it stops answering), one warning says so (runner/session/gpm.py)."""
    next_poll = next_sessions = time.monotonic()
    said = None
    while True:
        if sampler.gpm.missing != said:
            said = sampler.gpm.missing
            events.emit("warning", code=NO_GPM, message=said)
        if done.wait(SAMPLE_PERIOD_S):
            return
        try:
            samples = sampler.sample()
            for s in samples:
                events.emit("gpu", **{k: v for k, v in vars(s).items() if v is not None})
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
