"""A stored session scored again, by the code that scored it live, and compared with its record
(``onegc verify``, docs/verify.md).

From the record (``events.jsonl``: each ``checkpoint_found`` with its budget time, each live and
official ``checkpoint_scored``; ``result.json``; ``session.json``) it rebuilds what the session's
live scoring knew, then:

1. every checkpoint that was scored live is scored again from its stored snapshot, one fresh
   sealed child each, by the live path (:func:`runner.scoring.score_queue.live_score`); a
   checkpoint the live queue passed over, or never reached, keeps that record;
2. the official phase runs again on those scores (:class:`runner.scoring.official_phase.OfficialPhase`:
   the selection, its re-evaluations, the unofficial test-best, the val-test gap check, the
   integrity verdict), and ``result.json`` is made again (:func:`runner.scoring.result_file.result_record`);
3. the two are compared field by field, whatever the fields are (:func:`differences`): the
   task's files (the contract's ``task_hash`` against the task here), the re-derived
   ``result.json`` against the stored one, each live and official score against its
   event, and ``session_ended``'s figures against the result.

What is not re-derived is taken from the record: how the session ended, its conditions, the
budget time of each checkpoint, and the val-test gap's reference (the baseline sessions the home
held when it ran; the check itself runs again). Nothing is written into the session's folder.

The cost is bounded: never more evaluations than the session made (:class:`BoundedScorer`).
On the CPU, and on the GPU model the session used, a number matches to its last bits
(:data:`LAST_BITS`, relative: a kernel's summation order can follow its buffers' memory alignment,
which differs between two processes, so a value can move by an ulp); elsewhere it matches within
:data:`REL_TOL`. Each such difference is shown (:func:`contract`, recorded in each session's
contract).
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.integrity import canaries, selection_gap
from runner.integrity.answer_probes import probing_verdict
from runner.scoring import snapshots
from runner.scoring.checkpoint_watcher import FoundCheckpoint
from runner.scoring.live import LiveScoring
from runner.scoring.official_phase import OfficialPhase, official_device
from runner.scoring.result_file import result_record
from runner.scoring.score_queue import live_score
from runner.scoring.scorer import SELECTION_SPLIT, Score, SealedScorer, TaskJudge, WorkerPlan
from runner.wire.jsonl import EventWriter
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig
from tasks import TaskSpec, get_task

REL_TOL = 1e-3  # another device's floating point: a number matches within this, relative
LAST_BITS = 1e-12  # the same device: a number matches within this, relative (an ulp or a few; shown)
ABS_TOL = 1e-9
NOT_LIVE = "not scored live: "  # the live queue passed it over (runner/scoring/score_queue.py)
LEGACY_AFTER_BUDGET = "after the budget: "  # the error of such a record before typed verdicts
OVER_BOUND = "verify: not evaluated, the session's own number of evaluations ({n}) was reached"
RECORD_TYPES = (b'"type":"checkpoint_found"', b'"type":"checkpoint_scored"', b'"type":"session_started"',
                b'"type":"session_ended"')
MAX_RESULT_BYTES = 16 << 20
Progress = Callable[[str], None]


def contract() -> dict:
    """What a session's contract states of its reproduction (``onegc verify``)."""
    return {"exact_on": "the CPU, and the session's GPU model", "rel_tol_there": LAST_BITS, "rel_tol_elsewhere": REL_TOL}


class Unverifiable(Exception):
    """A session that cannot be scored again here (running, no data, a record that cannot be read)."""


@dataclass(frozen=True)
class Difference:
    """One place where the re-derived record differs from the stored one."""

    where: str
    recorded: Any
    rederived: Any

    def line(self) -> str:
        return f"{self.where}: recorded {_short(self.recorded)}, re-derived {_short(self.rederived)}"


@dataclass
class Rescore:
    """A session scored again: what came out, how it compares, and what it cost."""

    session_id: str
    device: str
    exact: bool
    result: dict  # the re-derived result.json
    differences: list[Difference] = field(default_factory=list)
    within_tolerance: list[Difference] = field(default_factory=list)  # rounding (LAST_BITS or REL_TOL), shown
    evaluations: int = 0
    recorded_evaluations: int = 0

    @property
    def reproduced(self) -> bool:
        return not self.differences


# ------------------------------------------------------------------------------------ the record
@dataclass
class Record:
    """What a stored session says of its scoring (read, typed and bounded: runner/wire/events.py)."""

    config: SessionConfig
    spec: TaskSpec
    contract: dict
    result: dict
    found: dict[str, Any] = field(default_factory=dict)  # label -> CheckpointFound
    live: dict[str, Any] = field(default_factory=dict)  # label -> CheckpointScored (not official)
    official: dict[str, Any] = field(default_factory=dict)  # label -> CheckpointScored (official)
    ended: Any = None  # SessionEnded

    @property
    def evaluations(self) -> int:
        """How many evaluations the session made: its live scores and its official re-evaluations."""
        live = sum(1 for e in self.live.values() if not (e.error or "").startswith(NOT_LIVE))
        official = sum(1 for e in self.official.values() if not _after_budget(e))
        return live + official


def _after_budget(event: Any) -> bool:
    """An official ``checkpoint_scored`` that records a checkpoint saved after the budget: no
    evaluation was made (its verdict ``after_budget``; a record from before typed verdicts: its error)."""
    return any(v.check == "after_budget" for v in event.verdicts) or (event.error or "").startswith(LEGACY_AFTER_BUDGET)


def read_record(paths: SessionPaths) -> Record:
    """The scoring record of a stored session; raises :class:`Unverifiable`."""
    from pydantic import ValidationError

    from runner.errors import ConfigError
    from runner.wire.events import parse_event

    try:
        config = paths.read_config()
    except ConfigError as exc:
        raise Unverifiable(str(exc)) from None
    try:
        if paths.result.stat().st_size > MAX_RESULT_BYTES:
            raise Unverifiable(f"{paths.result}: over {MAX_RESULT_BYTES >> 20} MiB (not the runner's)")
        result = json.loads(paths.result.read_bytes())
    except FileNotFoundError:
        raise Unverifiable("no result.json: the session has not ended") from None
    except (OSError, ValueError) as exc:
        raise Unverifiable(f"result.json unreadable: {exc}") from None
    if not isinstance(result, dict):
        raise Unverifiable("result.json is not a JSON object")
    from tasks import UnknownTask

    try:
        spec = get_task(config.task)
    except UnknownTask as exc:
        raise Unverifiable(str(exc)) from None
    record = Record(config, spec, {}, result)
    for n, line in _lines(paths.events):
        if not any(t in line for t in RECORD_TYPES):
            continue
        try:
            event = parse_event(line)
        except ValidationError:
            raise Unverifiable(f"events.jsonl line {n}: not an event this onegc reads") from None
        if event.type == "session_started":
            record.contract = dict(event.contract)
        elif event.type == "checkpoint_found":
            record.found[event.name] = event
        elif event.type == "checkpoint_scored":
            (record.official if event.official else record.live)[event.name] = event
        elif event.type == "session_ended":
            record.ended = event
    if record.ended is None:
        raise Unverifiable("no session_ended: the session has not ended")
    return record


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The whole lines of a log, one at a time (a flooded record in bounded memory)."""
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if line.endswith(b"\n"):
                    yield n, line
    except FileNotFoundError:
        raise Unverifiable("no events.jsonl") from None


# ---------------------------------------------------------------------------------- the scoring
class Budget:
    """The evaluations a verify may make: never more than the session made."""

    def __init__(self, allowed: int, progress: Progress | None):
        self.allowed, self.used, self.progress = allowed, 0, progress


class BoundedScorer(SealedScorer):
    """A sealed scorer that refuses an evaluation past :class:`Budget`'s allowance."""

    def __init__(self, plan: WorkerPlan, budget: Budget):
        super().__init__(plan)
        self.budget = budget

    def score(self, ckpt: Path, code: Path, splits: list[str] | None = None, probe: bool = False,
              parts: bool = False) -> dict[str, Score]:
        b = self.budget
        if b.used >= b.allowed:
            return {s: Score(None, OVER_BOUND.format(n=b.allowed)) for s in splits or [SELECTION_SPLIT]}
        b.used += 1
        if b.progress is not None:
            b.progress(f"evaluation {b.used}/{b.allowed}: {code.name} on {'+'.join(splits or [SELECTION_SPLIT])}")
        return super().score(ckpt, code, splits, probe, parts)


def devices(record: Record) -> tuple[str, str, bool]:
    """(the live device, the official device, exact): the session's devices where this machine has
    them (else the CPU), and whether its floating point is the session's (the CPU, or the GPU
    model named in the contract)."""
    gpus = record.contract.get("gpu") or []
    cuda_here = official_device("0") == "cuda"
    live = record.config.live_eval_device
    live_here = live if not live.startswith("cuda") or cuda_here else "cpu"
    official_here = official_device(record.config.gpu) if gpus else "cpu"
    exact = True
    if (record.config.gpu and gpus) or live.startswith("cuda"):
        exact = cuda_here and _gpu_name() == (gpus[0].get("name") if gpus and isinstance(gpus[0], dict) else None)
    return live_here, official_here, exact


def _gpu_name() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - no GPU here
        return None


def rescore(paths: SessionPaths, data_root: Path, scratch: Path, progress: Progress | None = None) -> Rescore:
    """Score the stored session at ``paths`` again in ``scratch`` (a folder of its own, emptied
    first) with the task data under ``data_root``, and compare; raises :class:`Unverifiable`."""
    record = read_record(paths)
    config, spec = record.config, record.spec
    data = data_root / spec.id
    from runner.wire.paths import is_prepared

    if not is_prepared(spec.id, data_root):
        raise Unverifiable(f"data for {spec.short} not prepared here: run 'onegc prepare {spec.short}'")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    live_device, official_device, exact = devices(record)
    # the session's own secrets, read, never made: the passes' order and T1's twins, and the canaries
    judge = TaskJudge(spec, data, secret=canaries.read_key(paths.root, canaries.PASSES_KEY_FILE))
    if config.scored_split == "sealed":  # its official number is its private part's (runner/integrity/split_parts.py)
        judge.cut(scratch / "scoring" / "parts")
    key = canaries.read_key(paths.root)
    kind = canaries.kind_for(spec.id)
    if kind is not None and config.plants_canaries and key is not None:
        judge.canaries = canaries.CanaryJudge(kind, key, data, spec.scored_split)
    budget = Budget(record.evaluations, progress)
    home = paths.root.parent.parent

    def make_scorer(device: str) -> SealedScorer:
        return BoundedScorer(WorkerPlan(judge=judge, inputs=scratch / "scoring" / "inputs", snapshots=paths.snapshots,
                                        private=scratch / "scoring" / device.split(":")[0], home=home,
                                        session_id=config.session_id, device=device, timeout_s=spec.eval_timeout_s),
                             budget)

    here = SessionPaths(scratch / "runs" / config.session_id)  # the phase's scratch: nothing goes into the record
    here.root.mkdir(parents=True)
    events = EventWriter(here.events, config.session_id)
    live = LiveScoring(spec, here, events, lambda: 0.0, 0.0, sealed=config.scored_split == "sealed")
    scorer = make_scorer(live_device)
    try:
        for label, found_event in record.found.items():
            found = _found(paths, found_event)
            live.found[label] = found
            live.found_at[label] = found_event.budget_elapsed_s
            recorded = record.live.get(label)
            if recorded is None:
                continue  # the session ended before its live score: none now either
            if (recorded.error or "").startswith(NOT_LIVE):
                live.live[label] = Score(None, recorded.error)
                continue
            same = live.found.get(recorded.same_as) if recorded.same_as else None
            if same is not None and same.content == found.content and recorded.same_as in live.live:
                # byte-identical to one scored before (both snapshots' bytes hashed here, not the record's
                # word): the queue gave it that one's score, and so does this
                live._on_scored(found, live.live[recorded.same_as], recorded.same_as)
                continue
            live._on_scored(found, live_score(scorer, found))  # as the live queue hands a score on
        live.scorer = scorer
        disk_full = str(record.result.get("scored_by") or "").startswith("live scoring")
        answers = record.result.get("answers")  # a sealed split's: what its answers were, and their verdict again
        probes = answers.get("probes") if isinstance(answers, dict) else None
        probing = probing_verdict(probes, spec.id) if isinstance(probes, dict) else None
        official = OfficialPhase(spec, here, config, events, make_scorer, official_device,
                                 session_verdicts=(probing,) if probing else ()).run(live, disk_full)
    finally:
        live.close()
        events.close()
    official = replace(official, val_gap=_gap_again(spec, record.result, official))
    end = record.ended
    result = result_record(config, spec, end.reason, end.detail, official, record.result.get("conditions"),
                           answers if isinstance(answers, dict) else None)
    result = json.loads(json.dumps(result))  # as the file holds it: lists, not tuples
    out = Rescore(config.session_id, official_device, exact, result, evaluations=budget.used,
                  recorded_evaluations=budget.allowed)
    rederived_events = _scored_events(here.events)
    for diff in _compare(record, result, rederived_events):
        close = _within(diff.recorded, diff.rederived, LAST_BITS if exact else REL_TOL)
        (out.within_tolerance if close else out.differences).append(diff)
    return out


def _found(paths: SessionPaths, event: Any) -> FoundCheckpoint:
    """The checkpoint a ``checkpoint_found`` names, in the stored snapshot (a path that leaves the
    session's folder is not one the runner wrote)."""
    root = paths.root.resolve()
    ckpt, snap = (root / event.path).resolve(), (root / event.snapshot).resolve()
    if not (ckpt.is_relative_to(root / "snapshots") and snap.is_relative_to(root / "snapshots")):
        raise Unverifiable(f"checkpoint {event.name[:60]}: its snapshot is outside the session's snapshots/")
    return FoundCheckpoint(name=event.name, label=event.name, path=ckpt, snapshot=snap, script=event.script,
                           self_reported=event.self_reported, saved_at=0.0, seen_at=0.0, content=_content(snap))


def _content(snap: Path) -> str | None:
    """The snapshot's content digest from its bytes as stored (None: its files are not the ones its
    manifest names, or it has none): what says two checkpoints are byte-identical here."""
    try:
        if snapshots.verify(snap):
            return None
        return snapshots.content_digest(json.loads((snap / snapshots.MANIFEST).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _gap_again(spec: TaskSpec, recorded: dict, official: Any) -> selection_gap.GapCheck | None:
    """The val-test gap check run again against the reference the session had (its home's
    baseline sessions then, or task.toml's figures)."""
    gap = recorded.get("val_test_gap")
    ref = gap.get("reference") if isinstance(gap, dict) else None
    if official.val_gap is None or not isinstance(ref, dict):
        return official.val_gap
    try:
        reference = selection_gap.GapReference(float(ref["value"]), float(ref["margin"]), str(ref["source"]),
                                               int(ref.get("n", 0)))
    except (KeyError, TypeError, ValueError):
        return official.val_gap
    return selection_gap.check(official.val, official.score, spec.direction, reference)


def _scored_events(path: Path) -> dict[tuple[str, bool], Any]:
    from runner.wire.events import parse_event

    out = {}
    for _, line in _lines(path):
        if b'"type":"checkpoint_scored"' in line:
            event: Any = parse_event(line)
            out[(event.name, event.official)] = event
    return out


def _findings(result: dict) -> dict:
    """result.json without what measures this machine's clock rather than what the session found:
    the official phase's own duration (its bound and evaluations are compared)."""
    phase = result.get("official_phase")
    if not isinstance(phase, dict):
        return result
    return {**result, "official_phase": {k: v for k, v in phase.items() if k != "took_s"}}


# the fields of a score's event that say when and where it was written, not what it found
NOT_COMPARED = frozenset({"v", "session_id", "seq", "ts", "prev", "eval_s"})


def _score_fields(event: Any) -> dict:
    """What a ``checkpoint_scored`` found, every field of it (a field added later is compared too)."""
    return json.loads(json.dumps({k: v for k, v in event.model_dump(mode="json").items() if k not in NOT_COMPARED}))


def _compare(record: Record, result: dict, rederived: dict[tuple[str, bool], Any]) -> list[Difference]:
    out = []
    if "task_hash" in record.contract:  # the task's files as the session had them, or others: said first
        out += differences(record.contract.get("task_hash"), record.spec.version_hash(), "contract.task_hash")
    out += differences(_findings(record.result), _findings(result), "result.json")
    for official, recorded in ((False, record.live), (True, record.official)):
        kind = "official" if official else "live"
        for label, event in recorded.items():
            again = rederived.get((label, official))
            if again is None:
                if not official and (event.error or "").startswith(NOT_LIVE):
                    continue
                out.append(Difference(f"{kind} score of {label}", event.value, "not evaluated"))
                continue
            out += differences(_score_fields(event), _score_fields(again), f"{kind} score of {label}")
        for (label, off), _again in rederived.items():
            if off == official and label not in recorded:
                out.append(Difference(f"{kind} score of {label}", "none", "evaluated"))
    end = record.ended
    gap = result.get("val_test_gap") or {}
    out += differences({"score": end.score, "best_checkpoint": end.best_checkpoint, "val": end.val,
                        "val_gap_flag": end.val_gap_flag},
                       {"score": result.get("value"), "best_checkpoint": result.get("checkpoint"), "val": result.get("val"),
                        "val_gap_flag": gap.get("flag") if isinstance(gap, dict) else None}, "session_ended")
    return out


def differences(recorded: Any, rederived: Any, where: str) -> list[Difference]:
    """Every leaf where ``rederived`` is not ``recorded`` (dicts by key, lists by position), exact;
    a key on one side only is a difference too, so a field added to the record is compared with
    no change here."""
    if isinstance(recorded, dict) and isinstance(rederived, dict):
        out: list[Difference] = []
        for key in list(recorded) + [k for k in rederived if k not in recorded]:
            out += differences(recorded.get(key, _ABSENT), rederived.get(key, _ABSENT), f"{where}.{key}")
        return out
    if isinstance(recorded, list) and isinstance(rederived, list):
        out = []
        for i in range(max(len(recorded), len(rederived))):
            a = recorded[i] if i < len(recorded) else _ABSENT
            b = rederived[i] if i < len(rederived) else _ABSENT
            out += differences(a, b, f"{where}[{i}]")
        return out
    if _same(recorded, rederived):
        return []
    return [Difference(where, recorded, rederived)]


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b or (_number(a) and _number(b) and a == b)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _within(a: Any, b: Any, rel_tol: float) -> bool:
    return _number(a) and _number(b) and math.isclose(a, b, rel_tol=rel_tol, abs_tol=ABS_TOL if rel_tol > LAST_BITS else 0.0)


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value) if not isinstance(value, _Absent) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
