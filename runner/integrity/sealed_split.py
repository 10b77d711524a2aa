"""A sealed scored split (issue 35 part 6, issue 47; INTEGRITY.md V1, V2, V9): the default on every
task whose scored split would be in the workspace (t0, T1-T3, T7); ``--scored-split paper`` gives
the paper's workspace.

On those tasks the paper hands the agent the scored split (validation) with its targets, and
training on it can only be detected, with the power docs/benchmarks.md measures. Sealed, the
workspace holds the split's inputs without its targets (the task's ``scored_targets`` files are
withheld; on T1, whose inputs are its targets, val's text is withheld altogether), so training on
them is impossible. The agent's ``prepare.evaluate(model, "val")`` still works: its kit
(tasks/onegc_kit.py) writes the predictions to ``.sealed/<name>.npy`` in the workspace (T1: the
model itself, ``.sealed/<name>.pt``, which the runner snapshots with the workspace's code and
runs in a fresh child of the sealed scorer on the public part's windows, as it runs a checkpoint)
and waits; :class:`SealedAnswers`, in the runner, reads them as hostile bytes (a regular file, no
link, at most the judge's honest answer size, a plain numeric ``.npy``), judges them with the
task's pristine ``judge`` on the split's **public part** only (runner/integrity/split_parts.py: the
private part, where the official number is judged, is never answered), passes the figure through
the **Ladder** (runner/integrity/ladder.py: a new value only when it beats the best so far by the
task's step, rounded to that step) and writes ``<name>.json`` into a folder the sandbox shows
read-only (:data:`ANSWERS_INSIDE`). Rate-limited: at most ``sealed_answers`` requests per session
are answered (the contract records it; a refused request counts too), one at most every
:data:`SPACING_S`; past the cap requests are removed unanswered, :data:`SPENT` tells the kit so,
and the session gets one ``sealed_split`` warning. The answers folder so holds at most ``cap + 1``
files, whatever the agent sends.

What the answers can tell: at most ``log2 C(cap + G, cap)`` bits (``G`` the Ladder's grid points),
all of them about the public part (runner/integrity/ladder.py); the official number, on the private
part, gets none. An agent that asks to learn targets anyway is seen doing it
(runner/integrity/answer_probes.py: ``answer_probing``), and a model that carries what it learnt
beats the private part on the public one (``public_private_gap``).

T4-T6 need no sealing (their scored split, test, is never in the workspace: the paper's split is
sealed already).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.integrity import split_parts
from runner.integrity.answer_probes import AnswerProbes
from runner.integrity.ladder import Ladder, bits_bound
from runner.sandbox import bwrap as sandbox
from runner.wire import answer_check
from runner.wire.jsonl import EventWriter
from runner.wire.verdicts import Verdict
from tasks import TaskSpec

REQUESTS = ".sealed"  # in the workspace: the agent's predictions, one <name>.npy per request
ANSWERS_INSIDE = sandbox.INSIDE / "answers"  # where the sandbox shows runs/<id>/sealed, read-only
ANSWERS_DIR = "sealed"  # runs/<id>/sealed: the answers, the runner's own folder
SPLIT_VAR, REQUESTS_VAR, ANSWERS_VAR = "ONEGC_SEALED_SPLIT", "ONEGC_SEALED_REQUESTS", "ONEGC_SEALED_ANSWERS"
HANDS_VAR = "ONEGC_SEALED_HANDS"  # "model" where the split's inputs are its targets (onegc_kit.SEALED_HANDS_VAR)
SPACING_S = 0.2  # between two answers
POLL_S = 0.05
SCAN_LIMIT = 256  # entries of .sealed/ looked at per pass: a flood of names costs a bounded pass
# (anything there that is not a request, a hidden file being written aside, is removed as it is seen)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.(npy|pt)$")  # never "_spent"
SPENT = "_spent.json"  # in the answers: every later request goes unanswered


class CannotSeal(ValueError):
    """A task whose scored split cannot be sealed, or need not be (the message says which)."""


def check(spec: TaskSpec) -> None:
    """Nothing when ``spec``'s scored split can be sealed, else :class:`CannotSeal` naming why."""
    if spec.sealable:
        return
    raise CannotSeal(f"{spec.short}'s scored split ({spec.scored_split}) is never in the workspace: the paper's "
                     "split is sealed already; run it without --scored-split sealed")


def default_mode(spec: TaskSpec) -> str:
    """A session's scored split when none is asked for: sealed wherever it would be in the workspace."""
    return "sealed" if spec.sealable else "paper"


def ladder_for(spec: TaskSpec) -> Ladder:
    """The task's Ladder (task.toml's ``ladder_step`` and ``metric_range``)."""
    if spec.ladder_step is None or spec.metric_range is None:
        raise CannotSeal(f"{spec.short} has no ladder_step and metric_range in its task.toml: its answers cannot be bounded")
    lo, hi = spec.metric_range
    return Ladder(spec.ladder_step, lo, hi, spec.higher_is_better)


def contract(spec: TaskSpec, cap: int, parts: split_parts.Partition | None = None) -> dict:
    """The contract's ``scored_split`` of a sealed session (absent: the paper's split; read back by
    :func:`runner.wire.defaults.scored_split_sealed`): what was withheld, the cap, the public and
    private parts' sizes, and the Ladder with the bound on what a session's answers can tell."""
    ladder = ladder_for(spec)
    out = {"mode": "sealed", "split": spec.scored_split, "withheld": list(spec.scored_targets),
           "answers_cap": cap, "spacing_s": SPACING_S,
           "answers": "model" if spec.inputs_are_targets else "predictions",
           "ladder": {"step": ladder.step, "range": [ladder.lo, ladder.hi],
                      "bits_bound": round(bits_bound(cap, ladder.step, ladder.lo, ladder.hi), 1)}}
    if parts is not None:
        out["parts"] = {"public_fraction": split_parts.PUBLIC_FRACTION, "blocks": len(parts.blocks),
                        "public_rows": int(len(parts.rows(split_parts.PUBLIC))),
                        "private_rows": int(len(parts.rows(split_parts.PRIVATE)))}
    return out


def answers_dir(session_root: Path) -> Path:
    """Where the runner writes a session's answers (the sandbox shows it at :data:`ANSWERS_INSIDE`)."""
    return session_root / ANSWERS_DIR


def agent_vars(spec: TaskSpec, workspace: Path, answers_seen_at: Path) -> dict[str, str]:
    """What the agent's kit reads to ask the harness (tasks/onegc_kit.py)."""
    return {SPLIT_VAR: spec.scored_split, REQUESTS_VAR: str(workspace / REQUESTS), ANSWERS_VAR: str(answers_seen_at),
            HANDS_VAR: "model" if spec.inputs_are_targets else "predictions"}


@dataclass(frozen=True)
class Answer:
    name: str
    value: float | None  # the Ladder's
    n: int | None  # the public part's count
    error: str | None
    new: bool = False  # the Ladder gave a new value

    def record(self, left: int) -> dict:
        body = {"value": self.value, "new": self.new, "part": split_parts.PUBLIC, "n": self.n} \
            if self.error is None else {"error": self.error}
        return {"request": self.name, **body, "answers_left": left}


class Refused(Exception):
    """A request that gets a reason, not a value (the message is the reason, told to the agent)."""


# A handed-over model's predictions on the public part: (requests folder's fd, file name) -> predictions,
# or Refused (runner/scoring/handed.py, handed over by the session: integrity does not import scoring)
HandedPredict = Callable[[int, str], object]


class SealedAnswers:
    """Answers the agent's evaluation requests on the sealed split, in a thread of the runner."""

    def __init__(self, judge, split: str, workspace: Path, answers: Path, events: EventWriter, cap: int,
                 ladder: Ladder, handed: HandedPredict | None = None):
        self.judge = judge  # runner/scoring/scorer.TaskJudge: the pristine judge, its split cut (TaskJudge.cut)
        self.split = split
        self.workspace = workspace
        self.answers = answers
        self.events = events
        self.cap = cap
        self.ladder = ladder
        self.handed = handed  # where the split's inputs are its targets: the model's predictions, made apart
        self.probes = AnswerProbes()
        self.taken = 0  # requests answered, the refused included: at most ``cap``
        self.given = 0  # of which judged
        self._last = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sealed-answers", daemon=True)

    def start(self) -> SealedAnswers:
        self.answers.mkdir(parents=True, exist_ok=True)
        os.chmod(self.answers, 0o755)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def summary(self) -> dict:
        """What result.json says about the session's answers: how many, the Ladder's transcript and
        bound, and the probes' counts."""
        return {"asked": self.taken, "judged": self.given, "ladder": self.ladder.record(self.cap),
                "probes": self.probes.record()}

    def verdicts(self) -> list[Verdict]:
        """The session's verdicts about its answers (``answer_probing``)."""
        found = self.probes.verdict(self.judge.spec.id)
        return [found] if found else []

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - a hostile workspace may fail a request, never the runner
                self.events.emit("warning", code="sealed_split", message=answer_check.text(
                    f"the sealed split's answers stumbled: {type(exc).__name__}: {exc}", 300))
                self._stop.wait(1.0)

    def poll(self) -> None:
        """Answer the requests waiting now."""
        fd = self._requests_fd()
        if fd is None:
            return
        try:
            names = []
            with os.scandir(fd) as entries:
                for i, entry in enumerate(entries):
                    if i >= SCAN_LIMIT:
                        break
                    if NAME_RE.match(entry.name):
                        names.append(entry.name)
                    elif not entry.name.startswith("."):  # a request being written is hidden (.name.tmp)
                        self._remove(fd, entry.name)  # not a request: the channel is the harness's
            for name in sorted(names):
                if self.taken >= self.cap:
                    self._remove(fd, name)
                    self._spent()
                    continue
                self.taken += 1
                stem, kind = name.rsplit(".", 1)
                if (kind == "pt") != (self.handed is not None):
                    self._remove(fd, name)
                    self._answer(stem, None, "this session's evaluations send " + (
                        "the model (prepare.evaluate does)" if self.handed else "predictions (.npy)"))
                    continue
                if kind == "pt":
                    self._answer(stem, *self._handed(fd, name))
                    continue
                blob, error = self._take(fd, name)
                self._answer(stem, blob, error)
        finally:
            os.close(fd)

    def _requests_fd(self) -> int | None:
        try:
            ws = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return os.open(REQUESTS, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=ws)
        except OSError:
            return None  # not made yet, or not a folder: nothing to answer
        finally:
            os.close(ws)

    def _handed(self, fd: int, name: str) -> tuple[object | None, str | None]:
        """A handed-over model's predictions on the public part (the file removed), or why not."""
        assert self.handed is not None
        try:
            return self.handed(fd, name), None
        except Refused as exc:
            return None, answer_check.text(str(exc), 400)
        finally:
            self._remove(fd, name)

    def _take(self, fd: int, name: str) -> tuple[bytes | None, str | None]:
        """The request's bytes (then removed), or why it is refused unread."""
        limit = self.judge.answer_bytes(self.split)
        try:
            f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except OSError as exc:
            self._remove(fd, name)
            return None, f"the request could not be opened ({exc.strerror}): write a plain file"
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode):
                return None, "the request is not a plain file"
            if st.st_size > limit:
                return None, f"the request holds {st.st_size} bytes, more than predictions for {self.split} can ({limit})"
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(f, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                return None, f"the request grew past {limit} bytes while it was read"
            return b"".join(chunks), None
        finally:
            os.close(f)
            self._remove(fd, name)

    @staticmethod
    def _remove(fd: int, name: str) -> None:
        try:
            os.unlink(name, dir_fd=fd)
        except IsADirectoryError:
            try:
                os.rmdir(name, dir_fd=fd)  # an empty one; a full one stays, one slot of a pass
            except OSError:
                pass
        except OSError:
            pass

    def _spent(self) -> None:
        if (self.answers / SPENT).exists():
            return
        error = f"this session's {self.cap} answers on the sealed {self.split} split are spent"
        self.events.emit("warning", code="sealed_split", message=error)
        self._write(Answer(SPENT[: -len(".json")], None, None, error))

    def _answer(self, name: str, got: object, error: str | None) -> None:
        """Judge ``got`` (a request's bytes, or a handed model's predictions on the public part) on
        the public part, through the Ladder, and write the answer (or ``error``)."""
        value = n = None
        new = False
        if error is None and got is not None:
            wait = self._last + SPACING_S - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            kit_error = sys.modules["onegc_kit"].KitError  # the judge's refusals (the task's prepare.py imports it)
            try:
                public = self._public(got)
                figure, n = self.judge.judge(public, self.split, self.judge.part(split_parts.PUBLIC))
                self.probes.see(public)
                value, new = self.ladder.answer(figure)
                self.given += 1
            except (answer_check.InvalidAnswer, kit_error) as exc:  # the agent's predictions: told to it
                error = answer_check.text(str(exc), 400)
            except Exception as exc:  # noqa: BLE001 - whatever else the judge raises on them, told too
                error = answer_check.text(f"{type(exc).__name__}: {exc}", 400)
            self._last = time.monotonic()
        self._write(Answer(name, value, n if isinstance(n, int) else None, error, new))

    def _public(self, got: object):
        """The public part's rows of a request: a handed model's predictions are those already; a
        request's ``.npy`` holds the whole split's, checked against what the judge accepts first."""
        import numpy as np

        if isinstance(got, np.ndarray):
            return got
        assert isinstance(got, (bytes, memoryview))
        arr = answer_check.npy_array(got)
        shape, kinds = self.judge.expected(self.split)
        kit_error = sys.modules["onegc_kit"].KitError
        if tuple(arr.shape) != tuple(shape) or arr.dtype.kind not in kinds:
            raise kit_error(f"predictions must have shape {tuple(shape)} and dtype kind {kinds!r} (every row of the "
                            f"{self.split} split); got {arr.dtype} {tuple(arr.shape)}")
        return arr[self.judge.part(split_parts.PUBLIC).rows]

    def _write(self, answer: Answer) -> None:
        tmp = self.answers / f".{answer.name}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(json.dumps(answer.record(max(0, self.cap - self.taken))))
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.answers / f"{answer.name}.json")
