"""A sealed worker dies with the thread that launched it (bubblewrap's parent-death signal is per
thread). The live queue relaunches a worker that a forged answer broke, from its own thread, and
that thread ends before the official phase: such a worker must not pass for a warm one there."""

from __future__ import annotations

import threading

import pytest

from runner.sandbox.bwrap import status
from runner.scoring.scorer import SealedScorer, TaskJudge, WorkerPlan
from tasks import get_task
from tests.helpers import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]


def test_a_worker_launched_by_an_ended_thread_is_not_alive_and_a_new_one_starts_here(tmp_path, demo_data):
    root = tmp_path / "runs" / "s1"
    (root / "snapshots").mkdir(parents=True)
    scorer = SealedScorer(WorkerPlan(
        judge=TaskJudge(get_task("t0"), demo_data), inputs=root / "scoring" / "inputs",
        snapshots=root / "snapshots", private=root / "scoring" / "cpu", home=tmp_path, session_id="s1",
        timeout_s=20, threads=1))
    try:
        thread = threading.Thread(target=scorer.start)  # as the live queue's thread relaunches one
        thread.start()
        thread.join()
        first = scorer.proc
        assert first is not None
        assert not scorer.alive()  # its thread is gone, whatever poll() says this instant
        wait_for(lambda: first.poll() is not None, 120, "the worker to die with its thread")
        scorer.start()  # from this (long-lived) thread: a fresh worker
        assert scorer.proc is not first and scorer.alive()
    finally:
        scorer.close()
