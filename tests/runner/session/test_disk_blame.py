"""Whose doing a full disk was (runner/session/diskguard.py), and the one re-roll rule that reads
it (runner/wire/end_reasons.py)."""

from __future__ import annotations

import pytest

from runner.errors import DiskFull
from runner.session import diskguard
from runner.session.diskguard import DiskGuard, usage
from runner.wire.end_reasons import harness_failure


@pytest.fixture
def guard(tmp_path, monkeypatch):
    root = tmp_path / "session"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "train.py").write_bytes(b"x" * 100_000)  # what the agent was given
    monkeypatch.setattr(diskguard, "_free", lambda _root: 10 << 20)  # 10 MiB free at the start
    g = DiskGuard(root, reserve_bytes=4096)
    g.mark_start([root / "workspace", root / "agent_home", root / "agent.stdout.jsonl"])
    return g


def test_the_agents_own_files_filling_the_disk_are_its_doing(guard):
    (guard.root / "workspace" / "fill.bin").write_bytes(b"x" * (6 << 20))
    guard.trip(DiskFull(guard.root / "workspace", "no space left on the device"))
    reason, detail = guard.end()
    assert reason == "agent_failed" and "the agent's doing" in detail and detail.startswith("disk full: ")
    assert "grew by 6 MiB" in detail and harness_failure({"reason": reason, "detail": detail}, True) is None


def test_raw_output_the_agent_printed_counts_as_its_own(guard):
    (guard.root / "agent.stdout.jsonl").write_bytes(b"y" * (7 << 20))
    guard.trip(DiskFull(guard.root / "events.jsonl", "no space left on the device"))
    assert guard.end()[0] == "agent_failed"


def test_a_disk_filled_by_something_else_is_the_harness_s_and_re_rolled(guard):
    (guard.root / "snapshots").mkdir()
    (guard.root / "snapshots" / "copy.bin").write_bytes(b"z" * (8 << 20))  # the harness's own files
    (guard.root / "workspace" / "small.bin").write_bytes(b"x" * (1 << 20))
    guard.trip(DiskFull(guard.root / "events.jsonl", "no space left on the device"))
    reason, detail = guard.end()
    assert reason == "harness_error" and "not its doing" in detail
    assert harness_failure({"reason": reason, "detail": detail}, True) == detail


def test_usage_walks_without_following_links_and_stops_at_its_limit(tmp_path):
    (tmp_path / "a").mkdir()
    for i in range(20):
        (tmp_path / "a" / f"f{i}").write_bytes(b"x" * 5000)
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    whole = usage([tmp_path / "a"])
    assert whole.entries == 21 and whole.bytes >= 20 * 4096 and not whole.hidden
    assert usage([tmp_path / "a"], limit=5).entries == 5
    assert usage([tmp_path / "missing"]).entries == 0


@pytest.mark.parametrize("ended, has_result, again", [
    (None, False, True),  # the runner is gone
    ({"reason": "harness_error", "detail": "boom"}, True, True),
    ({"reason": "completed"}, False, True),  # no result.json
    ({"reason": "completed"}, True, False),
    ({"reason": "agent_failed", "detail": "disk full: …: the agent's doing"}, True, False),
    ({"reason": "budget_exhausted"}, True, False),
    ({"reason": "aborted"}, True, False),
])
def test_the_re_roll_rule(ended, has_result, again):
    assert (harness_failure(ended, has_result) is not None) == again
