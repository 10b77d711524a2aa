"""Checkpoint discovery, code snapshots and scoring with the pristine evaluator.

The watcher sees ``checkpoints/*.pt`` appear (watchdog, plus a periodic rescan so nothing is
missed), and at once freezes the workspace's ``*.py`` into ``snapshots/<name>-<k>/`` together
with a hard link to the checkpoint file (``save_checkpoint`` replaces files by rename, so a
later save under the same name leaves the linked version intact). The scorer runs
``python <pristine prepare.py> --eval`` in a subprocess with a timeout and returns a value or an
error that says why.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import (FileClosedEvent, FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileSystemEvent,
                             FileSystemEventHandler)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from runner.workspace import snapshot_code

SETTLE_S = 0.5  # a file written in place (not by rename) must keep its size this long
RESCAN_S = 3.0  # safety net behind the observer
SNAPSHOT_CKPT = "checkpoint.pt"


@dataclass(frozen=True)
class FoundCheckpoint:
    name: str  # file name in checkpoints/
    label: str  # unique per version: "<stem>-<k>"
    path: Path  # the frozen copy (hard link) in the snapshot
    snapshot: Path
    script: str | None
    self_reported: float | None
    saved_at: float  # the file's mtime (epoch seconds)


@dataclass(frozen=True)
class Score:
    value: float | None
    error: str | None
    eval_s: float | None = None


def is_checkpoint_file(path: Path) -> bool:
    return path.suffix == ".pt" and not path.name.startswith(".")


class CheckpointWatcher:
    """Calls ``on_found(FoundCheckpoint)`` once per new version of each checkpoint file."""

    def __init__(self, checkpoints: Path, workspace: Path, snapshots: Path,
                 on_found: Callable[[FoundCheckpoint], None], polling: bool = False):
        self.checkpoints = checkpoints
        self.workspace = workspace
        self.snapshots = snapshots
        self.on_found = on_found
        self._seen: dict[str, tuple[int, int]] = {}  # name -> (inode, mtime_ns) handled
        self._versions: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._observer = PollingObserver(timeout=1) if polling else Observer()
        handler = _Handler(self._poke)
        self._observer.schedule(handler, str(checkpoints), recursive=False,
                                event_filter=[FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent])
        self._rescan_thread = threading.Thread(target=self._rescan_loop, name="ckpt-rescan", daemon=True)

    def start(self) -> None:
        # import torch now, off the main thread, so the first checkpoint is not held up by it
        threading.Thread(target=lambda: __import__("torch"), name="torch-import", daemon=True).start()
        self._observer.start()
        self._rescan_thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._observer.stop()
        self._observer.join(timeout=5)
        self.scan()  # whatever landed in the last moments

    def _poke(self) -> None:
        self.scan()

    def _rescan_loop(self) -> None:
        while not self._stop.wait(RESCAN_S):
            self.scan()

    def scan(self) -> None:
        with self._lock:
            try:
                entries = sorted(self.checkpoints.iterdir(), key=lambda p: p.stat().st_mtime_ns)
            except (FileNotFoundError, OSError):
                return
            for path in entries:
                if is_checkpoint_file(path):
                    self._consider(path)

    def _consider(self, path: Path) -> None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return
        key = (st.st_ino, st.st_mtime_ns)
        if self._seen.get(path.name) == key:
            return
        if not _settled(path, st):
            return  # written in place and still growing; the next scan takes it
        self._seen[path.name] = key
        k = self._versions.get(path.name, 0) + 1
        self._versions[path.name] = k
        label = f"{path.stem}-{k}"
        snap = self.snapshots / label
        snapshot_code(self.workspace, snap)
        frozen = snap / SNAPSHOT_CKPT
        try:
            os.link(path, frozen)
        except OSError:
            try:
                shutil.copyfile(path, frozen)
            except FileNotFoundError:
                return
        script, reported = _peek(frozen)
        self.on_found(FoundCheckpoint(path.name, label, frozen, snap, script, reported, st.st_mtime))


def _settled(path: Path, st: os.stat_result) -> bool:
    import time

    if time.time() - st.st_mtime >= SETTLE_S:
        return True
    time.sleep(SETTLE_S)
    try:
        return path.stat().st_size == st.st_size
    except FileNotFoundError:
        return False


def _peek(path: Path) -> tuple[str | None, float | None]:
    """The script name and self-reported score stored in a checkpoint, if readable."""
    try:
        import torch

        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        score = data.get("score")
        return data.get("script"), (float(score) if score is not None else None)
    except Exception:
        return None, None


class _Handler(FileSystemEventHandler):
    def __init__(self, poke: Callable[[], None]):
        self.poke = poke

    def on_any_event(self, event: FileSystemEvent) -> None:
        target = Path(getattr(event, "dest_path", "") or event.src_path)
        if not event.is_directory and is_checkpoint_file(target):
            self.poke()


class Scorer:
    """Scores checkpoints one at a time with the pristine ``prepare.py``."""

    def __init__(self, prepare_py: Path, data_dir: Path, split: str, timeout_s: float, device: str = "cpu"):
        self.prepare_py = prepare_py
        self.data_dir = data_dir
        self.split = split
        self.timeout_s = timeout_s
        self.device = device
        self.current: subprocess.Popen | None = None

    def score(self, ckpt: Path, code: Path) -> Score:
        argv = [sys.executable, str(self.prepare_py), "--eval", str(ckpt), "--code", str(code),
                "--split", self.split, "--data-dir", str(self.data_dir), "--device", self.device]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        try:
            self.current = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                            cwd=code, text=True, preexec_fn=lambda: os.nice(5))
            out, err = self.current.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            self.current.kill()
            self.current.communicate()
            return Score(None, f"evaluation timed out after {self.timeout_s:.0f} s")
        except OSError as exc:
            return Score(None, f"could not start the evaluator: {exc}")
        finally:
            self.current = None
        for line in reversed(out.strip().splitlines()):
            try:
                result = json.loads(line)
            except json.JSONDecodeError:
                continue
            if result.get("ok"):
                return Score(float(result["value"]), None, result.get("eval_s"))
            return Score(None, str(result.get("error", "unknown error")))
        tail = (err or out).strip().splitlines()[-1:] or ["no output"]
        return Score(None, f"evaluator crashed: {tail[0][:300]}")


class LiveScorer(Scorer):
    """Keeps one ``prepare.py --serve`` process per session: torch is imported once, so a
    checkpoint scores in a fraction of a second. A request past its timeout kills the server;
    the next request starts a fresh one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.server: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        argv = [sys.executable, str(self.prepare_py), "--serve", "--data-dir", str(self.data_dir), "--device", self.device]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, text=True, bufsize=1, preexec_fn=lambda: os.nice(5))

    def score(self, ckpt: Path, code: Path) -> Score:
        import selectors

        if self.server is None or self.server.poll() is not None:
            try:
                self.server = self._start()
            except OSError as exc:
                return Score(None, f"could not start the evaluator: {exc}")
        self.current = self.server
        try:
            self.server.stdin.write(json.dumps({"ckpt": str(ckpt), "code": str(code), "split": self.split}) + "\n")
            self.server.stdin.flush()
            with selectors.DefaultSelector() as sel:
                sel.register(self.server.stdout, selectors.EVENT_READ)
                ready = sel.select(timeout=self.timeout_s)
            line = self.server.stdout.readline() if ready else None
        except (BrokenPipeError, OSError, ValueError):
            line = ""
        finally:
            self.current = None
        if line is None:
            self.close()
            return Score(None, f"evaluation timed out after {self.timeout_s:.0f} s")
        try:
            result = json.loads(line)
        except json.JSONDecodeError:
            self.close()
            return Score(None, "evaluator crashed (no answer); see the checkpoint's script for import-time side effects")
        if result.get("ok"):
            return Score(float(result["value"]), None, result.get("eval_s"))
        return Score(None, str(result.get("error", "unknown error")))

    def close(self) -> None:
        if self.server is not None:
            try:
                self.server.kill()
                self.server.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.server = None


class ScoreQueue:
    """A worker thread that scores found checkpoints in arrival order."""

    def __init__(self, scorer: Scorer, on_scored: Callable[[FoundCheckpoint, Score], None]):
        self.scorer = scorer
        self.on_scored = on_scored
        self._queue: queue.Queue[FoundCheckpoint | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="scorer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, found: FoundCheckpoint) -> None:
        self._queue.put(found)

    def close(self, wait_s: float) -> None:
        """Let queued work finish for up to ``wait_s``, then give up on the rest."""
        self._queue.put(None)
        self._thread.join(timeout=wait_s)
        if self._thread.is_alive() and self.scorer.current is not None:
            self.scorer.current.kill()
            self._thread.join(timeout=5)
        if isinstance(self.scorer, LiveScorer):
            self.scorer.close()

    def _run(self) -> None:
        while (found := self._queue.get()) is not None:
            self.on_scored(found, self.scorer.score(found.path, found.snapshot))
