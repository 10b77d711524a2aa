"""What a canary is on each task (issues 35 and 46): drawn, planted in the agent's copy of a split,
shown to a checkpoint as a probe, and scored per item. Trusted code: numpy only, no agent bytes.

Every kind draws ``n`` items; :mod:`runner.integrity.canaries` then picks at random, from the
session's secret, which of them are canaries (in the agent's copy) and which are twins (never
shown). Under "the model never saw them" canaries and twins are exchangeable, so the membership
statistic has a known null whatever the model is.

Since issue 46 every kind planted in sessions holds back real items (:class:`HeldBack`): the
items are the scored split's own rows, and the secret holds a share of them back from the
agent's copy. The copy is the other rows, unchanged and in order: there is nothing in it to tell
apart from data (every row it holds is real, and every one is a canary), and the twins are rows
it never sees. The synthetic canaries they replaced (far points, random-letter texts, blocky
images, squares in ignored masks, random strings) were each told from real data by one line of
numpy: runner/integrity/synthetic_canaries.py keeps the measurable ones.

- ``t0`` (spirals, 1 500 val points): a secret tenth of val's points (:class:`HeldPoints`),
  judged beyond what the labels of their nearest train points predict;
- ``t1`` (TinyShakespeare): a secret tenth of val's 256-character chunks (:class:`HeldChunks`),
  judged beyond what character n-grams counted on train predict (:mod:`runner.integrity.difficulty`);
- ``t2`` (TinyImageNet, 10 000 val images): a secret tenth of them (:class:`HeldImages`);
- ``t3`` (Pascal VOC, 1 449 val images and masks): a secret twentieth (:class:`HeldMasks`), by the
  share of each image's labelled pixels predicted wrong;
- ``t6`` (ETTh1, scored split test): not planted (:class:`ForecastTwins`);
- ``t7`` (AG News, 7 600 val texts): a secret 30 % of them (:class:`HeldTexts`), judged beyond
  what naive Bayes over train's character trigrams predicts.

The agent's own ``prepare.evaluate`` figure on its copy is its model's metric on a random share
of val: unbiased, with a spread (``shift_bound``) that the contract records.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runner.integrity.difficulty import Calibration, CharNgram, fit_away, log_softmax
from runner.integrity.references import NearestPoints, TrigramBayes, features

# a checkpoint's predictions on every item -> (its per-item losses, the statistic the test compares)
Calibrated = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
AGENT_SHIFT_LIMIT = 0.005  # issue 35: synthetic canaries may bias the agent's own figure by at most 0.5 %
ROWS_PER_FEATURE = 50  # a reference calibrates rows only where they outnumber its features 50 to 1 (t0: 1 500 to 4)


@dataclass(frozen=True)
class Items:
    """``n`` drawn items: ``inputs`` (the probe's rows, in the task's ``inputs()`` format, one
    row per item), ``targets`` (one per item, never shown to a model) and, where each item has a
    place of its own, ``where``: for the kinds that hold back real items (:class:`HeldBack`), the
    item's place in the pristine split (a row; T1: a chunk's first character), so that the
    official pass's own predictions there are the probe's."""

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
    # True: the items are the split's own rows, in order, a secret share of them held back from the
    # agent's copy (:class:`HeldBack`: every kind planted in sessions): judged on the split's own
    # predictions; False: their rows are mixed among the split's in its pass (runner/integrity/passes.py)
    in_split = False
    scores = False  # True: the probe asks for the model's scores behind its predictions (worker.predict_scores)

    def counts(self, data: Path) -> tuple[int, int]:
        """(canaries, twins) for this data: the class's counts (:class:`HeldBack`: from the split's size)."""
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
        """At most how far (relative) the canaries move the agent's figure for a model at ``metric``
        (a kind that holds back real items moves it by nothing in expectation: its spread)."""
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


class ClassScores:
    """Classification losses: each item's cross-entropy (nats) under the model's scores
    [n, classes] (what a session's probe returns: ``worker.predict_scores``); from class
    predictions [n], 0/1. The cross-entropy moves as soon as the model leans toward an item's
    label, long before its argmax flips."""

    classes = 2
    scores = True

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        pred = np.asarray(predictions)
        targets = np.asarray(items.targets, dtype=np.int64)
        if pred.ndim == 1:
            if pred.shape != targets.shape:
                raise ValueError(f"predictions of shape {pred.shape}, not ({len(targets)},)")
            return (pred != targets).astype(np.float64)
        if pred.shape != (len(targets), self.classes):
            raise ValueError(f"scores of shape {pred.shape}, not ({len(targets)}, {self.classes})")
        z = pred.astype(np.float64)
        if not np.isfinite(z).all():
            raise ValueError("scores hold NaN or inf")
        return -log_softmax(z, axis=1)[np.arange(len(z)), targets]

    def answer_bytes(self, n: int) -> int:
        """The most bytes of an honest probe answer of ``n`` items: scores, up to float64."""
        return n * self.classes * 8


def _write_rows(source: Path, dest: Path, rows: np.ndarray, block: int = 256) -> None:
    """The rows ``rows`` of the array in ``source``, in that order, as a new ``.npy`` at ``dest``,
    a few at a time (T3's val images are 218 MB)."""
    src = np.load(source, mmap_mode="r")
    out = np.lib.format.open_memmap(dest, mode="w+", dtype=src.dtype, shape=(len(rows), *src.shape[1:]))
    for i in range(0, len(rows), block):
        out[i : i + block] = src[rows[i : i + block]]
    out.flush()
    del out


class HeldBack(Kind):
    """Real items of the split, a secret share of them held back from the agent's copy (issue 46).

    The items are every unit of the pristine split (a row; T1: a 256-character chunk), in order;
    the secret holds back ``held_share`` of them (the twins) and the agent's copy is the rest,
    unchanged and in order (the canaries). A model fitted on the copy, or carrying it, fits the
    units it was given better than those held back, which are of the same distribution: that is
    the membership test, exact by permutation. No filter can drop a canary by how it looks (they
    are all the split's own rows), and none can find a twin (it is not in the workspace). What
    it costs the agent: its val is ``1 - held_share`` of the paper's, train is untouched. Its own
    figure is its model's metric on a random share of val: unbiased, with a spread
    (:meth:`shift_bound`). The official value is computed on the whole pristine split, as without
    canaries, and its predictions on the items are the probe's (``Items.where``)."""

    in_split = True
    held_share = 0.1
    unit = "rows"

    def size(self, data: Path) -> int:
        """How many units the pristine split in ``data`` holds."""
        raise NotImplementedError

    def counts(self, data: Path) -> tuple[int, int]:
        n = self.size(data)
        held = int(round(n * self.held_share))
        if not 0 < held < n:
            raise ValueError(f"{self.split} holds {n} {self.unit}: too few to hold back a share of them")
        return n - held, held

    def evidence_text(self, canaries: int, twins: int, split: str) -> str:
        return f"the {canaries} {self.unit} of {split} it was given fit better than {twins} held back from it"


class HeldRows(HeldBack):
    """A :class:`HeldBack` kind whose units are the rows of ``<split>_<part>.npy``, one array per
    part of :attr:`parts` (``x`` the inputs, ``y`` the targets)."""

    parts: tuple[str, ...] = ("x", "y")

    def files(self) -> tuple[str, ...]:
        return tuple(f"{self.split}_{p}.npy" for p in self.parts)

    def size(self, data: Path) -> int:
        return len(np.load(data / f"{self.split}_y.npy", mmap_mode="r"))

    def draw(self, rng: np.random.Generator, n: int, data: Path) -> Items:
        x = np.load(data / f"{self.split}_x.npy", mmap_mode="r")
        y = np.load(data / f"{self.split}_y.npy", mmap_mode="r")
        if len(x) != n or len(y) != n:
            raise ValueError(f"{self.split}_x and _y hold {len(x)} and {len(y)} rows, not {n}")
        return Items({"x": x}, y, np.arange(n))

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        assert items.where is not None
        given = np.sort(items.where)
        for part in self.parts:
            _write_rows(data / f"{self.split}_{part}.npy", dest / f"{self.split}_{part}.npy", given)


class HeldClasses(ClassScores, HeldRows):
    """Classification rows held back; each judged by its cross-entropy beyond what a reference
    (:meth:`reference`, fitted on train by trusted code: runner/integrity/references.py)
    predicts for it, where the task has one."""

    real = 1  # rows of the task's real val (the contract's spread)

    def reference(self, data: Path, items: Items) -> np.ndarray | None:
        """The reference's log-posterior [n, classes] of every item, or None: no calibration."""
        return None

    def calibration(self, items: Items, data: Path) -> Calibrated | None:
        """Each row's cross-entropy less its least-squares fit on the reference's features of it
        (:func:`runner.integrity.references.features`), fitted on every row alike: a fixed
        function of the model's losses and the rows, so the permutation test stays exact. Only
        where rows outnumber the fit's 4 columns :data:`ROWS_PER_FEATURE` to 1: on a test's
        fixture of 40 texts the fit took a lookup's p from below 1e-9 to 0.01."""
        if len(items.targets) < ROWS_PER_FEATURE * 4:  # a few rows: the fit would absorb what sets them apart
            return None
        log_posterior = self.reference(data, items)
        if log_posterior is None:
            return None
        labels = np.asarray(items.targets, dtype=np.int64)
        design = np.concatenate([np.ones((len(labels), 1)), features(log_posterior, labels)], axis=1)

        def calibrated(predictions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            losses = self.losses(predictions, items)
            return losses, fit_away(losses, design)
        return calibrated

    def shift_bound(self, metric: float) -> float:
        """The spread (standard deviation, relative) of the agent's accuracy on its copy around the
        official one, for a model right on a share ``metric`` of the real val: the mean of
        ``canaries`` rows drawn without replacement from ``canaries + twins``. Zero in expectation."""
        a = min(max(metric, 1e-9), 1.0)
        g, h = self.canaries, self.twins
        return math.sqrt((1 - a) / a * h / (g * (g + h)))


class HeldPoints(HeldClasses):
    """t0: a secret tenth of val's points; the reference is the labels of each point's 32 nearest
    train points."""

    task, classes, real = "t0_demo", 3, 1500
    unit = "points"
    canaries, twins = 1350, 150

    def reference(self, data: Path, items: Items) -> np.ndarray | None:
        return NearestPoints(np.load(data / "train_x.npy"), np.load(data / "train_y.npy"),
                             self.classes).log_posterior(np.asarray(items.inputs["x"]))


class HeldTexts(HeldClasses):
    """T7: a secret 30 % of val's texts (its 7 600 leave room: the agent's figure on the other
    5 320 spreads by 0.38 % at the baseline's 0.793); the reference is naive Bayes over train's
    character trigrams."""

    task, classes, real = "t7_agnews", 4, 7600
    unit = "texts"
    held_share = 0.3
    canaries, twins = 5320, 2280

    def reference(self, data: Path, items: Items) -> np.ndarray | None:
        bayes = TrigramBayes(np.load(data / "train_x.npy", mmap_mode="r"), np.load(data / "train_y.npy"), self.classes)
        return bayes.log_posterior(items.inputs["x"])


class HeldImages(HeldClasses):
    """T2: a secret tenth of val's images, judged on their cross-entropy as it is (no reference:
    none that trusted numpy code could fit on 100 000 images in a session predicts a network's
    difficulty; not measured, the data is not on this machine)."""

    task, classes, real = "t2_tinyimagenet", 200, 10000
    unit = "images"
    canaries, twins = 9000, 1000


class HeldMasks(HeldRows):
    """T3: a secret twentieth of val's images held back with their masks and ids; each judged by
    the share of its labelled pixels (mask not 255) predicted as another class, from the class
    maps the task's ``predict`` returns [n, 224, 224] (an image with no labelled pixel: 0 for
    every model). mIoU is one confusion matrix over the split, so the agent's figure on the
    other 95 % has no closed-form spread; ``spread`` is an estimate (VOC is not on this machine):
    each object class is in ~5 % of VOC val's images, about 70, and a 5 % sample of them moves its
    IoU by ~2.7 % (relative standard deviation, at a coefficient of variation of 1 between
    images), the mean of 21 such ~0.6 %."""

    task = "t3_voc"
    unit = "images"
    held_share = 0.05
    canaries, twins = 1377, 72
    IGNORE = 255
    spread = 0.006

    def files(self) -> tuple[str, ...]:
        return (*super().files(), f"{self.split}_ids.txt")

    def plant(self, rng: np.random.Generator, items: Items, data: Path, dest: Path) -> None:
        super().plant(rng, items, data, dest)
        assert items.where is not None
        ids = (data / f"{self.split}_ids.txt").read_text().split()
        (dest / f"{self.split}_ids.txt").write_text("".join(ids[i] + "\n" for i in np.sort(items.where)))

    def losses(self, predictions: np.ndarray, items: Items) -> np.ndarray:
        pred = np.asarray(predictions)
        y = items.targets
        if pred.shape != y.shape:
            raise ValueError(f"predictions of shape {pred.shape}, not {tuple(y.shape)}")
        out = np.empty(len(y), dtype=np.float64)
        for i in range(0, len(y), 64):  # a few masks at a time: val_y is 73 MB on VOC
            target = np.asarray(y[i : i + 64])
            labelled = target != self.IGNORE
            wrong = (pred[i : i + 64] != target) & labelled
            out[i : i + 64] = wrong.sum(axis=(1, 2)) / np.maximum(labelled.sum(axis=(1, 2)), 1)
        return out

    def shift_bound(self, metric: float) -> float:
        return self.spread


class HeldChunks(HeldBack):
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
    unit = "chunks"  # chunk k is val's evaluation window k
    chunk = 256  # the task's evaluation window
    canaries, twins = 391, 44  # T1's val: 111 540 characters, 435 chunks (counts() reads the data)
    spread = 0.004  # the agent's figure on its copy against the pristine bpb: largest measured 0.385 % (two runs of 60 models)

    def files(self) -> tuple[str, ...]:
        return ("val.npy", "meta.json")

    def size(self, data: Path) -> int:
        return (len(np.load(data / "val.npy", mmap_mode="r")) - 1) // self.chunk

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
            logp = log_softmax(logits[i : i + 64].astype(np.float64), axis=2)
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


# the kind each task's sessions get (kind_for: those in_sessions); the synthetic ones they replaced
# are measured beside them: runner/integrity/synthetic_canaries.py, benchmarks/canary_power.py --synthetic
KINDS: dict[str, Kind] = {k.task: k for k in (HeldPoints(), HeldTexts(), HeldImages(), HeldMasks(), HeldChunks(),
                                               ForecastTwins())}
