"""A session's seal (runner/scoring/seal.py): a record folder checked against it names the first place
that differs. A folder laid out as the runner lays it out (its event writer, its snapshot store);
the real sessions' checks are tests/integrity/test_record_tamper.py."""

import json
import os
import shutil

import pytest

from runner.scoring import seal
from runner.scoring.snapshots import SnapshotStore, snapshot_code, write_manifest
from runner.wire.jsonl import EventWriter
from runner.wire.paths import SessionPaths


def _session(home, sid="s1", study=None, checkpoints=2) -> SessionPaths:
    paths = SessionPaths(home / "runs" / sid)
    paths.root.mkdir(parents=True)
    paths.config.write_text(json.dumps({"session_id": sid, "task": "t0", "agent": "scripted", "study": study}))
    ws = paths.root / "workspace"
    ws.mkdir()
    (ws / "run.py").write_text("print('train')\n")
    store = SnapshotStore(paths.snapshots)
    w = EventWriter(paths.events, sid, clock=lambda: 100.0)
    w.emit("warning", code="x", message="started")
    for k in range(checkpoints):
        dest = paths.snapshots / f"ckpt-{k}"
        code = snapshot_code(ws, dest, store)
        digest = store.put_bytes(f"weights {k}".encode(), "checkpoint")
        store.link(digest, dest / "checkpoint.pt")
        write_manifest(dest, (digest, len(f"weights {k}")), code)
        w.emit("checkpoint_found", name=f"ckpt-{k}", path=f"snapshots/ckpt-{k}/checkpoint.pt",
               snapshot=f"snapshots/ckpt-{k}", budget_elapsed_s=float(k))
    paths.result.write_text(json.dumps({"session_id": sid, "value": 0.5}))
    w.emit("session_ended", reason="completed", active_s=1.0, wall_s=1.0, paused_s=0.0, score=0.5,
           result_sha256=seal.digest(paths.result))
    w.close()
    seal.write(paths, w.written_head, w.written_lines, study)
    return paths


def check(paths, deep=False):
    return seal.check(paths, seal.home_id(paths.root.parent.parent), deep=deep)


def test_the_sessions_secrets_are_sealed():
    from runner.integrity import canaries

    assert {canaries.KEY_FILE, canaries.PASSES_KEY_FILE} <= set(seal.SEALED_FILES)


def test_a_record_as_its_runner_left_it_is_sealed(tmp_path):
    paths = _session(tmp_path)
    assert check(paths).state == "sealed" and check(paths, deep=True).state == "sealed"


def test_an_edited_result_is_named(tmp_path):
    paths = _session(tmp_path)
    paths.result.write_text(paths.result.read_text().replace("0.5", "0.9"))
    assert check(paths).line() == "tampered: result.json: edited since the session sealed it"


def test_an_edited_result_of_a_session_that_ended_without_its_seal_is_named_by_session_ended(tmp_path):
    paths = _session(tmp_path)
    (paths.root / seal.SEAL).unlink()
    assert check(paths).state == "chained"
    paths.result.write_text(paths.result.read_text().replace("0.5", "0.9"))
    assert check(paths).line() == "tampered: result.json: edited or missing since session_ended named it"


@pytest.mark.parametrize("edit, where", [
    (lambda lines: [lines[0], lines[2], *lines[3:]], "events.jsonl line 2"),  # dropped
    (lambda lines: [lines[0], lines[1].replace(b"ckpt-0", b"ckpt-9"), *lines[2:]], "events.jsonl line 3"),  # edited
    (lambda lines: [lines[0], lines[2], lines[1], *lines[3:]], "events.jsonl line 2"),  # reordered
    (lambda lines: [*lines[:2], lines[1], *lines[2:]], "events.jsonl line 3"),  # a line repeated
    (lambda lines: lines[:-1], "lines cut from its end"),  # the last line dropped
    (lambda lines: [*lines[:-1], lines[-1].replace(b'"score":0.5', b'"score":0.9')], "(its last) is not the line"),
])
def test_an_edited_dropped_or_moved_event_line_is_named(tmp_path, edit, where):
    paths = _session(tmp_path)
    lines = paths.events.read_bytes().splitlines()
    paths.events.write_bytes(b"\n".join(edit(lines)) + b"\n")
    found = check(paths)
    assert found.tampered and where in found.detail, found.line()


def test_lines_added_after_the_seal_are_named(tmp_path):
    paths = _session(tmp_path)
    w = EventWriter(paths.events, paths.session_id)  # a writer that continues the chain: still caught
    w.emit("warning", code="x", message="after the end")
    w.close()
    assert "lines after its sealed end" in check(paths).detail


def test_a_replaced_snapshot_file_is_named(tmp_path):
    paths = _session(tmp_path)
    target = paths.snapshots / "ckpt-1" / "checkpoint.pt"
    target.unlink()
    target.write_bytes(b"weights 7")  # another file in its place: the same size
    assert check(paths).line() == "tampered: snapshots/ckpt-1/checkpoint.pt: replaced (its bytes are not the snapshot's)"


def test_an_object_edited_in_place_is_caught_by_the_deep_check(tmp_path):
    paths = _session(tmp_path)
    obj = next(p for p in (paths.snapshots / "objects").iterdir() if p.read_bytes() == b"weights 0")
    os.chmod(obj, 0o644)
    obj.write_bytes(b"weights 9")  # same size, same inode: only its bytes tell
    assert check(paths).state == "sealed"  # the cheap check (reindex) reads sizes and links
    assert "its bytes are not the ones stored" in check(paths, deep=True).detail


def test_a_folder_copied_from_another_session_is_named_at_its_first_line(tmp_path):
    _session(tmp_path, "demo--a--t0--r1", study="demo")
    other = _session(tmp_path, "other--a--t0--r1", study="other")
    target = tmp_path / "runs" / "demo--a--t0--r1"
    shutil.rmtree(target)
    shutil.copytree(other.root, target)
    found = check(SessionPaths(target))
    assert found.detail.startswith("events.jsonl line 1 does not start session demo--a--t0--r1's chain"), found.line()


def test_a_folder_copied_from_another_home_is_named(tmp_path):
    one = _session(tmp_path / "one", "demo--a--t0--r1", study="demo")
    two = tmp_path / "two"
    seal.home_id(two.mkdir() or two, create=True)
    (two / "runs").mkdir()
    shutil.copytree(one.root, two / "runs" / one.session_id)
    found = check(SessionPaths(two / "runs" / one.session_id))
    assert found.tampered and found.detail.startswith("copied from another home"), found.line()


def test_a_record_from_before_the_chain_is_unchained_never_tampered(tmp_path):
    paths = SessionPaths(tmp_path / "runs" / "old")
    paths.root.mkdir(parents=True)
    paths.events.write_text('{"v":1,"session_id":"old","seq":1,"ts":1.0,"type":"warning","code":"x","message":"m"}\n')
    paths.result.write_text("{}")
    assert check(paths).state == "unchained"


def test_a_seal_beside_an_unchained_log_is_tampered(tmp_path):
    paths = _session(tmp_path)
    stripped = [json.loads(line) for line in paths.events.read_text().splitlines()]
    paths.events.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "prev"}) + "\n" for e in stripped))
    assert "carries no chain link" in check(paths).detail
