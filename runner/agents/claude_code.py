"""Claude Code in headless mode: ``claude -p PROMPT --output-format stream-json --verbose``.

What :meth:`ClaudeCodeAdapter.parse` makes of each stdout line (fixtures in
``shared/fixtures/transcripts/claude-*.jsonl``):

- ``system/init`` -> a system text (model, CLI version); ``system/api_retry`` -> an error item
  whose text starts with ``retry:``; ``system/status`` and ``task_started`` -> nothing;
  ``task_notification`` (how a Bash call's task ended) -> a system text.
- ``assistant`` -> one item per content block: text, thinking, tool_call (``$ cmd`` for Bash);
  a synthetic "API Error" message -> error. Its usage becomes a ``usage`` item holding the
  increase over what that message id already reported (the CLI repeats a message's usage on
  every content block), so usage items can be summed; priced from ``prices.toml`` when the
  model is known, as a live estimate.
- ``user`` -> tool_result (exit code 0 for a Bash success, N from "Exit code N", else none;
  ``[error]`` in front of other failed results) or a user text (e.g. an interrupt).
- ``stream_event`` (``--include-partial-messages``) -> nothing except ``message_delta``, whose
  final output-token count becomes a usage increment; the assistant line carries the content.
- ``result`` -> an error item when it is an error, then a ``result`` item carrying the CLI's own
  session totals (tokens, ``total_cost_usd``). Those totals are authoritative: per-message
  output counts in stream-json are provisional.

Anything else becomes a ``raw`` item. Nothing here raises.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
from typing import Any, ClassVar

from runner.agents import credentials
from runner.agents.base import JsonStreamAdapter, LaunchContext, TranscriptItem, text_of
from runner.agents.pricing import format_usd

USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
EXIT_CODE_RE = re.compile(r"^Exit code (-?\d+)")
INPUT_PREVIEW = 300  # characters of a non-shell tool input shown in a tool_call item


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return int(value)


def render_tool_call(name: str, tool_input: Any) -> str:
    """A compact one-line rendering of a Claude Code tool call."""
    args = tool_input if isinstance(tool_input, dict) else {}
    if name == "Bash" and isinstance(args.get("command"), str):
        return f"$ {args['command']}"
    for key in ("file_path", "notebook_path", "path", "pattern", "url", "query", "description"):
        if isinstance(args.get(key), str):
            return f"{name} {args[key]}"
    text = json.dumps(tool_input, ensure_ascii=False) if tool_input is not None else ""
    return f"{name} {text[:INPUT_PREVIEW]}".strip()


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(text_of(block.get("text")))
            elif isinstance(block, dict):
                parts.append(f"[{text_of(block.get('type')) or 'block'}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


class ClaudeCodeAdapter(JsonStreamAdapter):
    name: ClassVar[str] = "claude-code"
    executable: ClassVar[str | None] = "claude"
    prompt_on_stdin: ClassVar[bool] = False  # the prompt is the -p argument; stdin is /dev/null
    graceful_signal: ClassVar[int] = signal.SIGINT  # ends the run, kills its tools, prints a result line

    def __init__(self, model: str | None = None):
        super().__init__(model)
        self.final: dict | None = None  # the CLI's own totals from its result line
        self._cli_model: str | None = None  # the model the init line names
        self._tools: dict[str, str] = {}  # tool_use id -> tool name
        self._seen: dict[str, dict[str, int]] = {}  # message id -> usage counters reported so far
        self._stream_message: str | None = None  # message id of the partial-message stream in flight

    # ------------------------------------------------------------------ launch
    def argv(self, ctx: LaunchContext) -> list[str]:
        if self.model is None:
            self.model = ctx.model
        exe = self.find_executable() or "claude"
        cmd = [exe, "-p", ctx.prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
        if ctx.model:
            cmd += ["--model", ctx.model]
        return cmd + list(ctx.extra_args)

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = credentials.agent_env(self.name, ctx.base_env, ctx.agent_home)
        env["PWD"] = str(ctx.workspace)  # the runner's PWD must not leak in: OpenCode takes its project folder from it
        env["CLAUDE_CONFIG_DIR"] = str(ctx.agent_home / ".claude")
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"  # no telemetry, error reports or auto-update
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # as root, --dangerously-skip-permissions is refused without it
        return env

    def prepare_home(self, ctx: LaunchContext) -> None:
        credentials.make_home(ctx.agent_home)
        (ctx.agent_home / ".claude").mkdir(exist_ok=True)

    # ------------------------------------------------------------------ transcript
    def _parse(self, data: dict) -> list[TranscriptItem] | None:
        kind = data.get("type")
        if kind == "assistant":
            return self._assistant(data)
        if kind == "user":
            return self._user(data)
        if kind == "result":
            return self._result(data)
        if kind == "stream_event":
            return self._stream_event(data.get("event"))
        if kind == "system":
            return self._system(data)
        return None

    def _system(self, data: dict) -> list[TranscriptItem] | None:
        subtype = data.get("subtype")
        if subtype == "init":
            self._cli_model = text_of(data.get("model")) or None
            version = text_of(data.get("claude_code_version"))
            text = f"init: model {text_of(data.get('model')) or '?'}, claude-code {version or '?'}, cwd {text_of(data.get('cwd'))}"
            return [TranscriptItem(role="system", kind="text", text=text)]
        if subtype == "api_retry":
            status = data.get("error_status")
            delay = _int(data.get("retry_delay_ms")) / 1000
            text = (
                f"retry: attempt {_int(data.get('attempt'))}/{_int(data.get('max_retries'))} in {delay:g}s"
                + (f", HTTP {status}" if status is not None else "")
                + (f": {data['error']}" if data.get("error") else "")
            )
            return [TranscriptItem(role="system", kind="error", text=text)]
        if subtype in ("status", "task_started", "task_progress"):
            return []  # a Bash call's task bookkeeping: the tool_call/tool_result items say it all
        if subtype == "task_notification":  # how a tool's task ended; for a background command, its only trace
            status, summary = text_of(data.get("status")) or "?", text_of(data.get("summary"))
            text = f"task {text_of(data.get('task_id'))} {status}" + (f": {summary}" if summary else "")
            return [TranscriptItem(role="system", kind="text", text=text)]
        return None

    def _usage_increment(self, message_id: str, usage: dict) -> list[TranscriptItem]:
        """A usage item for what ``usage`` adds to what ``message_id`` already reported."""
        seen = self._seen.setdefault(message_id, dict.fromkeys(USAGE_FIELDS, 0))
        delta = {}
        for field in USAGE_FIELDS:
            if field in usage:
                value = _int(usage[field])
                delta[field] = max(value - seen[field], 0)
                seen[field] = max(value, seen[field])
            else:
                delta[field] = 0
        d_in = delta["input_tokens"] + delta["cache_creation_input_tokens"] + delta["cache_read_input_tokens"]
        d_out = delta["output_tokens"]
        if not d_in and not d_out:
            return []
        cost = self.prices.cost(
            self.model or self._cli_model,
            delta["input_tokens"],
            d_out,
            cached_input_tokens=delta["cache_read_input_tokens"],
            cache_write_tokens=delta["cache_creation_input_tokens"],
        )
        self.totals.add(d_in, d_out, cost)
        text = f"+{d_in} in / +{d_out} out, {format_usd(cost)}" + (" (estimate)" if cost is not None else "")
        return [TranscriptItem(role="system", kind="usage", text=text, tokens_in=d_in, tokens_out=d_out, cost_usd=cost)]

    @staticmethod
    def _input_tokens(usage: dict) -> int:
        return (
            _int(usage.get("input_tokens"))
            + _int(usage.get("cache_creation_input_tokens"))
            + _int(usage.get("cache_read_input_tokens"))
        )

    def _assistant(self, data: dict) -> list[TranscriptItem] | None:
        message = data.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return None
        synthetic_error = bool(data.get("error")) or message.get("model") == "<synthetic>"
        items: list[TranscriptItem] = []
        for block in message["content"]:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = text_of(block.get("text"))
                if synthetic_error:
                    items.append(TranscriptItem(role="system", kind="error", text=text))
                elif text:
                    items.append(TranscriptItem(role="assistant", kind="text", text=text))
            elif btype == "thinking":
                items.append(TranscriptItem(role="assistant", kind="thinking", text=text_of(block.get("thinking"))))
            elif btype == "redacted_thinking":
                items.append(TranscriptItem(role="assistant", kind="thinking", text="[redacted thinking]"))
            elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
                tool = text_of(block.get("name")) or "tool"
                call_id = text_of(block.get("id")) or None
                if call_id:
                    self._tools[call_id] = tool
                items.append(
                    TranscriptItem(
                        role="assistant",
                        kind="tool_call",
                        tool=tool,
                        call_id=call_id,
                        text=render_tool_call(tool, block.get("input")),
                    )
                )
            else:
                items.append(TranscriptItem(role="assistant", kind="raw", text=json.dumps(block, ensure_ascii=False)))
        usage = message.get("usage")
        message_id = text_of(message.get("id"))
        if isinstance(usage, dict) and message_id and not synthetic_error:
            items += self._usage_increment(message_id, usage)
        return items

    def _user(self, data: dict) -> list[TranscriptItem] | None:
        message = data.get("message")
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        if isinstance(content, str):
            return [TranscriptItem(role="user", kind="text", text=content)]
        if not isinstance(content, list):
            return None
        items: list[TranscriptItem] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                call_id = text_of(block.get("tool_use_id")) or None
                tool = self._tools.get(call_id or "")
                text = _result_text(block.get("content"))
                is_error = block.get("is_error") is True
                match = EXIT_CODE_RE.match(text) if is_error else None
                exit_code = None
                if match:
                    exit_code = int(match.group(1))
                elif tool == "Bash" and not is_error:
                    exit_code = 0
                elif is_error:
                    text = f"[error] {text}"
                items.append(
                    TranscriptItem(
                        role="tool", kind="tool_result", tool=tool, call_id=call_id, exit_code=exit_code, text=text
                    )
                )
            elif block.get("type") == "text":
                items.append(TranscriptItem(role="user", kind="text", text=text_of(block.get("text"))))
        return items

    def _stream_event(self, event: Any) -> list[TranscriptItem] | None:
        if not isinstance(event, dict):
            return None
        etype = event.get("type")
        if etype == "message_start":
            message = event.get("message")
            self._stream_message = text_of(message.get("id")) if isinstance(message, dict) else None
            return []
        if etype == "message_delta":
            usage = event.get("usage")
            if isinstance(usage, dict) and self._stream_message:
                return self._usage_increment(self._stream_message, usage)
            return []
        if etype in ("content_block_start", "content_block_delta", "content_block_stop", "message_stop", "ping"):
            return []
        return None

    def _result(self, data: dict) -> list[TranscriptItem]:
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        tokens_in, tokens_out = self._input_tokens(usage), _int(usage.get("output_tokens"))
        cost = data.get("total_cost_usd")
        cost = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
        self.final = {
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost or 0.0,
            "cost_known": cost is not None,
        }
        subtype = text_of(data.get("subtype")) or "result"
        failed = data.get("is_error") is True or subtype != "success"
        outcome = "error" if failed and subtype == "success" else subtype  # an HTTP error still says "success"
        answer = text_of(data.get("result"))
        items: list[TranscriptItem] = []
        if failed:
            errors = data.get("errors")
            detail = "; ".join(e for e in errors if isinstance(e, str)) if isinstance(errors, list) else ""
            head = outcome
            if data.get("api_error_status") is not None:
                head += f" HTTP {data['api_error_status']}"
            if data.get("terminal_reason") not in (None, "", "completed"):
                head += f" ({data['terminal_reason']})"
            items.append(
                TranscriptItem(
                    role="system", kind="error", text=f"{head}: {answer or detail}" if answer or detail else head
                )
            )
        items.append(
            TranscriptItem(
                role="system",
                kind="result",
                text=f"{outcome}: {answer}" if answer else outcome,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost,
            )
        )
        return items

    def finish(self) -> list[TranscriptItem]:
        if self.final is not None:
            return []
        t = self.usage_totals()
        cost = t["cost_usd"] if t["cost_known"] else None
        text = f"ended without a result line (stopped or crashed); {format_usd(cost)}" + (
            " (estimate)" if cost is not None else ""
        )
        return [
            TranscriptItem(
                role="system",
                kind="result",
                text=text,
                tokens_in=t["tokens_in"],
                tokens_out=t["tokens_out"],
                cost_usd=cost,
            )
        ]

    def usage_totals(self) -> dict:
        """The CLI's totals once its result line arrived, else the running sum (cost unknown)."""
        return dict(self.final) if self.final is not None else self.totals.as_dict()
