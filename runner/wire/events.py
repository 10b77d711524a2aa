"""The event wire format: one JSON object per line of ``events.jsonl``.

Every event has ``v`` (schema version), ``session_id``, ``seq`` (1, 2, 3… per session, no gaps),
``ts`` (epoch seconds) and ``prev`` (the hash chain's link to the line before, runner/wire/chain.py).
:data:`Event` is a pydantic union discriminated on ``type``; :func:`parse_event` validates one line
(Rust-side JSON parsing: faster than ``json.loads``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from runner.wire.end_reasons import EndReason
from runner.wire.verdicts import Verdict

SCHEMA_VERSION = 1
TEXT_LIMIT = 4000  # characters of transcript text kept in an event; the raw line stays on disk

Role = Literal["assistant", "user", "tool", "system"]
# "progress": a running tool's heartbeat; the store keeps one row per tool call, updated in place
Kind = Literal["text", "thinking", "tool_call", "tool_result", "progress", "usage", "result", "error", "raw"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: int = SCHEMA_VERSION
    session_id: str
    seq: int
    ts: float
    prev: str | None = None  # the link of the line before it (runner/wire/chain.py); None: an unchained record


class SessionStarted(_Event):
    type: Literal["session_started"] = "session_started"
    task: str
    agent: str
    model: str | None = None
    repeat: int = 1
    study: str | None = None
    budget_s: float
    grace_s: float
    contract: dict[str, Any] = Field(default_factory=dict)


class AgentStarted(_Event):
    type: Literal["agent_started"] = "agent_started"
    pid: int
    argv: list[str]
    containment: str
    version: str | None = None


class TranscriptFields(BaseModel):
    """One normalised step of an agent's transcript (shared by adapters and the event)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    kind: Kind
    text: str = ""
    tool: str | None = None
    call_id: str | None = None
    exit_code: int | None = None
    tokens_in: int | None = None  # every prompt token, cached and cache-written ones included
    tokens_out: int | None = None
    cache_read: int | None = None  # the part of tokens_in read from the provider's prompt cache
    cache_write: int | None = None  # the part of tokens_in written to it (Anthropic reports these)
    cost_usd: float | None = None


class TranscriptEvent(_Event, TranscriptFields):
    type: Literal["transcript"] = "transcript"
    raw_line: int | None = None


class GpuSample(_Event):
    type: Literal["gpu"] = "gpu"
    index: int
    util_pct: float
    mem_used_mb: float
    mem_total_mb: float
    power_w: float | None = None
    temp_c: float | None = None
    # NVML's GPM (runner/session/gpm.py), since the previous sample, where the GPU has it (Hopper and later):
    # the share of SMs busy, of time any tensor core worked, of the DRAM bandwidth used
    sm_active_pct: float | None = Field(default=None, ge=0, le=100)
    tensor_active_pct: float | None = Field(default=None, ge=0, le=100)
    dram_bw_pct: float | None = Field(default=None, ge=0, le=100)


class Heartbeat(_Event):
    type: Literal["heartbeat"] = "heartbeat"
    remaining_s: float
    active_s: float
    procs: int = 0


class BudgetEvent(_Event):
    type: Literal["budget"] = "budget"
    state: Literal["running", "paused", "resumed", "expired"]
    remaining_s: float
    deadline: float  # epoch seconds at which the budget runs out if nothing pauses it


class ProcessEvent(_Event):
    type: Literal["process"] = "process"
    action: Literal["started", "ended"]
    pid: int
    script: str
    cmdline: str
    returncode: int | None = None
    training: bool = True  # a python script the agent launched (the paper's "scripts launched")


class CheckpointFound(_Event):
    type: Literal["checkpoint_found"] = "checkpoint_found"
    name: str
    path: str
    snapshot: str
    script: str | None = None
    self_reported: float | None = None
    budget_elapsed_s: float


class CheckpointScored(_Event):
    type: Literal["checkpoint_scored"] = "checkpoint_scored"
    name: str
    value: float | None = None
    error: str | None = None
    metric: str
    split: str
    eval_s: float | None = None
    budget_elapsed_s: float
    official: bool = False  # re-evaluated for result.json after the session
    verdicts: list[Verdict] = Field(default_factory=list)  # what the integrity checks found (runner/wire/verdicts.py)
    flags: list[str] | None = None  # a record made before typed verdicts: free text, read by runner.wire.verdicts.read
    val: float | None = None  # an official re-evaluation on a split other than val: its trusted val score too


class ControlEvent(_Event):
    type: Literal["control"] = "control"
    action: Literal["pause", "resume", "abort"]
    request_id: str
    accepted: bool
    detail: str = ""


class Warning_(_Event):
    type: Literal["warning"] = "warning"
    code: str
    message: str
    count: int = Field(default=1, ge=1)  # how many warnings of this cause it stands for (runner/wire/coalesce.py)


class SessionEnded(_Event):
    type: Literal["session_ended"] = "session_ended"
    reason: EndReason
    detail: str = ""
    active_s: float
    wall_s: float
    paused_s: float
    score: float | None = None
    best_checkpoint: str | None = None
    val: float | None = None  # the official checkpoint's validation score (the selection's)
    val_gap_flag: str | None = None  # runner/integrity/selection_gap.py: its val beats its test beyond the baseline's gap
    # the threat rows of ../shared/INTEGRITY.md that no check and no construction met in this session
    # (runner/integrity/checks.py); None: a record made before coverage was recorded
    not_checked: list[str] | None = None
    result_sha256: str | None = None  # the result.json written just before (None: none could be written)


class Conditions(_Event):
    """What made the session's conditions unlike a clean one (runner/session/contention.py), at its end:
    part of its contract, beside ``session_started``'s."""

    type: Literal["conditions"] = "conditions"
    contended: bool
    reasons: list[str] = Field(default_factory=list)
    foreign_processes: list[dict[str, Any]] = Field(default_factory=list)
    mem_used_at_start_mb: dict[str, float] = Field(default_factory=dict)
    throttle_s: dict[str, float] = Field(default_factory=dict)
    clock_drop_s: float = 0.0
    min_sm_clock_ratio: float | None = None
    other_sessions: list[str] = Field(default_factory=list)
    pauses: int = 0
    paused_s: float = 0.0
    problems: list[str] = Field(default_factory=list)


TruncatedStream = Literal["transcript", "stdout", "stderr", "process", "checkpoints"]


class Truncated(_Event):
    """Part of the agent's output past the session's record caps (runner/wire/record_caps.py): not
    recorded, and counted here. ``dropped`` and ``dropped_bytes`` are the part since the previous
    ``truncated`` event of the same stream (they add up, as a warning's ``count``); ``final``: the
    last one, written at the session's end."""

    type: Literal["truncated"] = "truncated"
    stream: TruncatedStream  # transcript, process: events not written; stdout, stderr: lines not copied to the raw
    # file; checkpoints: checkpoint files past the session's cap, not taken (not snapshotted, found or scored)
    dropped: int = Field(ge=0)
    dropped_bytes: int = Field(ge=0)
    limit_events: int | None = None  # the cap that was reached (None: the byte cap alone applies)
    limit_bytes: int
    final: bool = False


# Written out (not built from a tuple) so that a type checker sees every member; a new event
# class goes here, and tests/runner/test_events.py fails until it does.
Event: TypeAlias = Annotated[
    SessionStarted
    | AgentStarted
    | TranscriptEvent
    | GpuSample
    | Heartbeat
    | BudgetEvent
    | ProcessEvent
    | CheckpointFound
    | CheckpointScored
    | ControlEvent
    | Warning_
    | SessionEnded
    | Conditions
    | Truncated,
    Field(discriminator="type"),
]
EVENT_CLASSES: tuple[type[_Event], ...] = get_args(get_args(Event)[0])
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: dict[str, type[_Event]] = {cls.model_fields["type"].default: cls for cls in EVENT_CLASSES}



def parse_event(line: str | bytes) -> Event:
    """Validate one JSONL line into its event class (raises ``pydantic.ValidationError``)."""
    return EVENT_ADAPTER.validate_json(line)


def dump_event(event: _Event) -> str:
    """One line of JSON, without the trailing newline; ``None`` fields are left out."""
    return event.model_dump_json(exclude_none=True)


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """Bound transcript text; the full text stays in ``agent.stdout.jsonl``."""
    return text if len(text) <= limit else text[: limit - 15] + f"… [+{len(text) - limit + 15} chars]"
