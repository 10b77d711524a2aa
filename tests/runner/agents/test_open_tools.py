"""A tool still running when the agent CLI exits is recorded as killed (runner/agents/open_tools.py,
issue 28): Codex's own output of such a run (its item.started without item.completed)."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from runner.agents.base import TranscriptItem
from runner.agents.codex import CodexAdapter
from runner.agents.open_tools import KILLED, OpenTools
from runner.session.outcome import end_detail

FIXTURE = Path(__file__).parent / "fixtures" / "codex-0.171.0-midturn.jsonl"


def test_codex_exiting_mid_tool_leaves_a_killed_result_and_a_note():
    adapter, tools = CodexAdapter("gpt-5"), OpenTools()
    items = [it for line in FIXTURE.read_text().splitlines() for it in adapter.parse(line)] + adapter.finish()
    for it in items:
        tools.seen(it)
    (call,) = [it for it in items if it.kind == "tool_call"]
    assert not [it for it in items if it.kind == "tool_result"]  # Codex never said what became of it
    (result,) = tools.killed()
    assert (result.kind, result.call_id, result.tool, result.text) == ("tool_result", call.call_id, "shell", KILLED)
    assert tools.killed() == []  # once
    note = tools.note()
    assert note is not None and note.startswith("1 tool was still running when the agent exited and killed with it: ")
    assert repr(call.text) in note
    detail = end_detail("completed", "the agent finished", notes=[note])
    assert detail == f"the agent finished; {note}"


def test_finished_calls_and_calls_without_an_id_are_left_alone():
    tools = OpenTools()
    for it in (TranscriptItem(role="assistant", kind="tool_call", tool="shell", call_id="a", text="$ ls"),
               TranscriptItem(role="tool", kind="tool_result", tool="shell", call_id="a", text="x"),
               TranscriptItem(role="assistant", kind="tool_call", tool="shell", text="$ no id")):
        tools.seen(it)
    assert tools.killed() == [] and tools.note() is None
    for k in range(5):
        tools.seen(TranscriptItem(role="assistant", kind="tool_call", tool="shell", call_id=str(k), text=f"$ run_{k}.py"))
    assert len(tools.killed()) == 5
    assert tools.note().endswith("'$ run_0.py', '$ run_1.py', '$ run_2.py' and 2 more")


@pytest.mark.slow
def test_a_session_whose_codex_exits_mid_tool_records_the_tool_as_killed(home, tmp_path, monkeypatch):
    """A real session of the codex adapter with a stand-in ``codex`` that starts a tool (a sleep
    in a process of its own, as Codex's shell does), prints Codex's own mid-turn lines and exits."""
    from tests.helpers import events, start_session, wait_event, wait_for

    # the stand-in goes where the runner looks first (runner/agents/locate.py): a project prefix,
    # which would otherwise be this checkout's `make agents` install, the real codex
    prefix = tmp_path / "agents"
    bin_dir = prefix / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "codex"
    fake.write_text(f"""#!{sys.executable}
import subprocess, sys
if "--version" in sys.argv:
    print("codex-cli 0.171.0"); sys.exit(0)
subprocess.Popen(["sleep", "600"], start_new_session=True)
print({FIXTURE.read_text()!r}, flush=True)
""")
    fake.chmod(0o755)
    monkeypatch.setenv("ONEGC_AGENTS_PREFIX", str(prefix))
    paths = start_session(home, "codexkill", agent="codex", model="gpt-5", network="open", budget_s=60)
    ended = wait_event(paths, "session_ended", timeout=120)
    results = [e for e in events(paths) if e["type"] == "transcript" and e["kind"] == "tool_result"]
    assert [(e["call_id"], e["text"]) for e in results] == [("item_1", KILLED)], results
    note = "1 tool was still running when the agent exited and killed with it: \"$ python -c 'import time; time.sleep(600)'\""
    assert ended["reason"] == "completed" and ended["detail"] == f"the agent finished; {note}", ended
    wait_for(lambda: not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "600"]],
             10, "the tool to be gone")
