"""A session's seal (INTEGRITY.md R5): what its runner produced, fixed at its end, and the one
check of a record against it.

At the session's end, once ``session_ended`` is written and the event log closed, the runner
writes ``seal.json`` (:func:`write`): the session's identity (its id, study and the home it ran
in: :func:`home_id`), the head of its event chain and its number of lines (runner/wire/chain.py),
the SHA-256 of each file it produced (``result.json``, ``session.json``, the session's secrets, the
agent's environment), the SHA-256 of each checkpoint snapshot's manifest, and the size and time
of each snapshot object (content-addressed: its name is its SHA-256, runner/scoring/snapshots.py).
The contract is the chain's first line.

:func:`check` reads a session folder against its seal and names the first place that differs:

- ``sealed``: the chain holds from its genesis to the sealed head, and every sealed file is the
  one the runner wrote;
- ``chained``: the chain holds, and there is no seal yet (a session still running, or one whose
  runner stopped before it could seal);
- ``unchained``: a record made before the chain existed (its first line has no link): never
  read as tampered, never as verified either;
- ``tampered``: a line edited, dropped, inserted or moved, lines added or cut after the seal, a
  sealed file edited or missing, a snapshot replaced, or a folder that is not where its record
  says it was made (copied from another session, study or home).

A check is cheap by default (the chain, the small files, each snapshot's manifest; each
snapshot file must *be* its object, the same inode, or have its bytes; each object keep its
sealed size): ``onegc reindex`` and the ingest run it. ``deep`` hashes every object's bytes too,
as ``onegc verify`` does: an object edited in place at the same size is caught only there.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from runner import HARNESS_VERSION
from runner.scoring.snapshots import MANIFEST, OBJECTS, SNAPSHOT_CKPT
from runner.wire import chain
from runner.wire.paths import SessionPaths

SEAL = "seal.json"
SEAL_VERSION = 1
HOME_ID = "home_id"  # $ONEGC_HOME/home_id: this home's random id, made by the first sealed session
# the files the runner makes that every number rests on: the config, the result, the session's secrets
# (runner/integrity/canaries.py's KEY_FILE and PASSES_KEY_FILE: tests/runner/scoring/test_seal.py holds
# the names; not imported, so that the store's start-up stays without numpy) and the agent's Python
SEALED_FILES = ("session.json", "result.json", "canaries.key", "passes.key", "agent_env.txt")
MAX_SEAL_BYTES = 64 << 20  # a seal of 5 000 checkpoints is a few MiB
HASH_CHUNK = 8 << 20

State = Literal["sealed", "chained", "unchained", "tampered"]
STATES: tuple[State, ...] = ("sealed", "chained", "unchained", "tampered")


def home_id(home: Path, create: bool = False) -> str | None:
    """This home's id (``create``: made once, atomically, where there is none yet)."""
    path = home / HOME_ID
    try:
        found = path.read_text().strip()
        return found if len(found) == 32 and all(c in "0123456789abcdef" for c in found) else None
    except FileNotFoundError:
        if not create:
            return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # another runner made it first
        return home_id(home)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(16) + "\n")
    return home_id(home)


def digest(path: Path) -> str | None:
    """The SHA-256 of a file's bytes; None when there is no such file."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(HASH_CHUNK):
                h.update(chunk)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return h.hexdigest()


def write(paths: SessionPaths, head: str, lines: int, study: str | None) -> None:
    """Write ``paths``' seal (once, at the session's end, by its runner); raises OSError."""
    home = paths.root.parent.parent
    files = {name: d for name in SEALED_FILES if (d := digest(paths.root / name)) is not None}
    snapshots: dict[str, str] = {}
    objects: dict[str, int] = {}
    if paths.snapshots.is_dir():
        for folder in sorted(paths.snapshots.iterdir()):
            d = digest(folder / MANIFEST) if folder.name != OBJECTS else None
            if d is not None:
                snapshots[folder.name] = d
        store = paths.snapshots / OBJECTS
        for obj in sorted(store.iterdir()) if store.is_dir() else []:
            if not obj.name.startswith("."):
                objects[obj.name] = obj.stat().st_size
    seal = {"v": SEAL_VERSION, "session_id": paths.session_id, "study": study, "home": home_id(home, create=True),
            "harness_version": HARNESS_VERSION, "chain": {"lines": lines, "head": head}, "files": files,
            "snapshots": snapshots, "objects": objects}
    tmp = paths.root / f".{SEAL}.tmp"
    tmp.write_text(json.dumps(seal, indent=1, sort_keys=True))
    os.replace(tmp, paths.root / SEAL)


@dataclass(frozen=True)
class RecordCheck:
    """How a session's record stands against its chain and seal (module docstring)."""

    state: State
    detail: str = ""
    lines: int = 0

    @property
    def tampered(self) -> bool:
        return self.state == "tampered"

    def line(self) -> str:
        return f"{self.state}: {self.detail}" if self.detail else self.state


def check(paths: SessionPaths, home: str | None, deep: bool = False) -> RecordCheck:
    """``paths``' record against its chain and seal; ``home``: the id of the home it is read in
    (None: not checked). Never raises for what a folder holds."""
    scan = chain.scan(paths.events, paths.session_id)
    seal_path = paths.root / SEAL
    try:
        if seal_path.stat().st_size > MAX_SEAL_BYTES:
            return RecordCheck("tampered", f"{SEAL}: over {MAX_SEAL_BYTES >> 20} MiB (not the runner's)", scan.lines)
        seal: Any = json.loads(seal_path.read_bytes())
    except FileNotFoundError:
        seal = None
    except (OSError, ValueError) as exc:
        return RecordCheck("tampered", f"{SEAL}: unreadable ({str(exc)[:80]})", scan.lines)
    if not scan.chained:
        if seal is not None:
            return RecordCheck("tampered", f"events.jsonl line 1 carries no chain link, yet the folder has a {SEAL}",
                               scan.lines)
        return RecordCheck("unchained", "made before the record was chained", scan.lines)
    if scan.first_break is not None:
        return RecordCheck("tampered", f"events.jsonl line {scan.first_break} {scan.why}", scan.lines)
    if seal is None:
        if (why := _result_against_end(paths, scan.last)) is not None:
            return RecordCheck("tampered", why, scan.lines)
        return RecordCheck("chained", "not sealed (still running, or its runner stopped before sealing)", scan.lines)
    problem = _against_seal(paths, seal, scan, home, deep)
    return RecordCheck("tampered", problem, scan.lines) if problem else RecordCheck("sealed", "", scan.lines)


def _result_against_end(paths: SessionPaths, last: bytes) -> str | None:
    """Where the chain's last line is ``session_ended`` naming result.json's digest: whether the
    file is still that one (a session that ended without its seal)."""
    if b'"type":"session_ended"' not in last:
        return None
    try:
        wanted = json.loads(last).get("result_sha256")
    except (ValueError, AttributeError):
        return None
    if isinstance(wanted, str) and digest(paths.result) != wanted:
        return "result.json: edited or missing since session_ended named it"
    return None


def _against_seal(paths: SessionPaths, seal: Any, scan: chain.ChainScan, home: str | None, deep: bool) -> str | None:
    """The first place the folder differs from its seal, or None."""
    if not isinstance(seal, dict) or seal.get("v") != SEAL_VERSION:
        return f"{SEAL}: not a seal this onegc writes"
    if seal.get("session_id") != paths.session_id:
        return f"copied: the folder {paths.session_id} holds the sealed record of session {str(seal.get('session_id'))[:80]}"
    if home is not None and seal.get("home") != home:
        return (f"copied from another home: sealed in home {str(seal.get('home'))[:40]}, read in home {home} "
                f"(study {str(seal.get('study'))[:60]})")
    sealed = _dict(seal.get("chain"))
    lines, head = sealed.get("lines"), sealed.get("head")
    if scan.torn or (isinstance(lines, int) and scan.lines > lines):
        return f"events.jsonl: lines after its sealed end (line {lines}: {scan.lines} lines now)"
    if scan.lines != lines:
        return f"events.jsonl: {scan.lines} lines where {lines} were sealed (lines cut from its end)"
    if scan.head != head:
        return f"events.jsonl line {scan.lines} (its last) is not the line that was sealed (edited)"
    files = _dict(seal.get("files"))
    for name in SEALED_FILES:
        if name in files and digest(paths.root / name) != files[name]:
            what = "missing" if not (paths.root / name).exists() else "edited"
            return f"{name}: {what} since the session sealed it"
    try:
        return _snapshots(paths.snapshots, seal, deep)
    except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
        return f"snapshots: unreadable ({type(exc).__name__}: {str(exc)[:80]})"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _snapshots(root: Path, seal: dict, deep: bool) -> str | None:
    objects = _dict(seal.get("objects"))
    store = root / OBJECTS
    for name, size in sorted(objects.items()):
        obj = store / name
        try:
            st = obj.stat()
        except FileNotFoundError:
            return f"snapshots/{OBJECTS}/{name[:16]}…: missing"
        if st.st_size != size or (deep and digest(obj) != name):
            return f"snapshots/{OBJECTS}/{name[:16]}…: its bytes are not the ones stored (edited)"
    sealed = _dict(seal.get("snapshots"))
    for label, manifest_digest in sorted(sealed.items()):
        folder = root / label
        if digest(folder / MANIFEST) != manifest_digest:
            return f"snapshots/{label}/{MANIFEST}: missing or edited"
        manifest = json.loads((folder / MANIFEST).read_text())
        wanted = {SNAPSHOT_CKPT: manifest["checkpoint"], **manifest["files"]}
        for rel, entry in sorted(wanted.items()):
            path, obj = folder / rel, store / entry["sha256"]
            try:
                same = os.path.samefile(path, obj)
            except FileNotFoundError:
                return f"snapshots/{label}/{rel}: missing"
            if not same and digest(path) != entry["sha256"]:
                return f"snapshots/{label}/{rel}: replaced (its bytes are not the snapshot's)"
    return None
