"""Baseline for AG News: a character-level CNN (Zhang et al., 2015, "small"). Copy me to run_1.py and improve.

A 128-d character embedding (code 0, the padding, embeds to zeros), six 1-D convolutions of 256
channels (kernels 7, 7, 3, 3, 3, 3; max-pooling by 3 after the 1st, 2nd and 6th), two 1 024-unit
fully connected layers with dropout 0.5, and a 4-way output. Adam, cross-entropy; each epoch ends
with the official val accuracy and a checkpoint.
"""

import time
from pathlib import Path

import torch
import torch.nn as nn

import prepare

# --- hyper-parameters (edit these) ---
EMBED_DIM = 128
CHANNELS = 256
FC_DIM = 1024
DROPOUT = 0.5
LR = 1e-3
EPOCHS = 5
BATCH_SIZE = 512
SEED = 0
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class CharCNN(nn.Module):
    def __init__(self, vocab_size: int, seq_len: int, n_classes: int, embed_dim: int, channels: int, fc_dim: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)

        def conv(c_in: int, k: int) -> list[nn.Module]:
            return [nn.Conv1d(c_in, channels, k), nn.ReLU()]

        self.features = nn.Sequential(
            *conv(embed_dim, 7), nn.MaxPool1d(3),
            *conv(channels, 7), nn.MaxPool1d(3),
            *conv(channels, 3), *conv(channels, 3), *conv(channels, 3), *conv(channels, 3), nn.MaxPool1d(3),
            nn.Flatten(),
        )
        with torch.no_grad():
            n_flat = self.features(torch.zeros(1, embed_dim, seq_len)).shape[1]  # 256 x 34 for 1 014 characters
        self.classifier = nn.Sequential(
            nn.Linear(n_flat, fc_dim), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(fc_dim, fc_dim), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(fc_dim, n_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, 1014] codes -> [B, 4] logits
        return self.classifier(self.features(self.embed(x.long()).transpose(1, 2)))


def build_model(config: dict) -> nn.Module:
    return CharCNN(**config)


def main() -> None:
    torch.manual_seed(SEED)
    config = {"vocab_size": prepare.VOCAB_SIZE, "seq_len": prepare.SEQ_LEN, "n_classes": len(prepare.CLASSES),
              "embed_dim": EMBED_DIM, "channels": CHANNELS, "fc_dim": FC_DIM, "dropout": DROPOUT}
    model = build_model(config).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    x_train, y_train = prepare.load_split("train")
    run = Path(__file__).stem
    started, steps, best = time.time(), 0, 0.0
    for epoch in range(1, EPOCHS + 1):
        model.train()
        perm = torch.randperm(len(x_train))
        for i in range(0, len(perm), BATCH_SIZE):
            idx = perm[i : i + BATCH_SIZE]
            xb, yb = x_train[idx].to(DEVICE), y_train[idx].to(DEVICE)
            loss = nn.functional.cross_entropy(model(xb), yb)
            if not torch.isfinite(loss):
                raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            if steps % 50 == 0:
                print(f"step {steps} loss {loss.item():.4f} ({time.time() - started:.0f}s)", flush=True)
            if MAX_STEPS and steps >= MAX_STEPS:
                break
        model.eval()
        with torch.no_grad():
            val_acc = prepare.evaluate(model, "val", DEVICE)["value"]
        best = max(best, val_acc)
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_acc {val_acc:.4f} ({time.time() - started:.0f}s)", flush=True)
        prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=val_acc)
        if MAX_STEPS and steps >= MAX_STEPS:
            break
    print(f"val_acc: {val_acc:.4f}\nbest_val_acc: {best:.4f}\nsteps: {steps}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
