"""Claude Code adapter: every line of the recorded transcripts, the launch (argv, env, home),
the standard prompt and the CLI locator."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.agents import claude_code, credentials, get_adapter, locate
from runner.agents.base import LaunchContext
from runner.agents.claude_code import ClaudeCodeAdapter
from runner.agents.item import TranscriptItem
from runner.agents.prompt import OWNERSHIP_NOTE, standard_prompt
from tests.helpers import REPO
from tests.runner.agents.context import launch_context

FIXTURES = REPO / ".." / "shared" / "fixtures" / "transcripts"
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures/transcripts is not beside the repo")


def run_fixture(
    name: str, adapter: ClaudeCodeAdapter | None = None
) -> tuple[ClaudeCodeAdapter, list[tuple[int, TranscriptItem]]]:
    adapter = adapter or ClaudeCodeAdapter()
    out = []
    for no, line in enumerate((FIXTURES / name).read_text().splitlines(keepends=True), 1):
        items = adapter.parse(line)
        assert isinstance(items, list)
        out += [(no, item) for item in items]
    return adapter, out


def signature(items) -> list[tuple]:
    return [(no, it.kind, it.tool, it.exit_code) for no, it in items]


# ----------------------------------------------------------------------------- transcripts
@needs_fixtures
def test_two_tool_calls_then_done():
    adapter, items = run_fixture("claude-two.jsonl")
    assert signature(items) == [
        (1, "text", None, None),
        (2, "text", None, None), (2, "usage", None, None),
        (3, "tool_call", "Bash", None),
        (4, "tool_result", "Bash", 0),
        (5, "text", None, None), (5, "usage", None, None),
        (6, "tool_call", "Bash", None),
        (7, "tool_result", "Bash", 0),
        (8, "text", None, None), (8, "usage", None, None),
        (9, "usage", None, None), (9, "result", None, None),  # the result's totals settle the provisional counts
    ]  # fmt: skip
    by_kind = {}
    for _, it in items:
        by_kind.setdefault(it.kind, []).append(it)
    assert [it.text for it in by_kind["tool_call"]] == ["$ echo step1 > a.txt", "$ cat a.txt && echo step2 >> a.txt"]
    assert [it.call_id for it in by_kind["tool_result"]] == [it.call_id for it in by_kind["tool_call"]]
    assert by_kind["tool_result"][1].text == "step1"
    assert by_kind["text"][0].role == "system" and "claude-opus-4-8[1m]" in by_kind["text"][0].text
    assert [it.text for it in by_kind["text"][1:]] == ["I'll run step 1.", "I'll run step 2.", "all steps done"]
    # the CLI repeats a message's usage on each content block: counted once per message id; without
    # partial messages the output count is a provisional 1 until the result line corrects it
    assert [(u.tokens_in, u.tokens_out) for u in by_kind["usage"]] == [(120, 1)] * 3 + [(0, 87)]
    (result,) = by_kind["result"]
    assert result.text == "success: all steps done"
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (360, 90, 0.00405)
    assert sum(u.cost_usd for u in by_kind["usage"]) == pytest.approx(0.00405)  # live sum == final
    assert adapter.usage_totals() == {"tokens_in": 360, "tokens_out": 90, "cache_read": 0, "cache_write": 0,
                                      "cost_usd": 0.00405, "cost_known": True}  # fmt: skip
    assert adapter.finish() == [] and adapter.failure() is None and adapter.notes() == []


@needs_fixtures
def test_partial_messages_add_only_usage_and_match_the_result():
    adapter, items = run_fixture("claude-partial.jsonl")
    lines = (FIXTURES / "claude-partial.jsonl").read_text().splitlines()
    stream_lines = {no for no, line in enumerate(lines, 1) if '"type":"stream_event"' in line}
    assert len(stream_lines) == 21
    # stream events are covered by the assistant lines; only message_delta adds (output) usage
    assert [(no, it.kind) for no, it in items if no in stream_lines] == [(18, "usage"), (27, "usage")]
    assert [it.tool for _, it in items if it.kind == "tool_call"] == ["Bash"]
    usage = [it for _, it in items if it.kind == "usage"]
    assert sum(u.tokens_in for u in usage) == 240 and sum(u.tokens_out for u in usage) == 60
    # the live estimate from prices.toml equals what the CLI itself charged
    assert sum(u.cost_usd for u in usage) == pytest.approx(0.0027)
    result = items[-1][1]
    assert (result.kind, result.text, result.tokens_in, result.tokens_out, result.cost_usd) == (
        "result",
        "success: done",
        240,
        60,
        0.0027,
    )


@needs_fixtures
def test_max_turns_is_an_error_then_a_result():
    adapter, items = run_fixture("claude-maxturns.jsonl")
    assert signature(items)[-5:] == [
        (3, "tool_call", "Bash", None),
        (4, "tool_result", "Bash", 0),
        (5, "error", None, None),
        (5, "usage", None, None),
        (5, "result", None, None),
    ]
    error = items[-3][1]
    assert error.text == "error_max_turns (max_turns): Reached maximum number of turns (1)"
    assert items[-1][1].cost_usd == 0.00135 and adapter.usage_totals()["tokens_out"] == 30


@needs_fixtures
def test_interrupt_marks_the_rejected_tool_and_the_aborted_run():
    adapter, items = run_fixture("claude-int.jsonl")
    assert signature(items) == [
        (1, "text", None, None),
        (2, "text", None, None), (2, "usage", None, None),
        (3, "tool_call", "Bash", None),
        (4, "tool_result", "Bash", None),
        (5, "text", None, None),
        (6, "error", None, None), (6, "usage", None, None), (6, "result", None, None),
    ]  # fmt: skip
    assert items[3][1].text == "$ sleep 30 && echo late > late.txt"
    assert items[4][1].text.startswith("[error] The user doesn't want to proceed")
    assert (items[5][1].role, items[5][1].text) == ("user", "[Request interrupted by user for tool use]")
    assert items[6][1].text.startswith("error_during_execution (aborted_tools)")
    assert (items[7][1].tokens_in, items[7][1].tokens_out) == (0, 29)  # the provisional output count, corrected
    assert items[8][1].text == "error_during_execution"


@needs_fixtures
def test_http_400_is_an_error_without_usage():
    adapter, items = run_fixture("claude-fail400.jsonl")
    assert [(no, it.role, it.kind) for no, it in items] == [
        (1, "system", "text"), (2, "system", "error"), (3, "system", "error"), (3, "system", "result"),
    ]  # fmt: skip
    assert items[1][1].text == "API Error: 400 mock failure 400"
    assert items[2][1].text == "error HTTP 400: API Error: 400 mock failure 400"
    assert items[3][1].text == "error: API Error: 400 mock failure 400"
    assert adapter.usage_totals() == {"tokens_in": 0, "tokens_out": 0, "cache_read": 0, "cache_write": 0,
                                      "cost_usd": 0.0, "cost_known": True}  # fmt: skip
    assert adapter.failure() == "model request failed: API Error: 400 mock failure 400"


@needs_fixtures
@pytest.mark.parametrize(
    "name",
    ["claude-two.jsonl", "claude-partial.jsonl", "claude-maxturns.jsonl", "claude-int.jsonl", "claude-fail400.jsonl"],
)
def test_every_fixture_line_is_understood(name):
    _, items = run_fixture(name)
    assert items and not [it for _, it in items if it.kind == "raw"]
    assert sum(it.kind == "result" for _, it in items) == 1


def test_retry_exit_codes_thinking_and_unknown_shapes():
    a = ClaudeCodeAdapter()
    (retry,) = a.parse(
        '{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1500,"error_status":529,"error":"overloaded"}'
    )
    assert (retry.kind, retry.text) == ("error", "retry: attempt 2/10 in 1.5s, HTTP 529: overloaded")
    (call,) = a.parse(
        '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash",'
        '"input":{"command":"python run_1.py"}}]}}'
    )
    assert call.text == "$ python run_1.py"
    (res,) = a.parse(
        '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,'
        '"content":"Exit code 2\\nTraceback"}]}}'
    )
    assert (res.tool, res.exit_code, res.call_id) == ("Bash", 2, "t1")
    (think,) = a.parse('{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"try a wider net"}]}}')
    assert (think.kind, think.text) == ("thinking", "try a wider net")
    (edit,) = a.parse(
        '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"run_2.py"}}]}}'
    )
    assert edit.text == "Edit run_2.py"
    for line in ["not json", "[1, 2]", '{"type":"something_new"}', '{"type":"assistant"}', "\x00\xff"]:
        assert [it.kind for it in a.parse(line)] == ["raw"]
    assert a.parse("") == [] and a.parse("  \n") == []


def test_finish_owes_a_result_when_the_run_was_cut_off():
    a = ClaudeCodeAdapter()
    a.parse('{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}')
    a.parse(
        '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1000,"cache_read_input_tokens":9000,"output_tokens":500}}}'
    )
    (result,) = a.finish()
    assert result.kind == "result" and "without a final result line" in result.text
    assert (result.tokens_in, result.tokens_out) == (10000, 500)
    # sonnet: 1000 x $3 + 9000 x $0.30 cached + 500 x $15 per million
    assert result.cost_usd == pytest.approx((1000 * 3 + 9000 * 0.3 + 500 * 15) / 1e6)
    assert a.usage_totals()["cost_known"] is True


# ----------------------------------------------------------------------------- launch
def make_ctx(tmp_path: Path, model: str | None = None, env: dict | None = None, extra=()) -> LaunchContext:
    env = env if env is not None else {"PATH": "/usr/bin", "HOME": "/root", "ANTHROPIC_API_KEY": "sk-ant-secret"}
    return launch_context(tmp_path, model, env, extra)


def test_argv_is_the_headless_stream_json_invocation(tmp_path):
    ctx = make_ctx(tmp_path, model="claude-sonnet-4-5", extra=["--max-turns", "50"])
    argv = ClaudeCodeAdapter().argv(ctx)
    assert Path(argv[0]).name == "claude"
    assert argv[1:] == [
        "-p", ctx.prompt, "--output-format", "stream-json", "--verbose", "--include-partial-messages",
        "--dangerously-skip-permissions",
        "--model", "claude-sonnet-4-5", "--max-turns", "50",
    ]  # fmt: skip
    assert "--model" not in ClaudeCodeAdapter().argv(make_ctx(tmp_path))
    assert not any("sk-ant-secret" in a for a in argv)
    assert ClaudeCodeAdapter.prompt_on_stdin is False  # the runner gives it /dev/null


def test_env_has_a_fresh_home_and_only_claude_credentials(tmp_path, monkeypatch):
    base = {
        "PATH": "/usr/bin", "HOME": "/root", "ANTHROPIC_API_KEY": "sk-ant-secret", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "OPENAI_API_KEY": "sk-openai", "OPENROUTER_API_KEY": "sk-or", "CLAUDE_CONFIG_DIR": "/root/.claude",
        "ONEGC_DEADLINE": "123.000",
    }  # fmt: skip
    ctx = make_ctx(tmp_path, env=base)
    monkeypatch.setattr(claude_code.os, "geteuid", lambda: 0)
    env = ClaudeCodeAdapter().env(ctx)
    home = tmp_path / "agent_home"
    assert env["HOME"] == str(home) and env["XDG_CONFIG_HOME"] == str(home / ".config")
    assert env["CLAUDE_CONFIG_DIR"] == str(home / ".claude")
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-secret" and env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert "OPENAI_API_KEY" not in env and "OPENROUTER_API_KEY" not in env
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["IS_SANDBOX"] == "1"
    assert env["ONEGC_DEADLINE"] == "123.000" and env["PATH"] == "/usr/bin"
    assert env["PWD"] == str(tmp_path / "workspace")
    assert base["HOME"] == "/root"  # the runner's dict is not modified
    monkeypatch.setattr(claude_code.os, "geteuid", lambda: 1000)
    assert "IS_SANDBOX" not in ClaudeCodeAdapter().env(ctx)


def test_prepare_home_and_configure(tmp_path):
    ctx = make_ctx(tmp_path)
    adapter = get_adapter("claude-code")
    adapter.prepare_home(ctx)
    assert (tmp_path / "agent_home" / ".claude").is_dir() and (tmp_path / "agent_home" / ".config").is_dir()
    assert (tmp_path / "agent_home").stat().st_mode & 0o777 == 0o700

    class Config:
        model = "claude-opus-4-1"

    adapter.configure(Config())
    assert adapter.model == "claude-opus-4-1"
    adapter.configure(None)
    assert adapter.model is None


def test_credential_report_names_variables_never_values():
    report = credentials.credential_report(
        "claude-code", {"ANTHROPIC_API_KEY": "sk-ant-secret", "ANTHROPIC_BASE_URL": "http://x"}
    )
    assert report.ok and report.present == ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    assert "sk-ant-secret" not in report.message and "ANTHROPIC_API_KEY" in report.message
    missing = credentials.credential_report("claude-code", {"OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "  "})
    assert not missing.ok and missing.message.startswith("claude-code: no credentials: set ANTHROPIC_API_KEY or")


# ----------------------------------------------------------------------------- prompt
@pytest.mark.slow
def test_standard_prompt_states_the_rules_and_a_working_deadline_check(tmp_path):
    prompt = standard_prompt("Demo: classify spirals", 40, "test")
    assert prompt.startswith(OWNERSHIP_NOTE)
    assert "the files in this working directory are yours to edit" in prompt.lower()
    for needle in ["Demo: classify spirals", "40 minutes", "program.md", "train.py", "run_{x}.py", 'scored split is "test"',
                   "prepare.save_checkpoint", "build_model(config)", ".deadline", "ONEGC_DEADLINE", "No internet"]:  # fmt: skip
        assert needle in prompt, needle
    assert "1 minute " in standard_prompt("x", 1, "val")
    # the one-liner the prompt gives works against the runner's .deadline format
    command = next(line.strip() for line in prompt.splitlines() if line.strip().startswith("python -c"))
    (tmp_path / ".deadline").write_text(f"{time.time() + 600:.3f}\n")
    out = subprocess.run(
        [sys.executable, "-c", command.split('"', 1)[1].rsplit('"', 1)[0]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    seconds = int(out.stdout.split()[0])
    assert 590 <= seconds <= 600


# ----------------------------------------------------------------------------- locate / version
def fake_cli(prefix: Path, name: str, version_line: str) -> Path:
    bin_dir = prefix / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / name
    exe.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.slow
def test_project_prefix_wins_over_path_and_version_runs_it(tmp_path, monkeypatch):
    prefix_cli = fake_cli(tmp_path / "prefix", "claude", "2.1.197 (Claude Code)")
    path_cli = fake_cli(tmp_path / "global", "claude", "9.9.9 (Claude Code)")
    monkeypatch.setenv("PATH", str(path_cli.parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("ONEGC_AGENTS_PREFIX", str(tmp_path / "prefix"))
    assert locate.find_cli("claude") == str(prefix_cli)
    assert ClaudeCodeAdapter().version() == "2.1.197 (Claude Code)"
    assert ClaudeCodeAdapter().argv(make_ctx(tmp_path))[0] == str(prefix_cli)
    status = locate.cli_status("claude-code")
    assert status.ok and status.message == f"claude-code: 2.1.197 (Claude Code) ({prefix_cli})"


def test_missing_cli_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ONEGC_AGENTS_PREFIX", str(tmp_path / "none"))
    monkeypatch.setenv("ONEGC_HOME", str(tmp_path))
    monkeypatch.setattr(locate, "REPO_ROOT", tmp_path)
    status = locate.cli_status("codex")
    assert status.path is None and not status.ok
    assert "make agents" in status.message and "@openai/codex" in status.message
    assert get_adapter("codex").version() is None
