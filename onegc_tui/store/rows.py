"""What a batch of new events writes: each table's rows and the session's summary delta, sorted out
of the events' typed records (onegc_tui/store/records.py) by maps in C. No SQL here: the store
writes them (:meth:`onegc_tui.store.Store.write`).

One owner for each fact. A kind with a table of its own (:data:`OWN_TABLE`: transcript steps, GPU
samples, warnings, controls) is written there whole, and nowhere else: its row is the event
(onegc_tui/store/stored.py reads it back as one, merged by seq with the others). Those kinds are
nearly every line of a stream, so each is one row, not an ``events`` row and a copy of its text in
the transcript. The other kinds (a few a minute) keep their line in ``events``. A tool's heartbeat
(``progress`` with a call id) keeps its line too: its one transcript row is updated in place, so
the row holds only the latest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, eq, itemgetter, not_
from typing import Any

from runner.wire import verdicts
from runner.wire.summary import fold

Record = dict[str, Any]  # an event's fields, as validated (onegc_tui/store/records.py)

OWN_TABLE = frozenset({"transcript", "gpu", "warning", "control"})  # a row of its own table is the event: no events row
IN_ROW = ""  # the data of an event read from its own table (onegc_tui/store/stored.py): no line was kept
# per-session usage: transcript ``usage`` items add to these, a ``result`` item replaces them
USAGE_COLUMNS = ("tokens_in", "tokens_out", "cache_read", "cache_write", "cost_usd")
TRANSCRIPT_COLUMNS = ("session_id", "seq", "ts", "role", "kind", "tool", "call_id", "exit_code", "text", *USAGE_COLUMNS,
                      "raw_line")
GPU_FIELDS = ("session_id", "seq", "ts", "index", "util_pct", "mem_used_mb", "mem_total_mb", "power_w", "temp_c",
              "sm_active_pct", "tensor_active_pct", "dram_bw_pct")
CONTROL_FIELDS = ("session_id", "seq", "ts", "action", "request_id", "accepted", "detail")
WARNING_FIELDS = ("session_id", "seq", "ts", "code", "message", "count")

# Rows for executemany are taken from the records by itemgetter, in C: a tuple built in Python
# per row cost more than the insert of an index entry.
_EVENT_KEY = itemgetter("session_id", "seq", "ts", "type")
_SEQ, _TS, _TYPE, _KIND, _V = itemgetter("seq"), itemgetter("ts"), itemgetter("type"), itemgetter("kind"), itemgetter("v")
_TRANSCRIPT_ROW = itemgetter(*TRANSCRIPT_COLUMNS)
_GPU_ROW = itemgetter(*GPU_FIELDS)
_CONTROL_ROW = itemgetter(*CONTROL_FIELDS)
_WARNING_ROW = itemgetter(*WARNING_FIELDS)
_BULK_TYPES = frozenset({"transcript", "gpu"})  # sorted out in C; every other kind is folded one by one
_SPECIAL_KINDS = frozenset({"progress", "usage", "result"})  # transcript items that change more than their row


def contract_hash(contract: dict) -> str:
    """What makes two sessions comparable, hashed (host and Python excluded, and how `onegc verify`
    reproduces it: a statement about the record, not a condition of the run)."""
    keep = {k: v for k, v in contract.items() if k not in ("host", "python", "verify")}
    if isinstance(keep.get("gpu"), list):
        keep["gpu"] = [{"name": g.get("name"), "driver": g.get("driver")} for g in keep["gpu"]]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class BatchRows:
    """One session's new events, as rows of each table, in the order of their events."""

    session_id: str
    events: list[tuple] = field(default_factory=list)  # (session_id, seq, ts, type, line) of the kinds that keep their line
    transcript: list[tuple] = field(default_factory=list)  # TRANSCRIPT_COLUMNS
    progress: dict[str, tuple] = field(default_factory=dict)  # call id -> its latest heartbeat's transcript row
    gpu: list[tuple] = field(default_factory=list)
    controls: list[tuple] = field(default_factory=list)
    warnings: list[tuple] = field(default_factory=list)
    # in their order: (True, a score's row) or (False, a found checkpoint's row)
    checkpoints: list[tuple[bool, tuple]] = field(default_factory=list)
    # the summary delta (runner/wire/summary.py ``fold``), with the bulk kinds' usage, the latest GPU
    # figures and last_ts/last_seq; its contract as JSON with its hash
    delta: dict[str, Any] = field(default_factory=dict)
    usage_totals: tuple | None = None  # a ``result`` step's totals: they replace what the usage steps added
    live_values: list[float] = field(default_factory=list)  # live scores: the best of them may be the session's best


def batch_rows(session_id: str, records: Sequence[Record], raws: Sequence[str]) -> BatchRows:
    """The rows of ``records`` (new events of ``session_id``, in order; ``raws``: their lines)."""
    out = BatchRows(session_id)
    if not records:
        return out
    types = list(map(_TYPE, records))
    keep = list(map(not_, _whole_in_row(records, types)))
    if any(keep):
        out.events = list(map(add, map(_EVENT_KEY, compress(records, keep)), zip(compress(raws, keep))))
    delta: dict[str, Any] = {"last_ts": max(map(_TS, records)), "last_seq": max(map(_SEQ, records))}
    # transcript lines and GPU samples are nearly every event: sorted out by maps in C, in order;
    # the other kinds (a few per minute) each change the summary, in their order among themselves
    if "transcript" in types:
        transcript = list(compress(records, map(eq, types, repeat("transcript"))))
        if not _SPECIAL_KINDS.isdisjoint(map(_KIND, transcript)):
            transcript = _special_transcript(transcript, out, delta)
        out.transcript = list(map(_TRANSCRIPT_ROW, transcript))
    if "gpu" in types:
        gpu = list(compress(records, map(eq, types, repeat("gpu"))))
        out.gpu = list(map(_GPU_ROW, gpu))
        g = gpu[-1]  # the latest sample is the session's current one
        delta.update(gpu_util=g["util_pct"], gpu_mem_mb=g["mem_used_mb"], gpu_mem_total_mb=g["mem_total_mb"])
    for r in compress(records, map(not_, map(_BULK_TYPES.__contains__, types))):
        fold(delta, r)  # the summary's rules (runner/wire/summary.py); the rows they leave are kept here
        t = r["type"]
        if t == "checkpoint_found":
            out.checkpoints.append((False, (session_id, r["name"], r["seq"], r["ts"], r["budget_elapsed_s"], r["script"],
                                            r["self_reported"])))
        elif t == "checkpoint_scored":
            found = verdicts.read(r.get("verdicts"), r.get("flags"))  # a record made before typed verdicts: its flags
            out.checkpoints.append((True, (session_id, r["name"], int(r["official"]), r["seq"], r["ts"], r["budget_elapsed_s"],
                                           r["value"], r["error"], r["eval_s"],
                                           json.dumps(verdicts.records(found)) if found else None, r["seq"])))
        elif t == "control":
            out.controls.append(_CONTROL_ROW(r))
        elif t == "warning":
            out.warnings.append(_WARNING_ROW(r))
    out.live_values = delta.pop("live_values", [])
    if "contract" in delta:
        contract = delta["contract"]
        delta.update(contract=json.dumps(contract), contract_hash=contract_hash(contract))
    if "not_checked" in delta:  # a JSON list (runner/integrity/checks.py)
        delta["not_checked"] = json.dumps(delta["not_checked"])
    out.delta = delta
    return out


def _whole_in_row(records: Sequence[Record], types: list[str]) -> list[bool]:
    """Whether each event's own table holds every field of it: a kind of :data:`OWN_TABLE`, but
    not a tool's heartbeat (its row is updated in place), nor an event of another schema version
    than this onegc's. By maps in C, unless a batch holds either."""
    from runner.wire.events import SCHEMA_VERSION  # pydantic's: the store opens without it (onegc sessions' start)

    own = list(map(OWN_TABLE.__contains__, types))
    if all(map(SCHEMA_VERSION.__eq__, map(_V, records))) and "progress" not in map(_KIND, compress(records, map(
            eq, types, repeat("transcript")))):
        return own
    return [o and r["v"] == SCHEMA_VERSION and not (t == "transcript" and r["kind"] == "progress" and r["call_id"])
            for o, r, t in zip(own, records, types, strict=True)]


def _special_transcript(transcript: list[Record], out: BatchRows, delta: dict) -> list[Record]:
    """The transcript steps that are rows of their own, where some are heartbeats (``progress``, one
    row per tool call, updated in place: ``out.progress``) or usage (added to the summary, or its totals)."""
    rows = []
    for r in transcript:
        kind = r["kind"]
        if kind == "progress" and r["call_id"]:
            out.progress[r["call_id"]] = _TRANSCRIPT_ROW(r)
            continue
        rows.append(r)
        if kind == "usage":  # increments (a correction may be negative)
            for key in USAGE_COLUMNS:
                if val := r[key]:
                    delta[key] = delta.get(key, 0) + val
        elif kind == "result" and (r["tokens_in"] or r["tokens_out"] or r["cost_usd"]):
            # the session's totals replace what the increments added up to, where it has them (a
            # figure it lacks, such as cache reads, keeps its increments, in this batch or before)
            out.usage_totals = totals = tuple(r[key] for key in USAGE_COLUMNS)
            for key, total in zip(USAGE_COLUMNS, totals, strict=True):
                if total is not None:
                    delta.pop(key, None)
    return rows
