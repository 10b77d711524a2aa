"""Floods from a hostile agent (issue 38 parts 3-5, INTEGRITY.md R2), each in a real session of
the command agent on t0: an output flood, a checkpoint flood, a huge workspace. Each session ends
in order with its result; the record, the post-session work and the snapshots stay within their
stated bounds, and what they left out is counted and said."""

from __future__ import annotations

import json

import pytest

from runner.scoring.live import LIVE_SCORE_DRAIN_S
from runner.scoring.official import evaluation_cap
from runner.wire.record_caps import EVENTS_FILE_MULTIPLE, RecordCaps
from tests.helpers import ROOMY_BUDGET_S, events, slack, start_session, wait_event, write_agent

OUTPUT_FLOOD = """
import json, sys
n = 0
line = "flood " + "x" * 193 + "\\n"  # 200 bytes a line
for _ in range(100_000):  # 20 MB: far past a 60 s session's caps
    sys.stdout.write(line)
    n += 1
sys.stdout.flush()
open("flood.json", "w").write(json.dumps({"lines": n, "bytes": n * len(line)}))
"""

RUN = """
import json, sys, time
import prepare
from train import build_model


def save(name):
    config = {"hidden": 8}
    prepare.save_checkpoint(build_model(config), config, name)


if __name__ == "__main__":
    BODY
"""


def run_script(body: str) -> str:
    """A command agent that writes ``run_flood.py`` (an honest run script whose ``__main__`` is
    ``body``) into its workspace and runs it, as an agent runs its scripts."""
    script = RUN.replace("BODY", body.strip().replace("\n", "\n    "))
    return f"""
import subprocess, sys
open("run_flood.py", "w").write({script!r})
sys.exit(subprocess.run([sys.executable, "run_flood.py"]).returncode)
"""


CHECKPOINT_FLOOD = run_script("""
for i in range(300):  # the issue's 302 checkpoints of a 120 s session
    save(f"c{i:03d}")
open("saved.json", "w").write(json.dumps({"saved": 300}))
""")

HUGE_WORKSPACE = run_script("""
import os
os.makedirs("lib", exist_ok=True)
def code(version):
    for i in range(8):  # 8 MiB of code
        with open(f"lib/blob_{i}.py", "w") as f:
            f.write(f"# version {version} of file {i}" + chr(10) + ("x = 1  # padding to a megabyte of code" + chr(10)) * 27_000)
code(1)
for i in range(4):  # unchanged code: stored once
    save(f"same{i}")
    time.sleep(1)
code(2)  # every file changed: 8 MiB more, past the session's 12 MiB cap
save("changed")
time.sleep(8)  # the runner's watcher snapshots it meanwhile
open("done.json", "w").write("{}")
""")


def ended(paths, timeout: float = 240) -> tuple[list[dict], dict]:
    wait_event(paths, "session_ended", timeout=timeout)
    return events(paths), json.loads(paths.result.read_text())


@pytest.mark.slow
def test_an_output_flood_is_cut_at_the_caps_counted_and_the_files_stay_bounded(home, tmp_path):
    paths = start_session(home, "flood", agent="command", budget_s=ROOMY_BUDGET_S,
                          command=write_agent(tmp_path, "flood.py", OUTPUT_FLOOD))
    evs, result = ended(paths)
    assert result["end_reason"] == "completed" and evs[-1]["type"] == "session_ended"
    printed = json.loads((paths.workspace / "flood.json").read_text())
    caps = RecordCaps.for_budget(ROOMY_BUDGET_S)
    cut = [e for e in evs if e["type"] == "truncated"]
    by_stream = {s: [e for e in cut if e["stream"] == s] for s in ("transcript", "stdout")}
    recorded = sum(1 for e in evs if e["type"] == "transcript")
    assert recorded + sum(e["dropped"] for e in by_stream["transcript"]) == printed["lines"]  # every line counted
    copied = paths.agent_stdout.read_bytes()
    assert len(copied) <= caps.raw_bytes
    assert copied.count(b"\n") + sum(e["dropped"] for e in by_stream["stdout"]) == printed["lines"]
    assert len(copied) + sum(e["dropped_bytes"] for e in by_stream["stdout"]) == printed["bytes"]
    transcript_bytes = sum(len(line) + 1 for line in paths.events.read_bytes().splitlines()
                           if b'"type":"transcript"' in line)
    assert transcript_bytes <= EVENTS_FILE_MULTIPLE * caps.event_bytes
    assert len(cut) < 20 and any(e["final"] for e in cut)  # a few counts, not one per line
    started = next(e for e in evs if e["type"] == "session_started")
    assert started["contract"]["record_caps"] == caps.contract()  # the caps are part of the contract


@pytest.mark.slow
def test_a_checkpoint_flood_ends_within_the_bounded_post_session_work(home, tmp_path):
    paths = start_session(home, "ckpts", agent="command", budget_s=ROOMY_BUDGET_S,
                          command=write_agent(tmp_path, "ckpts.py", CHECKPOINT_FLOOD))
    evs, result = ended(paths, timeout=400)
    assert json.loads((paths.workspace / "saved.json").read_text())["saved"] == 300
    found = [e for e in evs if e["type"] == "checkpoint_found"]
    official = [e for e in evs if e["type"] == "checkpoint_scored" and e.get("official")]
    assert len(found) >= 250  # the runner saw the flood (checkpoints saved within a scan may share a version)
    assert len(official) <= evaluation_cap(ROOMY_BUDGET_S)  # not one re-evaluation per checkpoint
    assert result["value"] is not None and result["checkpoint"]  # a result all the same
    assert result["not_reevaluated"]["count"] == len(found) - len(official)
    agent_gone = max(e["ts"] for e in evs if e["type"] in ("checkpoint_found", "transcript"))
    end = evs[-1]["ts"]
    # after the agent: the live scores' drain, then a bounded number of evaluations of a second or two each
    assert end - agent_gone < (LIVE_SCORE_DRAIN_S + evaluation_cap(ROOMY_BUDGET_S) * 20) * slack()
    live = [e for e in evs if e["type"] == "checkpoint_scored" and not e.get("official")]
    skipped = [e for e in live if (e.get("error") or "").startswith("not scored live")]
    assert len(live) == len(found) or skipped  # the live scorer fell behind and said so, or kept up


@pytest.mark.slow
def test_a_huge_workspace_is_stored_once_and_the_snapshot_cap_is_reported(home, tmp_path):
    paths = start_session(home, "huge", agent="command", budget_s=ROOMY_BUDGET_S, snapshot_cap_bytes=12 << 20,
                          command=write_agent(tmp_path, "huge.py", HUGE_WORKSPACE))
    evs, result = ended(paths)
    found = {e["name"] for e in evs if e["type"] == "checkpoint_found"}
    assert {"same0-1", "same1-1", "same2-1", "same3-1"} <= found and "changed-1" not in found
    objects = paths.snapshots / "objects"
    stored = sum(p.stat().st_size for p in objects.iterdir())
    assert 8 << 20 <= stored <= 12 << 20  # 4 snapshots of 8 MiB of code: stored once
    from runner.scoring.snapshots import verify

    assert all(verify(paths.snapshots / name) == [] for name in found)  # each reads back exactly
    warned = [e["message"] for e in evs if e["type"] == "warning" and "changed.pt" in e["message"]]
    assert warned and "was not snapshotted, so it is not scored" in warned[0] and "cap of 12 MiB" in warned[0]
    assert result["end_reason"] == "completed" and result["value"] is not None


PAST_THE_CAP = run_script("""
for i in range(12):
    save(f"k{i:02d}")
open("saved.json", "w").write(json.dumps({"saved": 12}))
""")


@pytest.mark.slow
def test_checkpoints_past_the_cap_are_not_taken_and_are_counted(home, tmp_path):
    """A session takes at most its cap of checkpoint versions (5 here; 5 000 for 40 minutes by
    default): the rest are never snapshotted, found or scored, the watcher stops growing, and the
    files left over are counted in a truncated event, a cap warning and every view."""
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester
    from onegc_tui.views.transcript_view import truncated_words

    paths = start_session(home, "capped", agent="command", budget_s=ROOMY_BUDGET_S, max_checkpoints=5,
                          command=write_agent(tmp_path, "capped.py", PAST_THE_CAP))
    evs, result = ended(paths)
    assert json.loads((paths.workspace / "saved.json").read_text())["saved"] == 12
    found = [e["name"] for e in evs if e["type"] == "checkpoint_found"]
    assert len(found) == 5 and len(list(paths.snapshots.glob("k*"))) == 5
    assert {e["name"] for e in evs if e["type"] == "checkpoint_scored"} <= set(found)
    warned = [e for e in evs if e["type"] == "warning" and e["code"] == "checkpoint_cap"]
    assert len(warned) == 1 and "cap of 5 checkpoints" in warned[0]["message"]
    (cut,) = [e for e in evs if e["type"] == "truncated" and e["stream"] == "checkpoints"]
    assert cut["dropped"] == 7 and cut["limit_events"] == 5 and cut["final"]
    assert "7 more checkpoints not taken" in truncated_words(cut["stream"], cut["dropped"], 0, True)
    assert result["end_reason"] == "completed" and result["checkpoint"] in found  # a result from the ones taken
    started = next(e for e in evs if e["type"] == "session_started")
    assert started["contract"]["record_caps"]["checkpoints"] == 5
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        row = store.session("capped")
        assert row["caps_reached"] == 1 and row["truncated"] >= 7
    finally:
        store.close()
