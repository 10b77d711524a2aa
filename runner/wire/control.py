"""Control requests (pause, resume, abort) travel to a runner through ``control.jsonl``.

Each request gets an id; the runner acknowledges it with a ``control`` event carrying that id
(``accepted`` and, when refused, why). :func:`request_and_wait` is the request a person makes
from the command line: it returns the runner's answer, or says why none came.
"""

from __future__ import annotations

import socket
import time
import uuid
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import OnegcError
from runner.wire.jsonl import JsonlTail, TailState, append_json_line
from runner.wire.paths import SessionPaths

Action = Literal["pause", "resume", "abort"]
ANSWER_WAIT_S = 15.0  # the runner applies requests within a fifth of a second; this covers a loaded machine
POLL_S = 0.1


class NoAnswer(OnegcError):
    """The runner did not answer a control request (it is gone, or ended first)."""


class ControlRequest(BaseModel):
    """One line of ``control.jsonl`` as :func:`request` writes it. Only the CLI and the monitor
    write the file (the agent cannot reach it: INTEGRITY.md A4); the runner still reads it as it
    reads anything from disk, typed and bounded (docs/boundaries.md), so a damaged line is one
    warning, never the runner's end."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(max_length=64)
    action: str = Field(max_length=32)
    ts: float
    source: str = Field(default="", max_length=300)


def read_request(record: object) -> ControlRequest | str:
    """The request a ``control.jsonl`` record holds, or why it holds none (one line)."""
    try:
        return ControlRequest.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the line"
        return f"a control request that is not one ({where}: {first['msg']}): ignored"


@dataclass(frozen=True)
class Answer:
    accepted: bool
    detail: str


def request(paths: SessionPaths, action: Action, source: str = "cli") -> str:
    if not paths.config.is_file():
        raise FileNotFoundError(f"no session at {paths.root}: see 'onegc sessions'")
    rid = uuid.uuid4().hex[:12]
    append_json_line(paths.control, {"id": rid, "action": action, "ts": time.time(),
                                     "source": f"{source}@{socket.gethostname()}"})
    return rid


def request_and_wait(paths: SessionPaths, action: Action, timeout_s: float = ANSWER_WAIT_S,
                     source: str = "cli") -> Answer:
    """Send a request and wait for the runner's ``control`` event about it."""
    from runner.wire.liveness import runner_alive

    try:
        start = paths.events.stat().st_size  # the answer comes after the request
    except FileNotFoundError:
        start = 0
    tail = JsonlTail(paths.events, TailState(offset=start))
    rid = request(paths, action, source)
    end = time.monotonic() + timeout_s
    while True:
        records, _ = tail.read_records()
        for r in records:
            if r.get("type") == "control" and r.get("request_id") == rid:
                return Answer(bool(r.get("accepted")), str(r.get("detail") or ""))
            if r.get("type") == "session_ended":
                raise NoAnswer(f"session {paths.session_id} ended ({r.get('reason')}) before its runner answered "
                               f"the {action} request")
        if runner_alive(paths) is False:
            raise NoAnswer(f"session {paths.session_id} has no live runner to {action} it: see 'onegc sessions'")
        if time.monotonic() >= end:
            raise NoAnswer(f"no answer from the runner of {paths.session_id} within {timeout_s:.0f} s "
                           f"(the {action} request stays in {paths.control.name}): see 'onegc sessions'")
        time.sleep(POLL_S)
