"""Builds a session's workspace (paper step 1) and snapshots its code when a checkpoint appears.

Workspace: ``program.md``, read-only ``prepare.py`` and ``onegc_kit.py``, ``train.py``, ``data/``
(the files the agent may see: a task's private files, the held-out labels, never enter),
``weights/`` (tasks with permitted pretrained weights), an empty ``checkpoints/`` and ``.deadline``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from tasks import KIT_FILE, TaskSpec

READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
MANIFEST = "manifest.json"


class DataNotPrepared(RuntimeError):
    pass


def prepared_dir(spec: TaskSpec, data_root: Path) -> Path:
    """The task's prepared data, or a one-line error naming the fix."""
    folder = data_root / spec.id
    if not (folder / MANIFEST).is_file():
        raise DataNotPrepared(f"data for {spec.short} not prepared: run 'onegc prepare {spec.short}'")
    return folder


def visible_files(folder: Path) -> list[str]:
    """Files of a prepared data folder that the agent may see (the manifest says which)."""
    meta = json.loads((folder / MANIFEST).read_text())
    return [name for name, info in meta["files"].items() if not info.get("private")]


def _copy_read_only(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    os.chmod(dst, READ_ONLY)


def build_workspace(spec: TaskSpec, workspace: Path, data_root: Path) -> None:
    """Lay out the workspace; fails before creating anything if the data is not prepared."""
    data = prepared_dir(spec, data_root)
    names = visible_files(data)
    weights = weights_dir(spec, data_root)
    if spec.pretrained_weights and not weights.is_dir():
        raise DataNotPrepared(f"pretrained weights for {spec.short} not fetched: run 'onegc prepare {spec.short}'")
    staging = workspace.parent / f".{workspace.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _lay_out(spec, data, names, staging, weights)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.replace(staging, workspace)


def weights_dir(spec: TaskSpec, data_root: Path) -> Path:
    """Where ``onegc prepare`` keeps a task's permitted pretrained weights (T3's DINOv3 backbones)."""
    return data_root / "_weights" / spec.id


def _lay_out(spec: TaskSpec, data: Path, names: list[str], workspace: Path, weights: Path) -> None:
    workspace.mkdir(parents=True)
    (workspace / "checkpoints").mkdir()
    _copy_read_only(spec.folder / "prepare.py", workspace / "prepare.py")
    _copy_read_only(KIT_FILE, workspace / KIT_FILE.name)
    shutil.copyfile(spec.folder / "train.py", workspace / "train.py")
    shutil.copyfile(spec.folder / "program.md", workspace / "program.md")
    dest = workspace / "data"
    dest.mkdir()
    for name in names:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_read_only(data / name, target)
    if spec.pretrained_weights:
        shutil.copytree(weights, workspace / "weights")
        for f in (workspace / "weights").rglob("*"):
            if f.is_file():
                os.chmod(f, READ_ONLY)


def snapshot_code(workspace: Path, dest: Path) -> list[str]:
    """Freeze the workspace's ``*.py`` (top level and packages below it) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    saved = []
    for path in workspace.rglob("*.py"):
        rel = path.relative_to(workspace)
        if rel.parts[0] in ("data", "checkpoints", "weights") or any(p.startswith(".") for p in rel.parts):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(path, target)
        except OSError:
            continue  # vanished while we looked: the agent deleted it
        saved.append(str(rel))
    return sorted(saved)


def write_deadline(workspace: Path, deadline: float) -> None:
    """Keep ``.deadline`` current (epoch seconds), atomically, for the agent to read."""
    tmp = workspace / ".deadline.tmp"
    tmp.write_text(f"{deadline:.3f}\n")
    os.replace(tmp, workspace / ".deadline")
