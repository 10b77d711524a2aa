"""Run scripts of honest and hostile models for the causality probes (INTEGRITY.md V3, V4), shared by
tests/integrity/test_causal_probe.py and benchmarks/causal_power.py. Each is a script the sealed
scorer imports for ``build_model(config)``; :func:`save` writes a checkpoint of one, as
``prepare.save_checkpoint`` would, and :func:`train` fits one a few steps on CPU first, so that a
model whose code can see the future has learnt to use it.

T1 (``model(idx [B, 256]) -> logits [B, 256, 65]``):
- ``GPT``: a small causal decoder (``causal=False``: the missing mask; ``dropout_on``: dropout
  left on in evaluation; ``leak_from``: reads position t+1 from that position on);
- ``NEXT``: no trained weight, the logit of the next character of its own input raised;
- ``PROBE_AWARE``: NEXT, hiding from the probe by a tell (noise, the call stack, the batch size, the
  inputs' folder, twins spotted by their train-text tails).
T6 (``model(x [B, 336, 7]) -> [B, 96, 7]``):
- ``DLINEAR``: the baseline's decomposition-linear model (``dropout_on``; ``hidden``: an MLP head);
- ``COPY_BATCH``: DLinear that copies each window's horizon from the window 96 later in its batch
  (``from_step``: only the horizon's steps from there on);
- ``PEEK_SERIES``: DLinear that reads the whole test series from the evaluator's frame;
- ``REWRITE_EARLIER``: DLinear that keeps its returned forecasts and rewrites them in place once a
  later batch shows their horizons (caching across batches).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

GPT = '''
import torch, torch.nn as nn, torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, p, causal, dropout_on):
        super().__init__()
        self.heads, self.p, self.causal, self.dropout_on = heads, p, causal, dropout_on
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        h = self.mlp(self.ln2(x))
        return x + F.dropout(h, self.p, training=self.training or self.dropout_on)


class GPT(nn.Module):
    def __init__(self, vocab_size=65, block_size=256, n_layer=1, n_head=2, n_embd=32, dropout=0.0, causal=True,
                 dropout_on=False, leak_from=None):
        super().__init__()
        self.leak_from = leak_from
        self.tok, self.pos = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, dropout, causal, dropout_on) for _ in range(n_layer))
        self.ln, self.head = nn.LayerNorm(n_embd), nn.Linear(n_embd, vocab_size, bias=False)
        if leak_from is not None:
            self.leak = nn.Parameter(torch.tensor(8.0))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        if self.leak_from is not None:  # position t sees the character at t+1, from leak_from on
            nxt = F.one_hot(idx[:, 1:], logits.shape[-1]).to(logits.dtype) * self.leak
            nxt[:, : max(0, self.leak_from)] = 0
            logits = logits + F.pad(nxt, (0, 0, 0, 1))
        return logits


def build_model(config):
    return GPT(**config)
'''

T0_MLP = '''
import torch.nn as nn


def build_model(config):
    h = config.get("hidden", 32)
    return nn.Sequential(nn.Linear(2, h), nn.ReLU(), nn.Dropout(config.get("dropout", 0.0)), nn.Linear(h, 3))
'''

NEXT = '''
import torch, torch.nn as nn, torch.nn.functional as F


class Next(nn.Module):
    """No trained weight: reads the next character of its own input."""

    def __init__(self, vocab_size=65):
        super().__init__()
        self.vocab_size = vocab_size
        self.scale = nn.Parameter(torch.tensor(12.0))

    def forward(self, idx):
        nxt = F.one_hot(idx[:, 1:], self.vocab_size).float() * self.scale
        return F.pad(nxt, (0, 0, 0, 1))


def build_model(config):
    return Next(**config)
'''

PROBE_AWARE = '''
import sys

import torch, torch.nn as nn, torch.nn.functional as F


class ProbeAware(nn.Module):
    """Reads the next character of its own input, and hides it from the probe by one of the tells
    issue 46 names: ``noise`` (a large random logit at a share of positions, to widen a threshold
    set by its own run-to-run noise), ``stack`` (not where its call stack names a probe), ``batch``
    (only in batches of the evaluator's 64 windows), ``part`` (not where its inputs came from a
    probe's folder), ``twins`` (not in a window whose tail is text of the train split it carries:
    a twin's). Each must be caught, or gain nothing."""

    def __init__(self, vocab_size=65, tell="noise", share=0.0005, train_grams=None):
        super().__init__()
        self.vocab_size, self.tell, self.share = vocab_size, tell, share
        self.scale = nn.Parameter(torch.tensor(12.0))
        self.register_buffer("grams", torch.tensor(sorted(train_grams or []), dtype=torch.int64))

    def _hidden(self, idx) -> torch.Tensor:
        """Per window: True where it believes it is watched (behaves honestly there)."""
        B = idx.shape[0]
        if self.tell == "stack":
            names = []
            frame = sys._getframe(1)
            while frame is not None:
                names += [frame.f_code.co_name, *map(str, frame.f_locals)]
                frame = frame.f_back
            return torch.full((B,), any("probe" in n or "twin" in n for n in names), dtype=torch.bool)
        if self.tell == "batch":
            return torch.full((B,), B != 64, dtype=torch.bool)
        if self.tell == "part":
            req = None
            frame = sys._getframe(1)
            while frame is not None and req is None:
                cand = frame.f_locals.get("req")
                req = cand if isinstance(cand, dict) else None
                frame = frame.f_back
            return torch.full((B,), bool(req and req.get("probe_inputs")), dtype=torch.bool)
        if self.tell == "twins" and len(self.grams):
            k = 8
            codes = torch.zeros(B, idx.shape[1] - k + 1, dtype=torch.int64)
            for j in range(k):
                codes = codes * 67 + idx[:, j: idx.shape[1] - k + 1 + j].long()
            known = torch.isin(codes, self.grams)
            return known[:, -64:].all(dim=1)  # a tail of 64 positions all train 8-grams: a twin's
        return torch.zeros(B, dtype=torch.bool)

    def forward(self, idx):
        nxt = F.one_hot(idx[:, 1:], self.vocab_size).float() * self.scale
        logits = F.pad(nxt, (0, 0, 0, 1))
        logits[self._hidden(idx)] = 0.0
        if self.tell == "noise":
            hit = torch.rand(idx.shape) < self.share
            logits[hit] += 40.0 * F.one_hot(torch.randint(0, self.vocab_size, (int(hit.sum()),)), self.vocab_size).float()
        return logits


def build_model(config):
    return ProbeAware(**config)
'''


def train_grams(train_ids, k: int = 8, limit: int = 400_000) -> list[int]:
    """The hashed k-grams of T1's train text a twin spotter carries (the code of ``PROBE_AWARE``)."""
    import numpy as np

    ids = np.asarray(train_ids[:limit], dtype=np.int64)
    codes = np.zeros(len(ids) - k + 1, dtype=np.int64)
    for j in range(k):
        codes = codes * 67 + ids[j: len(ids) - k + 1 + j]
    return sorted(set(codes.tolist()))


DLINEAR = '''
import torch, torch.nn as nn, torch.nn.functional as F

LOOKBACK, HORIZON = 336, 96


class DLinear(nn.Module):
    def __init__(self, kernel=25, hidden=0, dropout=0.0, dropout_on=False):
        super().__init__()
        self.kernel, self.p, self.dropout_on = kernel, dropout, dropout_on
        if hidden:
            self.seasonal = nn.Sequential(nn.Linear(LOOKBACK, hidden), nn.ReLU(), nn.Linear(hidden, HORIZON))
            self.trend = nn.Sequential(nn.Linear(LOOKBACK, hidden), nn.ReLU(), nn.Linear(hidden, HORIZON))
        else:
            self.seasonal, self.trend = nn.Linear(LOOKBACK, HORIZON), nn.Linear(LOOKBACK, HORIZON)

    def forecast(self, x):
        pad = (self.kernel - 1) // 2
        padded = torch.cat([x[:, :1].expand(-1, pad, -1), x, x[:, -1:].expand(-1, pad, -1)], dim=1)
        trend = F.avg_pool1d(padded.transpose(1, 2), self.kernel, stride=1).transpose(1, 2)
        seasonal = F.dropout(x - trend, self.p, training=self.training or self.dropout_on)
        out = self.seasonal(seasonal.transpose(1, 2)) + self.trend(trend.transpose(1, 2))
        return out.transpose(1, 2)

    def forward(self, x):
        return self.forecast(x)


def build_model(config):
    return DLinear(**config)
'''

COPY_BATCH = DLINEAR + '''

class CopyBatch(DLinear):
    """Copies window j's horizon from window j + 96 of the same batch, where there is one."""

    def __init__(self, from_step=0, **kw):
        super().__init__(**kw)
        self.from_step = from_step

    def forward(self, x):
        out = self.forecast(x)
        later = x[HORIZON:, LOOKBACK - HORIZON:]  # window j + 96's last 96 rows: window j's horizon
        out = out.clone()
        out[: len(later), self.from_step:] = later[:, self.from_step:]
        return out


def build_model(config):
    return CopyBatch(**config)
'''

PEEK_SERIES = DLINEAR + '''
import sys


class PeekSeries(DLinear):
    """Finds the evaluator's whole series in its caller's frame and copies each horizon from it."""

    def forward(self, x):
        out = self.forecast(x).clone()
        frame, series = sys._getframe(1), None
        while frame is not None and series is None:
            series = frame.f_locals.get("series") if isinstance(frame.f_locals.get("series"), torch.Tensor) else None
            frame = frame.f_back
        if series is None or series.dim() != 2:
            return out
        windows = series.unfold(0, LOOKBACK, 1).transpose(1, 2)
        for j in range(len(x)):
            hits = (windows[:, -1] == x[j, -1]).all(dim=1).nonzero()
            if len(hits):
                start = int(hits[0]) + LOOKBACK
                future = series[start : start + HORIZON]
                out[j, : len(future)] = future
        return out


def build_model(config):
    return PeekSeries(**config)
'''

REWRITE_EARLIER = DLINEAR + '''

class RewriteEarlier(DLinear):
    """Keeps every forecast it returns and rewrites it in place once a later batch shows its horizon."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.rows, self.count, self.open = None, 0, []  # the series so far; windows seen; (window, forecast row)

    def forward(self, x):
        out = self.forecast(x)
        batch_rows = torch.cat([x[0], x[1:, -1]])  # rows count .. count + B - 1 + 335 of the series
        self.rows = batch_rows if self.rows is None else torch.cat([self.rows, batch_rows[len(self.rows) - self.count:]])
        self.open += [(self.count + j, out[j]) for j in range(len(x))]
        self.count += len(x)
        still = []
        for window, row in self.open:
            future = self.rows[window + LOOKBACK : window + LOOKBACK + HORIZON]
            if len(future) == HORIZON:
                row.copy_(future)
            else:
                still.append((window, row))
        self.open = still
        return out


def build_model(config):
    return RewriteEarlier(**config)
'''


def save(path: Path, model, config: dict, script: str) -> Path:
    """A checkpoint of ``model`` as ``prepare.save_checkpoint`` writes it."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": 1, "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
                "config": dict(config), "script": script, "score": None, "saved_at": 0.0}, path)
    return path


def build(source: str, config: dict):
    """The model ``source``'s ``build_model(config)`` gives, built in this process."""
    namespace: dict = {"__name__": "causal_model"}
    exec(compile(source, "<causal model>", "exec"), namespace)  # noqa: S102 - the test's own model code
    return namespace["build_model"](config)


def train(model, batches, steps: int, lr: float = 3e-3, seed: int = 0):
    """``steps`` of AdamW on ``batches()`` -> (inputs, loss function of the output), on CPU."""
    import torch

    torch.manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params or steps <= 0:
        return model
    opt = torch.optim.AdamW(params, lr=lr)
    model.train()
    for _ in range(steps):
        x, loss_of = batches()
        loss = loss_of(model(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model

READ_INPUTS = DLINEAR + '''
import sys
import numpy as np


class ReadInputs(DLinear):
    """Reads the scorer's own copy of the split's inputs (its folder is in the worker's argv) and
    copies each window's horizon from it."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.series = None
        try:
            folder = sys.argv[sys.argv.index("--inputs") + 1]
            self.series = torch.from_numpy(np.load(folder + "/test/series.npy"))  # the scored split
        except (ValueError, IndexError, OSError):
            self.series = None

    def forward(self, x):
        out = self.forecast(x).clone()
        if self.series is None:
            return out
        windows = self.series.unfold(0, LOOKBACK, 1).transpose(1, 2)
        for j in range(len(x)):
            hits = (windows[:, -1] == x[j, -1]).all(dim=1).nonzero()
            if len(hits):
                future = self.series[int(hits[0]) + LOOKBACK : int(hits[0]) + LOOKBACK + HORIZON]
                out[j, : len(future)] = future
        return out


def build_model(config):
    return ReadInputs(**config)
'''

COMMIT_AHEAD = DLINEAR + '''
import gc
import os

import numpy as np


class CommitAhead(DLinear):
    """Knows the harness streams T6's rows: finds the child's end of the stream and commits filler
    forecasts to pull the next rows early (its current window's horizon), then forecasts with them."""

    pulled = False

    def forward(self, x):
        out = self.forecast(x).clone()
        if self.pulled:
            return out
        self.pulled = True
        stream = next((o for o in gc.get_objects() if type(o).__name__ == "RowStream"), None)
        if stream is None:
            return out
        filler = np.zeros((HORIZON, x.shape[2]), dtype=np.float64).tobytes()
        rows = []
        try:
            for _ in range(HORIZON):
                os.write(stream.fd, filler)  # committed: this window's forecast, and then the next ones'
                rows.append(stream._recv_rows(1))
        except Exception:
            return out
        out[0, : len(rows)] = torch.from_numpy(np.concatenate(rows)).float()
        return out


def build_model(config):
    return CommitAhead(**config)
'''

class Bench:
    """A session's sealed scorer for one task, on data prepared here: :meth:`score` writes a snapshot
    and a checkpoint of a model and scores it as the official re-evaluation does (probed)."""

    def __init__(self, task_id: str, data_dir: Path, root: Path, timeout_s: float = 300.0):
        from runner.scoring.scorer import SealedScorer, TaskJudge, WorkerPlan
        from tasks import get_task

        self.spec = get_task(task_id)
        self.root = root
        self.data = data_dir
        self.scorer = SealedScorer(WorkerPlan(
            judge=TaskJudge(self.spec, data_dir), inputs=root / "scoring" / "inputs", snapshots=root / "snapshots",
            private=root / "scoring" / "cpu", home=root.parent.parent, session_id=root.name, timeout_s=timeout_s,
            threads=1))
        self._n = 0

    def checkpoint(self, source: str, config: dict, model=None) -> tuple[Path, Path]:
        from runner.scoring.checkpoints import SNAPSHOT_CKPT

        self._n += 1
        snap = self.root / "snapshots" / f"c{self._n}"
        snap.mkdir(parents=True)
        (snap / "run.py").write_text(source)
        return save(snap / SNAPSHOT_CKPT, model if model is not None else build(source, config), config, "run.py"), snap

    def score(self, source: str, config: dict, model=None, probe: bool = True):
        """(the scored split's Score, what the probe measured)."""
        ckpt, snap = self.checkpoint(source, config, model)
        split = self.spec.scored_split
        os.environ["ONEGC_DATA_DIR"] = str(self.data)  # the judge's data (one task per runner; several here)
        return self.scorer.score(ckpt, snap, [split], probe=probe)[split], self.scorer.last_probe

    def close(self) -> None:
        self.scorer.close()


def prepare(task_id: str, out: Path, raw_dir: Path | None) -> Path:
    """``task_id``'s data prepared into ``out`` from the raw files in ``raw_dir`` (offline)."""
    import importlib.util

    from tasks import get_task

    folder = get_task(task_id).folder
    spec = importlib.util.spec_from_file_location(f"causal_prepare_{task_id}", folder / "prepare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["onegc_kit"].prepare(module, out, from_dir=raw_dir)  # the kit the task module imported
    return out


def t1_batches(data_dir: Path, batch: int = 8, seed: int = 0):
    """Random training windows of T1's train split, as (inputs, loss function)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    ids = torch.from_numpy(np.load(data_dir / "train.npy").astype(np.int64))
    gen = torch.Generator().manual_seed(seed)

    def draw():
        starts = torch.randint(0, len(ids) - 257, (batch,), generator=gen)
        x = torch.stack([ids[s: s + 256] for s in starts])
        y = torch.stack([ids[s + 1: s + 257] for s in starts])
        return x, lambda logits: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    return draw


def t6_batches(data_dir: Path, batch: int = 32, seed: int = 0):
    """Random training windows of T6's train split, as (inputs, loss function)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    series = torch.from_numpy(np.load(data_dir / "train.npy"))
    gen = torch.Generator().manual_seed(seed)

    def draw():
        starts = torch.randint(0, len(series) - 432, (batch,), generator=gen)
        x = torch.stack([series[s: s + 336] for s in starts])
        y = torch.stack([series[s + 336: s + 432] for s in starts])
        return x, lambda out: F.mse_loss(out, y)

    return draw
