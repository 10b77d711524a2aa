"""The code of a checkpoint, frozen: the checkpoint and the workspace's ``*.py`` copied the moment
the checkpoint appears (the agent may edit its script later; the scorer imports the snapshot).

Snapshots are content-addressed (issue 38 part 5, INTEGRITY.md R2). Each file's bytes are stored
once, as ``snapshots/objects/<sha256>`` (read-only); a checkpoint's folder ``snapshots/<label>/``
holds a hard link to the object of each of its files, at the file's own path, and a
``manifest.json`` naming every file's digest and size. So the scorer and the code scan read a
snapshot as the plain folder it always was (the sealed worker mounts ``snapshots/`` read-only),
and a file unchanged between checkpoints costs its bytes once, not once per checkpoint.

A session's objects may take at most :data:`SNAPSHOT_CAP_BYTES`, and a snapshot never leaves the
filesystem with less than :data:`FREE_FLOOR_BYTES` free (the runner's room to write the end of
its record, runner/session/diskguard.py): past either, the checkpoint is refused with
:class:`SnapshotRefused`, whose reason the watcher records (runner/scoring/checkpoint_watcher.py).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SNAPSHOT_SKIP_TOP = ("data", "checkpoints", "weights")
MAX_CODE_FILE_BYTES = 4 << 20  # a run script is kilobytes; a larger "*.py" is not code worth freezing
MAX_CODE_FILES = 2000
MAX_CODE_BYTES = 64 << 20
OPEN_UNTRUSTED = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
# A session's snapshot objects: its checkpoints (the largest honest one, a ViT-B with its head in
# fp32, is ~0.35 GiB: a save every 5-minute window of a 2-hour budget is ~8 GiB) and their code
SNAPSHOT_CAP_BYTES = 32 << 30
# A snapshot never takes the filesystem's last this-many bytes: twice the room the end of the
# record needs (runner/session/diskguard.py's 4 MiB reserve) and far above the guard's 1 MiB low
# water, so the runner's own snapshots never trip the disk guard nor take the end's room
FREE_FLOOR_BYTES = 8 << 20
OBJECTS = "objects"
MANIFEST = "manifest.json"
SNAPSHOT_CKPT = "checkpoint.pt"  # the checkpoint's own place in its snapshot
COPY_CHUNK = 8 << 20


class SnapshotRefused(Exception):
    """A checkpoint that cannot be snapshotted, and why (one line, for its warning)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class SnapshotStore:
    """The session's content-addressed objects, with its byte cap and its free-space floor; thread-safe."""

    def __init__(self, root: Path, cap_bytes: int = SNAPSHOT_CAP_BYTES, free_floor: int = FREE_FLOOR_BYTES):
        self.root = root
        self.objects = root / OBJECTS
        self.objects.mkdir(parents=True, exist_ok=True)
        self.cap_bytes = cap_bytes
        self.free_floor = free_floor
        self._lock = threading.Lock()
        self.used_bytes = sum(p.stat().st_size for p in self.objects.iterdir() if not p.name.startswith("."))
        self.deduplicated_bytes = 0  # bytes that were already stored: what content addressing saved

    def _room(self, size: int, what: str) -> None:
        """Raise :class:`SnapshotRefused` unless ``size`` more bytes fit under the cap and the floor."""
        if self.used_bytes + size > self.cap_bytes:
            raise SnapshotRefused(f"{what}: the session's snapshots would exceed their cap of "
                                  f"{self.cap_bytes / 2**20:.0f} MiB ({self.used_bytes / 2**20:.0f} MiB used)")
        try:
            st = os.statvfs(self.objects)
        except OSError:
            return
        free = st.f_bavail * st.f_frsize
        if free - size < self.free_floor:
            raise SnapshotRefused(f"{what}: it would leave under {self.free_floor >> 20} MiB free on the disk "
                                  f"({free >> 20} MiB free), the runner's room to end the session")

    def put_bytes(self, data: bytes, what: str) -> str:
        """Store ``data`` (once); returns its digest."""
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if (self.objects / digest).exists():
                self.deduplicated_bytes += len(data)
                return digest
            self._room(len(data), what)
            tmp = self.objects / f".{digest}.{threading.get_ident()}"
            try:
                tmp.write_bytes(data)
                tmp.chmod(0o444)
                os.replace(tmp, self.objects / digest)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            self.used_bytes += len(data)
        return digest

    def put_stream(self, read: Callable[[int], bytes], size: int, what: str) -> tuple[str, int]:
        """Store what ``read(n)`` returns until it returns nothing (``size`` is the expected size,
        checked against the cap first; more than that is refused too); returns ``(digest, bytes)``."""
        with self._lock:
            self._room(size, what)
        h = hashlib.sha256()
        tmp = self.objects / f".incoming.{threading.get_ident()}"
        n = 0
        try:
            with open(tmp, "wb") as out:
                while chunk := read(COPY_CHUNK):
                    n += len(chunk)
                    if n > size:
                        raise SnapshotRefused(f"{what}: it grew past {size} bytes while it was copied")
                    h.update(chunk)
                    out.write(chunk)
            digest = h.hexdigest()
            with self._lock:
                if (self.objects / digest).exists():
                    self.deduplicated_bytes += n
                    return digest, n
                self._room(n, what)
                tmp.chmod(0o444)
                os.replace(tmp, self.objects / digest)
                self.used_bytes += n
            return digest, n
        finally:
            tmp.unlink(missing_ok=True)

    def link(self, digest: str, dest: Path) -> None:
        """Place the object ``digest`` at ``dest`` (a hard link: no bytes copied)."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.link(self.objects / digest, dest)


@dataclass
class CodeSnapshot:
    saved: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: why", for a warning
    files: dict[str, dict[str, int | str]] = field(default_factory=dict)  # path -> {"sha256", "bytes"}


def snapshot_code(workspace: Path, dest: Path, store: SnapshotStore | None = None) -> CodeSnapshot:
    """Freeze the workspace's ``*.py`` (top level and packages below it) into ``dest``, each file
    through ``store`` (by default one in ``dest``'s parent folder, where the session keeps its snapshots).

    The workspace is the agent's: the walk never follows a symlink (``os.fwalk`` with ``O_NOFOLLOW``
    opens, so a link swapped in mid-walk is not followed either), takes regular files only (a FIFO
    would block, a link would read the host's files with the runner's rights) and caps sizes.
    Raises :class:`SnapshotRefused` when the store has no room for it."""
    store = store or SnapshotStore(dest.parent)
    dest.mkdir(parents=True, exist_ok=True)
    snap = CodeSnapshot()
    total = 0
    for dirpath, dirnames, filenames, dirfd in os.fwalk(workspace, follow_symlinks=False):
        rel_dir = Path(dirpath).relative_to(workspace)
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"
                       and not (rel_dir == Path(".") and d in SNAPSHOT_SKIP_TOP)]
        for name in sorted(f for f in filenames if f.endswith(".py") and not f.startswith(".")):
            rel = rel_dir / name
            if len(snap.saved) >= MAX_CODE_FILES or total >= MAX_CODE_BYTES:
                snap.skipped.append(f"{rel}: more than {MAX_CODE_FILES} files or {MAX_CODE_BYTES >> 20} MiB of code")
                return _sorted(snap)
            data = _read_code(name, dirfd, rel, snap)
            if data is None:
                continue
            digest = store.put_bytes(data, f"code {rel}")
            store.link(digest, dest / rel)
            total += len(data)
            snap.saved.append(str(rel))
            snap.files[str(rel)] = {"sha256": digest, "bytes": len(data)}
    return _sorted(snap)


def _read_code(name: str, dirfd: int, rel: Path, snap: CodeSnapshot) -> bytes | None:
    """One ``*.py`` of the workspace, or None (and why, in ``snap.skipped``)."""
    try:
        fd = os.open(name, OPEN_UNTRUSTED, dir_fd=dirfd)
    except OSError as exc:  # a symlink (ELOOP), or gone already
        if exc.errno == errno.ELOOP:
            snap.skipped.append(f"{rel}: a symbolic link (not followed)")
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            snap.skipped.append(f"{rel}: not a regular file")
            return None
        if st.st_size > MAX_CODE_FILE_BYTES:
            snap.skipped.append(f"{rel}: {st.st_size >> 20} MiB, over the {MAX_CODE_FILE_BYTES >> 20} MiB a script may have")
            return None
        return os.read(fd, MAX_CODE_FILE_BYTES + 1)
    finally:
        os.close(fd)


def _sorted(snap: CodeSnapshot) -> CodeSnapshot:
    snap.saved.sort()
    return snap


def write_manifest(dest: Path, checkpoint: tuple[str, int], code: CodeSnapshot) -> str:
    """``dest/manifest.json``: the digest and size of every file of the snapshot (its checkpoint
    first); returns the snapshot's :func:`content_digest`."""
    manifest = {"checkpoint": {"sha256": checkpoint[0], "bytes": checkpoint[1]}, "files": code.files,
                "skipped": code.skipped}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return content_digest(manifest)


def content_digest(manifest: dict) -> str:
    """One digest of what a snapshot's scoring reads: its checkpoint's bytes and every code file's
    path and bytes. Two snapshots with the same digest are byte for byte the same folder to the
    scorer, so one score stands for both (runner/scoring/score_queue.py, runner/scoring/official.py)."""
    files = {path: entry["sha256"] for path, entry in manifest["files"].items()}
    key = json.dumps({"checkpoint": manifest["checkpoint"]["sha256"], "files": files}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()


def verify(dest: Path) -> list[str]:
    """The files of a snapshot whose bytes are not the ones its manifest names (empty: it is whole)."""
    manifest = json.loads((dest / MANIFEST).read_text())
    wanted = {SNAPSHOT_CKPT: manifest["checkpoint"], **manifest["files"]}
    bad = []
    for rel, entry in wanted.items():
        path = dest / rel
        if not path.is_file() or _digest(path) != entry["sha256"]:
            bad.append(rel)
    return bad


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(COPY_CHUNK):
            h.update(chunk)
    return h.hexdigest()
