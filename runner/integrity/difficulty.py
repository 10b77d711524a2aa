"""Difficulty calibration for a membership test (issue 35, part 2): how hard each item is, from
trusted models that never saw the scored split, so that the test compares what is left.

A chunk of text is easy or hard for any model (a speaker's name, a rare word, a line of stage
directions), and that spread between chunks hides the little a model gains from having trained
on some of them. Watson et al. ("On the importance of difficulty calibration in membership
inference attacks", ICLR 2022) subtract a reference model's loss; here the reference is a
regression on label-free features of every position and item, fitted on all items together:

- per position: the loss of character n-gram models counted on the pristine train split
  (:class:`CharNgram`, context lengths 0, 2, 4 and 6 within the model's window), their squares,
  the target character, the character before it, and the position (the first eight apart);
- per item: the share of each character in its window.

The statistic is the model's per-position loss minus the regression's fit, averaged per item,
minus the item-level fit. Both fits use every item alike and never the secret that says which
items are canaries, so the residuals are a fixed function of the model's losses and the items:
under "the model never saw the canaries" they stay exchangeable, and the permutation test
(:func:`runner.integrity.canaries.evidence`) keeps its exact null. The calibration only removes
variance. Measured in benchmarks/canary_power.py (docs/benchmarks.md).

Trusted code: numpy only; it reads the pristine data and the model's predictions, nothing else.
"""

from __future__ import annotations

import numpy as np

CONTEXTS = (0, 2, 4, 6)  # the n-gram references' context lengths: unigram, 3-, 5- and 7-gram
DISCOUNT = 0.75
EARLY = 8  # positions 0..6 apart, then one level for the rest of the window
BLOCK = 8_192  # positions per block: the design is never held whole (111 540 x 146 for T1)
ITEMS_PER_FEATURE = 4  # the item-level fit (vocab + 1 features) only where items outnumber them 4 to 1 (T1: 435 to 66)


def log_softmax(z: np.ndarray, axis: int) -> np.ndarray:
    """Log-probabilities from scores along ``axis`` (shifted by the largest: no overflow)."""
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def fit_away(values: np.ndarray, design: np.ndarray) -> np.ndarray:
    """``values`` less their least-squares fit on the columns of ``design`` (one row per item),
    fitted on every item alike; where items do not outnumber the columns
    :data:`ITEMS_PER_FEATURE` to 1, on a constant only (a few items would fit their own values)."""
    values = np.asarray(values, dtype=np.float64)
    design = np.asarray(design, dtype=np.float64)
    if len(values) < ITEMS_PER_FEATURE * design.shape[1]:
        design = np.ones((len(values), 1))
    return values - design @ (np.linalg.pinv(design) @ values)


def _context_keys(seq: np.ndarray, length: int, vocab: int) -> np.ndarray:
    """For each position t of ``seq`` [..., T], the ``length`` characters ending at t as one
    integer in base ``vocab`` (zeros before the start)."""
    pad = np.pad(seq, [(0, 0)] * (seq.ndim - 1) + [(length - 1, 0)])
    t = seq.shape[-1]
    key = np.zeros(seq.shape, dtype=np.int64)
    for j in range(length):
        key = key * vocab + pad[..., j : j + t]
    return key


def _lookup(keys: np.ndarray, table: np.ndarray, values: np.ndarray) -> np.ndarray:
    if len(table) == 0:
        return np.zeros(keys.shape, dtype=values.dtype)
    i = np.searchsorted(table, keys).clip(0, len(table) - 1)
    return np.where(table[i] == keys, values[i], 0)


def gram_keys(ids: np.ndarray, length: int, vocab: int) -> np.ndarray:
    """Each character of ``ids`` after the first ``length`` with the ``length`` before it, as one
    integer in base ``vocab`` (the context's key times ``vocab`` plus the character)."""
    t = np.asarray(ids, dtype=np.int64)
    if length == 0:
        return t
    return _context_keys(t[None, :], length, vocab)[0, length - 1 : -1] * vocab + t[length:]


class CharNgram:
    """Interpolated absolute discounting over character contexts of 0..max(``CONTEXTS``), counted
    on ``ids`` (the pristine train split) and, where given, ``extra`` grams of each context
    length (:func:`gram_keys`: benchmarks/canary_power.py's light fit adds some of val's). Its
    losses at each length of :data:`CONTEXTS` are the references."""

    def __init__(self, ids: np.ndarray, vocab: int, discount: float = DISCOUNT,
                 extra: dict[int, np.ndarray] | None = None):
        if vocab ** (max(CONTEXTS) + 1) >= 2**62:
            raise ValueError(f"a vocabulary of {vocab} is too large for {max(CONTEXTS) + 1}-gram keys")
        self.vocab, self.discount = vocab, discount
        t = np.asarray(ids, dtype=np.int64)
        if t.size and (t.min() < 0 or t.max() >= vocab):
            raise ValueError(f"train ids outside the vocabulary of {vocab}")
        self.tables = []
        for length in range(max(CONTEXTS) + 1):
            full = gram_keys(t, length, vocab)
            if extra and length in extra:
                full = np.concatenate([full, np.asarray(extra[length], dtype=np.int64)])
            ctx = full // vocab if length else np.zeros(len(full), dtype=np.int64)
            grams, gram_counts = np.unique(full, return_counts=True)
            contexts, context_counts = np.unique(ctx, return_counts=True)
            owners, followers = np.unique(grams // vocab if length else np.zeros(len(grams), np.int64),
                                          return_counts=True)
            distinct = np.zeros(len(contexts), dtype=np.int64)
            distinct[np.searchsorted(contexts, owners)] = followers
            self.tables.append((grams, gram_counts, contexts, context_counts, distinct))

    def position_losses(self, windows: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Nats of each target [n, T] given its window [n, T] (position t predicts targets[:, t]
        from windows[:, :t + 1], as a causal model does), at each of :data:`CONTEXTS`: [n, T, 4]."""
        windows = np.asarray(windows, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        n, t = targets.shape
        p = np.full((n, t), 1.0 / self.vocab)
        out = np.empty((n, t, len(CONTEXTS)), dtype=np.float32)
        where = np.arange(t)[None, :]
        for length, (grams, gram_counts, contexts, context_counts, distinct) in enumerate(self.tables):
            ctx = np.zeros((n, t), dtype=np.int64) if length == 0 else _context_keys(windows, length, self.vocab)
            c_full = _lookup(ctx * self.vocab + targets, grams, gram_counts)
            c_ctx = _lookup(ctx, contexts, context_counts)
            follow = _lookup(ctx, contexts, distinct)
            seen = (c_ctx > 0) & (where >= length - 1)  # a context that lies inside the window
            safe = np.maximum(c_ctx, 1)
            p = np.where(seen, np.maximum(c_full - self.discount, 0) / safe + self.discount * follow / safe * p, p)
            if length in CONTEXTS:
                out[:, :, CONTEXTS.index(length)] = -np.log(p)
        return out


class Calibration:
    """The label-free regression of a model's per-position losses on every item's features
    (the module's docstring). Built once per session's draw; :meth:`residuals` per checkpoint."""

    def __init__(self, windows: np.ndarray, targets: np.ndarray, references: np.ndarray, vocab: int):
        self.windows = np.asarray(windows, dtype=np.int64)
        self.targets = np.asarray(targets, dtype=np.int64)
        self.references = np.asarray(references, dtype=np.float64)  # [n, T, k]
        self.vocab = vocab
        n, t = self.targets.shape
        gram = np.zeros((self.width, self.width))
        for rows in self._blocks():
            d = self._design(rows)
            gram += d.T @ d
        self._solve = np.linalg.pinv(gram)  # one-hot groups share the intercept: rank-deficient, pinv is exact on its range
        hist = np.stack([(self.windows == v).mean(axis=1) for v in range(vocab)], axis=1)
        self._items = np.concatenate([np.ones((n, 1)), hist], axis=1)

    @property
    def width(self) -> int:
        return 2 * self.references.shape[2] + 2 * self.vocab + EARLY

    def _blocks(self):
        total = self.targets.size
        for start in range(0, total, BLOCK):
            yield np.arange(start, min(start + BLOCK, total))

    def _design(self, rows: np.ndarray) -> np.ndarray:
        """The features of flat positions ``rows`` (row-major over [n, T])."""
        t = self.targets.shape[1]
        item, pos = rows // t, rows % t
        refs = self.references[item, pos]
        d = np.zeros((len(rows), self.width))
        k = refs.shape[1]
        d[:, :k] = refs
        d[:, k : 2 * k] = refs**2
        at = 2 * k
        d[np.arange(len(rows)), at + self.targets[item, pos]] = 1.0
        at += self.vocab
        d[np.arange(len(rows)), at + self.windows[item, pos]] = 1.0
        at += self.vocab
        d[np.arange(len(rows)), at + np.minimum(pos, EARLY - 1)] = 1.0
        return d

    def residuals(self, position_losses: np.ndarray) -> np.ndarray:
        """Each item's loss beyond what its difficulty predicts (lower: the model fits it better
        than the references say it should), from the model's per-position losses [n, T]."""
        y = np.asarray(position_losses, dtype=np.float64)
        if y.shape != self.targets.shape:
            raise ValueError(f"position losses of shape {y.shape}, not {self.targets.shape}")
        flat = y.reshape(-1)
        moment = np.zeros(self.width)
        for rows in self._blocks():
            moment += self._design(rows).T @ flat[rows]
        beta = self._solve @ moment
        left = np.empty_like(flat)
        for rows in self._blocks():
            left[rows] = flat[rows] - self._design(rows) @ beta
        per_item = left.reshape(y.shape).mean(axis=1)
        return fit_away(per_item, self._items)
