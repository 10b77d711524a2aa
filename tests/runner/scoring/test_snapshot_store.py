"""Content-addressed snapshots with a cap (issue 38 part 5, INTEGRITY.md R2): a file unchanged
between checkpoints is stored once, each snapshot still reads back exactly as the workspace was,
and a checkpoint that cannot be snapshotted is reported with its reason, never skipped silently."""

from __future__ import annotations

import os
import time

from runner.scoring.checkpoint_watcher import CheckpointWatcher
from runner.scoring.snapshots import OBJECTS, SnapshotStore, verify
from tests.runner.scoring.test_checkpoint_watcher import settled


def watcher(tmp_path, **kw):
    ws = tmp_path / "workspace"
    (ws / "checkpoints").mkdir(parents=True, exist_ok=True)
    found, warnings = [], []
    w = CheckpointWatcher(ws / "checkpoints", ws, tmp_path / "snapshots", found.append, on_warning=warnings.append,
                          started_at=time.time() - 5, **kw)
    return ws, w, found, warnings


def objects(tmp_path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "snapshots" / OBJECTS).iterdir())


def test_an_unchanged_file_is_stored_once_and_every_snapshot_reads_back_exactly(tmp_path):
    ws, w, found, warnings = watcher(tmp_path)
    big = "# a helper module\n" + "w = 1\n" * 50_000  # 300 kB, never changed
    (ws / "lib").mkdir()
    (ws / "lib" / "helpers.py").write_text(big)
    (ws / "run_1.py").write_text("lr = 0.1\n")
    for i in range(5):
        if i == 3:
            (ws / "run_1.py").write_text("lr = 0.01\n")  # one edit: one more object
        settled(ws / "checkpoints" / f"c{i}.pt", b"same weights")  # the same bytes saved five times
        w.scan()
    assert [f.label for f in found] == [f"c{i}-1" for i in range(5)] and not warnings
    assert len(objects(tmp_path)) == 4  # helpers.py, two versions of run_1.py, one checkpoint
    assert w.store.used_bytes < len(big) + 100 and w.store.deduplicated_bytes > 4 * len(big)
    for f in found:
        assert verify(f.snapshot) == []  # every file is the bytes its manifest names
        assert (f.snapshot / "lib" / "helpers.py").read_text() == big
        assert f.path.read_bytes() == b"same weights"
    assert (found[2].snapshot / "run_1.py").read_text() == "lr = 0.1\n"
    assert (found[4].snapshot / "run_1.py").read_text() == "lr = 0.01\n"


def test_past_the_sessions_cap_a_checkpoint_is_refused_with_its_reason(tmp_path):
    ws, w, found, warnings = watcher(tmp_path, snapshot_cap_bytes=10_000)
    (ws / "run_1.py").write_text("x = 1\n")
    settled(ws / "checkpoints" / "a.pt", os.urandom(4_000))
    w.scan()
    settled(ws / "checkpoints" / "b.pt", os.urandom(8_000))  # would take the objects past 10 000 bytes
    w.scan()
    w.scan()  # not retried (nor reported again) until the agent saves it anew
    assert [f.label for f in found] == ["a-1"]
    assert len(warnings) == 1 and "checkpoints/b.pt was not snapshotted, so it is not scored" in warnings[0]
    assert "cap of 0 MiB" in warnings[0] and not (tmp_path / "snapshots" / "b-1").exists()
    assert w.store.used_bytes <= 10_000


def test_a_snapshot_never_takes_the_runners_room_on_the_disk(tmp_path):
    st = os.statvfs(tmp_path)
    whole_disk = st.f_blocks * st.f_frsize  # more than can ever be free (others write to this disk too)
    ws, w, found, warnings = watcher(tmp_path)
    w.store = SnapshotStore(tmp_path / "snapshots", free_floor=whole_disk)  # no room above the floor
    (ws / "run_1.py").write_text("x = 1\n")
    settled(ws / "checkpoints" / "a.pt", b"weights")
    w.scan()
    assert found == [] and len(warnings) == 1
    assert "free on the disk" in warnings[0] and "the runner's room to end the session" in warnings[0]
