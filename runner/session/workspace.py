"""Builds a session's workspace (paper step 1) and keeps its ``.deadline``; says whether a task's
data is prepared (:func:`prepared_dir`, on :func:`runner.wire.paths.is_prepared`: the one check, for
``onegc run``, ``onegc study``, the runner, ``onegc tasks`` and ``onegc doctor``).

Workspace: ``program.md``, read-only ``prepare.py`` and ``onegc_kit.py``, ``train.py``, ``data/``
(the files the agent may see: a task's private files, the held-out labels, never enter),
``weights/`` (tasks with permitted pretrained weights), an empty ``checkpoints/`` and ``.deadline``.
A sealed scored split (runner/integrity/sealed_split.py) leaves its targets out as well.
With a canary key (runner/integrity/canaries.py), the split that holds canaries is the canaried copy;
the key itself stays in the session folder and never enters the workspace.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
from pathlib import Path

from runner.errors import OnegcError
from runner.integrity import canaries
from runner.wire.paths import MANIFEST, is_prepared
from tasks import KIT_FILE, TaskSpec

READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH


class DataNotPrepared(OnegcError, RuntimeError):
    pass


def prepared_dir(spec: TaskSpec, data_root: Path) -> Path:
    """The task's prepared data, or a one-line error naming the fix."""
    if not is_prepared(spec.id, data_root):
        raise DataNotPrepared(f"data for {spec.short} not prepared: run 'onegc prepare {spec.short}'")
    return data_root / spec.id


def visible_files(folder: Path) -> list[str]:
    """Files of a prepared data folder that the agent may see (the manifest says which)."""
    meta = json.loads((folder / MANIFEST).read_text())
    return [name for name, info in meta["files"].items() if not info.get("private")]


def _copy_read_only(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    os.chmod(dst, READ_ONLY)


def build_workspace(spec: TaskSpec, workspace: Path, data_root: Path, canary_key: str | None = None,
                    withheld: tuple[str, ...] = ()) -> None:
    """Lay out the workspace; fails before creating anything if the data is not prepared. With
    ``canary_key``, the task's canaries are planted in the agent's copy of their split; the
    ``withheld`` data files (a sealed scored split's targets) never enter."""
    data = prepared_dir(spec, data_root)
    names = [n for n in visible_files(data) if n not in withheld]
    weights = weights_dir(spec, data_root)
    if spec.pretrained_weights and not weights.is_dir():
        raise DataNotPrepared(f"pretrained weights for {spec.short} not fetched: run 'onegc prepare {spec.short}'")
    staging = workspace.parent / f".{workspace.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _lay_out(spec, data, names, staging, weights, canary_key)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.replace(staging, workspace)


def weights_dir(spec: TaskSpec, data_root: Path) -> Path:
    """Where ``onegc prepare`` keeps a task's permitted pretrained weights (T3's DINOv3 backbones)."""
    return data_root / "_weights" / spec.id


def _lay_out(spec: TaskSpec, data: Path, names: list[str], workspace: Path, weights: Path,
             canary_key: str | None) -> None:
    workspace.mkdir(parents=True)
    (workspace / "checkpoints").mkdir()
    _copy_read_only(spec.folder / "prepare.py", workspace / "prepare.py")
    _copy_read_only(KIT_FILE, workspace / KIT_FILE.name)
    shutil.copyfile(spec.folder / "train.py", workspace / "train.py")
    shutil.copyfile(spec.folder / "program.md", workspace / "program.md")
    dest = workspace / "data"
    dest.mkdir()
    kind = canaries.kind_for(spec.id) if canary_key else None
    planted = kind.files() if kind else ()
    if kind and canary_key:
        canaries.plant(kind, canary_key, data, dest)
        for name in planted:
            os.chmod(dest / name, READ_ONLY)
    for name in names:
        if name in planted:
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_read_only(data / name, target)
    if spec.pretrained_weights:
        shutil.copytree(weights, workspace / "weights")
        for f in (workspace / "weights").rglob("*"):
            if f.is_file():
                os.chmod(f, READ_ONLY)
    # readable by the agent whatever the runner's umask or the sources' modes were (the agent is
    # another uid when the runner is root): folders 0755, files at least 0444
    for path in (workspace, *workspace.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o755)
        elif path.is_file():
            os.chmod(path, os.stat(path).st_mode | READ_ONLY)


def write_deadline(workspace: Path, deadline: float) -> None:
    """Keep ``.deadline`` current (epoch seconds), atomically, for the agent to read.

    The workspace is the agent's: a fresh temporary name opened with ``O_EXCL | O_NOFOLLOW`` (a
    link planted there is never written through) and a rename that replaces whatever ``.deadline``
    is, a link included, without following it."""
    tmp = workspace / f".deadline.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, f"{deadline:.3f}\n".encode())
    finally:
        os.close(fd)
    try:
        os.replace(tmp, workspace / ".deadline")
    except OSError:  # the agent made .deadline a folder: its own clock is then its problem
        os.unlink(tmp)
