"""``onegc export --format eval``: a study as a UK AISI Inspect log, for ``inspect view``.

Built from inspect_ai's own pydantic types and written with its own writer (``write_eval_log``;
inspect_ai is the ``[inspect]`` extra, imported lazily). One log per export; in it:

- one **sample per session** (id: the session id; its configuration, task, repeat, end reason,
  time ledger and the UNOFFICIAL test-best, labelled, in the sample's metadata);
- the **transcript as events**: the model's text and thinking as model events, each tool call as
  a tool event with its result (exit code in its metadata), anything else (errors, usage notes)
  as info events, all at their recorded times;
- a **score event per scored checkpoint**, marked ``intermediate``: the live validation score as
  each checkpoint appeared, and the harness's re-evaluation on the scored split (metadata says
  which); then the **official score** as the final, non-intermediate score event and as the
  sample's ``onegc_official`` score. A session without a scorable checkpoint has no score (the
  paper's N/A), its failure in the sample's ``error``-free metadata;
- **model usage** (tokens, cache reads and writes, cost where known) per sample and in total;
- the **budget as a limit**: the active-time budget is the log's ``working_limit``, each sample's
  ``time_limit`` field holds it too, and a session that ran it out ends with a working-limit event
  and the sample's ``limit``; one ended by ``--cost-limit`` ends with a cost-limit event.

A study mixes configurations and tasks, where Inspect's log has one task and one model: the log's
task is ``onegc/<study>``, its model the sessions' model when they share one, else
``onegc/mixed``; results hold one score per configuration × task (the official mean over its
scored sessions), never a mean across tasks of different metrics. The agent's words are carried
as text, never interpreted.
"""

from __future__ import annotations

import asyncio
import math
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from onegc_tui.results.export_sqlite import MissingExtra
from onegc_tui.results.matrix import outcome_row_label
from onegc_tui.results.study_data import SessionData, StudyData
from onegc_tui.store import Store
from onegc_tui.views.outcomes import resolve_task
from onegc_tui.views.sessions_view import conditions_note, not_checked
from onegc_tui.views.task_facts import scored_split
from runner import HARNESS_VERSION
from runner.scoring.unofficial import LABEL as UNOFFICIAL_LABEL
from runner.wire.verdicts import read_json, records

EXTRA_HINT = "pip install 'onegc[inspect]' (or: pip install inspect_ai)"
SCORER = "onegc_official"
# Transcript steps of one session in its sample: Inspect holds a sample whole (in memory here, and
# in `inspect view`), so a flooded session's sample is bounded; the steps past this are counted in
# its metadata (``transcript_left_out``), and every step is in the sqlite export and events.jsonl
SAMPLE_TRANSCRIPT_ROWS = 5_000  # a real 2-hour session has a few thousand steps


def _inspect() -> dict[str, Any]:
    try:
        import inspect_ai.event as ev
        from inspect_ai import log
        from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage
        from inspect_ai.scorer import Score
    except ImportError:
        raise MissingExtra(f"the Inspect export needs inspect_ai: {EXTRA_HINT}") from None
    return {"ev": ev, "log": log, "GenerateConfig": GenerateConfig, "ModelOutput": ModelOutput,
            "ModelUsage": ModelUsage, "Score": Score}


def _when(ts: float | None) -> datetime:
    return datetime.fromtimestamp(ts if ts else 0.0, tz=UTC)


def _iso(ts: float | None) -> str | None:
    return _when(ts).isoformat() if ts else None


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def _transcript_events(i: dict[str, Any], rows: list[dict], model: str, start: float) -> list[Any]:
    ev = i["ev"]
    out: list[Any] = []
    tools: dict[str, Any] = {}
    for r in rows:
        ts, kind, text = r["ts"], r["kind"], r["text"] or ""
        common = {"timestamp": _when(ts), "working_start": max(0.0, ts - start)}
        if kind in ("text", "thinking"):
            output = i["ModelOutput"].from_content(model=model, content=text)
            out.append(ev.ModelEvent(model=model, input=[], tools=[], tool_choice="auto", config=i["GenerateConfig"](),
                                     output=output, metadata={"onegc_kind": kind, "role": r["role"]}, **common))
        elif kind == "tool_call":
            call_id = r["call_id"] or f"call-{r['seq']}"
            event = ev.ToolEvent(id=call_id, function=r["tool"] or "tool", arguments={"input": text},
                                 metadata={"seq": r["seq"]}, **common)
            tools[call_id] = event
            out.append(event)
        elif kind == "tool_result" and (r["call_id"] or "") in tools:
            event = tools.pop(r["call_id"])
            event.result = text
            event.completed = _when(ts)
            event.metadata = {**(event.metadata or {}), "exit_code": r["exit_code"]}
        else:
            out.append(ev.InfoEvent(source="onegc", data={"kind": kind, "role": r["role"], "tool": r["tool"],
                                                          "exit_code": r["exit_code"], "text": text}, **common))
    return out


def _score_events(i: dict[str, Any], s: SessionData, checkpoints: list[dict], start: float) -> list[Any]:
    ev, score_cls = i["ev"], i["Score"]
    out = []
    for c in checkpoints:
        if not _finite(c["value"]):
            continue
        what = "harness re-evaluation on the scored split" if c["official"] else "live validation score"
        ts = c["ts"] or start
        out.append(ev.ScoreEvent(score=score_cls(value=c["value"], answer=c["name"], explanation=what,
                                                 metadata={"official": bool(c["official"]),
                                                           "budget_elapsed_s": c["budget_elapsed_s"],
                                                           "verdicts": records(read_json(c.get("verdicts"),
                                                                                         c.get("flags")))}),
                                 intermediate=True, scorer=SCORER, timestamp=_when(ts),
                                 working_start=max(0.0, ts - start)))
    return out


def _sample(i: dict[str, Any], store: Store, s: SessionData, model: str) -> Any:
    log, ev = i["log"], i["ev"]
    o, row = s.outcome, s.row
    start = row.get("started_ts") or 0.0
    end = row.get("ended_ts") or start
    spec = resolve_task(o.task)
    transcript = list(store.stream_transcript(o.session_id, limit=SAMPLE_TRANSCRIPT_ROWS + 1))
    left_out = 0
    if len(transcript) > SAMPLE_TRANSCRIPT_ROWS:
        transcript.pop()
        left_out = store.conn.execute("SELECT COUNT(*) FROM transcript WHERE session_id=?",
                                      (o.session_id,)).fetchone()[0] - SAMPLE_TRANSCRIPT_ROWS
    checkpoints = store.checkpoints(o.session_id)
    events = _transcript_events(i, transcript, o.model or model, start)
    events += _score_events(i, s, checkpoints, start)
    limit = None
    if o.end_reason == "budget_exhausted":
        limit = log.EvalSampleLimit(type="working", limit=o.budget_s)
        events.append(ev.SampleLimitEvent(type="working", message=row.get("end_detail") or "budget exhausted",
                                          limit=o.budget_s, timestamp=_when(end)))
    elif o.end_reason == "cost_limit":  # --cost-limit (runner/session/cost_limit.py): what it had cost when it stopped
        limit = log.EvalSampleLimit(type="cost", limit=s.cost_usd or 0.0)
        events.append(ev.SampleLimitEvent(type="cost", message=row.get("end_detail") or "cost limit",
                                          limit=s.cost_usd, timestamp=_when(end)))
    scores = {}
    if o.score is not None and math.isfinite(o.score):
        official = i["Score"](value=o.score, answer=row.get("best_checkpoint"),
                              explanation=f"official: the val-best checkpoint's score on the "
                                          f"{spec.scored_split if spec else 'scored'} split",
                              metadata={"disqualified": o.disqualified, "record": o.record, "verified": o.verified})
        scores[SCORER] = official
        events.append(ev.ScoreEvent(score=official, intermediate=False, scorer=SCORER, timestamp=_when(end),
                                    working_start=max(0.0, end - start)))
    events.sort(key=lambda e: e.timestamp)
    usage = _usage(i, s)
    minutes = o.budget_s / 60
    prompt = f"{spec.title if spec else o.task}: {minutes:g} minute{'' if minutes == 1 else 's'} of active budget"
    return log.EvalSample(
        id=o.session_id, epoch=1, input=prompt, target="", scores=scores or None, events=events,
        model_usage={o.model or model: usage}, started_at=_iso(start), completed_at=_iso(end),
        total_time=max(0.0, end - start), working_time=o.active_s, time_limit=int(o.budget_s) or None, limit=limit,
        metadata={"configuration": outcome_row_label(o), "agent": o.agent, "task": o.task,
                  "repeat": o.repeat, "end_reason": o.end_reason, "end_detail": row.get("end_detail"),
                  "official_score": o.score, "official_split": scored_split(o.task), "disqualified": o.disqualified,
                  "flagged": o.flagged, "conditions": conditions_note(row), "contended": o.contended,
                  "not_checked": not_checked(row) if row.get("not_checked") is not None else None,
                  # its record against its chain and seal, and what onegc verify found (docs/verify.md)
                  "record": o.record, "record_detail": row.get("record_detail"), "verified": o.verified,
                  "rescore": o.rescore, "rescore_by": o.rescore_by,
                  "caps_reached": o.caps_reached,
                  "unofficial_test_best": o.unofficial_test_best, "unofficial_label": UNOFFICIAL_LABEL,
                  "budget_s": o.budget_s, "active_s": o.active_s, "contract_hash": o.contract_hash,
                  "time_ledger": s.ledger.as_dict() if s.ledger is not None else None,
                  # the agent's output the runner left out past the record's caps (runner/wire/record_caps.py),
                  # and the transcript steps this log leaves out of the sample (SAMPLE_TRANSCRIPT_ROWS)
                  "truncated": row.get("truncated") or 0, "truncated_bytes": row.get("truncated_bytes") or 0,
                  "transcript_left_out": left_out})


def _usage(i: dict[str, Any], s: SessionData) -> Any:
    row = s.row
    return i["ModelUsage"](input_tokens=row.get("tokens_in") or 0, output_tokens=row.get("tokens_out") or 0,
                           total_tokens=(row.get("tokens_in") or 0) + (row.get("tokens_out") or 0),
                           input_tokens_cache_read=row.get("cache_read") or None,
                           input_tokens_cache_write=row.get("cache_write") or None,
                           total_cost=s.cost_usd)


def _parts(i: dict[str, Any], data: StudyData) -> tuple[list[SessionData], str, Any, Any, Any]:
    """The sessions of the log, its model, and its spec, results and stats: all but the samples."""
    log = i["log"]
    sessions = [s for s in data.sessions if s.outcome.finished]
    models = {s.outcome.model for s in sessions}
    only = next(iter(models)) if len(models) == 1 else None
    model = only or "onegc/mixed"
    budgets = {s.outcome.budget_s for s in sessions}
    groups: dict[str, list[float]] = {}
    for s in sessions:
        name = f"{outcome_row_label(s.outcome)}/{s.outcome.task}"
        groups.setdefault(name, [])
        if s.outcome.succeeded and s.outcome.score is not None:
            groups[name].append(s.outcome.score)
    results = log.EvalResults(
        total_samples=len(sessions), completed_samples=len(sessions),
        scores=[log.EvalScore(name=name, scorer=SCORER, scored_samples=len(v),
                              metrics={"mean": log.EvalMetric(name="mean", value=statistics.fmean(v) if v else math.nan)})
                for name, v in sorted(groups.items())])
    usage: dict[str, Any] = {}
    for s in sessions:  # each sample's usage is its session's (as _sample gives it)
        m, u = s.outcome.model or model, _usage(i, s)
        usage[m] = usage[m] + u if m in usage else u
    starts = [float(s.row["started_ts"]) for s in sessions if s.row.get("started_ts")]
    ends = [float(s.row["ended_ts"]) for s in sessions if s.row.get("ended_ts")]
    spec = log.EvalSpec(
        created=datetime.now(tz=UTC).isoformat(), task=f"onegc/{data.study or 'all'}", model=model,
        dataset=log.EvalDataset(name=data.study or "onegc", samples=len(sessions),
                                sample_ids=[s.outcome.session_id for s in sessions]),
        config=log.EvalConfig(working_limit=int(next(iter(budgets))) if len(budgets) == 1 else None),
        metadata={"harness": f"onegc {HARNESS_VERSION}", "selection": "val-best",
                  "unofficial_test_best": UNOFFICIAL_LABEL,
                  "sample_transcript_rows": SAMPLE_TRANSCRIPT_ROWS,
                  "truncated_sessions": sum(1 for s in sessions if s.row.get("truncated"))})
    stats = log.EvalStats(started_at=_iso(min(starts)) if starts else "",
                          completed_at=_iso(max(ends)) if ends else "", model_usage=usage)
    return sessions, model, spec, results, stats


def build_log(store: Store, data: StudyData) -> Any:
    """The :class:`inspect_ai.log.EvalLog` of ``data``, every sample in memory (for a caller that
    wants the object; :func:`write_eval` streams both formats one sample at a time)."""
    i = _inspect()
    sessions, model, spec, results, stats = _parts(i, data)
    samples = [_sample(i, store, s, model) for s in sessions]
    return i["log"].EvalLog(status="success", eval=spec, results=results, samples=samples, stats=stats)


def write_eval(store: Store, data: StudyData, out: Path) -> int:
    """Write the log to ``out`` (``.json``: Inspect's JSON format; anything else: ``.eval``);
    returns the number of samples. Either is written a sample at a time (the ``.eval`` zip one
    member per sample, the ``.json`` document one array item per sample), so the export's memory
    is one session's sample whatever the study's size."""
    i = _inspect()
    fmt = "json" if out.suffix.lower() == ".json" else "eval"
    tmp = out.with_name(f".{out.stem}.tmp.{fmt}")
    tmp.unlink(missing_ok=True)
    n = _stream_json(i, store, data, tmp) if fmt == "json" else asyncio.run(_stream_eval(i, store, data, tmp))
    tmp.replace(out)
    return n


def _stream_json(i: dict[str, Any], store: Store, data: StudyData, dest: Path) -> int:
    """Inspect's JSON format (one document: the log's header fields, then ``samples``), written a
    sample at a time with Inspect's own serializer: the export's memory is one session's sample,
    as for ``.eval``. ``samples`` comes last, where Inspect's header-only reader stops."""
    from inspect_ai._util.json import to_json_safe  # what write_eval_log(format="json") serializes with

    sessions, model, spec, results, stats = _parts(i, data)
    header = to_json_safe(i["log"].EvalLog(status="success", eval=spec, results=results, stats=stats), indent=None)
    if not header.endswith(b"}") or header == b"{}":
        raise ValueError("Inspect serialized the log's header as something other than a JSON object")
    with open(dest, "wb") as out:
        out.write(header[:-1] + b',"samples":[')
        for k, s in enumerate(sessions):
            out.write((b"," if k else b"") + to_json_safe(_sample(i, store, s, model), indent=None))
        out.write(b"]}")
    return len(sessions)


async def _stream_eval(i: dict[str, Any], store: Store, data: StudyData, dest: Path) -> int:
    """Inspect's own ``.eval`` writer (what ``write_eval_log`` runs), fed one sample at a time."""
    from inspect_ai.log._condense import condense_sample  # write_eval_log's own steps, one sample at a time
    from inspect_ai.log._recorders.eval import EvalRecorder

    sessions, model, spec, results, stats = _parts(i, data)
    recorder = EvalRecorder(str(dest.parent))
    await recorder.log_init(spec, str(dest), clean=True)
    await recorder.log_start(spec, i["log"].EvalPlan())
    for s in sessions:
        await recorder.log_sample(spec, condense_sample(_sample(i, store, s, model)))
        await recorder.flush(spec)  # written out: the next sample does not wait in memory beside it
    await recorder.log_finish(spec, "success", stats, results, None)
    return len(sessions)


__all__ = ["EXTRA_HINT", "build_log", "write_eval"]
