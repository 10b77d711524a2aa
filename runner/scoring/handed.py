"""Models that the agent's evaluations hand over on a sealed split whose inputs are its targets (T1,
issue 47): val's text is not in the workspace, so ``prepare.evaluate(model, "val")`` writes the
model itself to ``.sealed/<name>.pt`` (onegc_kit.ask_harness_model), and the harness runs it as it
runs a checkpoint.

:class:`HandedModels` takes one request from the agent's folder as it takes a checkpoint (a regular
file with one link, copied from one descriptor checked before and after, at most
:data:`runner.scoring.checkpoint_watcher.MAX_CHECKPOINT_BYTES`), freezes the workspace's ``*.py`` beside
it (runner/scoring/snapshots.py), and has a fresh child of a sealed scorer of its own rebuild the
model from that snapshot and predict the public part's windows, which are all it is shown
(``SealedScorer.predict_part``). The snapshot is removed once answered: a request is not a
checkpoint and is never official. The scorer is started in the thread that answers (the answers'
thread lives as long as the session: a sandbox dies with the thread that made it).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from runner.integrity.sealed_split import Refused
from runner.integrity.split_parts import PUBLIC
from runner.scoring.checkpoint_watcher import MAX_CHECKPOINT_BYTES, _copy_untrusted, _Unsettled
from runner.scoring.scorer import SealedScorer
from runner.scoring.snapshots import SNAPSHOT_CKPT, SnapshotRefused, SnapshotStore, snapshot_code

ANSWERS = "answers"  # snapshots/answers/<request>: one request's snapshot while it is answered
CODE_CAP_BYTES = 1 << 30  # a request's snapshot: the model and the workspace's code


class HandedModels:
    """``predict(fd, name)``: the public part's predictions of the model in ``name`` (in the
    requests folder open as ``fd``), or :class:`Refused` with the reason."""

    def __init__(self, make_scorer: Callable[[], SealedScorer], split: str, workspace: Path, snapshots: Path):
        self.make_scorer = make_scorer
        self.split = split
        self.workspace = workspace
        self.root = snapshots / ANSWERS
        self.scorer: SealedScorer | None = None

    def __call__(self, fd: int, name: str):
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise Refused("the request is not a plain file")
        if st.st_nlink != 1 or st.st_size > MAX_CHECKPOINT_BYTES:
            raise Refused(f"the request must be a file of its own under {MAX_CHECKPOINT_BYTES >> 30} GiB "
                          "(prepare.evaluate writes it)")
        folder = self.root / name.rsplit(".", 1)[0]
        shutil.rmtree(folder, ignore_errors=True)
        try:
            store = SnapshotStore(folder, MAX_CHECKPOINT_BYTES + CODE_CAP_BYTES)
            store.link(_copy_untrusted(fd, name, st, store)[0], folder / SNAPSHOT_CKPT)
            snapshot_code(self.workspace, folder / "code", store)
            if self.scorer is None:
                self.scorer = self.make_scorer()
            try:
                return self.scorer.predict_part(folder / SNAPSHOT_CKPT, folder / "code", self.split, PUBLIC)
            except ValueError as exc:
                raise Refused(f"the model could not be evaluated: {exc}") from None
        except _Unsettled:
            raise Refused("the request changed while it was read: write it whole, then rename it") from None
        except SnapshotRefused as exc:
            raise Refused(exc.reason) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self.scorer is not None:
            self.scorer.close()
            self.scorer = None
