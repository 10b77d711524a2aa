"""A tool still running when the agent CLI exits is recorded as killed (runner/open_tools.py,
issue 28): Codex's own output of such a run (its item.started without item.completed)."""

from __future__ import annotations

from pathlib import Path

from runner.agents.base import TranscriptItem
from runner.agents.codex import CodexAdapter
from runner.open_tools import KILLED, OpenTools
from runner.outcome import end_detail

FIXTURE = Path(__file__).parents[1] / "agents" / "fixtures" / "codex-0.171.0-midturn.jsonl"


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
