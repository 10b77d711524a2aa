"""Baseline for T5 (Forest Cover Type): an MLP 54→256→256→128→7 with BatchNorm, ReLU and dropout.

Copy me to run_1.py and improve. Prints val accuracy each epoch and saves a checkpoint whenever it improves.
"""

import time
from pathlib import Path

import torch
import torch.nn as nn

import prepare

# --- hyper-parameters (edit these) ---
HIDDEN = [256, 256, 128]  # the paper's baseline widths
DROPOUT = 0.3
LR = 1e-3  # Adam, constant
EPOCHS = 40
BATCH_SIZE = 4096
SEED = 0
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def build_model(config: dict) -> nn.Module:
    layers, width = [], config["in_features"]
    for h in config["hidden"]:
        layers += [nn.Linear(width, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(config["dropout"])]
        width = h
    layers.append(nn.Linear(width, config["num_classes"]))
    return nn.Sequential(*layers)


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = sum(int((model(x[i : i + 65536]).argmax(1) == y[i : i + 65536]).sum()) for i in range(0, len(x), 65536))
    model.train()
    return correct / len(y)


def main() -> None:
    torch.manual_seed(SEED)
    xtr, ytr = (t.to(DEVICE) for t in prepare.load_split("train"))  # ~100 MB: keep it all on the device
    xva, yva = (t.to(DEVICE) for t in prepare.load_split("val"))
    config = {"in_features": xtr.shape[1], "hidden": list(HIDDEN), "dropout": DROPOUT, "num_classes": prepare.NUM_CLASSES}
    model = build_model(config).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    run = Path(__file__).stem
    started, steps, best = time.time(), 0, -1.0
    for epoch in range(1, EPOCHS + 1):
        perm = torch.randperm(len(xtr), device=DEVICE)
        for i in range(0, len(xtr), BATCH_SIZE):
            idx = perm[i : i + BATCH_SIZE]
            if len(idx) < 2:
                continue  # BatchNorm needs two rows
            loss = nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            if not torch.isfinite(loss):
                raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            if MAX_STEPS and steps >= MAX_STEPS:
                break
        acc = accuracy(model, xva, yva)
        elapsed = time.time() - started
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_acc {acc:.4f} time {elapsed:.1f}s", flush=True)
        if acc > best:  # keep the checkpoints worth scoring
            best = acc
            prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=acc)
        if MAX_STEPS and steps >= MAX_STEPS:
            break
    print(f"val_acc: {acc:.4f}\nbest_val_acc: {best:.4f}\nsteps: {steps}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
