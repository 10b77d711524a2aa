"""Live scoring while the agent runs: the checkpoint watcher finds each checkpoint
(runner/scoring/checkpoint_watcher.py), the score queue scores it on the selection split with the
warm live scorer (runner/scoring/score_queue.py: byte-identical snapshots once, a backlog by the
evidence at hand), and :class:`LiveScoring` keeps what
was found, when (in budget time) and how it scored. It emits ``checkpoint_found`` and
``checkpoint_scored``; the official phase after the session picks from its state
(runner/scoring/official_phase.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from runner.integrity import code_scan
from runner.scoring.checkpoint_watcher import DISCOVERY_SLACK_S, CheckpointWatcher, FoundCheckpoint
from runner.scoring.official import Candidate
from runner.scoring.score_queue import ScoreQueue
from runner.scoring.scorer import SELECTION_SPLIT, Score, SealedScorer, self_report_gap
from runner.scoring.snapshots import SNAPSHOT_CAP_BYTES
from runner.wire.jsonl import EventWriter
from runner.wire.paths import SessionPaths
from runner.wire.verdicts import Verdict, merged
from tasks import TaskSpec

LIVE_SCORE_DRAIN_S = 60.0  # after the agent stops, wait this long for live scores in flight


def checkpoint_verdicts(spec: TaskSpec, found: FoundCheckpoint, val: Score,
                        extra: tuple[Verdict, ...] = (), sealed: bool = False) -> list[Verdict]:
    """A checkpoint's verdicts: its code read from outside (runner/integrity/code_scan.py), the
    scorer's (``extra``, else the validation score's own), and a look when the agent's own
    validation figure is far better than the harness's. Under a sealed split (``sealed``) the
    agent's figures are the Ladder's answers on the public part, the best so far across the
    session by construction (runner/integrity/ladder.py), not the checkpoint's own: no look."""
    claim = None if sealed else self_report_gap(spec, found.self_reported, val.value)
    return list(merged(code_scan.verdicts(found.snapshot, found.script), extra or val.verdicts, [claim] if claim else []))


class LiveScoring:
    """The checkpoints of one session and their live scores. ``active_s``: the budget clock's active
    time, read when a checkpoint is found; ``started_at``: nothing older counts as a checkpoint;
    ``snapshot_cap_bytes``: the session's snapshot objects at most (runner/scoring/snapshots.py);
    ``max_checkpoints``: the checkpoint versions it takes at most (runner/wire/record_caps.py)."""

    def __init__(self, spec: TaskSpec, paths: SessionPaths, events: EventWriter, active_s: Callable[[], float],
                 started_at: float, snapshot_cap_bytes: int = SNAPSHOT_CAP_BYTES, max_checkpoints: int | None = None,
                 sealed: bool = False):
        self.spec = spec
        self.sealed = sealed  # the scored split is sealed: the agent's own figures are the Ladder's (checkpoint_verdicts)
        self.paths = paths
        self.events = events
        self.active_s = active_s
        self.started_at = started_at
        self.snapshot_cap_bytes = snapshot_cap_bytes
        self.max_checkpoints = max_checkpoints
        self.found: dict[str, FoundCheckpoint] = {}
        self.found_at: dict[str, float] = {}  # budget time at which each appeared
        self.live: dict[str, Score] = {}
        self.scorer: SealedScorer | None = None  # the warm live scorer, kept for the official phase
        self._lock = threading.Lock()
        self._queue: ScoreQueue | None = None
        self._watcher: CheckpointWatcher | None = None

    def start(self, scorer: SealedScorer) -> None:
        """Warm ``scorer`` and watch checkpoints/ (call from the runner's main thread: the scorer's
        sandbox dies with the thread that made it)."""
        self.scorer = scorer
        self._queue = ScoreQueue(scorer, self._on_scored, better=self.spec.better)
        self._queue.start()
        self._watcher = CheckpointWatcher(self.paths.checkpoints, self.paths.workspace, self.paths.snapshots,
                                          self._on_found, started_at=self.started_at,
                                          on_warning=lambda m: self.events.emit("warning", code="checkpoint", message=m),
                                          snapshot_cap_bytes=self.snapshot_cap_bytes,
                                          max_checkpoints=self.max_checkpoints, on_cap=self._on_cap)
        self._watcher.start()

    def stop(self, drain_s: float = LIVE_SCORE_DRAIN_S) -> None:
        """The last scan of checkpoints/, then up to ``drain_s`` for the scores in flight. The warm
        scorer is kept only when every one finished (else the queue closed it)."""
        if self._watcher is not None:
            self._watcher.stop()
            left = self._watcher.left_out()
            if left and self.max_checkpoints is not None:  # counted as any record cap is: every view shows ✂
                self.events.emit("truncated", stream="checkpoints", dropped=left, dropped_bytes=0,
                                 limit_events=self.max_checkpoints, limit_bytes=0, final=True)
        if self._queue is not None and not self._queue.close(drain_s):
            self.scorer = None

    def close(self) -> None:
        """Close the warm scorer, if there is one."""
        if self.scorer is not None:
            self.scorer.close()
            self.scorer = None

    def candidates(self) -> list[Candidate]:
        """Every checkpoint found, with its budget time and its live validation score (None if none)."""
        with self._lock:
            return [Candidate(label, self.found_at.get(label, 0.0), self.live[label].value if label in self.live else None,
                              found.self_reported, found.content) for label, found in self.found.items()]

    def first_error(self) -> str:
        """The first live scoring error, or ''."""
        with self._lock:
            return next((s.error for s in self.live.values() if s.error), "")

    def _on_cap(self, cap: int) -> None:
        self.events.emit("warning", code="checkpoint_cap",
                         message=f"the agent saved more than the session's cap of {cap} checkpoints: the ones saved "
                                 "after it are not snapshotted, scored or candidates for the official result")

    def _on_found(self, found: FoundCheckpoint) -> None:
        # budget time when the file was written, not when we got round to it; the mtime is the
        # agent's to set, so it may move a checkpoint earlier by the watcher's latency at most
        lag = min(max(0.0, found.seen_at - found.saved_at), DISCOVERY_SLACK_S)
        elapsed = max(0.0, self.active_s() - max(0.0, time.time() - found.seen_at) - lag)
        with self._lock:
            self.found[found.label] = found
            self.found_at[found.label] = elapsed
        self.events.emit("checkpoint_found", name=found.label, path=str(found.path.relative_to(self.paths.root)),
                         snapshot=str(found.snapshot.relative_to(self.paths.root)), script=found.script,
                         self_reported=found.self_reported, budget_elapsed_s=elapsed)
        assert self._queue is not None  # the watcher starts after the queue
        self._queue.put(found)

    def _on_scored(self, found: FoundCheckpoint, score: Score, same_as: str | None = None) -> None:
        with self._lock:
            self.live[found.label] = score
        self.events.emit("checkpoint_scored", name=found.label, value=score.value, error=score.error,
                         metric=self.spec.metric, split=SELECTION_SPLIT, eval_s=None if same_as else score.eval_s,
                         budget_elapsed_s=self.found_at.get(found.label, 0.0),
                         verdicts=checkpoint_verdicts(self.spec, found, score, sealed=self.sealed), same_as=same_as)
