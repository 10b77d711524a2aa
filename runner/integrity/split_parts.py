"""A sealed scored split's public and private parts (issue 47; INTEGRITY.md V9), as Kaggle's
leaderboards keep them.

The session's secret cuts the scored split's rows (t0, T2, T3, T7: its items; T1: its evaluation
windows) into :data:`BLOCKS` blocks and draws :data:`PUBLIC_FRACTION` of them as the **public** part;
the rest is the **private** part. The agent's evaluations are answered on the public part only
(runner/integrity/sealed_split.py, through the Ladder: runner/integrity/ladder.py); the official
number is the private part's, which no answer touched, beside the whole split's (what the paper
compares against). Items are drawn into blocks at random; T1's windows stay in contiguous runs
(each block a stretch of the text), so that a block is a text of its own that the task's judge
scores exactly as it scores the same windows of the whole split.

How a part is judged (the decision, docs/threat-model.md "Public and private parts"): with the
task's own, unchanged ``judge`` (the locked ``prepare.py`` is the evaluator), run on a folder
that holds the part as a prepared split of its own: the prepared data's files linked, the split's
target files (``scored_targets`` in task.toml) cut to the part's rows (T1: its stretches of
``val.npy``); ``onegc_kit.data_at`` points the judge there, in the judging thread only. An items
task's part is one folder; a T1 part is its blocks' folders, and its value the mean of theirs
weighted by their counts (bits per byte is a mean over characters: the judge's ``n``). Nothing here
reads a target's value: it copies rows.

The gap between the parts is tested on the blocks' own values (:func:`gap_test`): the blocks were
drawn public or private at random and in secret, so for a model that carries nothing of the
public part's targets they are exchangeable, and a permutation test of the public blocks' mean
against the private blocks' holds for any metric (mIoU included), with the model's own spread as
its noise.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

PUBLIC_FRACTION = 0.3  # Kaggle's usual share: the answers' part; the private part is 0.7 of the split
BLOCKS = 100  # of each split: the units drawn public or private, and of the gap's permutation test
PERMUTATIONS = 10_000
GAP_ALPHA = 0.01  # a public part better than the private beyond this p is a look (false alarms: docs/benchmarks.md)
PUBLIC, PRIVATE, WHOLE = "public", "private", "whole"


@dataclass(frozen=True)
class Piece:
    """A folder the task's judge runs on (a prepared split of its own), for the part's rows
    ``[start, stop)`` in the part's row order."""

    folder: Path
    start: int
    stop: int


@dataclass(frozen=True)
class Part:
    """A part of the scored split: its rows (ascending) and the folders its judge runs on."""

    name: str
    rows: np.ndarray
    pieces: tuple[Piece, ...]

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class Partition:
    """The split's rows cut into blocks, and which blocks are public (drawn from the secret)."""

    split: str
    n_rows: int
    blocks: tuple[np.ndarray, ...]
    public_blocks: frozenset[int]
    stream: bool  # T1: blocks are contiguous runs of windows

    def rows(self, name: str) -> np.ndarray:
        """The rows of the public or the private part, ascending."""
        take = [b for i, b in enumerate(self.blocks) if (i in self.public_blocks) == (name == PUBLIC)]
        return np.sort(np.concatenate(take)) if take else np.empty(0, dtype=np.int64)

    def is_public(self) -> np.ndarray:
        """One bool per block."""
        return np.array([i in self.public_blocks for i in range(len(self.blocks))])


def partition(secret: str, task: str, split: str, n_rows: int, stream: bool) -> Partition:
    """The session's public and private parts of ``split`` (``n_rows`` items or windows)."""
    if n_rows < 2:
        raise ValueError(f"a split of {n_rows} rows cannot be cut into a public and a private part")
    digest = hashlib.sha256(f"onegc parts {task} {split} {secret}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "big"))
    k = min(BLOCKS, n_rows)
    order = np.arange(n_rows) if stream else rng.permutation(n_rows)
    blocks = tuple(np.sort(b).astype(np.int64) for b in np.array_split(order, k))
    n_public = min(k - 1, max(1, round(k * PUBLIC_FRACTION)))
    public = frozenset(int(i) for i in rng.choice(k, size=n_public, replace=False))
    return Partition(split, n_rows, blocks, public, stream)


def write_parts(parts: Partition, data: Path, targets: list[str], root: Path,
                spans: list[tuple[int, int]] | None = None, window: int = 0) -> dict[str, Part]:
    """The public and private parts and each block (``block-<i>``) as :class:`Part`s whose folders
    are under ``root`` (made once; a folder made before is reused). ``data``: the prepared data;
    ``targets``: the split's files holding its targets, cut to each part's rows (items: by row;
    a stream, ``spans`` given: each block's stretch of the text, ``spans`` being the task's
    ``eval_windows`` and ``window`` its ``EVAL_WINDOW``)."""
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Part] = {}
    block_parts = []
    for i, rows in enumerate(parts.blocks):
        folder = _piece(data, targets, root / f"block-{i}", rows, spans, window)
        block_parts.append(Part(f"block-{i}", rows, (Piece(folder, 0, len(rows)),)))
        out[f"block-{i}"] = block_parts[-1]
    for name in (PUBLIC, PRIVATE):
        rows = parts.rows(name)
        if parts.stream:  # a stream's part is its blocks, in row order (blocks are contiguous runs)
            pieces, at = [], 0
            for part in sorted((b for i, b in enumerate(block_parts) if (i in parts.public_blocks) == (name == PUBLIC)),
                               key=lambda b: int(b.rows[0])):
                pieces.append(Piece(part.pieces[0].folder, at, at + len(part)))
                at += len(part)
            out[name] = Part(name, rows, tuple(pieces))
        else:
            out[name] = Part(name, rows, (Piece(_piece(data, targets, root / name, rows, None, 0), 0, len(rows)),))
    return out


def _piece(data: Path, targets: list[str], folder: Path, rows: np.ndarray, spans: list[tuple[int, int]] | None,
           window: int) -> Path:
    """``folder``: ``data``'s files linked, each of ``targets`` cut to ``rows`` (made once, atomically)."""
    if (folder / ".done").is_file():
        return folder
    staging = folder.parent / f".{folder.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for entry in data.iterdir():
        if entry.name in targets or entry.name.startswith("."):
            continue
        os.symlink(entry.resolve(), staging / entry.name)
    for name in targets:
        arr = np.load(data / name, mmap_mode="r")
        if spans is not None:  # a stretch of the stream: the windows rows[0]..rows[-1] and their last targets
            first, last = int(rows[0]), int(rows[-1])
            cut = np.asarray(arr[spans[first][0]: spans[last][0] + window + 1])
        else:
            cut = np.asarray(arr[rows])
        np.save(staging / name, cut, allow_pickle=False)
    (staging / ".done").write_text("")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    return folder


def compose(results: list[tuple[float, int | None]]) -> tuple[float, int | None]:
    """A part's value from its pieces' ``(value, n)``: the one piece's, or the mean of theirs
    weighted by their counts (a stream's metric is a mean over its ``n``)."""
    if len(results) == 1:
        return results[0]
    counts = [n for _, n in results if isinstance(n, int) and n > 0]
    if len(counts) != len(results):
        raise ValueError("a part of several pieces needs each piece's count")
    total = sum(counts)
    return math.fsum(v * n for (v, _), n in zip(results, counts, strict=True)) / total, total


@dataclass(frozen=True)
class Gap:
    """The public part against the private, on the blocks' values: ``statistic`` (the public
    blocks' mean minus the private blocks', positive where the public part is better), its
    permutation ``p``, and ``private_se`` (the private figure's standard error from the blocks' spread)."""

    statistic: float
    p: float
    private_se: float

    def record(self) -> dict:
        return {"statistic": self.statistic, "p": self.p, "private_se": self.private_se}


def gap_test(values: np.ndarray | list[float], public: np.ndarray, higher_is_better: bool,
             permutations: int = PERMUTATIONS) -> Gap:
    """The permutation test of the public blocks' mean against the private blocks' (one-sided:
    the public part better), over ``permutations`` random draws of as many public blocks."""
    values = np.asarray(values, dtype=np.float64)
    sign = 1.0 if higher_is_better else -1.0
    k, n_pub = len(values), int(public.sum())
    if n_pub == 0 or n_pub == k:
        raise ValueError("the gap needs public and private blocks")

    def stat(mask: np.ndarray) -> np.ndarray:
        pub = (values * mask).sum(-1) / n_pub
        priv = (values * ~mask).sum(-1) / (k - n_pub)
        return sign * (pub - priv)

    observed = float(stat(public))
    rng = np.random.default_rng(0)  # trusted and deterministic: the same values give the same p
    draws = np.argsort(rng.random((permutations, k)), axis=1) < n_pub
    null = stat(draws)
    p = float((1 + np.count_nonzero(null >= observed - 1e-12)) / (1 + permutations))
    private = values[~public]
    se = float(private.std(ddof=1) / math.sqrt(len(private))) if len(private) > 1 else math.nan
    return Gap(observed, p, se)


def gap_verdict(gap: Gap, task: str) -> Verdict | None:
    """A look when the public part beats the private beyond the blocks' own noise (p < :data:`GAP_ALPHA`)."""
    if gap.p >= GAP_ALPHA:
        return None
    return verdict("public_private_gap", "look", f"the public part beats the private by {gap.statistic:.4g} on the "
                   f"blocks' means (p = {gap.p:.2g}): the model carries what the answers taught it", task,
                   statistic=gap.statistic, p=gap.p)
