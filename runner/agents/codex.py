"""Codex CLI in headless mode: ``codex exec --json ... PROMPT``.

What :meth:`CodexAdapter.parse` makes of each stdout line (fixtures in ``tests/runner/agents/fixtures/``,
and ``codex-*.jsonl`` of ``shared/fixtures/transcripts`` where that folder is beside the repo):

- ``thread.started`` -> a system text with the thread id; ``turn.started`` -> nothing.
- ``item.started`` of a ``command_execution`` -> tool_call ``$ cmd`` (the ``/bin/bash -lc``
  wrapper removed); its ``item.completed`` -> tool_result with the exit code. Other items:
  ``agent_message`` -> text, ``reasoning`` -> thinking, ``file_change`` / ``mcp_tool_call`` /
  ``web_search`` -> tool_call (+ tool_result), ``todo_list`` -> a system text, ``error`` items
  (non-fatal warnings) -> error.
- top-level ``error`` -> error; one about reconnecting ("Reconnecting... 2/5", "waiting for
  network") -> an error whose text starts with ``retry:``.
- ``turn.completed`` -> usage (the turn's tokens, settled into the ledger) and a ``result``
  item with the session totals; ``turn.failed`` -> error (unless the same message was just
  reported) + result.

Tokens also come from Codex's rollout file (``$CODEX_HOME/sessions/Y/M/D/rollout-*.jsonl``;
``--ephemeral`` would turn it off, so it is not passed): one ``token_usage_record`` per model
response, written as the response completes, and ``token_count`` events with the running
``total_token_usage``. :meth:`CodexAdapter.poll` reads what is new about once a second, so the
live figure follows every response and a session stopped mid-turn (the normal end at the
budget: ``codex exec`` is one turn) keeps its tokens; stdout says nothing until the turn ends.
Whichever source is ahead is what the ledger holds. Codex reports tokens, not money: the cost
is priced from ``prices.toml`` when the model is known, else "price unknown". The rollout also
names the class of a failed turn (``codex_error_info``, e.g. ``internal_server_error`` for an
HTTP 5xx that Codex words as "high demand"), which goes into the failure detail.

Codex's wait turns are in the rollout only: with its unified exec the model polls a command
still running (or types into it) through a ``write_stdin`` function call, which ``codex exec
--json`` does not print (the turn left only a usage row). Each such call in the rollout becomes a
tool_call ("wait on command 3 (30 s)", or the characters written) and its output a tool_result.

Anything else becomes a ``raw`` item. Nothing here raises.
"""

from __future__ import annotations

import json
import math
import shlex
import signal
from pathlib import Path
from typing import Any, ClassVar

from runner.agents import credentials
from runner.agents.base import JsonStreamAdapter, LaunchContext, dict_at, json_object, list_at, text_of
from runner.agents.item import TranscriptItem
from runner.agents.usage import Tokens
from runner.wire.jsonl import JsonlTail

PROVIDER_ID = "onegc"  # the model_providers entry written for a custom endpoint
SILENCE = ("-c", "features.plugins=false", "-c", "analytics.enabled=false")  # no plugin sync, no analytics
# Commands run in a plain `bash -c`: a login shell sources /etc/profile, which resets PATH and loses
# the runner's python (the one with torch) — `python run_1.py` then fails with "command not found".
NO_LOGIN_SHELL = ("-c", "allow_login_shell=false")
SHELLS = ("bash", "sh", "zsh")
RETRY_MARKERS = ("reconnecting", "waiting for network", "retrying")
ROLLOUT_GLOB = "sessions/*/*/*/rollout-*.jsonl"  # under $CODEX_HOME, one per thread
WAIT_TOOL = "write_stdin"  # the unified exec's poll of (or input to) a command still running


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


def unwrap_command(command: Any) -> str:
    """``/bin/bash -lc 'echo hi'`` -> ``echo hi``; anything else is returned as it came."""
    if isinstance(command, list):
        parts = [str(p) for p in command]
    elif isinstance(command, str):
        try:
            parts = shlex.split(command)
        except ValueError:
            return command
    else:
        return ""
    if len(parts) == 3 and parts[0].rsplit("/", 1)[-1] in SHELLS and parts[1] in ("-c", "-lc"):
        return parts[2]
    return command if isinstance(command, str) else shlex.join(parts)


def error_message(message: str) -> str:
    """Codex passes provider errors through as JSON text; keep the human part."""
    data = json_object(message) if message.lstrip().startswith("{") else None
    if data is not None:
        error = data.get("error")
        inner = error if isinstance(error, dict) else data
        text = text_of(inner.get("message")) or message
        code = text_of(inner.get("code")) or text_of(inner.get("type"))
        return f"{text} ({code})" if code and code not in text else text
    return message


def tomltext_of(value: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML escapes)."""
    return json.dumps(value, ensure_ascii=True)


class CodexAdapter(JsonStreamAdapter):
    name: ClassVar[str] = "codex"
    executable: ClassVar[str | None] = "codex"
    prompt_on_stdin: ClassVar[bool] = False  # the prompt is the last argument; stdin must be /dev/null
    graceful_signal: ClassVar[int] = signal.SIGINT  # ends the turn and kills its commands

    def __init__(self, model: str | None = None):
        super().__init__(model)
        self.ended = False  # a turn.completed / turn.failed was seen
        self.codex_home: Path | None = None  # set by prepare_home/env: where the rollout is written
        self._started: set[str] = set()  # item ids whose tool_call was already emitted
        self._last_error = ""
        self._last_message = ""
        self._thread = ""  # thread id (names the rollout file)
        self._rollout: JsonlTail | None = None
        self._turns = Tokens()  # summed turn.completed usage (stdout)
        self._records: dict[str, Tokens] = {}  # rollout token_usage_record per response id
        self._rollout_total = Tokens()  # the rollout's latest total_token_usage
        self._error_info = ""  # codex_error_info of a failed turn (from the rollout)
        self._waits: set[str] = set()  # call ids of the rollout's write_stdin calls (their output follows)

    # ------------------------------------------------------------------ launch
    def argv(self, ctx: LaunchContext) -> list[str]:
        if self.model is None:
            self.model = ctx.model
        exe = self.find_executable() or "codex"
        # no --ephemeral: the rollout file it would turn off holds the running token totals
        cmd = [
            exe, "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "-C", str(ctx.workspace),
        ]  # fmt: skip
        if ctx.model:
            cmd += ["-m", ctx.model]
        return cmd + list(SILENCE) + list(NO_LOGIN_SHELL) + list(ctx.extra_args) + [ctx.prompt]

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = credentials.agent_env(self.name, ctx.base_env, ctx.agent_home)
        env["PWD"] = str(ctx.workspace)  # the runner's PWD must not leak in: OpenCode takes its project folder from it
        self.codex_home = ctx.agent_home / ".codex"
        env["CODEX_HOME"] = str(self.codex_home)
        if env.get("OPENAI_API_KEY") and not env.get("CODEX_API_KEY"):
            env["CODEX_API_KEY"] = env["OPENAI_API_KEY"]  # what `codex exec` reads without a login
        return env

    def config_toml(self, ctx: LaunchContext) -> str | None:
        """``$CODEX_HOME/config.toml`` for a custom endpoint (``OPENAI_BASE_URL``), else ``None``."""
        url = credentials.base_url(self.name, ctx.base_env)
        if url is None:
            return None
        key_var = (
            "CODEX_API_KEY"
            if ctx.base_env.get("CODEX_API_KEY") and not ctx.base_env.get("OPENAI_API_KEY")
            else "OPENAI_API_KEY"
        )
        lines = ["# Written by onegc for one session: the model endpoint from OPENAI_BASE_URL."]
        if ctx.model:
            lines.append(f"model = {tomltext_of(ctx.model)}")
        lines += [
            f"model_provider = {tomltext_of(PROVIDER_ID)}",
            "",
            f"[model_providers.{PROVIDER_ID}]",
            f"name = {tomltext_of('onegc endpoint')}",
            f"base_url = {tomltext_of(url)}",
            f"env_key = {tomltext_of(key_var)}",
            'wire_api = "responses"  # the only wire protocol Codex accepts',
        ]
        return "\n".join(lines) + "\n"

    def prepare_home(self, ctx: LaunchContext) -> None:
        credentials.make_home(ctx.agent_home)
        codex_home = self.codex_home = ctx.agent_home / ".codex"
        codex_home.mkdir(exist_ok=True)
        config = self.config_toml(ctx)
        if config is not None:
            (codex_home / "config.toml").write_text(config, encoding="utf-8")

    # ------------------------------------------------------------------ transcript
    def _parse(self, data: dict) -> list[TranscriptItem] | None:
        kind = data.get("type")
        if kind == "thread.started":
            self._thread = text_of(data.get("thread_id"))
            return [TranscriptItem(role="system", kind="text", text=f"thread {self._thread}".strip())]
        if kind == "turn.started":
            return []
        if kind in ("item.started", "item.updated", "item.completed") and isinstance(data.get("item"), dict):
            return self._item(kind, data["item"])
        if kind == "turn.completed":
            return self._turn_completed(data.get("usage"))
        if kind == "turn.failed":
            error = data.get("error")
            message = (
                error_message(text_of(error.get("message")) if isinstance(error, dict) else text_of(error)) or "turn failed"
            )
            items = [] if message == self._last_error else [TranscriptItem(role="system", kind="error", text=message)]
            self.errors.request_failed(message, new_attempt=message != self._last_error)
            self.ended = True
            return items + self._poll() + [self._result(f"failed: {message}")]
        if kind == "error":
            message = error_message(text_of(data.get("message")))
            if any(marker in message.lower() for marker in RETRY_MARKERS):
                self.errors.request_failed(message)
                return [TranscriptItem(role="system", kind="error", text=f"retry: {message}")]
            self._last_error = message
            self.errors.request_failed(message)
            return [TranscriptItem(role="system", kind="error", text=message)]
        return None

    def _item(self, event: str, item: dict) -> list[TranscriptItem] | None:
        itype = item.get("type")
        item_id = text_of(item.get("id")) or None
        done = event == "item.completed"
        if itype == "command_execution":
            self.errors.answered()  # the model asked for it
            items = []
            if item_id not in self._started:
                self._started.add(item_id or "")
                items.append(
                    TranscriptItem(
                        role="assistant",
                        kind="tool_call",
                        tool="shell",
                        call_id=item_id,
                        text=f"$ {unwrap_command(item.get('command'))}",
                    )
                )
            if done:
                status = text_of(item.get("status"))
                text = text_of(item.get("aggregated_output"))
                if status and status not in ("completed", "failed"):
                    text = f"[{status}] {text}"
                items.append(
                    TranscriptItem(
                        role="tool",
                        kind="tool_result",
                        tool="shell",
                        call_id=item_id,
                        exit_code=_int(item.get("exit_code")),
                        text=text,
                    )
                )
            return items
        if itype == "agent_message":
            if not done:
                return []
            self.errors.answered()
            self._last_message = text_of(item.get("text"))
            return [TranscriptItem(role="assistant", kind="text", text=self._last_message)]
        if itype == "reasoning":
            return [TranscriptItem(role="assistant", kind="thinking", text=text_of(item.get("text")))] if done else []
        if itype == "error":
            return [TranscriptItem(role="system", kind="error", text=text_of(item.get("message")))] if done else []
        if itype == "todo_list":
            if done or not isinstance(item.get("items"), list):
                return []
            steps = [
                f"[{'x' if s.get('completed') else ' '}] {text_of(s.get('text'))}"
                for s in item["items"]
                if isinstance(s, dict)
            ]
            return [TranscriptItem(role="assistant", kind="text", text="plan:\n" + "\n".join(steps))]
        if itype == "file_change":
            if not done:
                return []
            changes = list_at(item, "changes")
            text = ", ".join(f"{text_of(c.get('kind'))} {text_of(c.get('path'))}" for c in changes if isinstance(c, dict))
            status = text_of(item.get("status"))
            return [
                TranscriptItem(role="assistant", kind="tool_call", tool="apply_patch", call_id=item_id, text=text),
                TranscriptItem(
                    role="tool",
                    kind="tool_result",
                    tool="apply_patch",
                    call_id=item_id,
                    text=status,
                    exit_code=0 if status == "completed" else 1,
                ),
            ]
        if itype == "mcp_tool_call":
            tool = f"{text_of(item.get('server'))}.{text_of(item.get('tool'))}"
            items = []
            if item_id not in self._started:
                self._started.add(item_id or "")
                args = json.dumps(item.get("arguments"), ensure_ascii=False)[:300]
                items.append(
                    TranscriptItem(
                        role="assistant", kind="tool_call", tool=tool, call_id=item_id, text=f"{tool} {args}"
                    )
                )
            if done:
                error = item.get("error")
                text = (
                    f"[error] {text_of(error.get('message'))}"
                    if isinstance(error, dict)
                    else json.dumps(item.get("result"), ensure_ascii=False)
                )
                items.append(TranscriptItem(role="tool", kind="tool_result", tool=tool, call_id=item_id, text=text))
            return items
        if itype == "web_search":
            return (
                [
                    TranscriptItem(
                        role="assistant",
                        kind="tool_call",
                        tool="web_search",
                        call_id=item_id,
                        text=f"search {text_of(item.get('query'))}",
                    )
                ]
                if done
                else []
            )
        return None

    def _turn_completed(self, usage: Any) -> list[TranscriptItem]:
        usage = usage if isinstance(usage, dict) else {}
        self._turns = self._turns + Tokens(
            tokens_in=_int(usage.get("input_tokens")) or 0,
            tokens_out=_int(usage.get("output_tokens")) or 0,  # reasoning tokens are counted in here
            cache_read=_int(usage.get("cached_input_tokens")) or 0,
        )
        self.ended = True
        self.errors.answered()
        items = self._poll() + self._settle()
        return items + [self._result(f"completed: {self._last_message}" if self._last_message else "completed")]

    # ------------------------------------------------------------------ the rollout
    def _poll(self) -> list[TranscriptItem]:
        rollout = self._rollout or self._find_rollout()
        if rollout is None:
            return []
        records, _bad = rollout.read_records(max_bytes=-1)  # a rollout line can be large (a tool's output)
        items: list[TranscriptItem] = []
        for data in records:
            items += self._rollout_record(data)
        return items + self._settle()

    def _find_rollout(self) -> JsonlTail | None:
        if self.codex_home is None:
            return None
        found = sorted(self.codex_home.glob(ROLLOUT_GLOB))
        mine = [f for f in found if self._thread and self._thread in f.name] or found
        if mine:
            self._rollout = JsonlTail(mine[-1])
        return self._rollout

    def _rollout_record(self, data: dict) -> list[TranscriptItem]:
        """What one rollout line tells: the wait turns as transcript items; tokens and the failure
        class are kept for :meth:`_settle` and :meth:`failure`."""
        payload = dict_at(data, "payload")
        if data.get("type") == "response_item":
            return self._wait_item(payload)
        if data.get("type") == "token_usage_record" and isinstance(payload.get("usage"), dict):
            key = text_of(payload.get("response_id")) or f"#{len(self._records)}"
            self._records[key] = _rollout_tokens(payload["usage"])
        elif data.get("type") == "event_msg" and payload.get("type") == "token_count":
            info = dict_at(payload, "info")
            if isinstance(info.get("total_token_usage"), dict):
                self._rollout_total = _rollout_tokens(info["total_token_usage"])
        elif data.get("type") == "event_msg" and payload.get("type") == "task_complete":
            error = dict_at(payload, "error")
            self._error_info = text_of(error.get("codex_error_info"))
        return []

    def _wait_item(self, payload: dict) -> list[TranscriptItem]:
        """A ``write_stdin`` call (a tool_call) or its output (a tool_result); [] for the rest."""
        call_id = text_of(payload.get("call_id")) or None
        if payload.get("type") == "function_call" and payload.get("name") == WAIT_TOOL:
            self.errors.answered()  # the model asked for it
            if call_id:
                self._waits.add(call_id)
            args = json_object(text_of(payload.get("arguments"))) or {}
            command = _int(args.get("session_id"))
            which = f"command {command}" if command is not None else "a running command"
            chars = text_of(args.get("chars"))
            wait_ms = _int(args.get("yield_time_ms"))
            if chars:
                text = f"write {json.dumps(chars)[:200]} to {which}"
            else:
                text = f"wait on {which}" + (f" ({wait_ms / 1000:g} s)" if wait_ms is not None else "")
            return [TranscriptItem(role="assistant", kind="tool_call", tool=WAIT_TOOL, call_id=call_id, text=text)]
        if payload.get("type") == "function_call_output" and call_id in self._waits:
            self._waits.discard(call_id or "")
            output = payload.get("output")
            text = output if isinstance(output, str) else text_of(dict_at(payload, "output").get("content"))
            return [TranscriptItem(role="tool", kind="tool_result", tool=WAIT_TOOL, call_id=call_id, text=text)]
        return []

    def _settle(self) -> list[TranscriptItem]:
        """Bring the ledger to the furthest of the three running totals (Codex's own counts)."""
        records = sum(self._records.values(), Tokens())
        total = _furthest(self._turns, records, self._rollout_total)
        cost = self.prices.cost(self.model, total.fresh_in(), total.tokens_out, cached_input_tokens=total.cache_read,
                                cache_write_tokens=total.cache_write)  # fmt: skip
        note = "" if cost is not None else f"price unknown for {self.model or 'the default model'}"
        return self.ledger.settle(total, cost, note)

    def _result(self, text: str) -> TranscriptItem:
        if not self.ledger.tokens:
            return TranscriptItem(role="system", kind="result", text=f"{text} (no usage reported)")
        return self.ledger.result(text)

    def _finish(self) -> list[TranscriptItem]:
        return [] if self.ended else [self._result("ended without a completed turn (stopped or crashed)")]

    def failure(self) -> str | None:
        with self._lock:
            summary = self.errors.summary()
        if summary and self._error_info and self._error_info not in summary:
            summary += f" [codex: {self._error_info}]"
        return summary

    def usage_totals(self) -> dict:
        """Codex's counts so far; before any usage arrived the cost is unknown, not $0."""
        totals = super().usage_totals()
        if not self.ledger.tokens:
            totals["cost_known"] = False
        return totals


def _rollout_tokens(usage: dict) -> Tokens:
    return Tokens(
        tokens_in=_int(usage.get("input_tokens")) or 0,
        tokens_out=_int(usage.get("output_tokens")) or 0,
        cache_read=_int(usage.get("cached_input_tokens")) or 0,
        cache_write=_int(usage.get("cache_write_input_tokens")) or 0,
    )


def _furthest(*totals: Tokens) -> Tokens:
    """The running total that counted most: counts only grow, so the largest is the most recent."""
    return max(totals, key=lambda t: (t.tokens_in + t.tokens_out, t.tokens_out))
