"""Codex adapter: every line of the recorded transcripts, pricing of its token counts, and the
launch (argv, env, the config.toml for a custom endpoint)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from runner.agents import credentials, get_adapter
from runner.agents.base import LaunchContext
from runner.agents.codex import CodexAdapter, error_message, unwrap_command
from runner.agents.item import TranscriptItem
from tests.helpers import REPO
from tests.runner.agents.context import launch_context

FIXTURES = REPO / ".." / "shared" / "fixtures" / "transcripts"
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures/transcripts is not beside the repo")


def run_fixture(
    name: str, adapter: CodexAdapter | None = None
) -> tuple[CodexAdapter, list[tuple[int, TranscriptItem]]]:
    adapter = adapter or CodexAdapter()
    out = []
    for no, line in enumerate((FIXTURES / name).read_text().splitlines(keepends=True), 1):
        out += [(no, item) for item in adapter.parse(line)]
    return adapter, out


# ----------------------------------------------------------------------------- transcripts
@needs_fixtures
def test_two_commands_then_done_with_unknown_price():
    adapter, items = run_fixture("codex-two.jsonl", CodexAdapter("mock-model"))
    assert [(no, it.kind, it.tool, it.exit_code) for no, it in items] == [
        (1, "text", None, None),
        (2, "error", None, None),  # non-fatal: unknown model metadata
        (4, "tool_call", "shell", None),
        (5, "tool_result", "shell", 0),
        (6, "tool_call", "shell", None),
        (7, "tool_result", "shell", 0),
        (8, "text", None, None),
        (9, "usage", None, None), (9, "result", None, None),
    ]  # fmt: skip
    texts = [it.text for _, it in items]
    assert texts[0] == "thread 01a229b2-e489-7e52-8273-cc5940e25266"
    assert texts[1].startswith("Model metadata for `mock-model` not found")
    assert texts[2] == "$ echo step1 > a.txt" and texts[4] == "$ cat a.txt && echo step2 >> a.txt"
    assert texts[5] == "step1\n" and texts[6] == "all steps done"
    assert [it.call_id for _, it in items if it.tool] == ["item_1", "item_1", "item_2", "item_2"]
    usage, result = items[-2][1], items[-1][1]
    assert (usage.tokens_in, usage.tokens_out, usage.cost_usd) == (360, 90, None)
    assert "price unknown for mock-model" in usage.text
    assert (result.text, result.tokens_in, result.tokens_out, result.cost_usd) == (
        "completed: all steps done",
        360,
        90,
        None,
    )
    assert adapter.usage_totals() == {"tokens_in": 360, "tokens_out": 90, "cache_read": 0, "cache_write": 0,
                                      "cost_usd": 0.0, "cost_known": False}  # fmt: skip
    assert adapter.finish() == []


@needs_fixtures
def test_base_run_priced_when_the_model_is_known():
    adapter, items = run_fixture("codex-base.jsonl", CodexAdapter("gpt-5"))
    assert [it.kind for _, it in items] == ["text", "error", "tool_call", "tool_result", "text", "usage", "result"]
    assert items[2][1].text == '$ echo hello > out.txt && python3 -c "print(1+1)"'
    assert (items[3][1].exit_code, items[3][1].text) == (0, "2\n")
    expected = (240 * 1.25 + 60 * 10.0) / 1e6  # gpt-5: $1.25 in, $10 out per million
    assert items[-2][1].cost_usd == pytest.approx(expected) and items[-1][1].cost_usd == pytest.approx(expected)
    assert adapter.usage_totals()["cost_known"] is True


@needs_fixtures
def test_http_400_is_one_error_and_a_failed_result():
    adapter, items = run_fixture("codex-fail400.jsonl")
    assert [(no, it.kind) for no, it in items] == [(1, "text"), (2, "error"), (4, "error"), (5, "result")]
    assert items[2][1].text == "mock failure 400 (invalid_request_error)"  # the JSON body, made readable
    assert items[3][1].text == "failed: mock failure 400 (invalid_request_error) (no usage reported)"
    assert items[3][1].tokens_in is None
    assert adapter.usage_totals()["cost_known"] is False and adapter.finish() == []


@needs_fixtures
@pytest.mark.parametrize("name", ["codex-base.jsonl", "codex-two.jsonl", "codex-fail400.jsonl"])
def test_every_fixture_line_is_understood(name):
    _, items = run_fixture(name)
    assert not [it for _, it in items if it.kind == "raw"]
    assert sum(it.kind == "result" for _, it in items) == 1


def test_retries_other_items_and_a_cut_off_run():
    a = CodexAdapter("gpt-5")
    (retry,) = a.parse('{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}')
    assert retry.kind == "error" and retry.text.startswith("retry: Reconnecting... 2/5")
    (wait,) = a.parse('{"type":"error","message":"stream error: waiting for network"}')
    assert wait.text.startswith("retry:")
    # a command seen only on completion still gets its call
    call, result = a.parse(
        '{"type":"item.completed","item":{"id":"i9","type":"command_execution","command":["bash","-lc","python run_1.py"],'
        '"aggregated_output":"Traceback","exit_code":1,"status":"failed"}}'
    )
    assert (call.text, result.exit_code, result.text) == ("$ python run_1.py", 1, "Traceback")
    (thought,) = a.parse('{"type":"item.completed","item":{"id":"i1","type":"reasoning","text":"bigger batch"}}')
    assert thought.kind == "thinking"
    patch_call, patch_result = a.parse(
        '{"type":"item.completed","item":{"id":"i2","type":"file_change","changes":[{"path":"run_2.py","kind":"add"}],"status":"completed"}}'
    )
    assert (patch_call.text, patch_result.exit_code) == ("add run_2.py", 0)
    (plan,) = a.parse(
        '{"type":"item.started","item":{"id":"i3","type":"todo_list","items":[{"text":"baseline","completed":true},{"text":"tune","completed":false}]}}'
    )
    assert plan.text == "plan:\n[x] baseline\n[ ] tune"
    assert a.parse('{"type":"turn.started"}') == []
    assert [it.kind for it in a.parse('{"type":"item.completed","item":{"type":"collab_agent_call"}}')] == ["raw"]
    assert [it.kind for it in a.parse("Reading prompt from stdin...")] == ["raw"]
    (cut,) = a.finish()
    assert cut.kind == "result" and "without a completed turn" in cut.text and cut.tokens_in is None


def test_cached_tokens_are_priced_at_the_cache_rate():
    a = CodexAdapter()
    a.configure("gpt-5")
    usage, _ = a.parse(
        '{"type":"turn.completed","usage":{"input_tokens":10000,"cached_input_tokens":8000,"output_tokens":1000}}'
    )
    assert usage.tokens_in == 10000
    assert usage.cost_usd == pytest.approx((2000 * 1.25 + 8000 * 0.125 + 1000 * 10.0) / 1e6)


def test_helpers():
    assert unwrap_command("/bin/bash -lc 'echo hi && ls'") == "echo hi && ls"
    assert unwrap_command('bash -c "python run_1.py --lr 0.1"') == "python run_1.py --lr 0.1"
    assert unwrap_command("python train.py") == "python train.py"
    assert unwrap_command("echo 'unbalanced") == "echo 'unbalanced"
    assert unwrap_command(None) == ""
    assert (
        error_message('{"error": {"message": "quota exceeded", "code": "insufficient_quota"}}')
        == "quota exceeded (insufficient_quota)"
    )
    assert error_message("plain words") == "plain words"


# ----------------------------------------------------------------------------- launch
def make_ctx(tmp_path: Path, model: str | None = "gpt-5", env: dict | None = None, extra=()) -> LaunchContext:
    env = env if env is not None else {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-openai-secret"}
    return launch_context(tmp_path, model, env, extra)


def test_argv_is_exec_json_with_the_prompt_last(tmp_path):
    ctx = make_ctx(tmp_path, extra=["-c", 'model_reasoning_effort="high"'])
    argv = CodexAdapter().argv(ctx)
    assert Path(argv[0]).name == "codex"
    assert argv[1:] == [
        "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "-C", str(tmp_path / "workspace"), "-m", "gpt-5",
        "-c", "features.plugins=false", "-c", "analytics.enabled=false", "-c", "allow_login_shell=false",
        "-c", 'model_reasoning_effort="high"', ctx.prompt,
    ]  # fmt: skip
    assert "-m" not in CodexAdapter().argv(make_ctx(tmp_path, model=None))
    assert not any("sk-openai-secret" in a for a in argv)
    assert CodexAdapter.prompt_on_stdin is False


def test_env_isolates_codex_home(tmp_path):
    base = {
        "PATH": "/usr/bin",
        "OPENAI_API_KEY": "sk-openai-secret",
        "ANTHROPIC_API_KEY": "sk-ant",
        "CODEX_HOME": "/root/.codex",
    }
    env = CodexAdapter().env(make_ctx(tmp_path, env=base))
    assert env["CODEX_HOME"] == str(tmp_path / "agent_home" / ".codex") and env["HOME"] == str(tmp_path / "agent_home")
    assert env["OPENAI_API_KEY"] == env["CODEX_API_KEY"] == "sk-openai-secret"
    assert "ANTHROPIC_API_KEY" not in env
    assert env["PWD"] == str(tmp_path / "workspace")


def test_custom_endpoint_becomes_a_model_provider(tmp_path):
    base = {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-openai-secret", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    ctx = make_ctx(tmp_path, model="qwen3-coder", env=base)
    adapter = get_adapter("codex")
    adapter.prepare_home(ctx)
    config_file = tmp_path / "agent_home" / ".codex" / "config.toml"
    text = config_file.read_text()
    assert "sk-openai-secret" not in text
    config = tomllib.loads(text)
    assert config["model"] == "qwen3-coder" and config["model_provider"] == "onegc"
    assert config["model_providers"]["onegc"] == {
        "name": "onegc endpoint", "base_url": "http://127.0.0.1:8000/v1", "env_key": "OPENAI_API_KEY", "wire_api": "responses",
    }  # fmt: skip
    # without a base URL nothing is written and the default provider is used
    plain = make_ctx(tmp_path / "plain")
    adapter.prepare_home(plain)
    assert (tmp_path / "plain" / "agent_home" / ".codex").is_dir()
    assert not (tmp_path / "plain" / "agent_home" / ".codex" / "config.toml").exists()


def test_credential_report_for_codex():
    assert credentials.credential_report("codex", {"CODEX_API_KEY": "k"}).ok
    report = credentials.credential_report("codex", {"OPENAI_BASE_URL": "http://localhost:8000/v1"})
    assert not report.ok and report.base_url == "OPENAI_BASE_URL"
    assert "any value if the endpoint does not check keys" in report.message


def test_wait_turns_in_the_rollout_become_tool_rows(tmp_path):
    """Codex's write_stdin calls (the model polling a command still running) are not on stdout;
    from the rollout they become a tool_call and its tool_result (issue 37 item 7). The lines have
    the shape of the pinned rollout's exec_command call and its output."""
    adapter = CodexAdapter("gpt-5")
    adapter.codex_home = tmp_path / ".codex"
    rollout = adapter.codex_home / "sessions/2026/12/01/rollout-2026-12-01T11-54-06-x.jsonl"
    rollout.parent.mkdir(parents=True)
    lines = [
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "call_id": "c1",
                                              "arguments": json.dumps({"cmd": "python run_1.py", "yield_time_ms": 1000})}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "write_stdin", "call_id": "c2",
                                              "arguments": json.dumps({"session_id": 3, "chars": "", "yield_time_ms": 30000})}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c2",
                                              "output": "Wall time: 30.0 seconds\nepoch 2 val_acc 0.81"}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "write_stdin", "call_id": "c3",
                                              "arguments": json.dumps({"session_id": 3, "chars": "q\n"})}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "write_stdin", "call_id": "c4",
                                              "arguments": "not json"}},
    ]
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines))
    items = [i for i in adapter.poll() if i.kind in ("tool_call", "tool_result")]
    assert [(i.kind, i.tool, i.call_id, i.text) for i in items] == [
        ("tool_call", "write_stdin", "c2", "wait on command 3 (30 s)"),
        ("tool_result", "write_stdin", "c2", "Wall time: 30.0 seconds\nepoch 2 val_acc 0.81"),
        ("tool_call", "write_stdin", "c3", 'write "q\\n" to command 3'),
        ("tool_call", "write_stdin", "c4", "wait on a running command"),
    ]
    assert not [i for i in adapter.poll() if i.kind in ("tool_call", "tool_result")]  # read once
