"""A sealed scored split (issue 35, part 6; INTEGRITY.md V1, V2): ``--scored-split sealed``.

On t0, T2, T3 and T7 the paper hands the agent the scored split (validation) with its targets,
and training on it can only be detected, with the power docs/benchmarks.md measures. Sealed, the
workspace holds the split's inputs without its targets (the task's ``scored_targets`` files are
withheld), so training on them is impossible. The agent's ``prepare.evaluate(model, "val")``
still works: its kit (tasks/onegc_kit.py) runs ``predict`` in the agent's process, writes the
predictions to ``.sealed/<name>.npy`` in the workspace and waits; :class:`SealedAnswers`, in the
runner, reads them as hostile bytes (a regular file, no link, at most the judge's honest answer
size, a plain numeric ``.npy``), judges them with the task's pristine ``judge`` on the pristine
targets and writes ``<name>.json`` into a folder the sandbox shows read-only
(:data:`ANSWERS_INSIDE`). Rate-limited: at most ``sealed_answers`` requests per session are
answered (the contract records it; a refused request counts too), one at most every
:data:`SPACING_S`; past the cap requests are removed unanswered, :data:`SPENT` tells the kit so,
and the session gets one ``sealed_split`` warning. The answers folder so holds at most ``cap + 1``
files, whatever the agent sends.

What an answer can leak: one metric value each, so at most ``cap × log2(n + 1)`` bits of the
split's targets (an accuracy on ``n`` items), and a model must still carry whatever an agent
learns that way (a lookup, which a code scan and the official scorer's probes look for).

T1 cannot be sealed (a language model's inputs are its targets); T4-T6 need not be (their scored
split, test, is never in the workspace: the paper's split is sealed already).
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
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox import bwrap as sandbox
from runner.wire import answer_check
from runner.wire.jsonl import EventWriter
from tasks import TaskSpec

REQUESTS = ".sealed"  # in the workspace: the agent's predictions, one <name>.npy per request
ANSWERS_INSIDE = sandbox.INSIDE / "answers"  # where the sandbox shows runs/<id>/sealed, read-only
ANSWERS_DIR = "sealed"  # runs/<id>/sealed: the answers, the runner's own folder
SPLIT_VAR, REQUESTS_VAR, ANSWERS_VAR = "ONEGC_SEALED_SPLIT", "ONEGC_SEALED_REQUESTS", "ONEGC_SEALED_ANSWERS"
SPACING_S = 0.2  # between two answers
POLL_S = 0.05
SCAN_LIMIT = 256  # entries of .sealed/ looked at per pass: a flood of names costs a bounded pass
# (anything there that is not a request, a hidden file being written aside, is removed as it is seen)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.npy$")  # never "_spent"
SPENT = "_spent.json"  # in the answers: every later request goes unanswered


class CannotSeal(ValueError):
    """A task whose scored split cannot be sealed, or need not be (the message says which)."""


def check(spec: TaskSpec) -> None:
    """Nothing when ``spec``'s scored split can be sealed, else :class:`CannotSeal` naming why."""
    if spec.scored_targets:
        return
    if spec.scored_split != "val":
        raise CannotSeal(f"{spec.short}'s scored split ({spec.scored_split}) is never in the workspace: the paper's "
                         "split is sealed already; run it without --scored-split sealed")
    raise CannotSeal(f"{spec.short}'s scored split cannot be sealed: its inputs are its targets (the text a "
                     "language model predicts); run it with the paper's split")


def contract(spec: TaskSpec, cap: int) -> dict:
    """The contract's ``scored_split`` of a sealed session (absent: the paper's split; read back by
    :func:`runner.wire.defaults.scored_split_sealed`)."""
    return {"mode": "sealed", "split": spec.scored_split, "withheld": list(spec.scored_targets),
            "answers_cap": cap, "spacing_s": SPACING_S}


def answers_dir(session_root: Path) -> Path:
    """Where the runner writes a session's answers (the sandbox shows it at :data:`ANSWERS_INSIDE`)."""
    return session_root / ANSWERS_DIR


def agent_vars(split: str, workspace: Path, answers_seen_at: Path) -> dict[str, str]:
    """What the agent's kit reads to ask the harness (tasks/onegc_kit.py)."""
    return {SPLIT_VAR: split, REQUESTS_VAR: str(workspace / REQUESTS), ANSWERS_VAR: str(answers_seen_at)}


@dataclass(frozen=True)
class Answer:
    name: str
    value: float | None
    n: int | None
    error: str | None

    def record(self, left: int) -> dict:
        body = {"value": self.value, "n": self.n} if self.error is None else {"error": self.error}
        return {"request": self.name, **body, "answers_left": left}


class SealedAnswers:
    """Answers the agent's evaluation requests on the sealed split, in a thread of the runner."""

    def __init__(self, judge, split: str, workspace: Path, answers: Path, events: EventWriter, cap: int):
        self.judge = judge  # runner/scoring/scorer.TaskJudge: the pristine judge, in this process
        self.split = split
        self.workspace = workspace
        self.answers = answers
        self.events = events
        self.cap = cap
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
                blob, error = self._take(fd, name)
                self.taken += 1
                self._answer(name[: -len(".npy")], blob, error)
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

    def _answer(self, name: str, blob: bytes | None, error: str | None) -> None:
        value = n = None
        if error is None and blob is not None:
            wait = self._last + SPACING_S - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            kit_error = sys.modules["onegc_kit"].KitError  # the judge's refusals (the task's prepare.py imports it)
            try:
                value, n = self.judge.judge(answer_check.npy_array(blob), self.split)
                self.given += 1
            except (answer_check.InvalidAnswer, kit_error) as exc:  # the agent's predictions: told to it
                error = answer_check.text(str(exc), 400)
            except Exception as exc:  # noqa: BLE001 - whatever else the judge raises on them, told too
                error = answer_check.text(f"{type(exc).__name__}: {exc}", 400)
            self._last = time.monotonic()
        self._write(Answer(name, value, n if isinstance(n, int) else None, error))

    def _write(self, answer: Answer) -> None:
        tmp = self.answers / f".{answer.name}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(json.dumps(answer.record(max(0, self.cap - self.taken))))
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.answers / f"{answer.name}.json")
