"""Claude Code in headless mode: ``claude -p PROMPT --output-format stream-json --verbose
--include-partial-messages``.

What :meth:`ClaudeCodeAdapter.parse` makes of each stdout line (fixtures: the 2.1.332 ones in
``tests/runner/agents/fixtures/``, and the 2.1.197 ones, ``claude-*.jsonl`` of ``shared/fixtures/transcripts``,
where that folder is beside the repo):

- ``system/init`` -> a system text (model, CLI version); ``system/api_retry`` -> an error item
  whose text starts with ``retry:``; ``system/status``, ``task_started``, ``task_progress``,
  ``task_updated`` and ``background_tasks_changed`` -> nothing (they update which background
  tasks are running); ``task_notification`` (how a tool's task ended) -> a system text.
- ``tool_progress`` (2.1.332: a heartbeat every 30 s while a tool runs) -> one ``progress``
  item for the tool call; the store keeps one row per call and updates it in place.
- ``assistant`` -> one item per content block: text, thinking, tool_call (``$ cmd`` for Bash);
  a synthetic "API Error" message -> error. Its usage becomes a ``usage`` item holding the
  increase over what that message id already reported (the CLI repeats a message's usage on
  every content block; its output count there is provisional, 1).
- ``stream_event`` (``--include-partial-messages``) -> nothing except ``message_delta``, whose
  output-token count is the real one: a usage increment for the message in flight. So the live
  output figure is exact, even for a session cut off before its result line.
- ``user`` -> tool_result (exit code 0 for a Bash success, N from "Exit code N", else none;
  ``[error]`` in front of other failed results) or a user text (e.g. an interrupt).
- ``result`` -> an error item when it is an error, then the CLI's cumulative totals: the sum of
  ``modelUsage`` over models (every model the session used, side requests included) and
  ``total_cost_usd``, settled into the ledger (a correcting usage item when they differ from the
  running sum). Since 2.1.332 the CLI waits for ``run_in_background`` tasks in ``-p`` mode and
  each finished task starts a new turn with its own ``init`` and ``result``; a turn's
  ``usage`` covers that turn only, ``modelUsage`` and ``total_cost_usd`` the session. A result
  while background tasks still run is a system text ("turn ended, waiting for ..."); the
  ``result`` item comes with the last turn.

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
from runner.agents.base import JsonStreamAdapter, LaunchContext, dict_at, list_at, text_of
from runner.agents.item import TranscriptItem
from runner.agents.usage import Tokens

USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
EXIT_CODE_RE = re.compile(r"^Exit code (-?\d+)")
HEARTBEAT_RE = re.compile(r"-heartbeat-\d+$")  # tool_progress ids: "<tool_use_id>-heartbeat-<n>"
INPUT_PREVIEW = 300  # characters of a non-shell tool input shown in a tool_call item
TASK_ENDED = ("completed", "failed", "killed", "stopped", "cancelled")


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
        self.ended = False  # a result line arrived with no background task left running
        self._last_answer: str | None = None  # the last result line's answer (None: no result line yet)
        self._turn_sum = Tokens()  # results without modelUsage, added up
        self._cli_model: str | None = None  # the model the init line names
        self._tools: dict[str, str] = {}  # tool_use id -> tool name
        self._background_calls: set[str] = set()  # tool_use ids of run_in_background calls
        self._running: dict[str, str] = {}  # background task id -> description, while it runs
        self._stopped: list[str] = []  # background tasks that ended stopped/killed after the last turn
        self._seen: dict[str, dict[str, int]] = {}  # message id -> usage counters reported so far
        self._stream_message: str | None = None  # message id of the partial-message stream in flight

    # ------------------------------------------------------------------ launch
    def argv(self, ctx: LaunchContext) -> list[str]:
        if self.model is None:
            self.model = ctx.model
        exe = self.find_executable() or "claude"
        # --include-partial-messages: message_delta carries each response's real output count
        # (the assistant lines hold a provisional 1), so live and cut-off figures are exact
        cmd = [exe, "-p", ctx.prompt, "--output-format", "stream-json", "--verbose", "--include-partial-messages",
               "--dangerously-skip-permissions"]  # fmt: skip
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
        if kind == "tool_progress":
            return self._progress(data)
        return None

    def _progress(self, data: dict) -> list[TranscriptItem] | None:
        call_id = text_of(data.get("parent_tool_use_id")) or HEARTBEAT_RE.sub("", text_of(data.get("tool_use_id")))
        if not call_id:
            return None
        tool = text_of(data.get("tool_name")) or self._tools.get(call_id) or "tool"
        elapsed = _int(data.get("elapsed_time_seconds"))
        return [TranscriptItem(role="tool", kind="progress", tool=tool, call_id=call_id, text=f"running for {elapsed} s")]

    def _system(self, data: dict) -> list[TranscriptItem] | None:
        subtype = data.get("subtype")
        if subtype == "init":
            self._cli_model = text_of(data.get("model")) or None
            version = text_of(data.get("claude_code_version"))
            text = (f"init: model {text_of(data.get('model')) or '?'}, claude-code {version or '?'}, "
                    f"cwd {text_of(data.get('cwd'))}")
            return [TranscriptItem(role="system", kind="text", text=text)]
        if subtype == "api_retry":
            status = data.get("error_status")
            delay = _int(data.get("retry_delay_ms")) / 1000
            cause = (f"HTTP {status}" if status is not None else "") + (
                f"{': ' if status is not None else ''}{data['error']}" if data.get("error") else "")
            self.errors.request_failed(cause)
            text = f"retry: attempt {_int(data.get('attempt'))}/{_int(data.get('max_retries'))} in {delay:g}s" + (
                f", {cause}" if cause else "")
            return [TranscriptItem(role="system", kind="error", text=text)]
        if subtype in ("status", "task_progress"):
            return []  # a Bash call's task bookkeeping: the tool_call/tool_result items say it all
        if subtype == "task_started":
            task = text_of(data.get("task_id"))
            background = data.get("is_backgrounded") is True or text_of(data.get("tool_use_id")) in self._background_calls
            if task and background:
                self._running[task] = text_of(data.get("description")) or task
            return []
        if subtype == "task_updated":
            patch = dict_at(data, "patch")
            status = text_of(patch.get("status"))
            if status in TASK_ENDED:
                self._task_ended(text_of(data.get("task_id")), status)
            return []
        if subtype == "background_tasks_changed":
            tasks = list_at(data, "tasks")
            running = {text_of(t.get("task_id")): text_of(t.get("description")) for t in tasks if isinstance(t, dict)}
            for task in set(self._running) - set(running):
                self._running.pop(task, None)
            for task, description in running.items():
                if task:
                    self._running.setdefault(task, description or task)
            return []
        if subtype == "task_notification":  # how a tool's task ended; for a background command, its only trace
            status, summary = text_of(data.get("status")) or "?", text_of(data.get("summary"))
            self._task_ended(text_of(data.get("task_id")), status)
            text = f"task {text_of(data.get('task_id'))} {status}" + (f": {summary}" if summary else "")
            return [TranscriptItem(role="system", kind="text", text=text)]
        return None

    def _task_ended(self, task: str, status: str) -> None:
        """A background task that is stopped after a turn ended was stopped by the CLI on its way out
        (2.1.197); one stopped during a turn was the model's or the harness's doing."""
        description = self._running.pop(task, None)
        if description is not None and status in ("killed", "stopped", "cancelled") and self._last_answer is not None:
            self._stopped.append(description)

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
        tokens = Tokens(
            tokens_in=delta["input_tokens"] + delta["cache_creation_input_tokens"] + delta["cache_read_input_tokens"],
            tokens_out=delta["output_tokens"],
            cache_read=delta["cache_read_input_tokens"],
            cache_write=delta["cache_creation_input_tokens"],
        )
        if not tokens:
            return []
        self.errors.answered()
        cost = self.prices.cost(self.model or self._cli_model, tokens.fresh_in(), tokens.tokens_out,
                                cached_input_tokens=tokens.cache_read, cache_write_tokens=tokens.cache_write)
        return self.ledger.add(tokens, cost, "estimate" if cost is not None else "")

    @staticmethod
    def _session_totals(data: dict) -> Tokens | None:
        """The session's cumulative tokens from a result line's ``modelUsage`` (all models)."""
        per_model = data.get("modelUsage")
        if not isinstance(per_model, dict) or not per_model:
            return None
        total = Tokens()
        for usage in per_model.values():
            if isinstance(usage, dict):
                read, write = _int(usage.get("cacheReadInputTokens")), _int(usage.get("cacheCreationInputTokens"))
                total = total + Tokens(_int(usage.get("inputTokens")) + read + write, _int(usage.get("outputTokens")),
                                       read, write)  # fmt: skip
        return total

    @staticmethod
    def _turn_tokens(usage: dict) -> Tokens:
        read, write = _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens"))
        return Tokens(_int(usage.get("input_tokens")) + read + write, _int(usage.get("output_tokens")), read, write)

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
                if synthetic_error:  # "API Error: 400 ...": the request that should have produced this message
                    self.errors.request_failed(text, new_attempt=not self.errors.request)
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
                    tool_input = block.get("input")
                    if isinstance(tool_input, dict) and tool_input.get("run_in_background") is True:
                        self._background_calls.add(call_id)
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
        usage = dict_at(data, "usage")
        cost = data.get("total_cost_usd")
        cost = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
        totals = self._session_totals(data)
        if totals is None:  # no modelUsage: a turn's usage covers that turn (2.1.332); add it up
            self._turn_sum = self._turn_sum + self._turn_tokens(usage)
            totals = self._turn_sum
        subtype = text_of(data.get("subtype")) or "result"
        failed = data.get("is_error") is True or subtype != "success"
        outcome = "error" if failed and subtype == "success" else subtype  # an HTTP error still says "success"
        answer = text_of(data.get("result"))
        self._last_answer = answer
        items: list[TranscriptItem] = []
        if failed:
            errors = data.get("errors")
            detail = "; ".join(e for e in errors if isinstance(e, str)) if isinstance(errors, list) else ""
            head = outcome
            if data.get("api_error_status") is not None:
                head += f" HTTP {data['api_error_status']}"
            if data.get("terminal_reason") not in (None, "", "completed"):
                head += f" ({data['terminal_reason']})"
            text = f"{head}: {answer or detail}" if answer or detail else head
            interrupted = text_of(data.get("terminal_reason")).startswith("aborted")  # the harness's stop: no cause
            if data.get("api_error_status") is None and not interrupted and not self.errors.request:
                self.errors.error(text)
            items.append(TranscriptItem(role="system", kind="error", text=text))
        items += self.ledger.settle(totals, cost, "Claude Code's session totals")
        line = f"{outcome}: {answer}" if answer else outcome
        if self._running:  # the CLI waits for its background tasks; each ending starts a new turn
            self.ended = False
            waiting = ", ".join(f"'{d}'" for d in self._running.values())
            text = f"turn ended, waiting for background task {waiting}: {line}"
            items.append(TranscriptItem(role="system", kind="text", text=text))
        else:
            self.ended = True
            self._stopped.clear()
            items.append(self.ledger.result(line))
        return items

    def _finish(self) -> list[TranscriptItem]:
        if self.ended:
            return []
        text = "ended without a final result line (stopped or crashed); the cost is onegc's estimate"
        if self._stopped or self._running:
            text = "ended with background task(s) unfinished: " + ", ".join(
                f"'{d}'" for d in [*self._stopped, *self._running.values()])
        return [self.ledger.result(text)]

    def notes(self) -> list[str]:
        with self._lock:
            unfinished = [*self._stopped, *self._running.values()]
        if not unfinished:
            return []
        which = ", ".join(f"'{d}'" for d in unfinished)
        return [f"background task {which} was still running when Claude Code ended (the CLI stops its tasks when it exits)"]
