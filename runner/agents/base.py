"""The agent-adapter contract: one small class per agent CLI.

An adapter says how to start its CLI (``argv``, ``env``), how to read one line of its stdout
(``parse`` -> normalised :class:`TranscriptItem` list; a line it cannot read becomes one
``kind="raw"`` item, never an exception) and which version is installed (``version``).
The runner stamps ``session_id``/``seq``/``ts`` and turns items into ``transcript`` events.

Besides stdout, an adapter may read files its CLI writes for the session (``poll``: Codex's
rollout with its running token totals, OpenCode's log with the errors it prints nowhere else),
and says why a session went wrong in the agent's own terms (``failure``: the last error the agent
saw and did not get past; ``notes``: what else the end detail should say).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from runner.agents.item import TranscriptItem, raw_item
from runner.errors import OnegcError

REQUEST_FAILED = "model request failed"  # how an adapter words a failure of the model endpoint (ErrorTrail)


@dataclass(frozen=True)
class LaunchContext:
    """What an adapter may use to build its command line and environment."""

    workspace: Path
    session_dir: Path
    agent_home: Path  # a fresh per-session HOME/config folder: the user's own settings stay out
    prompt: str
    model: str | None
    base_env: dict[str, str] = field(default_factory=dict)
    extra_args: tuple[str, ...] = ()


class ModelRequired(OnegcError, ValueError):
    """The agent CLI cannot be started without a model it can resolve (the message says which)."""


class AgentAdapter:
    """Base class. Subclasses set ``name`` and override what differs."""

    name: ClassVar[str] = ""
    executable: ClassVar[str | None] = None  # the CLI binary, found on PATH (or the project prefix)
    # what asks the agent to end cleanly before the tree is stopped; None: the CLI has no clean
    # stop (SIGINT kills OpenCode and leaves its tools running), so the tree gets SIGTERM at once
    graceful_signal: ClassVar[int | None] = signal.SIGINT
    prompt_on_stdin: ClassVar[bool] = False  # else stdin is /dev/null (an open pipe hangs some CLIs)

    def argv(self, ctx: LaunchContext) -> list[str]:
        raise NotImplementedError

    @classmethod
    def check_model(cls, model: str | None, environ: Mapping[str, str]) -> None:
        """Raise :class:`ModelRequired` when this CLI cannot start with ``model`` (default: any
        model, or none, will do)."""

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        """Environment for the agent process, built from ``ctx.base_env``."""
        return dict(ctx.base_env)

    def parse(self, line: str) -> list[TranscriptItem]:
        text = line.rstrip("\n")
        return [TranscriptItem(role="assistant", kind="text", text=text)] if text.strip() else []

    def finish(self) -> list[TranscriptItem]:
        """Items owed at end of stream (e.g. a final usage total); default none."""
        return []

    def poll(self) -> list[TranscriptItem]:
        """Items from the CLI's side files since the last call (the runner calls it about once a
        second, from another thread than ``parse``); default none."""
        return []

    def failure(self) -> str | None:
        """The error the agent was stuck on when it ended (``None``: none, or it got past it)."""
        return None

    def notes(self) -> list[str]:
        """Other facts the end detail should carry (a background task killed, usage left unreported)."""
        return []

    def version(self) -> str | None:
        exe = self.find_executable()
        if exe is None:
            return None
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else None

    def find_executable(self) -> str | None:
        return shutil.which(self.executable) if self.executable else None

    def read_only_paths(self) -> list[Path]:
        """Host paths the agent must read inside its sandbox (runner/sandbox/bwrap.py) beyond the system
        and the Python environment: by default the CLI's install and the interpreter it names."""
        from runner.sandbox.bwrap import runtime_paths

        return runtime_paths(self.find_executable())


def json_object(line: str) -> dict | None:
    """One stdout line as a JSON object, or None (not JSON, or not an object)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def dict_at(data: dict, key: str) -> dict:
    """``data[key]`` where it is a JSON object, else an empty one: a CLI's field may be missing,
    null or of another type, and a parser must not raise on it."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def list_at(data: dict, key: str) -> list:
    """``data[key]`` where it is a JSON array, else an empty one (see :func:`dict_at`)."""
    value = data.get(key)
    return value if isinstance(value, list) else []


class ErrorTrail:
    """The errors an agent saw since its model last answered: what a failed session died of.

    A failed model request (an HTTP error, a refused connection, a retry) is worded
    "model request failed: ..." with the count of failed attempts in a row; runner/session/outcome.py
    names the model endpoint beside it."""

    def __init__(self) -> None:
        self.last: str | None = None
        self.request = False  # the last error was a failed model request
        self.attempts = 0  # failed model requests in a row (retries included)

    def request_failed(self, text: str, new_attempt: bool = True) -> None:
        self.last, self.request = text or "no answer", True
        self.attempts += 1 if new_attempt else 0

    def error(self, text: str) -> None:
        """Another error the agent reported (a turn limit, a tool the CLI could not run)."""
        if text:
            self.last, self.request = text, False

    def answered(self) -> None:
        """The model answered: earlier errors were got past."""
        self.last, self.request, self.attempts = None, False, 0

    def summary(self) -> str | None:
        if self.last is None:
            return None
        if not self.request:
            return self.last
        return f"{REQUEST_FAILED}: {self.last}" + (f" ({self.attempts} failed attempts)" if self.attempts > 1 else "")


class JsonStreamAdapter(AgentAdapter):
    """Base of the adapters for CLIs that print one JSON object per line (Claude Code, Codex,
    OpenCode): the model, the price table, the usage ledger, the error trail and the never-raising
    parse. ``parse``, ``poll`` and ``finish`` hold one lock: the runner calls them from two threads."""

    def __init__(self, model: str | None = None):
        from runner.agents.pricing import load_prices_safe
        from runner.agents.usage import Ledger

        self.model = model
        self.prices, self.price_warning = load_prices_safe()
        self.ledger = Ledger()
        self.errors = ErrorTrail()
        self._lock = threading.RLock()

    def configure(self, config: object) -> None:
        """Take the model from a model id or from anything with a ``model`` attribute (SessionConfig)."""
        model = getattr(config, "model", config)
        self.model = model if isinstance(model, str) and model else None

    def find_executable(self) -> str | None:
        from runner.agents import locate

        return locate.find_cli(self.executable or "")

    def parse(self, line: str) -> list[TranscriptItem]:
        if not line.strip():
            return []
        with self._lock:
            try:
                data = json_object(line)
                items = self._parse(data) if data is not None else None
            except Exception:  # a CLI's new shape must never stop the session
                items = None
        return [raw_item(line)] if items is None else items

    def _parse(self, data: dict) -> list[TranscriptItem] | None:
        """Items for one decoded line; None when the shape is unknown (it becomes a raw item)."""
        raise NotImplementedError

    def poll(self) -> list[TranscriptItem]:
        with self._lock:
            try:
                return self._poll()
            except Exception:  # a side file in a shape we do not know must not stop the session
                return []

    def _poll(self) -> list[TranscriptItem]:
        return []

    def finish(self) -> list[TranscriptItem]:
        with self._lock:
            try:
                items = self._poll()
            except Exception:
                items = []
            return items + self._finish()

    def _finish(self) -> list[TranscriptItem]:
        return []

    def failure(self) -> str | None:
        with self._lock:
            return self.errors.summary()

    def usage_totals(self) -> dict:
        with self._lock:
            return self.ledger.totals()
