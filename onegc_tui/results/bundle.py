"""A reviewer bundle: sessions as one file (``onegc bundle``), and its verification in another home
(``onegc verify FILE.onegc``), docs/verify.md.

The bundle is a zip. ``bundle.json`` names what it holds: the home the sessions ran in (its id,
which each session's seal names too), the harness (version, git commit, every installed package's
hash: onegc_tui/results/harness.py), the study file where there is one, each task's data
checksums (the prepared data's manifest: never the data), and the snapshot objects. Under
``runs/<id>/`` are each session's record files (:data:`RECORD_FILES`) and the manifest of each of
its checkpoint snapshots; under ``objects/`` each snapshot object once, by its SHA-256, however
many checkpoints and sessions share it.

Verifying unpacks it into a home of its own (the bundle's home id; each snapshot rebuilt from its
manifest by hard links to the objects), verifies every session there against the task data
prepared in the reviewer's home (onegc_tui/results/verify.py), then builds that home's store and
prints its history matrix beside the paper's, each cell marked reproduced or not.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onegc_tui.results.harness import fingerprint, harness_label
from onegc_tui.results.verify import SessionVerify, verify_session
from runner.errors import OnegcError
from runner.scoring import seal
from runner.scoring.snapshots import MANIFEST, OBJECTS, SNAPSHOT_CKPT
from runner.wire.paths import SessionPaths, data_root

FORMAT = "onegc bundle 1"
INDEX = "bundle.json"
RECORD_FILES = ("events.jsonl", seal.SEAL, *seal.SEALED_FILES, "verdicts.jsonl")  # verdicts: a person's too
MAX_INDEX_BYTES = 64 << 20
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")


class BadBundle(OnegcError):
    """A bundle this onegc cannot read as one it wrote; the message says where."""


@dataclass(frozen=True)
class Written:
    objects: int  # snapshot objects stored
    deduplicated: int  # object references that found their object already stored
    bytes: int  # the bundle's size


def write_bundle(home: Path, sessions: list[SessionPaths], out: Path, study: tuple[str, str] | None) -> Written:
    """Write ``sessions`` of ``home`` (and the study file ``(name, text)``) as one bundle at ``out``."""
    tasks: dict[str, dict] = {}
    objects: dict[str, int] = {}
    shared = 0
    tmp = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for paths in sessions:
            sid = paths.session_id
            for name in RECORD_FILES:
                if (paths.root / name).is_file():
                    z.write(paths.root / name, f"runs/{sid}/{name}")
            for folder in sorted(paths.snapshots.iterdir()) if paths.snapshots.is_dir() else []:
                if folder.name != OBJECTS and (folder / MANIFEST).is_file():
                    z.write(folder / MANIFEST, f"runs/{sid}/snapshots/{folder.name}/{MANIFEST}")
            store = paths.snapshots / OBJECTS
            for obj in sorted(store.iterdir()) if store.is_dir() else []:
                if not DIGEST.match(obj.name):
                    continue
                if obj.name in objects:
                    shared += 1
                    continue
                objects[obj.name] = obj.stat().st_size
                z.write(obj, f"objects/{obj.name}")
            task = _task_of(paths)
            if task and task not in tasks:
                tasks[task] = _data_checksums(data_root(home) / task)
        index = {"format": FORMAT, "created": time.time(), "home": seal.home_id(home), "harness": fingerprint(),
                 "study": {"name": study[0], "file": study[1]} if study else None,
                 "sessions": [p.session_id for p in sessions], "tasks": tasks, "objects": objects}
        z.writestr(INDEX, json.dumps(index, indent=1))
    os.replace(tmp, out)
    return Written(len(objects), shared, out.stat().st_size)


def _task_of(paths: SessionPaths) -> str | None:
    """The session's task folder name (``t0_demo``), where its config names a task this onegc has."""
    from tasks import UnknownTask, get_task

    try:
        return get_task(paths.read_config().task).id
    except (OnegcError, UnknownTask):
        return None


def _data_checksums(folder: Path) -> dict:
    """A prepared task's version and the SHA-256 of each of its files (its manifest's), or why not."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        return {"version": manifest.get("version"),
                "files": {name: entry.get("sha256") for name, entry in sorted(manifest.get("files", {}).items())}}
    except (OSError, ValueError, AttributeError) as exc:
        return {"error": f"not prepared where it was bundled ({type(exc).__name__})"}


# ------------------------------------------------------------------------------------- verifying
def read_index(z: zipfile.ZipFile, where: Path) -> dict:
    try:
        info = z.getinfo(INDEX)
        if info.file_size > MAX_INDEX_BYTES:
            raise BadBundle(f"{where}: its {INDEX} is over {MAX_INDEX_BYTES >> 20} MiB")
        index = json.loads(z.read(INDEX))
    except KeyError:
        raise BadBundle(f"{where}: no {INDEX}: not a bundle onegc wrote ('onegc bundle' makes one)") from None
    except ValueError as exc:
        raise BadBundle(f"{where}: {INDEX} is not JSON ({exc})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise BadBundle(f"{where}: not a bundle of format '{FORMAT}'")
    sessions = index.get("sessions")
    if not isinstance(sessions, list) or not all(isinstance(s, str) and NAME.match(s) for s in sessions):
        raise BadBundle(f"{where}: {INDEX} names sessions that are not session ids")
    if not isinstance(index.get("objects"), dict) or not all(DIGEST.match(d) for d in index["objects"]):
        raise BadBundle(f"{where}: {INDEX} names objects that are not SHA-256 digests")
    return index


def unpack(bundle: Path, dest: Path) -> dict:
    """Unpack ``bundle`` into the home ``dest`` (made; must not hold sessions already); returns its index."""
    try:
        z = zipfile.ZipFile(bundle)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BadBundle(f"{bundle}: not a bundle ({exc})") from None
    with z:
        index = read_index(z, bundle)
        runs = dest / "runs"
        if runs.exists() and any(runs.iterdir()):
            raise OnegcError(f"{dest} holds sessions already: unpack a bundle into an empty folder")
        runs.mkdir(parents=True, exist_ok=True)
        if isinstance(index.get("home"), str):
            (dest / seal.HOME_ID).write_text(index["home"] + "\n")
        store = dest / ".objects"
        store.mkdir(exist_ok=True)
        for digest in index["objects"]:
            _extract(z, f"objects/{digest}", store / digest)
            (store / digest).chmod(0o444)
        names = set(z.namelist())
        for sid in index["sessions"]:
            root = runs / sid
            for name in RECORD_FILES:
                if f"runs/{sid}/{name}" in names:
                    _extract(z, f"runs/{sid}/{name}", root / name)
            prefix = f"runs/{sid}/snapshots/"
            labels = sorted({n[len(prefix):].split("/")[0] for n in names if n.startswith(prefix)})
            for label in labels:
                if not NAME.match(label):
                    raise BadBundle(f"{bundle}: a snapshot of {sid} named {label[:60]!r}")
                folder = root / "snapshots" / label
                _extract(z, f"{prefix}{label}/{MANIFEST}", folder / MANIFEST)
                _place(store, root / "snapshots", folder, bundle)
    return index


def _extract(z: zipfile.ZipFile, member: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with z.open(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 8 << 20)
    except KeyError:
        raise BadBundle(f"{member}: named by the bundle, missing from it") from None


def _place(store: Path, snapshots: Path, folder: Path, bundle: Path) -> None:
    """A snapshot's files, each a hard link to its object, as the runner laid them out
    (runner/scoring/snapshots.py); an object the bundle lacks stays missing, for the check to name."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        wanted = {SNAPSHOT_CKPT: manifest["checkpoint"], **manifest["files"]}
        items = [(str(rel), str(entry["sha256"])) for rel, entry in wanted.items()]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise BadBundle(f"{bundle}: {folder.name}'s snapshot manifest is not one the runner writes") from None
    for rel, digest in items:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or any(p in ("..", ".", "") for p in parts) or not DIGEST.match(digest):
            raise BadBundle(f"{bundle}: {folder.name}'s snapshot names a file {rel[:80]!r} outside itself")
        if not (store / digest).exists():
            continue
        (snapshots / OBJECTS).mkdir(exist_ok=True)
        if not (snapshots / OBJECTS / digest).exists():
            os.link(store / digest, snapshots / OBJECTS / digest)
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(store / digest, folder / rel)


def data_notes(index: dict, data: Path) -> list[str]:
    """How the reviewer's prepared data stands against the bundle's checksums, one line per task."""
    notes = []
    for task, sums in sorted((index.get("tasks") or {}).items()):
        if not isinstance(sums, dict) or "files" not in sums:
            notes.append(f"{task}: the bundle has no data checksums ({sums.get('error') if isinstance(sums, dict) else '?'})")
            continue
        here = _data_checksums(data / task)
        if "files" not in here:
            notes.append(f"{task}: not prepared here: run 'onegc prepare {task}'")
        elif here["files"] != sums["files"]:
            bad = sorted(f for f in set(sums["files"]) | set(here["files"]) if sums["files"].get(f) != here["files"].get(f))
            notes.append(f"{task}: the data prepared here differs from the bundle's ({', '.join(bad[:3])})")
        else:
            notes.append(f"{task}: data checksums match the bundle's ({len(sums['files'])} files)")
    return notes


def harness_note(index: dict) -> str:
    harness = index.get("harness")
    then: dict = harness if isinstance(harness, dict) else {}
    packages = then.get("packages")
    before: dict = packages if isinstance(packages, dict) else {}
    now = fingerprint()
    changed = sorted(k for k in set(before) | set(now["packages"]) if before.get(k) != now["packages"].get(k))
    made = f"onegc {then.get('version')} (commit {str(then.get('commit'))[:12]})"
    differ = f"; {len(changed)} installed packages differ ({', '.join(changed[:5])})" if changed else \
        "; the same installed packages"
    return f"harness: bundled with {made}, verified with {harness_label()}{differ}"


def verify_bundle(bundle: Path, data: Path, keep: Path | None, *, rescore: bool = False,
                  progress: Callable[[str], None] | None = None,
                  on_session: Callable[[SessionVerify], object] | None = None) -> tuple[list[SessionVerify], str]:
    """Unpack and verify every session of ``bundle`` against the data prepared under ``data``;
    returns what was found and the history matrix, each cell marked reproduced or not."""
    with tempfile.TemporaryDirectory(prefix="onegc-bundle-") as tmp:
        dest = keep if keep is not None else Path(tmp) / "home"
        index = unpack(bundle, dest)
        home_id = index.get("home") if isinstance(index.get("home"), str) else None
        notes = [harness_note(index), *data_notes(index, data)]
        found = []
        n = len(index["sessions"])
        for i, sid in enumerate(index["sessions"], 1):
            said = None if progress is None else (lambda m, head=f"verify {i}/{n} {sid}: ": progress(head + m))
            f = verify_session(SessionPaths(dest / "runs" / sid), home_id, data, Path(tmp) / "scratch",
                               rescore=rescore, progress=said)
            found.append(f)
            if on_session is not None:
                on_session(f)
        matrix = marked_matrix(dest, (index.get("study") or {}).get("name"))
        return found, "\n".join([*notes, "", matrix])


def marked_matrix(home: Path, study: str | None) -> str:
    """The history matrix of ``home`` (its own store, built afresh) with the paper's beside it,
    each cell marked reproduced (✓) or not (onegc_tui/results/export.py's marks)."""
    from onegc_tui.results.export import render_history
    from onegc_tui.results.matrix import build_matrix, split_demo
    from onegc_tui.store import Store
    from onegc_tui.store.reindex import rebuild
    from onegc_tui.views import monitor_data

    db = home / "onegc.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    rebuild(home, db)
    store = Store(db)
    try:
        outcomes = monitor_data.outcomes(store, study, include_demo=True)
    finally:
        store.close()
    bench, demo = split_demo(outcomes)
    matrix = build_matrix(bench, study=study or "bundle")
    demo_matrix = build_matrix(demo, study=f"{study or 'bundle'} (demo tasks)") if demo else None
    return render_history(matrix, demo_matrix, "table", include_paper=True)
