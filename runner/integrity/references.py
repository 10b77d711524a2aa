"""Reference models for the canaries' membership test on real rows (issue 46, part 4): how hard
each held-back-or-given row is for a model that saw neither, so that the test compares what is
left (Watson et al.'s difficulty calibration, ICLR 2022; LiRA and RMIA compare a model with
references trained without the item in the same spirit).

Every reference here is fitted by trusted code on the pristine train split, which the agent has
too, and judges every row of the scored split alike: never the scored split's labels as
training data, never the session's secret. So a row's reference features are a fixed function of
the row, and the permutation test keeps its exact null (runner/integrity/canaries.py).

- :class:`NearestPoints` (t0): the labels of a point's nearest train points;
- :class:`TrigramBayes` (T7): multinomial naive Bayes over hashed character trigrams.

Each gives :meth:`log_posterior` [n, classes]; :func:`features` turns it into the per-row
features the calibration regresses a model's losses on.

Trusted code: numpy only.
"""

from __future__ import annotations

import numpy as np

from runner.integrity.difficulty import log_softmax


def features(log_posterior: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per row: the reference's cross-entropy on the row's label (nats, clipped at 20), its square,
    and its margin (the label's log-probability less the best other class's): [n, 3]."""
    logp = np.asarray(log_posterior, dtype=np.float64)
    rows = np.arange(len(logp))
    own = logp[rows, labels]
    others = logp.copy()
    others[rows, labels] = -np.inf
    ce = np.minimum(-own, 20.0)
    return np.stack([ce, ce**2, np.clip(own - others.max(axis=1), -20.0, 20.0)], axis=1)


class NearestPoints:
    """The smoothed label shares of each point's ``k`` nearest train points (Euclidean)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, classes: int, k: int = 32):
        self.x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
        self.y = np.asarray(y, dtype=np.int64)
        self.classes, self.k = classes, min(k, len(self.x))

    def log_posterior(self, x: np.ndarray, block: int = 512) -> np.ndarray:
        q = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
        out = np.empty((len(q), self.classes))
        for i in range(0, len(q), block):  # [block, train] distances at a time
            d = ((q[i : i + block, None, :] - self.x[None]) ** 2).sum(axis=2)
            near = np.argpartition(d, self.k - 1, axis=1)[:, : self.k]
            counts = np.stack([(self.y[near] == c).sum(axis=1) for c in range(self.classes)], axis=1)
            out[i : i + block] = np.log((counts + 1.0) / (self.k + self.classes))
        return out


class TrigramBayes:
    """Multinomial naive Bayes over character trigrams hashed into :data:`BUCKETS` (the texts'
    zero padding left out), its per-trigram log-likelihoods averaged over a text's trigrams and
    scaled by ``sharpness`` (naive Bayes over hundreds of dependent trigrams is overconfident)."""

    BUCKETS = 1 << 18
    ALPHA = 0.5  # additive smoothing per bucket
    sharpness = 20.0

    def __init__(self, x: np.ndarray, y: np.ndarray, classes: int, block: int = 2_000):
        counts = np.zeros((classes, self.BUCKETS))
        y = np.asarray(y, dtype=np.int64)
        for i in range(0, len(x), block):
            keys, live = self._grams(x[i : i + block])
            owner = np.broadcast_to(y[i : i + block, None], keys.shape)
            np.add.at(counts, (owner[live], keys[live]), 1.0)
        counts += self.ALPHA
        self.log_likelihood = np.log(counts / counts.sum(axis=1, keepdims=True))  # [classes, buckets]
        self.log_prior = np.log(np.bincount(y, minlength=classes) + 1.0) - np.log(len(y) + classes)

    def _grams(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = np.asarray(x, dtype=np.int64)
        keys = (t[:, :-2] * 16129 + t[:, 1:-1] * 127 + t[:, 2:]) % self.BUCKETS
        return keys, t[:, 2:] > 0

    def log_posterior(self, x: np.ndarray, block: int = 1_000) -> np.ndarray:
        out = np.empty((len(x), len(self.log_prior)))
        for i in range(0, len(x), block):
            keys, live = self._grams(x[i : i + block])
            per = self.log_likelihood[:, keys]  # [classes, rows, grams]
            mean = (per * live).sum(axis=2) / np.maximum(live.sum(axis=1), 1)
            out[i : i + block] = log_softmax(self.sharpness * mean.T + self.log_prior, axis=1)
        return out
