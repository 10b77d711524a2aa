"""OpenCode adapter: every line of the recorded transcripts, per-step cost, and the launch
(argv with the prompt as an argument, env, OPENCODE_CONFIG_CONTENT, the prepared home)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.agents import credentials, get_adapter
from runner.agents.base import LaunchContext
from runner.agents.item import TranscriptItem
from runner.agents.opencode import ModelRequired, OpenCodeAdapter
from tests.helpers import REPO
from tests.runner.agents.context import launch_context

FIXTURES = REPO / ".." / "shared" / "fixtures" / "transcripts"
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures/transcripts is not beside the repo")


def run_fixture(
    name: str, adapter: OpenCodeAdapter | None = None
) -> tuple[OpenCodeAdapter, list[tuple[int, TranscriptItem]]]:
    adapter = adapter or OpenCodeAdapter()
    out = []
    for no, line in enumerate((FIXTURES / name).read_text().splitlines(keepends=True), 1):
        out += [(no, item) for item in adapter.parse(line)]
    return adapter, out


def step_finish(cost, tokens=None, reason="tool-calls") -> str:
    tokens = tokens or {"input": 1000, "output": 200, "reasoning": 50, "cache": {"read": 4000, "write": 0}}
    return json.dumps(
        {"type": "step_finish", "part": {"type": "step-finish", "reason": reason, "tokens": tokens, "cost": cost}}
    )


# ----------------------------------------------------------------------------- transcripts
@needs_fixtures
def test_two_tools_then_done():
    adapter, items = run_fixture("opencode-two.jsonl", OpenCodeAdapter("onegc/mock-model"))
    assert [(no, it.kind, it.tool, it.exit_code) for no, it in items] == [
        (2, "tool_call", "bash", None), (2, "tool_result", "bash", 0),
        (3, "usage", None, None),
        (5, "tool_call", "bash", None), (5, "tool_result", "bash", 0),
        (6, "usage", None, None),
        (8, "text", None, None),
        (9, "usage", None, None), (9, "result", None, None),
    ]  # fmt: skip
    calls = [it for _, it in items if it.kind == "tool_call"]
    assert [c.text for c in calls] == ["$ echo step1 > a.txt", "$ cat a.txt && echo step2 >> a.txt"]
    assert [c.call_id for c in calls] == ["call_7d30210e1fa7440b80970f2c", "call_2ea0da8004a04096ae86c194"]
    assert [it.text for _, it in items if it.kind == "tool_result"] == ["(no output)", "step1\n"]
    usage = [it for _, it in items if it.kind == "usage"]
    assert [(u.tokens_in, u.tokens_out, u.cost_usd) for u in usage] == [(120, 30, None)] * 3
    assert "price unknown (no price for onegc/mock-model" in usage[0].text
    result = items[-1][1]
    assert (result.text, result.tokens_in, result.tokens_out, result.cost_usd) == (
        "stop: all steps done",
        360,
        90,
        None,
    )
    assert adapter.usage_totals() == {"tokens_in": 360, "tokens_out": 90, "cache_read": 0, "cache_write": 0,
                                      "cost_usd": 0.0, "cost_known": False}  # fmt: skip
    assert adapter.finish() == [] and adapter.notes() == []


@needs_fixtures
def test_base_run():
    adapter, items = run_fixture("opencode-base.jsonl")
    assert [(no, it.kind) for no, it in items] == [
        (2, "tool_call"),
        (2, "tool_result"),
        (3, "usage"),
        (5, "text"),
        (6, "usage"),
        (6, "result"),
    ]
    assert items[0][1].text == '$ echo hello > out.txt && python3 -c "print(1+1)"'
    assert (items[1][1].exit_code, items[1][1].text) == (0, "2\n")
    assert adapter.usage_totals()["tokens_in"] == 240


@needs_fixtures
def test_http_400_is_an_error_and_finish_owes_the_result():
    adapter, items = run_fixture("opencode-fail400.jsonl")
    assert [(no, it.kind, it.text) for no, it in items] == [(1, "error", "HTTP 400: mock failure 400 (APIError)")]
    (result,) = adapter.finish()
    assert result.kind == "result" and "without a final step" in result.text


@needs_fixtures
@pytest.mark.parametrize("name", ["opencode-base.jsonl", "opencode-two.jsonl", "opencode-fail400.jsonl"])
def test_every_fixture_line_is_understood(name):
    _, items = run_fixture(name)
    assert items and not [it for _, it in items if it.kind == "raw"]


def test_step_cost_reported_priced_or_unknown():
    a = OpenCodeAdapter("openrouter/moonshotai/kimi-k2")
    (reported,) = a.parse(step_finish(0.0123))
    assert (reported.tokens_in, reported.tokens_out, reported.cost_usd) == (5000, 250, 0.0123)
    (priced,) = a.parse(step_finish(0))  # OpenCode had no price: ours (kimi-k2: $0.60 / $2.50 / $0.15 cached)
    assert priced.cost_usd == pytest.approx((1000 * 0.60 + 250 * 2.50 + 4000 * 0.15) / 1e6)
    assert "onegc price" in priced.text
    assert a.usage_totals()["cost_known"] is True
    unknown = OpenCodeAdapter("acme/secret-model")
    (item,) = unknown.parse(step_finish(0))
    assert item.cost_usd is None and "price unknown (no price for acme/secret-model" in item.text
    assert unknown.usage_totals()["cost_known"] is False
    free = OpenCodeAdapter("acme/x")
    assert free.parse(step_finish(0, tokens={"input": 0, "output": 0})) == []  # nothing used, nothing to add
    assert free.usage_totals()["cost_known"] is True


def test_reasoning_failed_tools_retryable_errors_and_notices():
    a = OpenCodeAdapter()
    (think,) = a.parse('{"type":"reasoning","part":{"type":"reasoning","text":"lr too high"}}')
    assert (think.kind, think.text) == ("thinking", "lr too high")
    call, result = a.parse(json.dumps({"type": "tool_use", "part": {"type": "tool", "tool": "edit", "callID": "c1", "state": {
        "status": "error", "input": {"filePath": "/ws/run_1.py"}, "error": "oldString not found"}}}))  # fmt: skip
    assert (call.text, result.text, result.exit_code) == ("edit /ws/run_1.py", "[error] oldString not found", None)
    _, bash = a.parse(json.dumps({"type": "tool_use", "part": {"type": "tool", "tool": "bash", "callID": "c2", "state": {
        "status": "completed", "input": {"command": "python run_1.py"}, "output": "nan", "metadata": {"exit": 3}}}}))  # fmt: skip
    assert bash.exit_code == 3
    (err,) = a.parse(
        '{"type":"error","error":{"name":"APIError","data":{"message":"overloaded","statusCode":529,"isRetryable":true}}}'
    )
    assert err.text == "retry: HTTP 529: overloaded (APIError)"
    assert a.parse('{"type":"step_start","part":{"type":"step-start"}}') == []
    assert [it.kind for it in a.parse("permission requested: external_directory (/etc/*); auto-rejecting")] == ["raw"]
    assert [it.kind for it in a.parse('{"type":"file_edited","part":{}}')] == ["raw"]


# ----------------------------------------------------------------------------- launch
def make_ctx(tmp_path: Path, model: str | None = "openrouter/moonshotai/kimi-k2", env: dict | None = None,
             extra=()) -> LaunchContext:
    env = env if env is not None else {"PATH": "/usr/bin", "OPENROUTER_API_KEY": "sk-or-secret"}
    return launch_context(tmp_path, model, env, extra)


def test_argv_passes_the_prompt_as_the_message_argument(tmp_path):
    ctx = make_ctx(tmp_path, extra=["--variant", "high"])
    argv = OpenCodeAdapter().argv(ctx)
    assert Path(argv[0]).name == "opencode"
    assert argv[1:] == [
        "run",
        "--format",
        "json",
        "-m",
        "openrouter/moonshotai/kimi-k2",
        "--pure",
        "--title",
        f"onegc {ctx.session_dir.name}",
        "--variant",
        "high",
        ctx.prompt,
    ]
    assert OpenCodeAdapter.prompt_on_stdin is False  # stdin is /dev/null: `opencode run` appends stdin otherwise
    assert not any("sk-or-secret" in a for a in argv)
    with pytest.raises(ModelRequired, match="PROVIDER/MODEL"):
        OpenCodeAdapter().argv(make_ctx(tmp_path, model="kimi-k2"))


def test_env_is_quiet_and_isolated(tmp_path):
    base = {
        "PATH": "/usr/bin",
        "OPENROUTER_API_KEY": "sk-or-secret",
        "OPENCODE_CONFIG": "/root/oc.json",
        "CODEX_API_KEY": "c",
    }
    env = OpenCodeAdapter().env(make_ctx(tmp_path, env=base))
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == "1" and env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert env["XDG_CONFIG_HOME"] == str(tmp_path / "agent_home" / ".config")
    assert env["OPENROUTER_API_KEY"] == "sk-or-secret"
    assert env["PWD"] == str(tmp_path / "workspace")  # OpenCode works in $PWD, whatever the cwd
    assert "OPENCODE_CONFIG" not in env and "CODEX_API_KEY" not in env
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert config["snapshot"] is False and config["autoupdate"] is False and "provider" not in config


def test_custom_endpoint_is_an_openai_compatible_provider(tmp_path):
    base = {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-openai-secret", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    ctx = make_ctx(tmp_path, model="gpt-4.1", env=base)
    adapter = OpenCodeAdapter()
    assert adapter.argv(ctx)[4:6] == ["-m", "onegc/gpt-4.1"]
    env = adapter.env(ctx)
    assert "sk-openai-secret" not in env["OPENCODE_CONFIG_CONTENT"]
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["onegc"]
    assert config["model"] == "onegc/gpt-4.1"
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:8000/v1", "apiKey": "{env:OPENAI_API_KEY}"}
    # a model onegc knows the price of is declared with it, so OpenCode prices each step itself
    assert provider["models"]["gpt-4.1"]["cost"] == {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.0}
    unknown = json.loads(
        OpenCodeAdapter().env(make_ctx(tmp_path, model="local-qwen", env=base))["OPENCODE_CONFIG_CONTENT"]
    )
    assert unknown["provider"]["onegc"]["models"] == {"local-qwen": {"name": "local-qwen"}}
    with pytest.raises(ModelRequired, match="--model"):
        OpenCodeAdapter().argv(make_ctx(tmp_path, model=None, env=base))


def test_prepare_home_marks_the_plugin_package_present(tmp_path):
    adapter = get_adapter("opencode")
    adapter.prepare_home(make_ctx(tmp_path))
    config_dir = tmp_path / "agent_home" / ".config" / "opencode"
    assert (config_dir / "node_modules").is_dir()
    lock = json.loads((config_dir / "package-lock.json").read_text())
    assert "@opencode-ai/plugin" in lock["packages"][""]["dependencies"]
    assert "@opencode-ai/plugin" in json.loads((config_dir / "package.json").read_text())["dependencies"]


def test_credential_report_follows_the_provider():
    env = {"OPENROUTER_API_KEY": "k"}
    assert credentials.credential_report("opencode", env, model="openrouter/moonshotai/kimi-k2").ok
    report = credentials.credential_report("opencode", env, model="anthropic/claude-sonnet-4-5")
    assert not report.ok and report.needed == ("ANTHROPIC_API_KEY",)
    assert credentials.credential_report(
        "opencode", {"OPENAI_BASE_URL": "http://x", "OPENAI_API_KEY": "k"}, model="m"
    ).ok


def test_a_tool_start_is_shown_where_the_stream_sends_one_and_its_run_time_otherwise():
    """OpenCode 1.18 sends tool_use only when the tool ends: the result then says how long it ran.
    A stream that sends the running state gives the call at once and the result later, the call
    not repeated (issue 37 item 7)."""
    def tool_use(status: str, **state) -> str:
        part = {"type": "tool", "tool": "bash", "callID": "call_1",
                "state": {"status": status, "input": {"command": "python run_1.py"}, **state}}
        return json.dumps({"type": "tool_use", "part": part})

    adapter = OpenCodeAdapter("onegc/gpt-5")
    started = adapter.parse(tool_use("running", time={"start": 1_000}))
    assert [(i.kind, i.text) for i in started] == [("tool_call", "$ python run_1.py")]
    done = adapter.parse(tool_use("completed", output="val_acc 0.9", metadata={"exit": 0},
                                  time={"start": 1_000, "end": 313_400}))
    assert [(i.kind, i.exit_code, i.text) for i in done] == [("tool_result", 0, "[ran 312.4 s] val_acc 0.9")]
    adapter = OpenCodeAdapter("onegc/gpt-5")  # the 1.18 shape: one finished part, both rows
    both = adapter.parse(tool_use("completed", output="ok", metadata={"exit": 0}, time={"start": 0, "end": 200}))
    assert [(i.kind, i.text) for i in both] == [("tool_call", "$ python run_1.py"), ("tool_result", "ok")]
