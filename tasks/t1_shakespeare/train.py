"""Baseline for TinyShakespeare: a small GPT (nanoGPT-style) on characters. Copy me to run_1.py and improve.

An epoch is one pass over the train split in shuffled, non-overlapping BLOCK_SIZE-character
windows (a random offset each epoch), i.e. len(train) // (BATCH_SIZE * BLOCK_SIZE) = 61 steps of
64 x 256 characters; 5 epochs = 305 steps. AdamW with a linear warm-up then a cosine decay,
gradient clipping. Each epoch ends with the official val bits per byte and a checkpoint.
"""

import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import prepare

# --- hyper-parameters (edit these) ---
N_LAYER = 4
N_HEAD = 4
N_EMBD = 256
DROPOUT = 0.1
BLOCK_SIZE = 256  # context length; evaluation feeds 256 characters, so keep it >= 256
LR = 3e-4  # peak learning rate
MIN_LR = 3e-5  # end of the cosine decay (peak / 10, as nanoGPT)
WARMUP_STEPS = 200
WEIGHT_DECAY = 0.1
GRAD_CLIP = 1.0
BATCH_SIZE = 64
EPOCHS = 5
SEED = 0
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        self.n_head, self.dropout = n_head, dropout
        self.ln_1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.attn_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        x = x + self.resid_drop(self.attn_proj(y.transpose(1, 2).reshape(B, T, C)))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int, dropout: float):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight  # weight tying
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("attn_proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:  # [B, T] ids -> [B, T, vocab] logits
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def build_model(config: dict) -> nn.Module:
    return GPT(**config)


def lr_at(step: int, total: int) -> float:
    if step < WARMUP_STEPS:
        return LR * (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / max(1, total - WARMUP_STEPS)
    return MIN_LR + 0.5 * (LR - MIN_LR) * (1 + math.cos(math.pi * min(1.0, progress)))


def epoch_batches(data: torch.Tensor, rng: np.random.Generator):
    """One epoch: shuffled, non-overlapping windows from a random offset, in full batches."""
    offset = int(rng.integers(BLOCK_SIZE))
    starts = offset + BLOCK_SIZE * np.arange((len(data) - offset - 1) // BLOCK_SIZE)
    starts = torch.from_numpy(rng.permutation(starts))
    span = torch.arange(BLOCK_SIZE)
    for i in range(0, len(starts) - BATCH_SIZE + 1, BATCH_SIZE):
        idx = starts[i : i + BATCH_SIZE, None] + span
        yield data[idx], data[idx + 1]


def main() -> None:
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    train = torch.from_numpy(prepare.load_split("train").astype(np.int64))
    config = {"vocab_size": len(prepare.vocab()), "block_size": BLOCK_SIZE, "n_layer": N_LAYER,
              "n_head": N_HEAD, "n_embd": N_EMBD, "dropout": DROPOUT}
    model = build_model(config).to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=WEIGHT_DECAY)
    total = EPOCHS * (len(train) // (BATCH_SIZE * BLOCK_SIZE))
    run = Path(__file__).stem
    print(f"params: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M, steps: {total}", flush=True)
    started, step, best = time.time(), 0, float("inf")
    for epoch in range(1, EPOCHS + 1):
        model.train()
        for x, y in epoch_batches(train, rng):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, total)
            logits = model(x.to(DEVICE))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.to(DEVICE).view(-1))
            if not torch.isfinite(loss):
                raise SystemExit(f"loss is {loss.item()} at step {step}: lower the learning rate")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
            opt.step()
            step += 1
            if step % 20 == 0:
                print(f"step {step}/{total} loss {loss.item():.4f} ({time.time() - started:.0f}s)", flush=True)
            if MAX_STEPS and step >= MAX_STEPS:
                break
        model.eval()
        with torch.no_grad():
            val_bpb = prepare.evaluate(model, "val", DEVICE)["value"]
        best = min(best, val_bpb)
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_bpb {val_bpb:.4f} ({time.time() - started:.0f}s)", flush=True)
        prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=val_bpb)
        if MAX_STEPS and step >= MAX_STEPS:
            break
    print(f"val_bpb: {val_bpb:.4f}\nbest_val_bpb: {best:.4f}\nsteps: {step}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
