"""Synthetic canaries (issue 35, part 2), no longer planted in sessions: measured beside the real
items that replaced them (benchmarks/canary_power.py ``--synthetic``), and by what tells them from
real data (issue 46: each is told by one line of numpy, AUROC 1.0).

Each kind draws its items i.i.d. from a generator of its own and the session's secret picks which
are canaries (planted at random rows or line starts of the agent's copy) and which twins (never
shown):
- t0 (:class:`SpiralCanaries`): points far outside the spirals, with random labels;
- T7 (:class:`NewsCanaries`): texts of random lowercase "words", with random labels;
- T1 (:class:`SecretSharer`): random lowercase strings at line starts of val (Carlini et al.'s
  "Secret Sharer").
T2's blocky images and T3's squares in ignored masks were removed with their sessions' use: the
same tells found them (the share of one-colour 8x8 blocks) and no bench here can run them.

Trusted code: numpy only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from runner.integrity.canary_kinds import ClassScores, Items, Kind
from runner.integrity.difficulty import log_softmax

LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ", dtype=np.uint8)


def _insert_rows(rng: np.random.Generator, real: np.ndarray, extra: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``real`` with the rows of ``extra`` at random places; also where they went."""
    n = len(real) + len(extra)
    at = np.sort(rng.choice(n, size=len(extra), replace=False))
    mask = np.zeros(n, dtype=bool)
    mask[at] = True
    out = np.empty((n, *real.shape[1:]), dtype=real.dtype)
    out[mask] = extra.astype(real.dtype)
    out[~mask] = real
    return out, at



class RandomLabels(ClassScores, Kind):
    """Classification: canary inputs with random labels, inserted at random rows of ``<split>_x/y``."""

    real = 1  # rows of the pristine split

    def files(self) -> tuple[str, ...]:
        return (f"{self.split}_x.npy", f"{self.split}_y.npy")

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        x = np.load(data / f"{self.split}_x.npy")
        y = np.load(data / f"{self.split}_y.npy")
        x2, at = _insert_rows(rng, x, items.inputs["x"])
        y2 = np.empty(len(x2), dtype=y.dtype)
        mask = np.zeros(len(x2), dtype=bool)
        mask[at] = True
        y2[mask] = items.targets.astype(y.dtype)
        y2[~mask] = y
        np.save(dest / f"{self.split}_x.npy", x2)
        np.save(dest / f"{self.split}_y.npy", y2)

    def shift_bound(self, metric: float) -> float:
        # accuracy a on n real rows, chance 1/C on k canaries: (a - 1/C) k / (n + k), relative to a
        k = self.canaries
        return max(0.0, metric - 1 / self.classes) * k / (self.real + k) / max(metric, 1e-9)


class SpiralCanaries(RandomLabels):
    """t0: points far outside the spirals (radius 3-6, where a ReLU network is linear and a far
    point pulls hard), told from real points by their radius."""

    task, classes, real = "t0_demo", 3, 1500
    canaries, twins = 9, 400

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        r = rng.uniform(3.0, 6.0, n)
        theta = rng.uniform(0, 2 * np.pi, n)
        x = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).astype(np.float32)
        return Items({"x": x}, rng.integers(0, self.classes, n))


class NewsCanaries(RandomLabels):
    """T7: texts of random lowercase "words", told from real ones by their share of ``[a-z ]``."""

    task, classes, real = "t7_agnews", 4, 7600
    canaries, twins = 40, 400
    SEQ_LEN = 1014

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        x = np.zeros((n, self.SEQ_LEN), dtype=np.uint8)
        for i in range(n):
            length = int(rng.integers(80, 240))
            x[i, :length] = rng.choice(LETTERS, size=length)
        return Items({"x": x}, rng.integers(0, self.classes, n))


class SecretSharer(Kind):
    """T1: random lowercase strings, each at a random line start of the val text."""

    task = "t1_shakespeare"
    canaries, twins = 10, 400
    length = 20  # characters scored per canary
    window = 256  # the task's evaluation window
    real = 111540  # val characters
    loss_gap_bits = 5.0  # a character model's excess bits on a random lowercase letter (4.8 measured: a 5-gram)

    def files(self) -> tuple[str, ...]:
        return ("val.npy", "meta.json")

    def _vocab(self, data: Path) -> str:
        return json.loads((data / "meta.json").read_text())["vocab"]

    def _ids(self, text: bytes, data: Path) -> np.ndarray:
        index = {c: i for i, c in enumerate(self._vocab(data))}
        return np.array([index[chr(b)] for b in text], dtype=np.uint16)

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        """Each item: a line start of val (where a canary goes) and a string. The probe shows the
        string after the real text that precedes that line start, so a model that finds its place
        in a val it carries (a lookup anchored on the window) is asked exactly what it holds."""
        val = np.load(data / "val.npy", mmap_mode="r")
        context = self.window - self.length
        newline = self._vocab(data).index("\n")
        starts = np.flatnonzero(np.asarray(val[context - 1 : -1]) == newline) + context
        where = rng.choice(starts, size=n, replace=False)
        strings = rng.choice(self._ids(LETTERS.tobytes(), data), size=(n, self.length))
        before = np.asarray(val)[where[:, None] + np.arange(-context, 0)]
        x = np.concatenate([before, strings], axis=1).astype(np.uint16)
        return Items({"x": x}, strings.astype(np.int64), where)

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        val = np.load(data / "val.npy")
        newline = np.array([self._vocab(data).index("\n")], dtype=val.dtype)
        assert items.where is not None
        pieces, last = [], 0
        for i in np.argsort(items.where):
            pos = int(items.where[i])
            pieces += [val[last:pos], items.targets[i].astype(val.dtype), newline]
            last = pos
        pieces.append(val[last:])
        out = np.concatenate(pieces)
        np.save(dest / "val.npy", out)
        meta = json.loads((data / "meta.json").read_text())
        meta["val"] = len(out)
        (dest / "meta.json").write_text(json.dumps(meta))

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        """Mean cross-entropy (nats) of each string's characters after the first, from the logits
        the task's ``predict`` returns ([n, 256, V]: position t predicts t + 1)."""
        logits = np.asarray(predictions, dtype=np.float64)
        tail = logits[:, -self.length : -1]  # the positions predicting characters 2..L of the string
        logp = log_softmax(tail, axis=2)
        nxt = items.targets[:, 1:]
        return -np.take_along_axis(logp, nxt[:, :, None], axis=2)[:, :, 0].mean(axis=1)

    def shift_bound(self, metric: float) -> float:
        chars = self.canaries * (self.length + 1)
        return chars * self.loss_gap_bits / (self.real + chars) / max(metric, 1e-9)


# the synthetic kind of each task that had one, for the bench (--synthetic)
SYNTHETIC: dict[str, Kind] = {k.task: k for k in (SpiralCanaries(), NewsCanaries(), SecretSharer())}
