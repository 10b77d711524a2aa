"""How often the canaries catch a model trained on, or carrying, the split they sit in, and how often
they flag an honest one (issues 35 and 46; runner/integrity/canaries.py).

    python benchmarks/canary_power.py [--n 20] [--tasks t0,t1,t6,t7] [--threads 2]
    python benchmarks/canary_power.py --exposure 4,8,16,32 --tasks t1-gpt [--n 6]
    python benchmarks/canary_power.py --synthetic --tasks t0,t7   # the canaries sessions had before issue 46
    python benchmarks/canary_power.py --argmax --tasks t7           # judged on predicted classes, not scores

The sessions' canaries hold back a secret share of val's own rows (runner/integrity/canary_kinds.py);
``--synthetic`` measures the planted synthetic ones they replaced. t0 and T7 are judged on the
scores behind the model's predictions (each row's cross-entropy), as the kinds ask; ``--argmax``
on the predicted classes (0/1 losses), which is what a session's whole-split pass gives the
canaries until the scorer asks for the scores there too.

With ``--exposure``, only val-only fits (``--exposure-fit train+val``: final fits on train and
val), each trained once and judged after every given number of passes over the canaried val
(a real fit sees val more often than these CPU-sized ones: T1's baseline pointed at val for its
own 305 steps makes ~45 passes over it, one for each of its 5 epochs when it trains on train
and val). Adam restarts at each stage.

For each task, ``--n`` checkpoints of each kind, each with a session secret of its own (its own
canaries and twins), trained here on the CPU with tiny models:
- ``honest``: the baseline and variants (width, learning rate, epochs, seed) on train only;
- ``val-only``: the same model fitted on the agent's canaried copy of val alone;
- ``train+val``: a final fit on train and the canaried val together;
- ``fine-tune``: an honest checkpoint fine-tuned for one epoch on the canaried val;
- ``lookup``: an honest checkpoint that carries the canaried val (inputs -> targets) in a buffer
  and answers from it where an input matches;
- ``filtered`` (t0, T1, T7): an agent that knows the harness's code strips from its copy every
  row a tell of benchmarks/canary_tells.py flags (the radius, character-share and lowercase-run
  tells that gave the synthetic canaries away, isolation from train, an unusual character mix,
  repeats), then makes a final fit on train and the rest of val. Printed with it: the best
  AUROC of any tell (how well it ranks canaries above the other rows: real rows for a synthetic
  kind; for the held-back kinds, where every row of the copy is real and a canary, the twins
  it never saw) and the share of its copy it dropped;
- ``light`` (t1-ngram, issue 46): a 7-gram counted on train plus the 7-grams of val that recur in
  at least 5 of its 256-character chunks (what an agent takes from val without memorising it);
- ``rebuilt`` (t0): a final fit on train and the pristine val, rebuilt from the generator and
  seed in t0's prepare.py instead of the workspace's copy (no held-back row is missing).
Every checkpoint is shown the probe through the task's own pristine ``predict`` and judged by
``canaries.evidence``. Printed: the rate at each level (``look``: p <= P_LOOK, ``strong``:
p <= P_STRONG), the median p, and for honest checkpoints how far the canaries move the agent's
own ``evaluate`` figure on its canaried copy (relative to the pristine metric).

Also printed, per kind: the checkpoint's ``edge``, how much better its metric is on the pristine
split it was scored on than on data of the same kind that no checkpoint here was trained on
(relative, in the metric's better direction; ``unseen``: t0 3 000 fresh spiral points, t1 the
train text after the slice the models see, t6 the test split, t7 the 1 600 AG News rows in
neither split). An honest checkpoint's edge is noise (or, on t1 and t6, a fixed offset between
two parts of a series); a violation's edge above the honest ones is what training on the split
added to its number. ``edge↑`` is the largest edge among the violations the canaries did not
flag, and ``honest max`` the largest honest edge: a fit that went unflagged without an edge above
the honest ones reported a number that holds on unseen data.

Data: t0 is made by its prepare.py; t1 and t6 are prepared from /work/shared/data (or --from);
t7 is shaped like T7 (texts cut/padded to 1 014 ASCII codes, 4 classes) from the AG News test
file, split 4 000 train / 2 000 val (this machine has no AG News train file). Models: t0 the
baseline MLP; t1 a 4-character-context MLP; t1-gpt a 2-layer causal transformer over 256-character
windows (T1's baseline, shrunk); t6 a linear 336 -> 96 forecaster (DLinear without its
decomposition); t7 a fastText-like bag of hashed character trigrams. Tiny, so that 400 checkpoints
train in minutes on two busy cores; a real agent's models are larger and memorise more.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from runner.integrity import canaries  # noqa: E402
from runner.integrity.canary_kinds import KINDS, HeldChunks, HeldClasses, Kind  # noqa: E402
from runner.integrity.difficulty import CharNgram, gram_keys  # noqa: E402
from runner.integrity.synthetic_canaries import SYNTHETIC, SecretSharer  # noqa: E402
from runner.scoring.worker import predict_scores  # noqa: E402
from tasks import all_tasks  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from canary_tells import auroc, chunk_tells, flagged, point_tells, text_tells  # noqa: E402

SHARED = Path("/work/shared/data")
VIOLATIONS = ("val-only", "train+val", "fine-tune", "lookup")


# --------------------------------------------------------------------------- models
class CharMLP(nn.Module):
    """Logits for the next character from the previous ``k`` (zero-padded at a window's start)."""

    def __init__(self, vocab: int = 65, k: int = 4, emb: int = 16, hidden: int = 128):
        super().__init__()
        self.k = k
        self.emb = nn.Embedding(vocab, emb)
        self.fc1 = nn.Linear(emb * k, hidden)
        self.fc2 = nn.Linear(hidden, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        e = F.pad(self.emb(idx), (0, 0, self.k - 1, 0))
        ctx = e.unfold(1, self.k, 1).flatten(2)  # [B, T, emb*k]
        return self.fc2(F.relu(self.fc1(ctx)))


class TinyGPT(nn.Module):
    """T1's baseline (tasks/t1_shakespeare/train.py: a causal transformer over a 256-character
    window), shrunk to train on two CPU cores: ``layers`` blocks of width ``width``."""

    def __init__(self, vocab: int = 65, width: int = 64, layers: int = 2, heads: int = 4, block: int = 256):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(block, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        h = self.tok(idx.long()) + self.pos(torch.arange(t, device=idx.device))
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        return self.head(self.norm(self.blocks(h, mask=mask, is_causal=True)))


class Linear336(nn.Module):
    def __init__(self, lookback: int = 336, horizon: int = 96):
        super().__init__()
        self.fc = nn.Linear(lookback, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.transpose(1, 2)).transpose(1, 2)


class TrigramBag(nn.Module):
    BUCKETS = 1 << 17

    def __init__(self, dim: int = 16, classes: int = 4):
        super().__init__()
        self.bag = nn.EmbeddingBag(self.BUCKETS, dim, mode="sum", sparse=True)
        self.out = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.long()
        grams = (x[:, :-2] * 16129 + x[:, 1:-1] * 127 + x[:, 2:]) % self.BUCKETS
        live = (x[:, 2:] > 0).float()
        weights = live / live.sum(dim=1, keepdim=True).clamp(min=1)
        return self.out(self.bag(grams, per_sample_weights=weights))


class Lookup(nn.Module):
    """An honest model that carries a split: where an input's key is in its buffer, it answers
    the stored target (V2: a lookup, a buffer)."""

    def __init__(self, base: nn.Module, keys: torch.Tensor, answers: torch.Tensor, keyer, answer):
        super().__init__()
        self.base = base
        order = torch.argsort(keys)
        self.register_buffer("keys", keys[order])
        self.register_buffer("answers", answers[order])
        self.keyer, self.answer = keyer, answer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        k = self.keyer(x)
        at = torch.searchsorted(self.keys, k).clamp(max=len(self.keys) - 1)
        hit = self.keys[at] == k
        return self.answer(out, hit, self.answers[at])


def _row_key(x: torch.Tensor) -> torch.Tensor:
    """An int64 key per row (a polynomial hash of its values)."""
    flat = x.reshape(len(x), -1)
    if flat.dtype.is_floating_point:
        flat = torch.round(flat * 1000).long()
    w = torch.from_numpy(np.random.default_rng(7).integers(1, 1 << 20, flat.shape[1]))
    return (flat.long() * w).sum(dim=1)


# --------------------------------------------------------------------------- tasks
@dataclass
class Bench:
    short: str
    kind: Kind
    module: object
    data: Path
    unseen: tuple[Path, str]  # a data folder and the split there of unseen data (prepare_data)
    epochs: int
    batch: int
    higher: bool = True  # the metric's better direction
    calibrated: bool = True  # the sessions' test: on the kind's calibrated statistic where it has one
    argmax: bool = False  # judge classification rows on the predicted classes, not the scores behind them
    shifts: list[float] = field(default_factory=list)
    tell_aurocs: list[float] = field(default_factory=list)  # the filtered trials' best tell
    dropped: list[float] = field(default_factory=list)  # the share of its copy each filtered trial dropped
    _calibrations: dict = field(default_factory=dict)
    extra: ClassVar[tuple[str, ...]] = ()  # this task's violations beyond VIOLATIONS
    gains: list[float] = field(default_factory=list)  # the light fits' gain over train alone (t1-ngram)
    expected: list[float] = field(default_factory=list)  # the spread's formula at each honest model's accuracy, here

    def judge(self, d: canaries.Draw, predictions) -> canaries.Evidence:
        """The draw's evidence as a session's scorer judges it (calibrated, unless told not to)."""
        if not self.calibrated:
            return canaries.judge_draw(d, predictions)
        key = hashlib.sha256(np.ascontiguousarray(d.items.targets).tobytes()).hexdigest()
        if key not in self._calibrations:  # T1's items are every chunk of val, whatever the key: built once
            self._calibrations[key] = self.kind.calibration(d.items, self.data)
        return canaries.judge_draw(d, predictions, self._calibrations[key])

    def model(self, i: int) -> nn.Module:
        raise NotImplementedError

    def fit(self, model: nn.Module, splits: list[dict], epochs: int, lr: float, seed: int,
            steps: int | None = None) -> nn.Module:
        raise NotImplementedError

    def lookup(self, model: nn.Module, view: dict) -> nn.Module:
        raise NotImplementedError

    def load(self, folder: Path, split: str) -> dict:
        raise NotImplementedError

    def fine_tune(self, model: nn.Module, val: dict, lr: float, seed: int) -> nn.Module:
        """One epoch on the canaried val, at the fit's learning rate."""
        return self.fit(model, [val], 1, lr, seed)

    def steps(self, train: dict, epochs: int) -> int:
        """The honest fit's number of steps."""
        rows = len(next(iter(train.values())))
        return epochs * -(-rows // self.batch)

    def tells(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The tells of benchmarks/canary_tells.py on ``rows`` of the split (as its ``x``)."""
        raise NotImplementedError

    def strip(self, view: dict) -> tuple[dict, float]:
        """The agent's copy without the rows a tell flags, and the share dropped."""
        drop = flagged(self.tells(view["x"].numpy()))
        return {k: v[torch.from_numpy(~drop)] for k, v in view.items()}, float(drop.mean())

    def told(self, d: canaries.Draw) -> dict[str, float]:
        """Each tell's AUROC at ranking the canaries above the other rows: for a held-back kind
        the twins (every row of the copy is real and a canary), else the pristine split's rows."""
        if self.kind.in_split:
            rows, is_canary = np.asarray(d.items.inputs["x"]), d.is_canary
        else:
            real = np.load(self.data / f"{self.kind.split}_x.npy")
            planted = np.asarray(d.canaries().inputs["x"])
            rows = np.concatenate([real, planted.astype(real.dtype)])
            is_canary = np.r_[np.zeros(len(real), bool), np.ones(len(planted), bool)]
        return {name: auroc(score, is_canary) for name, score in self.tells(rows).items()}


def _adam(model, loss_fn, n: int, batch: int, epochs: int, lr: float, seed: int, steps: int | None = None):
    """Adam over shuffled batches: ``epochs`` passes, or exactly ``steps`` steps when given."""
    g = torch.Generator().manual_seed(seed)
    sparse = {id(p) for m in model.modules() if isinstance(m, nn.EmbeddingBag) and m.sparse for p in m.parameters()}
    opts = [torch.optim.Adam([p for p in model.parameters() if id(p) not in sparse], lr=lr)]
    if sparse:  # a hashed bag's gradient touches the rows it saw: a dense step would update all of them
        opts.append(torch.optim.SparseAdam([p for p in model.parameters() if id(p) in sparse], lr=lr))
    total = steps if steps is not None else epochs * -(-n // batch)
    model.train()
    done = 0
    while done < total:
        for idx in torch.randperm(n, generator=g).split(batch):
            loss = loss_fn(idx)
            for opt in opts:
                opt.zero_grad()
            loss.backward()
            for opt in opts:
                opt.step()
            done += 1
            if done == total:
                break
    model.eval()
    return model


def _xy(folder: Path, split: str) -> dict:
    return {part: torch.from_numpy(np.load(folder / f"{split}_{part}.npy")) for part in ("x", "y")}


class Spirals(Bench):
    extra = ("rebuilt",)

    def load(self, folder: Path, split: str) -> dict:
        return _xy(folder, split)

    def tells(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        return point_tells(rows, np.load(self.data / "train_x.npy"))

    def model(self, i: int) -> nn.Module:
        torch.manual_seed(i)
        h = (32, 64, 128)[i % 3]
        return nn.Sequential(nn.Linear(2, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 3))

    def fit(self, model, splits, epochs, lr, seed, steps=None):
        x = torch.cat([s["x"] for s in splits])
        y = torch.cat([s["y"] for s in splits])
        return _adam(model, lambda i: F.cross_entropy(model(x[i]), y[i]), len(x), self.batch, epochs, lr, seed, steps)

    def lookup(self, model, view):
        return Lookup(model, _row_key(view["x"]), view["y"], _row_key,
                      lambda out, hit, ans: torch.where(hit[:, None], F.one_hot(ans, 3).float() * 50, out))


class Chars(Bench):
    CHUNK = 64
    TRAIN_SLICE = 200_000  # the train characters the models see: CPU minutes

    def load(self, folder: Path, split: str) -> dict:
        ids = np.load(folder / f"{split}.npy").astype(np.int64)
        if split == "train":
            ids = ids[: self.TRAIN_SLICE]
        return {"ids": torch.from_numpy(ids)}

    def steps(self, train: dict, epochs: int) -> int:
        return epochs * -(-(len(train["ids"]) // self.CHUNK) // self.batch)

    def tells(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        return chunk_tells(rows, json.loads((self.data / "meta.json").read_text())["vocab"])

    def strip(self, view: dict) -> tuple[dict, float]:
        """The copy of val without the lines (a newline and what follows it up to the next) whose
        longest lowercase run passes the tell: where the random strings sat, one to a line."""
        ids = view["ids"].numpy()
        newline = json.loads((self.data / "meta.json").read_text())["vocab"].index("\n")
        starts = np.r_[0, np.flatnonzero(ids == newline) + 1]
        ends = np.r_[starts[1:], len(ids)]
        keep = np.ones(len(ids), dtype=bool)
        for a, b in zip(starts, ends, strict=True):
            if b > a and flagged(self.tells(np.pad(ids[a:b], (0, max(0, 2 - (b - a))))[None]))[0]:
                keep[a:b] = False
        return {"ids": torch.from_numpy(ids[keep])}, float(1 - keep.mean())

    def told(self, d: canaries.Draw) -> dict[str, float]:
        if self.kind.in_split:
            return super().told(d)
        val = np.load(self.data / "val.npy")  # the random strings (with the text before each) against val's chunks
        real = val[: (len(val) - 1) // self.CHUNK * self.CHUNK].reshape(-1, self.CHUNK)
        planted = np.asarray(d.canaries().inputs["x"])[:, -self.CHUNK :]
        rows = np.concatenate([np.pad(real, ((0, 0), (planted.shape[1] - real.shape[1], 0))), planted.astype(real.dtype)])
        is_canary = np.r_[np.zeros(len(real), bool), np.ones(len(planted), bool)]
        return {name: auroc(score, is_canary) for name, score in self.tells(rows).items()}

    def model(self, i: int) -> nn.Module:
        torch.manual_seed(i)
        return CharMLP(hidden=(96, 128, 160)[i % 3])

    def fit(self, model, splits, epochs, lr, seed, steps=None):
        chunks = torch.cat([s["ids"][: (len(s["ids"]) - 1) // self.CHUNK * self.CHUNK + 1].unfold(0, self.CHUNK + 1, self.CHUNK)
                            for s in splits])

        def loss(i):
            c = chunks[i]
            return F.cross_entropy(model(c[:, :-1]).reshape(-1, 65), c[:, 1:].reshape(-1))
        return _adam(model, loss, len(chunks), self.batch, epochs, lr, seed, steps)

    def lookup(self, model, view):
        ids, n = view["ids"], 8  # the next character after every 8 characters seen in val
        grams = ids.unfold(0, n, 1)[:-1]
        return Lookup(model, _gram_key(grams), ids[n:], lambda x: _gram_key(F.pad(x, (n - 1, 0)).unfold(1, n, 1)),
                      lambda out, hit, ans: torch.where(hit[..., None], F.one_hot(ans, 65).float() * 50, out))


class CharsGPT(Chars):
    """T1 with a tiny causal transformer over 256-character windows, T1's baseline in small."""

    CHUNK = 256

    def model(self, i: int) -> nn.Module:
        torch.manual_seed(i)
        return TinyGPT(width=(64, 96, 128)[i % 3])


class CharCounts(nn.Module):
    """A hashed n-gram character model (issue 35's first attack counts one on val): the counts of
    the next character after each ``order - 1`` characters are its weights."""

    BUCKETS = 1 << 16

    def __init__(self, order: int = 5, vocab: int = 65):
        super().__init__()
        self.order, self.vocab = order, vocab
        self.register_buffer("counts", torch.zeros(self.BUCKETS, vocab))
        self.register_buffer("unigram", torch.ones(vocab))

    def keys(self, idx: torch.Tensor) -> torch.Tensor:
        n = self.order - 1
        return _gram_key(F.pad(idx.long(), (n - 1, 0)).unfold(1, n, 1)) % self.BUCKETS

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        c = self.counts[self.keys(idx)]
        prior = self.unigram / self.unigram.sum()
        return torch.log(c + 0.5 * prior) - torch.log(c.sum(-1, keepdim=True) + 0.5)

    def count(self, ids: torch.Tensor, weight: float = 1.0) -> None:
        k = self.keys(ids[None, :-1])[0]
        self.counts.index_put_((k, ids[1:]), torch.full((len(k),), weight), accumulate=True)
        self.unigram += torch.bincount(ids, minlength=self.vocab).float() * weight


def _gram_key(grams: torch.Tensor) -> torch.Tensor:
    w = 65 ** torch.arange(grams.shape[-1], dtype=torch.int64)
    return (grams.long() * w).sum(-1)


class Counts(Chars):
    """T1 with count models: a fit is counting; the fine-tune adds val's counts once at a quarter
    of the weight (a light touch: at full weight it is the train+val fit)."""

    FINE_TUNE_WEIGHT = 0.25
    LIGHT_ORDER, LIGHT_CHUNKS = 7, 5  # issue 46's light fit: val's 7-grams found in at least 5 chunks
    extra = ("light",)

    def model(self, i: int) -> nn.Module:
        return CharCounts(order=(4, 5, 6)[i % 3])

    def light(self, train: dict, val: dict) -> nn.Module:
        """A 7-gram (interpolated absolute discounting) counted on all of train, plus the n-grams of each
        order of val that recur in at least :data:`LIGHT_CHUNKS` of its 256-character chunks, each
        counted where it occurs. Records its gain over the same 7-gram on train alone (relative
        bpb on the pristine val) in ``gains``."""
        ids = val["ids"].numpy()
        extra = {}
        for length in range(self.LIGHT_ORDER):
            grams = gram_keys(ids, length, 65)
            chunk = np.arange(length, len(ids)) // 256
            pairs = np.unique(np.stack([grams, chunk]), axis=1)  # one per (gram, chunk it is in)
            kinds, spread = np.unique(pairs[0], return_counts=True)
            extra[length] = grams[np.isin(grams, kinds[spread >= self.LIGHT_CHUNKS])]
        whole = np.load(self.data / "train.npy")  # all of train, not the slice the networks see
        model = GramModel(CharNgram(whole, 65, extra=extra))
        alone = GramModel(CharNgram(whole, 65))
        light, plain = (_figure(self, m, self.data, "val") for m in (model, alone))
        self.gains.append((plain - light) / plain)
        return model

    def fit(self, model, splits, epochs, lr, seed, steps=None):
        for s in splits:
            model.count(s["ids"])
        return model.eval()

    def fine_tune(self, model: nn.Module, val: dict, lr: float, seed: int) -> nn.Module:
        model.count(val["ids"], weight=self.FINE_TUNE_WEIGHT)
        return model


class GramModel(nn.Module):
    """A character n-gram model of runner/integrity/difficulty.py as a module: the log-probability
    of every next character at its longest context (7 characters)."""

    def __init__(self, ngram: CharNgram):
        super().__init__()
        self.ngram = ngram

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        w = idx.long().numpy()
        v = self.ngram.vocab
        every = np.repeat(np.arange(v), w.size).reshape(v, *w.shape)  # every next character, each window
        losses = self.ngram.position_losses(np.tile(w, (v, 1)), every.reshape(v * len(w), -1))[:, :, -1]
        return torch.from_numpy(-losses.reshape(v, *w.shape).transpose(1, 2, 0).astype(np.float32))


class Forecast(Bench):
    def load(self, folder: Path, split: str) -> dict:
        s = torch.from_numpy(np.load(folder / f"{split}.npy"))
        w = s.unfold(0, 432, 1).transpose(1, 2)
        return {"x": w[:, :336], "y": w[:, 336:]}

    def model(self, i: int) -> nn.Module:
        torch.manual_seed(i)
        return Linear336()

    def fit(self, model, splits, epochs, lr, seed, steps=None):
        x = torch.cat([s["x"] for s in splits])
        y = torch.cat([s["y"] for s in splits])
        return _adam(model, lambda i: F.mse_loss(model(x[i]), y[i]), len(x), self.batch, epochs, lr, seed, steps)

    def lookup(self, model, view):
        return Lookup(model, _row_key(view["x"]), view["y"], _row_key,
                      lambda out, hit, ans: torch.where(hit[:, None, None], ans, out))


class News(Bench):
    def load(self, folder: Path, split: str) -> dict:
        return _xy(folder, split)

    def tells(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        return text_tells(rows, np.load(self.data / "train_x.npy", mmap_mode="r"))

    def model(self, i: int) -> nn.Module:
        torch.manual_seed(i)
        return TrigramBag(dim=(12, 16, 24)[i % 3])

    fit = Spirals.fit

    def lookup(self, model, view):
        return Lookup(model, _row_key(view["x"]), view["y"], _row_key,
                      lambda out, hit, ans: torch.where(hit[:, None], F.one_hot(ans, 4).float() * 50, out))


# --------------------------------------------------------------------------- data
def prepare_data(short: str, root: Path, from_dir: Path) -> tuple[object, Path, tuple[Path, str]]:
    """The task's module, its prepared data, and where unseen data of the same kind is: a data
    folder and the split there that holds it (see the module's docstring: ``edge``)."""
    short = short.split("-")[0]  # t1-ngram: t1's data
    spec = next(s for s in all_tasks().values() if s.short == short)
    out, unseen = root / spec.id, root / f"{spec.id}-unseen"
    os.environ["ONEGC_DATA_DIR"] = str(out)
    from runner.scoring.scorer import load_task_module

    module = load_task_module(spec, out)
    if out.is_dir():  # t1 and t1-ngram: one preparation
        return module, out, (unseen, "val")
    out.mkdir(parents=True)
    if short == "t7":
        x, y = module.encode_csv(from_dir / "ag_news" / "test.csv")
        order = np.random.default_rng(0).permutation(len(x))
        for split, rows in (("train", order[:4000]), ("val", order[4000:6000])):
            np.save(out / f"{split}_x.npy", x[rows])
            np.save(out / f"{split}_y.npy", y[rows])
    else:
        raw = {name: next(from_dir.rglob(name)) for name in module.RAW}
        module.build(raw, out)
    if short == "t6":
        return module, out, (out, "test")  # its scored split, never in a workspace
    shutil.copytree(out, unseen)
    if short == "t0":
        x, y = module._spirals(3000, np.random.default_rng(1))  # the generator, another stream
        np.save(unseen / "val_x.npy", x)
        np.save(unseen / "val_y.npy", y)
    elif short == "t7":
        rows = order[6000:]
        np.save(unseen / "val_x.npy", x[rows])
        np.save(unseen / "val_y.npy", y[rows])
    elif short == "t1":
        meta = json.loads((out / "meta.json").read_text())
        text = np.load(out / "train.npy")[Chars.TRAIN_SLICE : Chars.TRAIN_SLICE + meta["val"]]
        np.save(unseen / "val.npy", text)
    return module, out, (unseen, "val")


def agent_view(kind: Kind, key: str, data: Path, dest: Path) -> None:
    """The agent's copy of the data: the canaried split and every other file as it is."""
    dest.mkdir(parents=True)
    canaries.plant(kind, key, data, dest)
    for other in data.iterdir():
        if other.is_file() and other.name not in kind.files():
            shutil.copyfile(other, dest / other.name)


# --------------------------------------------------------------------------- one trial
@dataclass(frozen=True)
class Trial:
    evidence: canaries.Evidence
    edge: float  # the metric's relative advantage on the scored split over unseen data


def trial(bench: Bench, what: str, i: int, work: Path) -> Trial:
    key = hashlib.sha256(f"canary bench {bench.short} {what} {i}".encode()).hexdigest()
    view_dir = work / f"{bench.short}-{what}-{i}"
    agent_view(bench.kind, key, bench.data, view_dir)
    train = bench.load(bench.data, "train")
    val = bench.load(view_dir, bench.kind.split)
    lr = (1e-3, 3e-3, 1e-2)[i % 3] if bench.short != "t6" else (1e-4, 3e-4, 1e-3)[i % 3]
    epochs = bench.epochs + i % 2
    model = bench.model(i)
    d = canaries.draw(bench.kind, key, bench.data)
    if what == "val-only":  # the same training, pointed at val: as many steps as the honest fit
        bench.fit(model, [val], epochs, lr, i, steps=bench.steps(train, epochs))
    elif what == "train+val":
        bench.fit(model, [train, val], epochs, lr, i)
    elif what == "filtered":  # the copy stripped of what looks planted, then a final fit
        rest, dropped = bench.strip(val)
        bench.dropped.append(dropped)
        bench.tell_aurocs.append(max(bench.told(d).values()))
        bench.fit(model, [train, rest], epochs, lr, i)
    elif what == "rebuilt":  # t0's val rebuilt from its generator and seed: every row, none held back
        bench.fit(model, [train, bench.load(bench.data, bench.kind.split)], epochs, lr, i)
    elif what == "light":
        model = bench.light(train, val)
    else:
        bench.fit(model, [train], epochs, lr, i)
        if what == "fine-tune":
            bench.fine_tune(model, val, lr, i + 1000)
        elif what == "lookup":
            model = bench.lookup(model, val)
    with torch.no_grad():
        probe = bench.kind.probe(d.items)
        if bench.kind.scores and not bench.argmax:  # as a session's worker asks: the scores behind the predictions
            pred = predict_scores(bench.module.predict, model, probe, "cpu")
        else:
            pred = bench.module.predict(model, probe, "cpu")
        if what == "honest":
            bench.shifts.append(_agent_shift(bench, model, view_dir))
        edge = _edge(bench, model)
    ev = bench.judge(d, pred)
    shutil.rmtree(view_dir)
    return Trial(ev, edge)


def _figure(bench: Bench, model: nn.Module, folder: Path, split: str) -> float:
    """The task's metric of ``model`` on ``split`` of the data in ``folder``."""
    os.environ["ONEGC_DATA_DIR"] = str(folder)
    m = bench.module  # its evaluate(): judge(predict(inputs)), named by sys.modules
    try:
        return float(m.judge(m.predict(model, m.inputs(split), "cpu"), split)["value"])
    finally:
        os.environ["ONEGC_DATA_DIR"] = str(bench.data)


def _agent_shift(bench: Bench, model: nn.Module, view_dir: Path) -> float:
    """The agent's own figure on its canaried copy against the pristine metric, relative; for a
    kind that holds back classification rows, also records the spread its formula gives at this
    val's size and this model's accuracy (``expected``)."""
    split = bench.kind.split
    pristine, canaried = (_figure(bench, model, folder, split) for folder in (bench.data, view_dir))
    if isinstance(bench.kind, HeldClasses):
        given, held = bench.kind.counts(bench.data)
        a = min(max(pristine, 1e-9), 1.0)
        bench.expected.append(float(np.sqrt((1 - a) / a * held / (given * (given + held)))))
    return (canaried - pristine) / abs(pristine)


def _edge(bench: Bench, model: nn.Module) -> float:
    """How much better the metric is on the canaried split's pristine rows than on unseen data."""
    split = bench.kind.split
    seen = _figure(bench, model, bench.data, split)
    unseen = _figure(bench, model, *bench.unseen)
    better = 1.0 if bench.higher else -1.0
    return better * (seen - unseen) / abs(unseen)


def exposure(bench: Bench, passes: list[int], i: int, work: Path, fit: str = "val-only") -> list[Trial]:
    """One val-only (or ``train+val``) fit, judged after each number of ``passes`` over the canaried val."""
    key = hashlib.sha256(f"canary bench {bench.short} exposure {i}".encode()).hexdigest()
    view_dir = work / f"{bench.short}-exposure-{i}"
    agent_view(bench.kind, key, bench.data, view_dir)
    val = bench.load(view_dir, bench.kind.split)
    splits = [val] if fit == "val-only" else [bench.load(bench.data, "train"), val]
    lr = (1e-3, 3e-3, 1e-2)[i % 3] if bench.short != "t6" else (1e-4, 3e-4, 1e-3)[i % 3]
    model, done, out = bench.model(i), 0, []
    d = canaries.draw(bench.kind, key, bench.data)
    for total in passes:
        bench.fit(model, splits, total - done, lr, i + total)
        done = total
        with torch.no_grad():
            probe = bench.kind.probe(d.items)
            pred = (predict_scores(bench.module.predict, model, probe, "cpu") if bench.kind.scores and not bench.argmax
                    else bench.module.predict(model, probe, "cpu"))
            out.append(Trial(bench.judge(d, pred), _edge(bench, model)))
    shutil.rmtree(view_dir)
    return out


def exposure_table(bench: Bench, passes: list[int], n: int, work: Path, fit: str = "val-only") -> None:
    started = time.perf_counter()
    runs = [exposure(bench, passes, i, work, fit) for i in range(n)]
    for j, total in enumerate(passes):
        evs = [r[j].evidence for r in runs]
        look = sum(e.level != "clean" for e in evs) / n
        strong = sum(e.level == "strong" for e in evs) / n
        edge = statistics.median(r[j].edge for r in runs)
        print(f"{bench.short:<6} {fit} after {total:>3} passes {n:>3} {look:>6.0%} {strong:>7.0%} "
              f"{statistics.median(e.p for e in evs):>9.1e} {min(e.p for e in evs):>8.1e} {edge:>+8.2%}", flush=True)
    print(f"{bench.short:<6} {n} fits of {passes[-1]} passes in {time.perf_counter() - started:.0f} s", flush=True)


# --------------------------------------------------------------------------- main
FILTERED = {"t0", "t1", "t1-gpt", "t7"}  # the tasks whose filtered fit is measured
BENCHES = {"t0": (Spirals, 6, 128), "t1": (Chars, 2, 16), "t1-gpt": (CharsGPT, 2, 16), "t1-ngram": (Counts, 1, 16),
           "t6": (Forecast, 2, 128),
           "t7": (News, 3, 64)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20, help="checkpoints of each kind per task")
    parser.add_argument("--tasks", default="t0,t1,t1-gpt,t1-ngram,t6,t7")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--t1-kind", choices=("session", "strings", "held"), default="session",
                        help="T1's test: the sessions' (held-back chunks), random strings (SecretSharer) or held chunks")
    parser.add_argument("--synthetic", action="store_true",
                        help="the synthetic canaries sessions had before issue 46 (t0, T7, T1's strings)")
    parser.add_argument("--argmax", action="store_true",
                        help="judge t0's and T7's rows on the predicted classes (0/1 losses), not the scores behind them")
    parser.add_argument("--no-calibration", action="store_true",
                        help="test the raw losses, not the difficulty-calibrated ones (T1: runner/integrity/difficulty.py)")
    parser.add_argument("--exposure", default="", help="passes over val, e.g. 4,8,16,32: val-only fits judged after each")
    parser.add_argument("--exposure-fit", choices=("val-only", "train+val"), default="val-only",
                        help="with --exposure: the fit measured")
    parser.add_argument("--kinds", default="", help="only these checkpoint kinds, e.g. lookup,filtered (default: all)")
    parser.add_argument("--from", dest="from_dir", type=Path, default=SHARED, help="the raw files (shared/data)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"thresholds: strong p <= {canaries.P_STRONG:g} (disqualifies on the scored split), look p <= {canaries.P_LOOK:g}")
    print(f"{'task':<5} {'kind':<10} {'n':>3} {'look+':>6} {'strong':>7} {'median p':>9} {'min p':>8} {'edge':>8}  "
          "unflagged edge  time")
    with tempfile.TemporaryDirectory(prefix="canary-power-") as tmp:
        root = Path(tmp)
        for short in args.tasks.split(","):
            cls, epochs, batch = BENCHES[short]
            module, data, unseen = prepare_data(short, root / "data", args.from_dir)
            spec = next(s for s in all_tasks().values() if s.short == short.split("-")[0])
            kind = SYNTHETIC.get(spec.id, KINDS[spec.id]) if args.synthetic else KINDS[spec.id]
            if spec.id == "t1_shakespeare" and args.t1_kind != "session":
                kind = SecretSharer() if args.t1_kind == "strings" else HeldChunks()
            bench = cls(short, kind, module, data, unseen, epochs, batch, spec.direction == "higher",
                        calibrated=not args.no_calibration, argmax=args.argmax)
            if args.exposure:
                exposure_table(bench, sorted(int(p) for p in args.exposure.split(",")), args.n, root, args.exposure_fit)
                continue
            honest_max = None
            for what in ("honest", *VIOLATIONS, *(("filtered",) if short in FILTERED else ()), *bench.extra):
                if args.kinds and what not in args.kinds.split(","):
                    continue
                started = time.perf_counter()
                trials = [trial(bench, what, i, root) for i in range(args.n)]
                evs = [t.evidence for t in trials]
                ps = [e.p for e in evs]
                look = sum(e.level != "clean" for e in evs) / len(evs)
                strong = sum(e.level == "strong" for e in evs) / len(evs)
                edges = [t.edge for t in trials]
                missed = [t.edge for t in trials if t.evidence.level == "clean"]
                if what == "honest":
                    honest_max = max(edges)
                    tail = f"honest max {honest_max:+.2%}"
                else:
                    tail = f"edge↑ {max(missed):+.2%}" if missed else "edge↑ -"
                if what == "light":
                    tail += f"  gain over the 7-gram on train alone: median {statistics.median(bench.gains):+.2%} of bpb"
                if what == "filtered":
                    tail += (f"  best tell's AUROC median {statistics.median(bench.tell_aurocs):.2f}"
                             f" (max {max(bench.tell_aurocs):.2f}), dropped {statistics.mean(bench.dropped):.2%}")
                print(f"{short:<5} {what:<10} {len(evs):>3} {look:>6.0%} {strong:>7.0%} {statistics.median(ps):>9.1e} "
                      f"{min(ps):>8.1e} {statistics.median(edges):>+8.2%}  {tail}  {time.perf_counter() - started:.0f} s",
                      flush=True)
            s = bench.shifts
            if not s:
                continue
            what_bound = "its spread (SD) at the baseline" if kind.in_split else "the bound"
            print(f"{short:<5} agent's own {bench.kind.split} figure on its canaried copy: mean {statistics.mean(s):+.3%}, "
                  f"SD {statistics.pstdev(s):.3%}, largest {max(s, key=abs):+.3%} of the pristine metric; the contract's "
                  f"{what_bound}: {kind.shift_bound(canaries.shift_reference(spec, kind)):.3%}" +
                  (f"; the formula at this val's size and these models' accuracy: RMS "
                   f"{np.sqrt(np.mean(np.square(bench.expected))):.3%}" if bench.expected else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
