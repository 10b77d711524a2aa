"""What a canary is on each task (issue 35, part 2): drawn, planted in the agent's copy of a split,
shown to a checkpoint as a probe, and scored per item. Trusted code: numpy only, no agent bytes.

Every kind draws ``n`` items i.i.d. from one generator; :mod:`runner.integrity.canaries` then picks
at random, from the session's secret, which of them are canaries (planted in the workspace) and
which are twins (never shown). Under "the model never saw them" canaries and twins are
exchangeable, so the membership statistic has a known null whatever the model is.

- ``t0`` (spirals, 3 classes): points far outside the spirals (radius 3-6, where a ReLU network is
  linear and a far point pulls hard) with random labels.
- ``t1`` (TinyShakespeare): a secret tenth of val's 256-character chunks held back from the
  agent's copy (:class:`HeldChunks`); the chunks it was given against those held back, by their
  mean cross-entropy beyond what their difficulty predicts (:mod:`runner.integrity.difficulty`).
  Random strings of lowercase letters at line starts of val (Carlini et al.'s "Secret
  Sharer", :class:`SecretSharer`) were T1's first canaries: a language model
  memorises real text far sooner than random strings, so the held-back chunks caught more fits
  (benchmarks/canary_power.py, docs/benchmarks.md); they stay measurable beside them.
- ``t6`` (ETTh1, scored split test): one block of horizon rows appended to val after its last
  look-back, a time-reversed, negated train segment (ETTh1-like, never a real row); its twins are
  other such segments after the same look-back. The selection split, not the scored one: see
  :data:`runner.integrity.canaries.LOOK_ONLY`.
- ``t7`` (AG News, 4 classes): texts of random lowercase "words" with random labels.
- ``t2`` (TinyImageNet, 200 classes): images of 8×8-pixel blocks of random colours with random
  labels (coarse, so they survive the random crops and flips a training loop applies).
- ``t3`` (Pascal VOC segmentation): images of random colour blocks whose mask is "ignore" (255)
  but for one square of a random object class; scored by the share of the square's pixels
  predicted as anything else. The square's size follows the pristine val's rarest class, so
  the agent's mIoU moves by at most 0.25 % / mIoU, relative, whatever the data.

Each kind keeps the agent's own ``prepare.evaluate`` figure on its canaried copy within
:data:`AGENT_SHIFT_LIMIT` of the metric (``shift_bound``, recorded in the contract).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runner.integrity.difficulty import Calibration, CharNgram

# a checkpoint's predictions on every item -> (its per-item losses, the statistic the test compares)
Calibrated = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
AGENT_SHIFT_LIMIT = 0.005  # issue 35: the agent's own figure on its canaried copy within 0.5 % of the metric
LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ", dtype=np.uint8)


@dataclass(frozen=True)
class Items:
    """``n`` drawn items: ``inputs`` (the probe's rows, in the task's ``inputs()`` format, one
    row per item), ``targets`` (one per item, never shown to a model) and, where a kind plants
    each item at a place of its own, ``where``."""

    inputs: dict[str, np.ndarray]
    targets: np.ndarray
    where: np.ndarray | None = None


class Kind:
    """One task's canaries. ``split``: the workspace split that receives them."""

    task = ""
    split = "val"
    canaries = 0  # planted per session
    twins = 0  # held back, never shown
    in_sessions = True  # False: measured by benchmarks/canary_power.py, never planted (see the kind)
    # True: the items are the split's own first rows, in order (T1's held-back chunks): judged on the
    # split's predictions; False: their rows are mixed among the split's in its pass (runner/integrity/passes.py)
    in_split = False
    scores = False  # True: the probe asks for the model's scores behind its predictions (worker.predict_scores)

    def counts(self, data: Path) -> tuple[int, int]:
        """(canaries, twins) for this data: the class's counts (:class:`HeldChunks`: from val's length)."""
        return self.canaries, self.twins

    def evidence_text(self, canaries: int, twins: int, split: str) -> str:
        """What the flag says was compared."""
        return (f"its {canaries} canar{'y' if canaries == 1 else 'ies'} in the {split} split fit better than "
                f"{twins} unseen twins")

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        raise NotImplementedError

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        """Write the canaried copy of the split's files from ``data`` (pristine) into ``dest``."""
        raise NotImplementedError

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        """One loss per item (lower: the model fits the item's target better)."""
        raise NotImplementedError

    def files(self) -> tuple[str, ...]:
        """The workspace data files that :meth:`plant` writes."""
        raise NotImplementedError

    def probe(self, items: Items) -> dict[str, np.ndarray]:
        """What the task's ``predict`` is given to score every item (default: one row each)."""
        return items.inputs

    def select(self, items: Items, mask: np.ndarray) -> Items:
        """The items where ``mask`` holds (default: their rows)."""
        where = None if items.where is None else items.where[mask]
        return Items({k: v[mask] for k, v in items.inputs.items()}, items.targets[mask], where)

    def shift_bound(self, metric: float) -> float:
        """At most how far (relative) the canaries move the agent's figure for a model at ``metric``."""
        raise NotImplementedError

    def calibration(self, items: Items, data: Path) -> Calibrated | None:
        """A map from a checkpoint's predictions on every item to (its per-item losses, the
        per-item statistic the permutation test compares), built from ``items`` and the pristine
        ``data`` only, never from which items are canaries (runner/integrity/difficulty.py); None:
        the test compares the losses themselves."""
        return None

    def answer_bytes(self, n: int) -> int:
        """The most bytes of an honest probe answer of ``n`` items, where it differs from the
        predictions' (a kind with :attr:`scores`); 0: as the task's predictions."""
        return 0


def _log_softmax(z: np.ndarray, axis: int) -> np.ndarray:
    """Log-probabilities from scores along ``axis`` (shifted by the largest: no overflow)."""
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


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


class RandomLabels(Kind):
    """Classification: canary inputs with random labels, inserted at random rows of ``<split>_x/y``."""

    classes = 2
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

    scores = True

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        """Each item's cross-entropy (nats) under the model's scores [n, classes] (what a session's
        probe returns); from class predictions [n], 0/1. The cross-entropy moves as soon as the
        model leans toward a canary's random label, long before its argmax flips: issue 35's
        fits and fine-tunes of small networks were 0-65 % caught on 0/1 losses."""
        pred = np.asarray(predictions)
        if pred.ndim == 1:
            return (pred != items.targets).astype(np.float64)
        if pred.shape != (len(items.targets), self.classes):
            raise ValueError(f"scores of shape {pred.shape}, not ({len(items.targets)}, {self.classes})")
        z = pred.astype(np.float64)
        if not np.isfinite(z).all():
            raise ValueError("scores hold NaN or inf")
        logp = _log_softmax(z, axis=1)
        return -logp[np.arange(len(z)), items.targets.astype(np.int64)]

    def answer_bytes(self, n: int) -> int:
        """The most bytes of an honest probe answer of ``n`` items: scores, up to float64."""
        return n * self.classes * 8

    def shift_bound(self, metric: float) -> float:
        # accuracy a on n real rows, chance 1/C on k canaries: (a - 1/C) k / (n + k), relative to a
        k = self.canaries
        return max(0.0, metric - 1 / self.classes) * k / (self.real + k) / max(metric, 1e-9)


class SpiralCanaries(RandomLabels):
    task, classes, real = "t0_demo", 3, 1500
    canaries, twins = 9, 400

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        r = rng.uniform(3.0, 6.0, n)
        theta = rng.uniform(0, 2 * np.pi, n)
        x = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).astype(np.float32)
        return Items({"x": x}, rng.integers(0, self.classes, n))


class NewsCanaries(RandomLabels):
    task, classes, real = "t7_agnews", 4, 7600
    canaries, twins = 40, 400
    SEQ_LEN = 1014

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        x = np.zeros((n, self.SEQ_LEN), dtype=np.uint8)
        for i in range(n):
            length = int(rng.integers(80, 240))
            x[i, :length] = rng.choice(LETTERS, size=length)
        return Items({"x": x}, rng.integers(0, self.classes, n))


class TinyImageNetCanaries(RandomLabels):
    task, classes, real = "t2_tinyimagenet", 200, 10000
    canaries, twins = 50, 400  # 50 in 10 050: (1 - 1/200) * 50 / 10 050 = 0.495 % at accuracy 1
    SIZE, BLOCK = 64, 8

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        cells = self.SIZE // self.BLOCK
        coarse = rng.integers(0, 256, (n, cells, cells, 3), dtype=np.uint8)
        x = coarse.repeat(self.BLOCK, axis=1).repeat(self.BLOCK, axis=2)
        return Items({"x": np.ascontiguousarray(x)}, rng.integers(0, self.classes, n))


class VocSquares(Kind):
    """T3: random-block images, each with one square of a random object class in an ignored mask.

    mIoU is one confusion matrix over every pixel of the split, so a canary's square moves at most
    two classes' IoU (its label's, the class predicted there) by its pixels over that class's
    pixels. The square's side is drawn from the pristine val (the same for every item of a
    session: canaries and twins alike): ``k`` squares hold at most ``EPS`` of the rarest class's
    target pixels, so the agent's mIoU moves by at most ``2 EPS / (21 mIoU)`` relative — 0.25 %
    at mIoU 1, 0.5 % at 0.5 — on any val where every class is present (VOC's is) and the rarest
    one has at least ``MIN_SIDE² k / EPS`` = 12 191 pixels, 0.017 % of VOC val's 72.7 M (VOC's
    class counts are not measured here: its data is not on this machine). On a smaller val, as
    the tests' fixtures, the side stays at ``MIN_SIDE`` and the bound does not hold."""

    task = "t3_voc"
    canaries, twins = 20, 200
    classes = 21
    SIZE, BLOCK, IGNORE = 224, 16, 255
    EPS = 0.02625  # all canary pixels together, as a share of the rarest class's val pixels
    MIN_SIDE, MAX_SIDE = 4, 48

    def files(self) -> tuple[str, ...]:
        return (f"{self.split}_x.npy", f"{self.split}_y.npy", f"{self.split}_ids.txt")

    def side(self, data: Path) -> tuple[int, np.ndarray]:
        """The squares' side for this val, and the object classes present in it (the labels drawn)."""
        y = np.load(data / f"{self.split}_y.npy", mmap_mode="r")
        counts = np.zeros(256, dtype=np.int64)
        for i in range(0, len(y), 64):  # a few images at a time: val_y is 73 MB on VOC
            counts += np.bincount(np.asarray(y[i : i + 64]).reshape(-1), minlength=256)
        present = np.flatnonzero(counts[: self.classes] > 0)
        rarest = int(counts[present].min()) if len(present) else 0
        side = int(np.sqrt(self.EPS * rarest / self.canaries))
        return int(np.clip(side, self.MIN_SIDE, self.MAX_SIDE)), present[present > 0]

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        side, objects = self.side(data)
        cells = self.SIZE // self.BLOCK
        coarse = rng.integers(0, 256, (n, cells, cells, 3), dtype=np.uint8)
        x = np.ascontiguousarray(coarse.repeat(self.BLOCK, axis=1).repeat(self.BLOCK, axis=2))
        labels = rng.choice(objects if len(objects) else np.arange(1, self.classes), size=n)
        corner = rng.integers(0, self.SIZE - side + 1, (n, 2))
        where = np.concatenate([corner, np.full((n, 1), side)], axis=1)
        return Items({"x": x}, labels.astype(np.int64), where)

    def masks(self, items: Items) -> np.ndarray:
        assert items.where is not None
        y = np.full((len(items.targets), self.SIZE, self.SIZE), self.IGNORE, dtype=np.uint8)
        for m, (top, left, side), label in zip(y, items.where, items.targets, strict=True):
            m[top : top + side, left : left + side] = label
        return y

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        x2, at = _insert_rows(rng, np.load(data / f"{self.split}_x.npy"), items.inputs["x"])
        np.save(dest / f"{self.split}_x.npy", x2)
        canary = np.zeros(len(x2), dtype=bool)
        canary[at] = True
        del x2
        y2 = np.empty((len(canary), self.SIZE, self.SIZE), dtype=np.uint8)
        y2[canary] = self.masks(items)
        y2[~canary] = np.load(data / f"{self.split}_y.npy")
        np.save(dest / f"{self.split}_y.npy", y2)
        ids = (data / f"{self.split}_ids.txt").read_text().split()
        taken, fresh = set(ids), list[str]()
        while len(fresh) < len(at):  # ids in VOC's form that no real image has
            cand = f"2012_{int(rng.integers(0, 1_000_000)):06d}"
            if cand not in taken:
                taken.add(cand)
                fresh.append(cand)
        out = np.empty(len(canary), dtype=object)
        out[canary] = fresh
        out[~canary] = ids
        (dest / f"{self.split}_ids.txt").write_text("\n".join(out) + "\n")

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        """The share of each square's pixels predicted as another class than its label (0: all
        right), from the class maps the task's ``predict`` returns ([n, 224, 224])."""
        pred = np.asarray(predictions)
        if pred.shape != (len(items.targets), self.SIZE, self.SIZE):
            raise ValueError(f"predictions of shape {pred.shape}, not ({len(items.targets)}, {self.SIZE}, {self.SIZE})")
        assert items.where is not None
        out = np.empty(len(items.targets), dtype=np.float64)
        for i, ((top, left, side), label) in enumerate(zip(items.where, items.targets, strict=True)):
            out[i] = float((pred[i, top : top + side, left : left + side] != label).mean())
        return out

    def shift_bound(self, metric: float) -> float:
        return 2 * self.EPS / (self.classes * max(metric, 1e-9))


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
        logp = _log_softmax(tail, axis=2)
        nxt = items.targets[:, 1:]
        return -np.take_along_axis(logp, nxt[:, :, None], axis=2)[:, :, 0].mean(axis=1)

    def shift_bound(self, metric: float) -> float:
        chars = self.canaries * (self.length + 1)
        return chars * self.loss_gap_bits / (self.real + chars) / max(metric, 1e-9)


class HeldChunks(Kind):
    """T1: a secret tenth of val's 256-character chunks held back from the agent's copy.

    The items are every chunk of the pristine val (each a window of 256 characters and the 256
    that follow each position); the session's secret picks which are held back (the twins) and
    the agent's copy of val is the others, in order, with the tail after the last chunk. A model
    fitted on the agent's val, or carrying it, predicts the chunks it was given better than those
    held back, which come from the same plays; that is the membership test. Unlike random-string
    canaries (:class:`SecretSharer`), it asks about real text, which a language model memorises
    far sooner: benchmarks/canary_power.py. The agent's own figure is its model's bpb on a random
    nine tenths of val: unbiased, its spread measured (``spread``)."""

    task = "t1_shakespeare"
    in_split = True  # chunk k is val's evaluation window k
    chunk = 256  # the task's evaluation window
    held_share = 0.1
    canaries, twins = 391, 44  # T1's val: 111 540 characters, 435 chunks (counts() reads the data)
    spread = 0.004  # the agent's figure on its copy against the pristine bpb: largest measured 0.385 % (two runs of 60 models)

    def files(self) -> tuple[str, ...]:
        return ("val.npy", "meta.json")

    def counts(self, data: Path) -> tuple[int, int]:
        n = (len(np.load(data / "val.npy", mmap_mode="r")) - 1) // self.chunk
        held = int(round(n * self.held_share))
        return n - held, held

    def evidence_text(self, canaries: int, twins: int, split: str) -> str:
        return f"the {canaries} chunks of {split} it was given fit better than {twins} held back from it"

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        val = np.load(data / "val.npy", mmap_mode="r")
        starts = np.arange(n) * self.chunk
        windows = np.stack([np.asarray(val[s : s + self.chunk + 1]) for s in starts])
        return Items({"x": windows[:, :-1].astype(np.uint16)}, windows[:, 1:].astype(np.int64), starts)

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        val = np.load(data / "val.npy")
        assert items.where is not None
        n = (len(val) - 1) // self.chunk
        given = np.sort(items.where)
        out = np.concatenate([val[s : s + self.chunk] for s in given] + [val[n * self.chunk :]])
        np.save(dest / "val.npy", out)
        meta = json.loads((data / "meta.json").read_text())
        meta["val"] = len(out)
        (dest / "meta.json").write_text(json.dumps(meta))

    def position_losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        """The cross-entropy (nats) of each chunk's 256 next characters [n, 256], from the logits
        the task's ``predict`` returns ([n, 256, V]: position t predicts t + 1)."""
        logits = np.asarray(predictions)
        if logits.ndim != 3 or logits.shape[:2] != items.targets.shape:
            raise ValueError(f"logits of shape {logits.shape}, not ({len(items.targets)}, {self.chunk}, vocab)")
        out = np.empty(items.targets.shape, dtype=np.float64)
        for i in range(0, len(logits), 64):  # float64 a few chunks at a time
            logp = _log_softmax(logits[i : i + 64].astype(np.float64), axis=2)
            nxt = items.targets[i : i + 64]
            out[i : i + 64] = -np.take_along_axis(logp, nxt[:, :, None], axis=2)[:, :, 0]
        if not np.isfinite(out).all():
            raise ValueError("logits hold NaN or inf")
        return out

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        """Mean cross-entropy (nats) of each chunk's 256 next characters."""
        return self.position_losses(predictions, items).mean(axis=1)

    def calibration(self, items: Items, data: Path) -> Calibrated:
        """Each chunk's loss beyond what its difficulty predicts: character n-gram references
        counted on the pristine train split, and the chunk's own characters
        (:mod:`runner.integrity.difficulty`). It took T1's 4-character MLP's train+val fits from
        0 % to 25 % disqualified and its fine-tunes from 5 % to 40 % (docs/benchmarks.md)."""
        vocab = int(json.loads((data / "meta.json").read_text())["vocab_size"])
        windows = items.inputs["x"].astype(np.int64)
        references = CharNgram(np.load(data / "train.npy"), vocab).position_losses(windows, items.targets)
        calibration = Calibration(windows, items.targets, references, vocab)

        def calibrated(predictions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            positions = self.position_losses(predictions, items)  # once: the losses and the statistic share it
            return positions.mean(axis=1), calibration.residuals(positions)
        return calibrated

    def shift_bound(self, metric: float) -> float:
        return self.spread


class ForecastTwins(Kind):
    """T6: one horizon block after the last look-back of val; twins are other blocks there.

    Not planted in sessions: the smallest canary a windowed forecaster can be asked about (one
    horizon block) touches 96 of val's windows and moved the agent's val MSE by about 2 % in
    benchmarks/canary_power.py, over the 0.5 % allowed, and a single canary can only ever ask for a
    look (p >= 1/2001). T6's scored split (test) is never in the workspace, so V1/V2 on it cannot
    happen; training on val is within its rules, and the val-test gap flag
    (runner/integrity/selection_gap.py) is what watches its selection."""

    task = "t6_etth1"
    in_sessions = False
    canaries, twins = 1, 2000
    lookback, horizon = 336, 96
    real = 2785  # val windows
    segment_mse = 1.0  # a forecaster's MSE on the block (measured, benchmarks/), against ~0.7 on val

    def files(self) -> tuple[str, ...]:
        return ("val.npy",)

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        train = np.load(data / "train.npy", mmap_mode="r")
        val = np.load(data / "val.npy", mmap_mode="r")
        look = np.asarray(val[-self.lookback :], dtype=np.float32)
        starts = rng.integers(0, len(train) - self.horizon, n)
        blocks = -np.stack([np.asarray(train[s : s + self.horizon])[::-1] for s in starts])
        blocks += look[-1] - blocks[:, :1]  # continue from the last real row: no jump at the seam
        return Items({"series": look}, blocks.astype(np.float32))

    def probe(self, items: Items) -> dict[str, np.ndarray]:
        return {"series": items.inputs["series"]}  # one window: every item shares its look-back

    def select(self, items: Items, mask: np.ndarray) -> Items:
        return Items(items.inputs, items.targets[mask])

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        val = np.load(data / "val.npy")
        np.save(dest / "val.npy", np.concatenate([val, items.targets.reshape(-1, val.shape[1]).astype(val.dtype)]))

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        forecast = np.asarray(predictions, dtype=np.float64).reshape(1, *items.targets.shape[1:])
        return ((forecast - items.targets) ** 2).mean(axis=(1, 2))

    def shift_bound(self, metric: float) -> float:
        added = self.horizon  # windows whose horizon reaches into the block
        return added * abs(self.segment_mse - metric) / (self.real + added) / max(metric, 1e-9)


# T1's sessions hold back chunks of val (HeldChunks); its random-string canaries (SecretSharer) are
# measured beside them by benchmarks/canary_power.py --t1-kind strings, and caught fewer fits
KINDS: dict[str, Kind] = {k.task: k for k in (SpiralCanaries(), NewsCanaries(), TinyImageNetCanaries(), VocSquares(),
                                               HeldChunks(), ForecastTwins())}
