"""The code of a checkpoint, frozen: the workspace's ``*.py`` copied the moment a checkpoint appears
(the agent may edit its script later; the scorer imports the snapshot)."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

SNAPSHOT_SKIP_TOP = ("data", "checkpoints", "weights")
MAX_CODE_FILE_BYTES = 4 << 20  # a run script is kilobytes; a larger "*.py" is not code worth freezing
MAX_CODE_FILES = 2000
MAX_CODE_BYTES = 64 << 20
OPEN_UNTRUSTED = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


@dataclass
class CodeSnapshot:
    saved: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: why", for a warning


def snapshot_code(workspace: Path, dest: Path) -> CodeSnapshot:
    """Freeze the workspace's ``*.py`` (top level and packages below it) into ``dest``.

    The workspace is the agent's: the walk never follows a symlink (``os.fwalk`` with ``O_NOFOLLOW``
    opens, so a link swapped in mid-walk is not followed either), takes regular files only (a FIFO
    would block, a link would read the host's files with the runner's rights) and caps sizes."""
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
                return snap
            try:
                fd = os.open(name, OPEN_UNTRUSTED, dir_fd=dirfd)
            except OSError as exc:  # a symlink (ELOOP), or gone already
                if exc.errno == errno.ELOOP:
                    snap.skipped.append(f"{rel}: a symbolic link (not followed)")
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    snap.skipped.append(f"{rel}: not a regular file")
                    continue
                if st.st_size > MAX_CODE_FILE_BYTES:
                    snap.skipped.append(f"{rel}: {st.st_size >> 20} MiB, "
                                        f"over the {MAX_CODE_FILE_BYTES >> 20} MiB a script may have")
                    continue
                data = os.read(fd, MAX_CODE_FILE_BYTES + 1)
            finally:
                os.close(fd)
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            total += len(data)
            snap.saved.append(str(rel))
    snap.saved.sort()
    return snap
