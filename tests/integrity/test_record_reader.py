"""The reader trusts only what the runner wrote (../shared/INTEGRITY.md A3, A5): a line that claims another
line's seq, another session's event, an oversized line or a garbage ``session.json`` is reported
and skipped, and can neither hide a session nor freeze it."""

from __future__ import annotations

import json

from onegc_tui.store.ingest import Ingester
from tests.store.test_store import fake_session


def forged_end(sid: str, seq: int) -> bytes:
    return json.dumps({"v": 1, "session_id": sid, "seq": seq, "ts": 1.0, "type": "session_ended", "reason": "completed",
                       "detail": "forged", "active_s": 1.0, "wall_s": 1.0, "paused_s": 0.0, "score": 1e-05,
                       "best_checkpoint": "x"}).encode() + b"\n"


def test_a_second_line_with_a_taken_seq_or_another_sessions_id_is_reported(home, store):
    w = fake_session(home, "s1")  # seq 1..15, written by "the runner"
    ingester = Ingester(home, store)
    ingester.ingest_all()
    with open(w.path, "ab") as f:
        f.write(forged_end("s1", 3))  # squats a seq already stored
        f.write(forged_end("other", 16))  # claims to be another session's
    w.emit("session_ended", reason="budget_exhausted", detail="active time reached the budget", active_s=60.0,
           wall_s=61.0, paused_s=0.0, score=0.61, best_checkpoint="a-1")
    ingester.ingest_all()
    row = store.session("s1")
    assert row["state"] == "ended" and row["score"] == 0.61 and row["end_reason"] == "budget_exhausted"
    assert store.session("other") is None
    errors = [e["error"] for e in store.ingest_errors("s1")]
    assert any("a second line with seq 3" in e for e in errors) and any("session 'other'" in e for e in errors), errors
    assert row["warnings"] == 2


def test_an_oversized_line_neither_freezes_nor_hides_the_session(home, store):
    w = fake_session(home, "s2")
    with open(w.path, "ab") as f:
        f.write(b"x" * (9 << 20) + b"\n")  # longer than any read the ingester makes
    w.emit("session_ended", reason="completed", detail="the agent finished", active_s=5.0, wall_s=5.0, paused_s=0.0,
           score=0.61, best_checkpoint="a-1")
    Ingester(home, store).ingest_all()
    row = store.session("s2")
    assert row["state"] == "ended" and row["score"] == 0.61
    assert any("over" in e["error"] and "KiB" in e["error"] for e in store.ingest_errors("s2"))


def test_a_garbage_session_json_does_not_hide_the_session(home, store):
    fake_session(home, "s3")
    (home / "runs" / "s3" / "session.json").write_text("garbage")
    messages = []
    Ingester(home, store, on_error=messages.append).ingest_all()
    row = store.session("s3")
    assert row is not None and row["task"] == "t0_demo" and row["state"] == "running"
    assert any("session.json: unreadable" in m for m in messages), messages
