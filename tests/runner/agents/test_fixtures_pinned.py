"""The pinned CLIs' own output (tests/runner/agents/fixtures/, captured against the loopback server):
every line understood, the tokens exactly what the server handed out, the failure named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.agents.claude_code import ClaudeCodeAdapter
from runner.agents.codex import CodexAdapter
from runner.agents.opencode import OpenCodeAdapter

FIXTURES = Path(__file__).resolve().with_name("fixtures")


def parse_all(adapter, name: str) -> list:
    items = []
    for line in (FIXTURES / name).read_text().splitlines(keepends=True):
        items += adapter.parse(line)
    return items


def summed(items) -> tuple[int, int, int, int]:
    usage = [i for i in items if i.kind == "usage"]
    return (sum(i.tokens_in for i in usage), sum(i.tokens_out for i in usage), sum(i.cache_read or 0 for i in usage),
            sum(i.cache_write or 0 for i in usage))  # fmt: skip


def test_claude_background_task_two_turns_one_result_and_exact_live_tokens():
    """2.1.332 waits for the run_in_background task; its end starts a second turn with its own
    init and result (whose usage covers that turn only). The server handed out 3 responses:
    4668 in (1515 cache reads, 123 cache writes), 93 out."""
    adapter = ClaudeCodeAdapter("claude-sonnet-4-5")
    items = parse_all(adapter, "claude-2.1.332-background.jsonl") + adapter.finish()
    assert not [i.text for i in items if i.kind == "raw"]
    assert [i.text for i in items if i.kind == "result"] == ["success: done"]  # one, at the end
    assert any(i.text.startswith("turn ended, waiting for background task 'train in background'") for i in items)
    assert any(i.text.startswith("task ") and "completed" in i.text for i in items)
    assert summed(items) == (4668, 93, 1515, 123)
    result = next(i for i in items if i.kind == "result")
    assert (result.tokens_in, result.tokens_out, result.cache_read, result.cache_write) == (4668, 93, 1515, 123)
    # the partial messages gave the real output counts as they came: no correction at the results
    assert not [i for i in items if i.kind == "usage" and "session totals" in i.text]
    assert sum(i.cost_usd for i in items if i.kind == "usage") == result.cost_usd == 0.01140075
    assert adapter.failure() is None and adapter.notes() == []


def test_claude_heartbeats_are_progress_of_their_tool_call():
    adapter = ClaudeCodeAdapter()
    items = parse_all(adapter, "claude-2.1.332-heartbeat.jsonl")
    call = next(i for i in items if i.kind == "tool_call")
    progress = [i for i in items if i.kind == "progress"]
    assert [(p.call_id, p.tool, p.text) for p in progress] == [
        (call.call_id, "Bash", "running for 30 s"), (call.call_id, "Bash", "running for 60 s")]  # fmt: skip
    assert not [i for i in items if i.kind == "raw"] and summed(items) == (3096, 61, 1005, 81)


def test_claude_http_500_retries_are_the_failure_not_the_stop_that_ended_them():
    adapter = ClaudeCodeAdapter()
    items = parse_all(adapter, "claude-2.1.332-http500.jsonl")
    retries = [i.text for i in items if i.kind == "error" and i.text.startswith("retry:")]
    assert len(retries) == 9 and retries[0].startswith("retry: attempt 1/10 in") and retries[0].endswith("HTTP 500: server_error")
    # the last result is the harness's SIGINT (aborted_streaming): not what the session died of
    assert adapter.failure() == "model request failed: HTTP 500: server_error (9 failed attempts)"
    assert summed(items) == (0, 0, 0, 0)


def test_codex_stopped_mid_turn_keeps_its_tokens_from_the_rollout(tmp_path):
    """The budget stopped `codex exec` during its tool: stdout has no turn.completed, the rollout
    has the response's tokens (1500 in, 500 of them cached, 30 out)."""
    adapter = CodexAdapter("gpt-5")
    adapter.codex_home = tmp_path / ".codex"
    rollout = adapter.codex_home / "sessions/2026/12/01/rollout-2026-12-01T11-54-06-x.jsonl"
    rollout.parent.mkdir(parents=True)
    items = parse_all(adapter, "codex-0.171.0-midturn.jsonl")
    text = (FIXTURES / "codex-0.171.0-midturn.rollout.jsonl").read_text()
    cut = text.index('"token_usage_record"') + 10  # Codex is mid-way through writing that line
    rollout.write_text(text[:cut])
    items += adapter.poll()
    assert summed(items) == (0, 0, 0, 0)  # a partial line waits for its end
    rollout.write_text(text)
    items += adapter.poll()
    assert summed(items) == (1500, 30, 500, 0)
    (result,) = adapter.finish()
    assert result.text.startswith("ended without a completed turn") and (result.tokens_in, result.tokens_out) == (1500, 30)
    assert result.cost_usd == pytest.approx((1000 * 1.25 + 500 * 0.125 + 30 * 10.0) / 1e6)  # gpt-5: cached at a tenth
    assert not [i for i in items if i.kind == "raw"]


def test_opencode_silent_on_http_500_its_log_names_the_failure(tmp_path):
    """OpenCode printed nothing at all on stdout or stderr: its log is the only witness."""
    adapter = OpenCodeAdapter("onegc/gpt-5")
    adapter.data_home = tmp_path
    log = tmp_path / "opencode/log/opencode.log"
    log.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "opencode-1.18.33-http500.log", log)
    items = adapter.poll()
    assert [i.text for i in items] == ["retry: model request failed: AI_APICallError: mock failure 500"] * 4
    assert adapter.poll() == []  # read once
    assert adapter.failure() == "model request failed: AI_APICallError: mock failure 500 (4 failed attempts)"
    (result,) = adapter.finish()
    assert result.kind == "result" and adapter.notes() == []  # no step was open: no usage left out
