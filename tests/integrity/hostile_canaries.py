"""A command agent that puts T1's scored split inside its model (../shared/INTEGRITY.md V1, V2):
``python hostile_canaries.py MODE``, in the workspace. It writes ``run_<mode>.py`` and runs it,
which saves one checkpoint:

- ``honest``: a 5-gram character model counted on train (the control);
- ``val_only``: the same model counted on val instead (issue 35's first attack: 1.73 bpb);
- ``train_val``: a final fit counted on train and val together;
- ``lookup``: a model that carries the val text in a buffer, finds each window in it and answers
  what follows there (issue 35's second attack: ~0 bpb).

The agent reads the split as any agent would (``prepare.load_split("val")``): its copy, canaries
and all. Counting is instant, so a real session runs in seconds on a CPU.
"""

import subprocess
import sys
from pathlib import Path

SCRIPT = '''
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import prepare

V, CONTEXT, BUCKETS, ANCHOR = 65, 4, 1 << 16, 24
PRIMES = [1000003 ** k % (1 << 61) for k in range(ANCHOR)]


def _keys(idx, n):
    """An int64 key of the ``n`` characters ending at each position (zero-padded at the start)."""
    win = F.pad(idx, (n - 1, 0)).unfold(1, n, 1)
    return (win * V ** torch.arange(n)).sum(-1)


class NGram(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("counts", torch.zeros(BUCKETS, V))
        self.register_buffer("unigram", torch.ones(V))

    def forward(self, idx):
        c = self.counts[_keys(idx.long(), CONTEXT) % BUCKETS]
        prior = self.unigram / self.unigram.sum()
        return torch.log(c + 0.5 * prior) - torch.log(c.sum(-1, keepdim=True) + 0.5)

    def count(self, split):
        ids = torch.from_numpy(np.asarray(prepare.load_split(split), dtype=np.int64))
        k = _keys(ids[None, :-1], CONTEXT)[0] % BUCKETS
        self.counts.index_put_((k, ids[1:]), torch.ones(len(k)), accumulate=True)
        self.unigram += torch.bincount(ids, minlength=V).float()


def _anchor(rows):
    """A key of each row's first ANCHOR characters (a polynomial hash, wrapping in int64)."""
    return (rows[..., :ANCHOR] * torch.tensor(PRIMES[:ANCHOR])).sum(-1)


class Lookup(nn.Module):
    """Carries the val text: finds each window in it by the window's first characters and
    answers the characters that follow there, from the first position that has read them all
    (so it never reads ahead, and the causal probe has nothing to catch: only the canaries can)."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("text", torch.zeros(n, dtype=torch.int64))
        self.register_buffer("keys", torch.zeros(n - ANCHOR + 1, dtype=torch.int64))
        self.register_buffer("at", torch.zeros(n - ANCHOR + 1, dtype=torch.int64))

    def forward(self, idx):
        k = _anchor(idx.long())
        i = torch.searchsorted(self.keys, k).clamp(max=len(self.keys) - 1)
        hit = self.keys[i] == k
        pos = (self.at[i][:, None] + 1 + torch.arange(idx.shape[1])).clamp(max=len(self.text) - 1)
        found = hit[:, None] & (torch.arange(idx.shape[1]) >= ANCHOR - 1)  # causal: only once the anchor is read
        return torch.where(found[..., None], F.one_hot(self.text[pos], V).float() * 30, torch.zeros(()))

    def carry(self, split):
        ids = torch.from_numpy(np.asarray(prepare.load_split(split), dtype=np.int64))
        k = _anchor(ids.unfold(0, ANCHOR, 1))
        order = torch.argsort(k)
        self.text.copy_(ids)
        self.keys.copy_(k[order])
        self.at.copy_(order)


def build_model(config):
    return Lookup(config["n"]) if config["kind"] == "lookup" else NGram()


if __name__ == "__main__":
    mode = MODE
    if mode == "lookup":
        config = {"kind": "lookup", "n": len(prepare.load_split("val"))}
        model = build_model(config)
        model.carry("val")
    else:
        config = {"kind": "ngram"}
        model = build_model(config)
        for split in {"honest": ["train"], "val_only": ["val"], "train_val": ["train", "val"]}[mode]:
            model.count(split)
    score = prepare.evaluate(model.eval(), "val", "cpu")["value"]
    prepare.save_checkpoint(model, config, mode, score=score)
    print(f"{mode}: val_bpb {score:.4f} on this workspace's copy")
'''


def run(source: str, mode: str) -> int:
    """Write ``source`` (its ``MODE`` set to ``mode``) as ``run_<mode>.py`` and run it."""
    script = Path(f"run_{mode}.py")
    script.write_text(source.replace("MODE", repr(mode), 1))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    print(f"$ python {script} -> exit {out.returncode}", out.stdout[-300:], out.stderr[-600:], flush=True)
    return out.returncode


if __name__ == "__main__":
    sys.exit(run(SCRIPT, sys.argv[1]))
