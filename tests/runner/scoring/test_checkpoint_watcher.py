"""The checkpoint watcher reads checkpoints/ as untrusted input (../shared/INTEGRITY.md A7)."""

from __future__ import annotations

import os
import time

import pytest

from runner.scoring import checkpoint_watcher as checkpoints
from runner.scoring.checkpoint_watcher import CheckpointWatcher


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "workspace"
    (ws / "checkpoints").mkdir(parents=True)
    (ws / "run_1.py").write_text("x = 1\n")
    return ws


def watch(ws, **kw):
    found, warnings = [], []
    w = CheckpointWatcher(ws / "checkpoints", ws, ws.parent / "snapshots", found.append, on_warning=warnings.append,
                          started_at=time.time() - 5, **kw)
    return w, found, warnings


def settled(path, data=b"weights"):
    path.write_bytes(data)
    old = time.time() - 2
    os.utime(path, (old, old))


def test_a_checkpoint_is_copied_so_that_rewriting_it_in_place_changes_nothing(ws):
    w, found, _ = watch(ws)
    settled(ws / "checkpoints" / "a.pt", b"version one")
    w.scan()
    assert [f.label for f in found] == ["a-1"] and found[0].path.read_bytes() == b"version one"
    assert os.stat(ws / "checkpoints" / "a.pt").st_nlink == 1  # no hard link shared with the agent
    with open(ws / "checkpoints" / "a.pt", "r+b") as f:  # the agent edits the inode afterwards
        f.write(b"VERSION TWO")
    assert found[0].path.read_bytes() == b"version one"
    assert found[0].snapshot.joinpath("run_1.py").read_text() == "x = 1\n"


def test_hard_links_oversized_and_backdated_files_are_refused_once_each(ws, monkeypatch):
    monkeypatch.setattr(checkpoints, "MAX_CHECKPOINT_BYTES", 1000)
    w, found, warnings = watch(ws)
    settled(ws / "checkpoints" / "big.pt", b"x" * 2000)
    settled(ws / "checkpoints" / "linked.pt")
    os.link(ws / "checkpoints" / "linked.pt", ws / "elsewhere.pt")
    settled(ws / "checkpoints" / "old.pt")
    old = time.time() - 3000
    os.utime(ws / "checkpoints" / "old.pt", (old, old))
    w.scan()
    w.scan()
    assert found == []
    text = " | ".join(warnings)
    assert len(warnings) == 3 and "big.pt is 0.0 GiB" in text and "linked.pt has 2 hard links" in text \
        and "old.pt is dated before" in text, warnings


def test_a_file_that_changes_while_it_is_copied_waits_for_the_next_scan(ws, monkeypatch):
    w, found, _ = watch(ws)
    target = ws / "checkpoints" / "growing.pt"
    settled(target, b"a" * 100)
    real_read = os.read
    appended = []

    def read_and_append(fd, n):  # the agent appends once while the runner reads
        chunk = real_read(fd, n)
        if chunk and not appended:
            appended.append(fd)
            with open(target, "ab") as f:
                f.write(b"more")
        return chunk

    monkeypatch.setattr(checkpoints.os, "read", read_and_append)
    w.scan()
    monkeypatch.setattr(checkpoints.os, "read", real_read)
    assert found == []
    old = time.time() - 2
    os.utime(target, (old, old))
    w.scan()
    assert [f.label for f in found] == ["growing-1"] and found[0].path.read_bytes() == target.read_bytes()


def test_a_scan_that_breaks_is_reported_and_the_next_one_runs(ws, monkeypatch):
    w, found, warnings = watch(ws)
    monkeypatch.setattr(w, "_scan", lambda: 1 / 0)
    w.scan()
    assert warnings == ["checkpoint scan failed: ZeroDivisionError: division by zero"]


def test_past_the_cap_nothing_more_is_taken_or_remembered_and_the_rest_is_counted(ws):
    """Taken and refused files count toward the session's cap (runner/wire/record_caps.py): a flood
    of hard-linked files grows the watcher's memory and warnings no more than one of checkpoints."""
    capped = []
    w, found, warnings = watch(ws, max_checkpoints=4, on_cap=capped.append)
    for i in range(3):
        settled(ws / "checkpoints" / f"ok{i}.pt", f"weights {i}".encode())
    w.scan()
    for i in range(50):
        settled(ws / "checkpoints" / f"linked{i:02d}.pt")
        os.link(ws / "checkpoints" / f"linked{i:02d}.pt", ws / f"other{i:02d}.pt")
    settled(ws / "checkpoints" / "late.pt", b"after the cap")
    w.scan()
    w.scan()
    assert [f.label for f in found] == ["ok0-1", "ok1-1", "ok2-1"] and w.refused == 1
    assert capped == [4] and len(warnings) == 1 and len(w._seen) == 4
    assert w.left_out() == 50  # 49 linked files and late.pt, never looked at past the cap
