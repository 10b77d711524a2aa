"""Checkpoint discovery, code snapshots and scoring with the pristine evaluator.

The watcher sees ``checkpoints/*.pt`` appear (watchdog, plus a periodic rescan so nothing is
missed), and at once copies the checkpoint and freezes the workspace's ``*.py`` into
``snapshots/<name>-<k>/`` (each version its own snapshot: a later save under the same name, or an
edit of the file in place, leaves the frozen one intact; their bytes are stored once, by content,
runner/scoring/snapshots.py). A checkpoint that cannot be snapshotted (the session's snapshot cap,
the disk's floor, an error) is reported by a warning naming it and why, never skipped silently. :class:`ScoreQueue` scores them in
order with the sealed scorer (runner/scoring/scorer.py).
"""

from __future__ import annotations

import errno
import os
import queue
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from runner.scoring.official import WINDOW_S
from runner.scoring.scorer import SELECTION_SPLIT, Score, SealedScorer
from runner.scoring.snapshots import (
    OPEN_UNTRUSTED,
    SNAPSHOT_CAP_BYTES,
    SNAPSHOT_CKPT,
    SnapshotRefused,
    SnapshotStore,
    snapshot_code,
    write_manifest,
)
from runner.wire.untrusted import NAME_LIMIT, Untrusted, file_name, optional_number, optional_text

SETTLE_S = 0.5  # a file written in place (not by rename) must keep its size this long
RESCAN_S = 3.0  # safety net behind the observer
# The largest honest checkpoint of these tasks (a ViT-B backbone with its head, fp32) is well
# under 1 GiB; a file this size is refused rather than copied (disk, and the copy's time).
MAX_CHECKPOINT_BYTES = 16 << 30
# A checkpoint's budget time is when the runner first saw it; its mtime (which the agent sets)
# may move it earlier by at most the time the watcher can take to notice a file.
DISCOVERY_SLACK_S = RESCAN_S + SETTLE_S + 1.0
# "Dated before the session" allows for the wall clock stepping back (seen here: by 27 s): an
# honest new file must never be refused, and a stolen one is minutes or hours old.
PREDATES_SLACK_S = 600.0
MAX_LIVE_BACKLOG = 4  # checkpoints waiting for the live scorer before the backlog is thinned (ScoreQueue)


@dataclass(frozen=True)
class FoundCheckpoint:
    name: str  # file name in checkpoints/
    label: str  # unique per version: "<stem>-<k>"
    path: Path  # the runner's own copy in the snapshot
    snapshot: Path
    script: str | None
    self_reported: float | None
    saved_at: float  # the file's mtime (epoch seconds): the agent's claim, bounded by DISCOVERY_SLACK_S
    seen_at: float  # when the runner copied it (epoch seconds)


def is_checkpoint_file(path: Path) -> bool:
    return path.suffix == ".pt" and not path.name.startswith(".")


class _Unsettled(Exception):
    """The file changed while it was copied: the next scan takes it."""


class CheckpointWatcher:
    """Calls ``on_found(FoundCheckpoint)`` once per new version of each checkpoint file.

    ``checkpoints/`` is the agent's and is read as untrusted input: the folder is opened without
    following a symlink, only regular files with one link are taken (never a FIFO, device, socket
    or folder named ``*.pt``), none dated before the session began, none over
    :data:`MAX_CHECKPOINT_BYTES`; each is copied (not linked: the agent could rewrite a shared
    inode after it was scored) from one descriptor that was checked before and after the copy.
    What is refused is reported once through ``on_warning``.

    ``max_checkpoints``: the versions it takes or refuses at most (runner/wire/record_caps.py;
    a refused file is remembered, and warned about, like a taken one). Past it, ``on_cap`` is
    called once and the watcher stops scanning: nothing more is snapshotted, found or scored,
    and its memory stops growing whatever the agent saves; :meth:`left_out` counts, at the end,
    the checkpoint files it did not take.
    """

    def __init__(self, checkpoints: Path, workspace: Path, snapshots: Path,
                 on_found: Callable[[FoundCheckpoint], None], polling: bool = False,
                 on_warning: Callable[[str], object] | None = None, started_at: float | None = None,
                 snapshot_cap_bytes: int = SNAPSHOT_CAP_BYTES, max_checkpoints: int | None = None,
                 on_cap: Callable[[int], object] | None = None):
        self.checkpoints = checkpoints
        self.max_checkpoints = max_checkpoints
        self.on_cap = on_cap or (lambda _n: None)
        self.taken = 0  # checkpoint versions snapshotted and handed on
        self.refused = 0  # versions refused (a hard link, too large, predating the session)
        self.capped = False
        self.workspace = workspace
        self.snapshots = snapshots
        self.store = SnapshotStore(snapshots, snapshot_cap_bytes)
        self.on_found = on_found
        self.on_warning = on_warning or (lambda _m: None)
        self.started_at = started_at if started_at is not None else time.time()
        self._seen: dict[str, tuple[int, int, int]] = {}  # name -> (inode, mtime_ns, size) handled
        self._versions: dict[str, int] = {}
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._observer = PollingObserver(timeout=1) if polling else Observer()
        self._complete: dict[str, tuple[int, int]] = {}  # name -> (inode, mtime_ns) renamed in or closed after writing
        handler = _Handler(self._poke, self._mark_complete)
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

    def _mark_complete(self, name: str) -> None:
        """A rename into checkpoints/ (save_checkpoint's) or a close after writing: the file is whole."""
        try:
            st = os.stat(self.checkpoints / name, follow_symlinks=False)
        except OSError:
            return
        self._complete[name] = (st.st_ino, st.st_mtime_ns)

    def _rescan_loop(self) -> None:
        while not self._stop.wait(RESCAN_S):
            self.scan()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.on_warning(message)

    def scan(self) -> None:
        """One pass over ``checkpoints/``; never raises (a hostile entry must not stop the watcher)."""
        with self._lock:
            try:
                self._scan()
            except Exception as exc:  # noqa: BLE001 - reported, and the next pass tries again
                self._warn_once(f"scan:{type(exc).__name__}", f"checkpoint scan failed: {type(exc).__name__}: {exc}")

    def _scan(self) -> None:
        if self.capped:
            return
        try:
            dfd = os.open(self.checkpoints, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self._warn_once("dir", "workspace/checkpoints is not a folder (a symbolic link?): not followed; "
                                       "checkpoints are read from a real folder only")
                return
            raise
        try:
            entries = []
            with os.scandir(dfd) as it:
                for entry in it:
                    if not is_checkpoint_file(Path(entry.name)):
                        continue
                    try:
                        file_name(entry.name)  # the name goes into the record: it must be text
                    except Untrusted as exc:
                        self._warn_once(f"name:{entry.inode()}", f"checkpoints/ holds {exc}: skipped; "
                                                                 "name checkpoints in UTF-8")
                        continue
                    st = entry.stat(follow_symlinks=False)
                    if not stat.S_ISREG(st.st_mode):
                        kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode)
                                else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file")
                        self._warn_once(f"kind:{entry.name}:{st.st_ino}", f"checkpoints/{entry.name} is {kind}: skipped")
                        continue
                    entries.append((st.st_mtime_ns, entry.name, st))
            for _, name, st in sorted(entries):
                self._consider(dfd, name, st)
        finally:
            os.close(dfd)

    def _consider(self, dfd: int, name: str, st: os.stat_result) -> None:
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._seen.get(name) == key:
            return
        if self._at_cap():
            return
        refused = self._refusal(name, st)
        if refused:
            self.refused += 1
            self._seen[name] = key
            self._warn_once(f"refused:{name}:{key}", f"checkpoints/{name} {refused}: skipped")
            return
        whole = self._complete.get(name) == (st.st_ino, st.st_mtime_ns)
        if not whole and not _settled(dfd, name, st):
            return  # written in place and still growing; the next scan takes it
        if self._at_cap():
            return
        k = self._versions.get(name, 0) + 1
        label = f"{Path(name).stem}-{k}"
        snap = self.snapshots / label
        snap.mkdir(parents=True, exist_ok=True)
        frozen = snap / SNAPSHOT_CKPT
        try:
            stored = _copy_untrusted(dfd, name, st, self.store)
            self.store.link(stored[0], frozen)
            code = snapshot_code(self.workspace, snap, self.store)
            write_manifest(snap, stored, code)
        except (_Unsettled, FileNotFoundError):
            shutil.rmtree(snap, ignore_errors=True)
            return
        except (SnapshotRefused, OSError) as exc:  # no half-made snapshot stays to take what room is left
            shutil.rmtree(snap, ignore_errors=True)
            self._seen[name] = key  # tried again only once the agent saves it anew
            why = exc.reason if isinstance(exc, SnapshotRefused) else f"{type(exc).__name__}: {exc}"
            self.on_warning(f"checkpoints/{name} was not snapshotted, so it is not scored: {why}"[:2000])
            return
        self._seen[name] = key
        self._versions[name] = k
        self.taken += 1
        if code.skipped:
            self.on_warning(f"snapshot {label}: left out " + "; ".join(code.skipped[:5])
                            + (f" (+{len(code.skipped) - 5} more)" if len(code.skipped) > 5 else ""))
        script, reported = _peek(frozen)
        self.on_found(FoundCheckpoint(name, label, frozen, snap, script, reported, st.st_mtime, time.time()))

    def _at_cap(self) -> bool:
        if self.max_checkpoints is None or self.taken + self.refused < self.max_checkpoints:
            return False
        if not self.capped:
            self.capped = True
            self.on_cap(self.max_checkpoints)
        return True

    def left_out(self) -> int:
        """The checkpoint files in ``checkpoints/`` now that were not taken past the cap (a version
        taken counts once; one saved past the cap and deleted since is not seen): 0 below the cap.
        One pass over the folder, counted as it goes."""
        if not self.capped:
            return 0
        n = 0
        try:
            with os.scandir(self.checkpoints) as it:
                for entry in it:
                    if not is_checkpoint_file(Path(entry.name)) or not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat(follow_symlinks=False)
                    n += self._seen.get(entry.name) != (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            pass
        return n

    def _refusal(self, name: str, st: os.stat_result) -> str | None:
        if st.st_size > MAX_CHECKPOINT_BYTES:
            return f"is {st.st_size / 2**30:.1f} GiB, over the {MAX_CHECKPOINT_BYTES >> 30} GiB a checkpoint may have"
        if st.st_nlink != 1:
            return f"has {st.st_nlink} hard links: a checkpoint must be a file of its own (save it with prepare.save_checkpoint)"
        if st.st_mtime < self.started_at - PREDATES_SLACK_S:
            return "is dated before this session began: not this session's checkpoint"
        return None


def _settled(dfd: int, name: str, st: os.stat_result) -> bool:
    if time.time() - st.st_mtime >= SETTLE_S:
        return True
    time.sleep(SETTLE_S)
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False).st_size == st.st_size
    except FileNotFoundError:
        return False


def _copy_untrusted(dfd: int, name: str, st: os.stat_result, store: SnapshotStore) -> tuple[str, int]:
    """Store the regular file ``name`` that ``st`` describes, from one descriptor; returns its
    ``(digest, bytes)``; raises :class:`_Unsettled` if it is not that file any more or changed
    while it was read."""
    fd = os.open(name, OPEN_UNTRUSTED, dir_fd=dfd)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode) or before.st_ino != st.st_ino:
            raise _Unsettled(name)
        try:
            stored = store.put_stream(lambda n: os.read(fd, n), min(before.st_size, MAX_CHECKPOINT_BYTES),
                                      f"checkpoints/{name}")
        except SnapshotRefused:
            if os.fstat(fd).st_size != before.st_size:
                raise _Unsettled(name) from None  # still being written: taken when it is whole
            raise
        after = os.fstat(fd)
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            raise _Unsettled(name)
        return stored
    finally:
        os.close(fd)


def _peek(path: Path) -> tuple[str | None, float | None]:
    """The script name and self-reported score stored in a checkpoint, where each is readable and
    of its type (a text name, a finite number); whatever is not is left out (the scorer, which
    reads the same file, says what is wrong with it)."""
    try:
        import torch

        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - not a checkpoint torch can read: the scorer's error says so
        return None, None
    if not isinstance(data, dict):
        return None, None
    try:
        script = optional_text(data.get("script"), "script", NAME_LIMIT)
    except Untrusted:
        script = None
    try:
        score = optional_number(data.get("score"), "score")
    except Untrusted:
        score = None
    return script, score


class _Handler(FileSystemEventHandler):
    def __init__(self, poke: Callable[[], None], complete: Callable[[str], None]):
        self.poke = poke
        self.complete = complete

    def on_any_event(self, event: FileSystemEvent) -> None:
        target = Path(os.fsdecode(getattr(event, "dest_path", "") or event.src_path))
        if not event.is_directory and is_checkpoint_file(target):
            if isinstance(event, (FileMovedEvent, FileClosedEvent)):
                self.complete(target.name)  # no need to wait SETTLE_S for it to stop growing
            self.poke()


class ScoreQueue:
    """A worker thread that scores found checkpoints in arrival order (the scorer warmed first).

    A scorer that falls behind (a checkpoint flood: INTEGRITY.md R2) does not let its backlog grow:
    when more than :data:`MAX_LIVE_BACKLOG` wait, only the newest of each 5-minute window (by
    ``window_of``) stays queued, and each one passed over is reported at once as a live score with
    its reason (no value: the official phase may still re-evaluate it, within its bounds,
    runner/scoring/official.py)."""

    def __init__(self, scorer: SealedScorer, on_scored: Callable[[FoundCheckpoint, Score], None],
                 window_of: Callable[[FoundCheckpoint], int] | None = None):
        self.scorer = scorer
        self.on_scored = on_scored
        started = time.time()
        self.window_of = window_of or (lambda f: int((f.seen_at - started) // WINDOW_S))
        self.skipped = 0
        self._queue: queue.Queue[FoundCheckpoint | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="scorer", daemon=True)

    def start(self) -> None:
        self.scorer.launch()  # from the caller's (long-lived) thread: the worker dies with the thread that made it
        self._thread.start()

    def put(self, found: FoundCheckpoint) -> None:
        self._queue.put(found)

    def close(self, wait_s: float) -> bool:
        """Let queued work finish for up to ``wait_s``, then give up on the rest; True when all
        finished (the scorer is then left running, for the official phase to reuse)."""
        self._queue.put(None)
        self._thread.join(timeout=wait_s)
        if not self._thread.is_alive():
            return True
        self.scorer.close()  # a checkpoint still being scored fails, and the thread ends
        self._thread.join(timeout=5)
        return False

    def _next(self) -> FoundCheckpoint | None:
        """The next checkpoint to score (None: closed), the backlog thinned first where it is too long."""
        first = self._queue.get()
        if first is None or self._queue.qsize() < MAX_LIVE_BACKLOG:
            return first
        waiting: list[FoundCheckpoint] = [first]
        closed = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                closed = True
                break
            waiting.append(item)
        newest = {self.window_of(f): f for f in waiting}  # arrival order: the last of each window wins
        kept = [f for f in waiting if newest[self.window_of(f)] is f]
        for f in waiting:
            if newest[self.window_of(f)] is not f:
                self.skipped += 1
                self.on_scored(f, Score(None, f"not scored live: {len(waiting)} checkpoints waited for the live scorer; "
                                              "the newest of each 5-minute window was kept"))
        for f in kept[1:]:
            self._queue.put(f)
        if closed:
            self._queue.put(None)
        return kept[0]

    def _run(self) -> None:
        while (found := self._next()) is not None:
            self.on_scored(found, live_score(self.scorer, found))


def live_score(scorer: SealedScorer, found: FoundCheckpoint) -> Score:
    """A checkpoint's live score: its trusted validation score (which ranks checkpoints) from one
    fresh child of ``scorer``; the queue's, and ``onegc verify``'s when it scores a stored session
    again (runner/scoring/rescore.py). Never raises: a failure is that checkpoint's error
    (SealedScorer.score); probed where validation is the scored split (T1): a live score that
    reads ahead is an error too."""
    return scorer.score(found.path, found.snapshot, [SELECTION_SPLIT], probe=True)[SELECTION_SPLIT]
