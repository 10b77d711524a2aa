"""What an agent that knows onegc's code tries in order to tell a canary from data in its copy of a
split (../shared/INTEGRITY.md V8; issue 46, parts 4 and 7): the tells that gave the synthetic
canaries away, and a few more. numpy only, on what the workspace holds (the copy of val, train).

Each ``*_tells`` function scores every row of a split: a dict from the tell's name to one score
per row (higher: more suspect), and :func:`flagged` says which rows an agent would drop (those
whose score passes the tell's threshold). benchmarks/canary_power.py measures how well each tell
ranks canaries above real rows (its AUROC) and what a fit on the rest of val gets past the test;
tests/integrity/hostile_filter.py is an agent that strips its copy of t0's val with them.
"""

from __future__ import annotations

import numpy as np

LOWER = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ", dtype=np.uint8)


def _repeated(rows: np.ndarray) -> np.ndarray:
    """1.0 for every row that appears more than once (each copy), else 0.0."""
    flat = np.ascontiguousarray(rows.reshape(len(rows), -1))
    _, inverse, counts = np.unique(flat, axis=0, return_inverse=True, return_counts=True)
    return (counts[inverse.reshape(-1)] > 1).astype(np.float64)


def point_tells(x: np.ndarray, train_x: np.ndarray) -> dict[str, np.ndarray]:
    """t0: the radius (issue 35's canaries lay at 3-6, the spirals within ~1.3); the distance to the
    nearest train point, over the largest such distance between train points (isolated: > 1);
    repeated rows."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(train_x, dtype=np.float64)
    nearest = np.empty(len(x))
    for i in range(0, len(x), 512):
        nearest[i : i + 512] = np.sqrt(((x[i : i + 512, None] - t[None]) ** 2).sum(-1)).min(1)
    own = np.empty(len(t))
    for i in range(0, len(t), 512):
        d = np.sqrt(((t[i : i + 512, None] - t[None]) ** 2).sum(-1))
        d[np.arange(len(d)), np.arange(i, i + len(d))] = np.inf
        own[i : i + 512] = d.min(1)
    return {"radius": np.hypot(x[:, 0], x[:, 1]) / 2.5, "isolation": nearest / own.max(), "repeated": _repeated(x)}


def text_tells(x: np.ndarray, train_x: np.ndarray) -> dict[str, np.ndarray]:
    """T7 (texts as ASCII codes, zero-padded): the share of ``[a-z ]`` among a text's characters
    (issue 35's canaries: all of them; real news: ~0.8); no capital letter at all; how far its
    character mix is from train's (the largest gap of any character's share, over the largest
    such gap among train texts); repeated rows."""
    x = np.asarray(x)
    live = x > 0
    length = np.maximum(live.sum(1), 1)
    lower = np.isin(x, LOWER) & live
    capitals = ((x >= 65) & (x <= 90)).sum(1)

    def shares(rows: np.ndarray) -> np.ndarray:
        return np.stack([(rows == c).sum(1) for c in range(1, 128)], 1) / np.maximum((rows > 0).sum(1), 1)[:, None]
    mean = shares(np.asarray(train_x[:4000])).mean(0)
    train_gap = np.abs(shares(np.asarray(train_x[:4000])) - mean).max(1).max()
    return {"lowercase share": lower.sum(1) / length / 0.95, "no capitals": (capitals == 0).astype(np.float64),
            "character mix": np.abs(shares(x) - mean).max(1) / train_gap, "repeated": _repeated(x)}


def chunk_tells(chunks: np.ndarray, vocab: str) -> dict[str, np.ndarray]:
    """T1 (256-character chunks of ids in ``vocab``): the longest run of lowercase letters with no
    space or punctuation (issue 35's strings: 20 letters on a line of their own; Shakespeare's
    longest words ~17), over 18; repeated chunks."""
    lower = np.array([c.islower() for c in vocab])[np.asarray(chunks, dtype=np.int64)]
    run = np.zeros(len(chunks))
    current = np.zeros(len(chunks))
    for j in range(lower.shape[1]):
        current = np.where(lower[:, j], current + 1, 0)
        run = np.maximum(run, current)
    return {"lowercase run": run / 18, "repeated": _repeated(np.asarray(chunks))}


def flagged(tells: dict[str, np.ndarray]) -> np.ndarray:
    """The rows an agent drops: any tell past 1 (each is scaled so that 1 is its threshold)."""
    return np.any(np.stack([score > 1 for score in tells.values()]), axis=0)


def auroc(suspect: np.ndarray, is_canary: np.ndarray) -> float:
    """How well ``suspect`` ranks canaries above the other rows: the chance that a random canary
    scores higher than a random other row (ties count half); 0.5 is no better than chance."""
    _, inverse, counts = np.unique(np.asarray(suspect, dtype=np.float64), return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse.reshape(-1)]  # ties: their mean rank
    k, m = int(is_canary.sum()), int((~is_canary).sum())
    return float((ranks[is_canary].sum() - k * (k + 1) / 2) / (k * m))
