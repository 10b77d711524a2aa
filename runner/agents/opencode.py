"""OpenCode in headless mode: ``opencode run --format json -m PROVIDER/MODEL --pure --title T PROMPT``.

The prompt is passed as the message argument and stdin is /dev/null: ``opencode run`` appends
whatever stdin holds when it is not a terminal, so /dev/null adds nothing and an open pipe would
hang it (docs/agents.md, "What the harness does to contain them"). A custom OpenAI-compatible endpoint
(``OPENAI_BASE_URL``) becomes a provider named ``onegc`` in ``OPENCODE_CONFIG_CONTENT``; the
model is then the endpoint's own model id. That config also turns off auto-update, sharing and
the per-step git snapshot of the workspace. ``--title`` names the session: without it OpenCode
asks the session's model for a title, a request whose usage it reports nowhere.

What :meth:`OpenCodeAdapter.parse` makes of each stdout line (fixtures: ``opencode-*.jsonl`` of
``shared/fixtures/transcripts`` where that folder is beside the repo; the pinned CLI's log in
``tests/runner/agents/fixtures/``):

- ``step_start`` -> nothing; ``text`` -> text; ``reasoning`` -> thinking.
- ``tool_use`` -> tool_call (``$ cmd`` for bash) and tool_result with the exit code from
  ``metadata.exit``. OpenCode 1.18 sends it once the tool has finished (its stream has no tool
  start), so its result says how long the tool ran (``state.time``, from a second up): the row
  appears at the tool's end, and "[ran 312.4 s]" says when it began. A ``tool_use`` whose state is ``pending`` or
  ``running`` (a stream that sends tool starts) gives the tool_call at once and its result when
  the same call id comes back finished, the call not repeated.
- ``step_finish`` -> a usage item with the step's tokens and cost (a cost of 0 for tokens is
  "not priced by OpenCode": priced from ``prices.toml`` when the model is known, else "price
  unknown"); a ``step_finish`` whose reason is not ``tool-calls`` ends the run -> ``result``.
- ``error`` -> error ("HTTP 400: ...").

OpenCode prints nothing while its model endpoint fails (HTTP 5xx, nothing listening): it retries
for ever and only its log (``$XDG_DATA_HOME/opencode/log/*.log``) says why. :meth:`poll` reads
that log's ``ERROR`` lines as ``retry:`` error items, so the transcript, the stall alert and the
end detail name the failure.

OpenCode reports a step's tokens only at ``step_finish``, once the step's tool calls have ended
(its stdout, log and database hold nothing before). The usage of a step whose tool is still
running when the session stops is therefore unknown; the end detail says so (:meth:`notes`).

Anything else (including OpenCode's plain-text notices) becomes a ``raw`` item. Nothing here
raises.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from runner.agents import credentials
from runner.agents.base import JsonStreamAdapter, LaunchContext, ModelRequired, dict_at, text_of
from runner.agents.item import TranscriptItem
from runner.agents.usage import Tokens
from runner.wire.jsonl import JsonlTail

PROVIDER_ID = "onegc"  # the provider OPENCODE_CONFIG_CONTENT declares for a custom endpoint
INPUT_PREVIEW = 300  # characters of a non-shell tool input shown in a tool_call item
QUIET_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",  # no models.dev download: the bundled list is enough
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",  # it would fetch language servers when .py files change
    "OPENCODE_DISABLE_SHARE": "1",
}
# OpenCode installs its plugin package into every config folder in the background unless that
# folder's lock file already lists it; --pure loads no plugins, so marking it present is enough.
PLUGIN_PACKAGE = "@opencode-ai/plugin"
LOG_GLOB = "opencode/log/*.log"  # under XDG_DATA_HOME
LOGFMT_RE = re.compile(r'([\w.]+)=("(?:[^"\\]|\\.)*"|\S*)')  # key=value or key="quoted value"


def _ran_s(time_: dict) -> float | None:
    """How long a tool ran, from its part's ``time`` (epoch milliseconds), or None."""
    start, end = _num(time_.get("start")), _num(time_.get("end"))
    return (end - start) / 1000 if start is not None and end is not None and end >= start else None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def _int(value: Any) -> int:
    number = _num(value)
    return int(number) if number is not None else 0


def render_tool_call(tool: str, tool_input: Any, title: str = "") -> str:
    """A compact one-line rendering of an OpenCode tool call."""
    args = tool_input if isinstance(tool_input, dict) else {}
    if tool == "bash" and isinstance(args.get("command"), str):
        return f"$ {args['command']}"
    for key in ("filePath", "path", "pattern", "url", "query"):
        if isinstance(args.get(key), str):
            return f"{tool} {args[key]}"
    if title:
        return f"{tool} {title}"
    return f"{tool} {json.dumps(tool_input, ensure_ascii=False)[:INPUT_PREVIEW]}".strip()


class OpenCodeAdapter(JsonStreamAdapter):
    name: ClassVar[str] = "opencode"
    executable: ClassVar[str | None] = "opencode"
    prompt_on_stdin: ClassVar[bool] = False  # the prompt is the message argument; stdin is /dev/null
    graceful_signal: ClassVar[int | None] = None  # SIGINT just kills it, leaving its tools running: stop the tree

    def __init__(self, model: str | None = None):
        super().__init__(model)
        self.ended = False  # a final step_finish was seen
        self.data_home: Path | None = None  # XDG_DATA_HOME of the session (its log is there)
        self._last_text = ""
        self._step_open = False  # a step_start without its step_finish yet
        self._tools_started: set[str] = set()  # call ids whose tool_call is out (a tool start was streamed)
        self._logs: dict[Path, JsonlTail] = {}

    # ------------------------------------------------------------------ launch
    @classmethod
    def check_model(cls, model: str | None, environ: Mapping[str, str]) -> None:
        """OpenCode resolves PROVIDER/MODEL (or a model of the OPENAI_BASE_URL endpoint); with none
        it would pick one of its own, which no study can compare: a model is required."""
        if credentials.base_url(cls.name, environ):
            if not model:
                raise ModelRequired("opencode with OPENAI_BASE_URL needs --model: the model id your endpoint serves")
            return
        if not model:
            raise ModelRequired("opencode needs --model PROVIDER/MODEL (e.g. openrouter/moonshotai/kimi-k2), "
                                "or OPENAI_BASE_URL and --model for an OpenAI-compatible endpoint")
        if "/" not in model:
            raise ModelRequired(
                f"opencode needs --model PROVIDER/MODEL (e.g. openrouter/{model} or anthropic/{model}), "
                "or OPENAI_BASE_URL for an OpenAI-compatible endpoint"
            )

    def model_arg(self, ctx: LaunchContext) -> str | None:
        """The ``-m`` value: ``onegc/MODEL`` for a custom endpoint, else PROVIDER/MODEL as given."""
        self.check_model(ctx.model, ctx.base_env)
        if credentials.base_url(self.name, ctx.base_env) and ctx.model:  # check_model: given there
            return ctx.model if ctx.model.startswith(PROVIDER_ID + "/") else f"{PROVIDER_ID}/{ctx.model}"
        return ctx.model

    def argv(self, ctx: LaunchContext) -> list[str]:
        model = self.model_arg(ctx)
        if self.model is None:
            self.model = model
        exe = self.find_executable() or "opencode"
        cmd = [exe, "run", "--format", "json"]
        if model:
            cmd += ["-m", model]
        title = ["--title", f"onegc {ctx.session_dir.name}"]  # else a title request, counted nowhere
        return cmd + ["--pure", *title] + list(ctx.extra_args) + [ctx.prompt]

    def config_content(self, ctx: LaunchContext) -> str:
        """``OPENCODE_CONFIG_CONTENT``: quiet settings, plus the custom endpoint when there is one."""
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            # No git snapshot of the workspace (data/ included) after every step: headless runs
            # cannot undo, and it costs disk and seconds per step.
            "snapshot": False,
        }
        url = credentials.base_url(self.name, ctx.base_env)
        if url is None:
            return json.dumps(config)
        model = self.model_arg(ctx) or ""
        model_id = model.split("/", 1)[1]
        entry: dict[str, Any] = {"name": model_id}
        price = self.prices.price(model_id)
        if price is not None:  # lets OpenCode put a cost on each step itself
            entry["cost"] = {
                "input": price.input,
                "output": price.output,
                "cache_read": price.input if price.cached_input is None else price.cached_input,
                "cache_write": price.input if price.cache_write is None else price.cache_write,
            }
        config["model"] = model
        config["provider"] = {
            PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "onegc endpoint",
                "options": {"baseURL": url, "apiKey": "{env:OPENAI_API_KEY}"},  # a reference, not the key
                "models": {model_id: entry},
            }
        }
        return json.dumps(config)

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = credentials.agent_env(self.name, ctx.base_env, ctx.agent_home)
        self.data_home = Path(env["XDG_DATA_HOME"])
        env["PWD"] = str(ctx.workspace)  # the runner's PWD must not leak in: OpenCode takes its project folder from it
        env.update(QUIET_ENV)
        env["OPENCODE_CONFIG_CONTENT"] = self.config_content(ctx)
        return env

    def prepare_home(self, ctx: LaunchContext) -> None:
        credentials.make_home(ctx.agent_home)
        config_dir = ctx.agent_home / ".config" / "opencode"
        (config_dir / "node_modules").mkdir(parents=True, exist_ok=True)
        deps = {PLUGIN_PACKAGE: "*"}
        (config_dir / "package.json").write_text(json.dumps({"dependencies": deps}, indent=2) + "\n", encoding="utf-8")
        lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}
        (config_dir / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")

    # ------------------------------------------------------------------ transcript
    def _parse(self, data: dict) -> list[TranscriptItem] | None:
        kind = data.get("type")
        part = data.get("part") if isinstance(data.get("part"), dict) else None
        if kind == "error":
            return self._error(data.get("error"))
        if part is None:
            return None
        if kind == "step_start":
            self._step_open = True
            return []
        if kind == "text":
            self._last_text = text_of(part.get("text"))
            return [TranscriptItem(role="assistant", kind="text", text=self._last_text)]
        if kind == "reasoning":
            return [TranscriptItem(role="assistant", kind="thinking", text=text_of(part.get("text")))]
        if kind == "tool_use":
            self.errors.answered()
            return self._tool(part)
        if kind == "step_finish":
            return self._step_finish(part)
        return None

    def _tool(self, part: dict) -> list[TranscriptItem] | None:
        state = part.get("state")
        if not isinstance(state, dict):
            return None
        tool = text_of(part.get("tool")) or "tool"
        call_id = text_of(part.get("callID")) or text_of(part.get("id")) or None
        status = text_of(state.get("status"))
        items = []
        if call_id is None or call_id not in self._tools_started:
            items.append(TranscriptItem(
                role="assistant", kind="tool_call", tool=tool, call_id=call_id,
                text=render_tool_call(tool, state.get("input"), text_of(state.get("title"))),
            ))  # fmt: skip
        if status in ("pending", "running"):  # a tool start: its result comes with the same call id
            if call_id:
                self._tools_started.add(call_id)
            return items
        self._tools_started.discard(call_id or "")
        metadata = dict_at(state, "metadata")
        exit_num = _num(metadata.get("exit"))
        exit_code = int(exit_num) if exit_num is not None else None
        if status == "error":
            text = f"[error] {text_of(state.get('error'))}"
        else:
            text = text_of(state.get("output"))
            if status and status != "completed":
                text = f"[{status}] {text}"
        ran = _ran_s(dict_at(state, "time"))
        if ran is not None and ran >= 1.0:
            text = f"[ran {ran:.1f} s] {text}"
        items.append(TranscriptItem(role="tool", kind="tool_result", tool=tool, call_id=call_id, exit_code=exit_code,
                                    text=text))
        return items

    def _step_finish(self, part: dict) -> list[TranscriptItem]:
        self._step_open = False
        self.errors.answered()
        tokens = dict_at(part, "tokens")
        cache = dict_at(tokens, "cache")
        fresh, read, write = _int(tokens.get("input")), _int(cache.get("read")), _int(cache.get("write"))
        step = Tokens(fresh + read + write, _int(tokens.get("output")) + _int(tokens.get("reasoning")), read, write)
        cost = _num(part.get("cost"))
        note = ""
        if cost is not None and cost == 0 and step:
            # OpenCode puts 0 on models it has no price for: ours, or unknown.
            cost = self.prices.cost(self.model, fresh, step.tokens_out, cached_input_tokens=read, cache_write_tokens=write)
            note = "onegc price" if cost is not None else f"no price for {self.model or 'this model'}; OpenCode reported $0"
        items = self.ledger.add(step, cost, note)
        reason = text_of(part.get("reason"))
        if reason != "tool-calls":
            self.ended = True
            items.append(
                self.ledger.result(f"{reason or 'stop'}: {self._last_text}" if self._last_text else reason or "stop")
            )
        return items

    def _error(self, error: Any) -> list[TranscriptItem]:
        if not isinstance(error, dict):
            self.errors.request_failed(text_of(error) or "error")
            return [TranscriptItem(role="system", kind="error", text=text_of(error) or "error")]
        data = dict_at(error, "data")
        name = text_of(error.get("name")) or "Error"
        message = text_of(data.get("message")) or name
        status = data.get("statusCode")
        head = f"HTTP {status}: " if _num(status) is not None else ""
        retry = "retry: " if data.get("isRetryable") is True else ""
        suffix = f" ({name})" if name not in message else ""
        self.errors.request_failed(f"{head}{message}{suffix}")
        return [TranscriptItem(role="system", kind="error", text=f"{retry}{head}{message}{suffix}")]

    # ------------------------------------------------------------------ the log
    def _poll(self) -> list[TranscriptItem]:
        if self.data_home is None:
            return []
        for path in sorted(self.data_home.glob(LOG_GLOB)):
            self._logs.setdefault(path, JsonlTail(path))
        items = []
        for tail in self._logs.values():
            for _, line in tail.read_lines(max_bytes=-1):
                if line is not None:  # never, with no line length limit
                    items += self._log_line(line.decode("utf-8", errors="replace"))
        return items

    def _log_line(self, line: str) -> list[TranscriptItem]:
        fields = {k: v[1:-1].replace('\\"', '"') if v.startswith('"') else v for k, v in LOGFMT_RE.findall(line)}
        if fields.get("level") != "ERROR":
            return []
        error = next((v for k, v in fields.items() if k.startswith("error")), "")
        what = fields.get("message") or "error"
        if fields.get("agent") == "title":  # the session title (not asked for with --title)
            return []
        text = f"{what}: {error}" if error else what
        if what == "stream error":  # a model request failed; OpenCode retries it
            self.errors.request_failed(error)
            return [TranscriptItem(role="system", kind="error", text=f"retry: model request failed: {error}")]
        self.errors.error(text)
        return [TranscriptItem(role="system", kind="error", text=f"OpenCode log: {text}")]

    def _finish(self) -> list[TranscriptItem]:
        if self.ended:
            return []
        return [self.ledger.result("ended without a final step (stopped, crashed or failed)")]

    def notes(self) -> list[str]:
        with self._lock:
            unreported = self._step_open and not self.ended
        if not unreported:
            return []
        return ["OpenCode was stopped inside a step, whose usage it reports only once the step and its tool calls "
                "end: that step's model response is not in the token totals"]
