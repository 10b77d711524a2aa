"""A scripted model server on loopback, for end-to-end tests of the real agent CLIs.

:class:`FakeModelServer` listens on ``127.0.0.1`` (stdlib only: ``http.server`` in a thread) and
speaks, streaming, the three wire protocols the CLIs use:

- Anthropic Messages, ``POST /v1/messages`` (SSE; plain JSON when not streaming) for Claude Code;
- OpenAI Responses, ``POST /v1/responses`` for Codex;
- OpenAI Chat Completions, ``POST /v1/chat/completions`` for OpenCode.

The script is a list of turns, :class:`Shell` (one shell tool call) or :class:`Text` (a final
answer). Which turn a request gets follows from the conversation it carries: the number of tool
results in it. Side requests (titles, topic checks: no tools offered) get a short text and do not
move the script, so retries and extra calls cannot shift it. Codex returns from a command after
at most 30 s with "Process running with session ID N"; the server then waits on it with a
``write_stdin`` poll, as a model would, and moves on only when the command has ended.

Every response reports usage, and no two responses report the same figures (:func:`usage_for`:
the n-th response's prompt, cached, cache-write and output counts all grow with n), so a harness
that drops, repeats or mixes up one response is caught. :meth:`FakeModelServer.handed_out` sums
what every response reported, side requests included; :attr:`FakeModelServer.usage` sums the
script turns only. Anthropic responses first report 1 output token (``message_start``) and the
real count at the end (``message_delta``), as the real API does.

``fail_status=500`` answers every model request with that HTTP status (and counts the
attempts), for the "endpoint fails forever" sessions; a ``Shell(..., background=True)`` turn asks
Claude Code for a ``run_in_background`` Bash call.

Set ``HTTP(S)_PROXY`` to :attr:`FakeModelServer.url` (with ``NO_PROXY`` for loopback) and any
request a CLI makes to another host arrives here as a proxy request: it is refused and recorded in
:attr:`FakeModelServer.stray`, so a test can assert that nothing tried to leave the machine.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

TOKENS_IN = 1200  # count_tokens answer (Claude Code's side requests)
TITLE = "E2E session"  # the answer to side requests (no tools offered)
SHELL_TIMEOUT_MS = 600_000  # asked of every shell tool: Codex's default is 10 s, Claude's and OpenCode's 2 min
POLL_MS = 30_000  # Codex returns from a command after at most 30 s; the script then waits on it like a model would
RUNNING_RE = re.compile(r"Process running with session ID (\d+)")  # Codex's exec_command: still running


@dataclass(frozen=True)
class Shell:
    """A turn that asks for one shell command."""

    command: str
    description: str = "run a command"
    background: bool = False  # Claude Code: run_in_background (the other CLIs: the command uses &)


@dataclass(frozen=True)
class Text:
    """A turn that answers with text and ends the agent's run."""

    text: str


Turn = Shell | Text


@dataclass(frozen=True)
class Usage:
    """What one response reported, in the harness's terms: ``tokens_in`` counts every prompt token
    (cached and cache-written ones included), ``cache_read``/``cache_write`` are parts of it."""

    tokens_in: int
    tokens_out: int
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out,
                     self.cache_read + other.cache_read, self.cache_write + other.cache_write)  # fmt: skip


def usage_for(api: str, n: int) -> Usage:
    """The usage of the n-th response (0-based): distinct figures for every response. Only
    Anthropic reports cache writes; the OpenAI APIs count cached tokens inside the prompt."""
    fresh, cached, out = 1000 + 10 * n, 500 + 5 * n, 30 + n
    if api == "messages":
        write = 40 + n
        return Usage(fresh + cached + write, out, cached, write)
    return Usage(fresh + cached, out, cached, 0)


@dataclass
class Request:
    """One request the server answered (for assertions and for debugging a failed test)."""

    api: str  # messages, responses, chat, count_tokens, other
    path: str
    turn: int | None  # the script turn answered; None for side requests
    tools: list[str]
    stream: bool
    poll: bool = False  # a wait on the turn's command, which is still running (Codex)
    body: dict = field(default_factory=dict, repr=False)  # the request as received
    usage: Usage | None = None  # what the response reported (None: no usage, e.g. an HTTP error)
    status: int = 200


def _tool_names(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else {}
            names.append(str(tool.get("name") or fn.get("name") or tool.get("type") or ""))
    return names


def _tool_results(api: str, body: dict) -> int:
    """How many tool results the conversation in ``body`` holds: the script turn to answer."""
    if api == "messages":
        return sum(
            1
            for m in body.get("messages") or []
            if isinstance(m, dict) and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
    if api == "responses":
        return sum(1 for i in _call_outputs(body) if not RUNNING_RE.search(str(i.get("output"))))
    return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool")


def _call_outputs(body: dict) -> list[dict]:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    return [i for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("call_output")]


def _running_session(body: dict) -> int | None:
    """The Codex command session still running at the end of the conversation, if any."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    last = items[-1] if items and isinstance(items[-1], dict) else {}
    match = RUNNING_RE.search(str(last.get("output"))) if str(last.get("type", "")).endswith("call_output") else None
    return int(match.group(1)) if match else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args) -> None:  # quiet: the server keeps its own record
        pass

    # ------------------------------------------------------------------ plumbing
    def _json(self, obj: Any, code: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _sse(self, events: list, named: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        for event in events:
            if named and isinstance(event, dict):
                self.wfile.write(f"event: {event['type']}\n".encode())
            data = event if isinstance(event, str) else json.dumps(event)
            self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def _local_path(self) -> str | None:
        """The request path, or ``None`` when this is a proxy request for another host."""
        path = self.path
        if path.startswith(("http://", "https://")):
            host = path.split("/", 3)[2]
            if host != f"127.0.0.1:{self.server.server_port}":
                return None
            path = "/" + (path.split("/", 3)[3] if path.count("/") >= 3 else "")
        return path.split("?", 1)[0]

    def _stray(self) -> None:
        self.server.owner._record_stray(f"{self.command} {self.path}")
        self.close_connection = True
        self._json({"error": {"type": "forbidden", "message": "no traffic outside loopback in tests"}}, 403)

    def do_CONNECT(self) -> None:
        self._stray()

    def do_GET(self) -> None:
        path = self._local_path()
        if path is None:
            return self._stray()
        self.server.owner._record(Request("other", path, None, [], False))
        self._json({"error": {"type": "not_found", "message": f"GET {path} is not served"}}, 404)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        path = self._local_path()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path is None:
            return self._stray()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if path.endswith("/messages/count_tokens"):
            self.server.owner._record(Request("count_tokens", path, None, [], False))
            return self._json({"input_tokens": TOKENS_IN})
        for suffix, api in (("/messages", "messages"), ("/responses", "responses"), ("/chat/completions", "chat")):
            if path.endswith(suffix):
                if self.server.owner.fail_status is not None:
                    return self._fail(api, path, body)
                return self._answer(api, path, body)
        self.server.owner._record(Request("other", path, None, _tool_names(body), bool(body.get("stream"))))
        self._json({"error": {"type": "not_found", "message": f"POST {path} is not served"}}, 404)

    # ------------------------------------------------------------------ the script
    def _fail(self, api: str, path: str, body: dict) -> None:
        """Every model request fails with the server's ``fail_status`` (an endpoint that is down)."""
        status = self.server.owner.fail_status
        tools = _tool_names(body)
        self.server.owner._record(Request(api, path, None, tools, bool(body.get("stream")), body=body, status=status))
        message = f"mock failure {status}"
        if api == "messages":
            error = {"type": "error", "error": {"type": "api_error", "message": message}}
        else:
            error = {"error": {"type": "server_error", "code": "server_error", "message": message}}
        self.close_connection = True
        self._json(error, status)

    def _answer(self, api: str, path: str, body: dict) -> None:
        owner = self.server.owner
        tools = _tool_names(body)
        stream = bool(body.get("stream"))
        if tools:
            index = _tool_results(api, body)
            turn: Turn = owner.turns[min(index, len(owner.turns) - 1)]
        else:
            index, turn = None, Text(TITLE)
        session = _running_session(body) if api == "responses" and tools else None
        usage = owner._record(Request(api, path, index, tools, stream, session is not None, body), api)
        model = str(body.get("model") or "fake-model")
        if api == "messages":
            self._messages(turn, model, stream, usage)
        elif api == "responses":
            self._responses(turn, model, tools, session, usage)
        else:
            self._chat(turn, model, stream, usage)

    def _messages(self, turn: Turn, model: str, stream: bool, usage: Usage) -> None:
        mid = "msg_" + uuid.uuid4().hex[:16]
        if isinstance(turn, Shell):
            args = {"command": turn.command, "description": turn.description, "timeout": SHELL_TIMEOUT_MS}
            if turn.background:
                args["run_in_background"] = True
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:16], "name": "Bash", "input": args}
            stop = "tool_use"
        else:
            block, stop = {"type": "text", "text": turn.text}, "end_turn"
        prompt = {"input_tokens": usage.tokens_in - usage.cache_read - usage.cache_write,
                  "cache_creation_input_tokens": usage.cache_write, "cache_read_input_tokens": usage.cache_read}  # fmt: skip
        if not stream:
            return self._json({"id": mid, "type": "message", "role": "assistant", "model": model, "content": [block],
                               "stop_reason": stop, "stop_sequence": None,
                               "usage": {**prompt, "output_tokens": usage.tokens_out}})  # fmt: skip
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        self._sse([
            {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "model": model,
             "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**prompt, "output_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": start},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": usage.tokens_out}},
            {"type": "message_stop"},
        ])  # fmt: skip

    def _responses(self, turn: Turn, model: str, tools: list[str], running: int | None, usage: Usage) -> None:
        rid = "resp_" + uuid.uuid4().hex[:16]
        if running is not None:  # wait on the command of this turn, as a model does
            args = {"session_id": running, "chars": "", "yield_time_ms": POLL_MS}
            item = {"type": "function_call", "id": "fc_" + rid, "call_id": "call_" + rid, "name": "write_stdin",
                    "arguments": json.dumps(args), "status": "completed"}  # fmt: skip
        elif isinstance(turn, Shell):
            if "shell_command" in tools:
                name, args = "shell_command", {"command": turn.command, "timeout_ms": SHELL_TIMEOUT_MS}
            elif "exec_command" in tools:
                name, args = "exec_command", {"cmd": turn.command, "yield_time_ms": POLL_MS}
            else:
                name, args = "shell", {"command": ["bash", "-lc", turn.command], "timeout_ms": SHELL_TIMEOUT_MS}
            item = {"type": "function_call", "id": "fc_" + rid, "call_id": "call_" + rid, "name": name,
                    "arguments": json.dumps(args), "status": "completed"}  # fmt: skip
        else:
            item = {"type": "message", "id": "msg_" + rid, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}  # fmt: skip
        reported = {"input_tokens": usage.tokens_in, "input_tokens_details": {"cached_tokens": usage.cache_read},
                    "output_tokens": usage.tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": usage.tokens_in + usage.tokens_out}  # fmt: skip
        base = {"id": rid, "object": "response", "created_at": 0, "model": model, "status": "in_progress", "output": []}
        self._sse([
            {"type": "response.created", "response": base},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {**base, "status": "completed", "output": [item], "usage": reported}},
        ])  # fmt: skip

    def _chat(self, turn: Turn, model: str, stream: bool, usage: Usage) -> None:
        cid = "chatcmpl-" + uuid.uuid4().hex[:16]
        if isinstance(turn, Shell):
            args = {"command": turn.command, "description": turn.description, "timeout": SHELL_TIMEOUT_MS}
            call = {"index": 0, "id": "call_" + cid[-12:], "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps(args)}}  # fmt: skip
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": turn.text}, "stop"
        reported = {"prompt_tokens": usage.tokens_in, "completion_tokens": usage.tokens_out,
                    "total_tokens": usage.tokens_in + usage.tokens_out,
                    "prompt_tokens_details": {"cached_tokens": usage.cache_read}}  # fmt: skip
        head = {"id": cid, "created": 0, "model": model}
        if not stream:
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return self._json({**head, "object": "chat.completion", "choices": [choice], "usage": reported})
        delta = {k: v for k, v in message.items() if v is not None}
        chunk = {**head, "object": "chat.completion.chunk"}
        self._sse([
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**chunk, "choices": [], "usage": reported},
            "[DONE]",
        ], named=False)  # fmt: skip


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeModelServer


class FakeModelServer:
    """The scripted server; use as a context manager (``with FakeModelServer(turns) as server``)."""

    def __init__(self, turns: list[Turn], fail_status: int | None = None):
        if not turns:
            raise ValueError("a script needs at least one turn")
        self.turns = list(turns)
        self.fail_status = fail_status  # answer every model request with this HTTP status
        self.requests: list[Request] = []
        self.stray: list[str] = []  # proxy requests for hosts other than this server
        self.usage = {"input_tokens": 0, "output_tokens": 0}  # summed over script turns (side requests left out)
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-model-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def turns_served(self) -> list[int]:
        """The script turns answered, in order (side requests left out)."""
        with self._lock:
            return [r.turn for r in self.requests if r.turn is not None and not r.poll]

    def handed_out(self) -> Usage:
        """The usage every response reported, summed (side requests included)."""
        with self._lock:
            return sum((r.usage for r in self.requests if r.usage is not None), Usage(0, 0))

    def failed_attempts(self) -> int:
        """Model requests answered with an HTTP error."""
        with self._lock:
            return sum(1 for r in self.requests if r.status >= 400 and r.api in ("messages", "responses", "chat"))

    def describe(self) -> str:
        """One line per request, for assertion messages."""
        with self._lock:
            lines = [f"{r.api} {r.path} turn={r.turn}{' (poll)' if r.poll else ''} stream={r.stream} tools={len(r.tools)}"
                     f" status={r.status} usage={r.usage}" for r in self.requests]  # fmt: skip
            return "\n".join(lines + [f"STRAY {s}" for s in self.stray]) or "(no requests)"

    def _record(self, request: Request, api: str | None = None) -> Usage:
        """Keep ``request``; with ``api``, it is a model response: give it the next usage figures."""
        with self._lock:
            usage = usage_for(api, sum(1 for r in self.requests if r.usage is not None)) if api else None
            self.requests.append(replace(request, usage=usage))
            if request.turn is not None and usage is not None:
                self.usage["input_tokens"] += usage.tokens_in
                self.usage["output_tokens"] += usage.tokens_out
            return usage

    def _record_stray(self, what: str) -> None:
        with self._lock:
            self.stray.append(what)
