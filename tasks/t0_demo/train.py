"""Baseline for the demo task: a small MLP on the spiral points. Copy me to run_1.py and improve."""

import time

import torch
import torch.nn as nn

import prepare

# --- hyper-parameters (edit these) ---
HIDDEN = 64
OPTIMIZER = "sgd"
LR = 0.05
EPOCHS = 6
BATCH_SIZE = 128
SEED = 0
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def build_model(config: dict) -> nn.Module:
    h = config["hidden"]
    return nn.Sequential(nn.Linear(2, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 3))


def accuracy(model: nn.Module) -> float:
    """Val accuracy by the task's own evaluate (where val is sealed, the harness answers it)."""
    model.eval()
    with torch.no_grad():
        acc = prepare.evaluate(model, "val", DEVICE)["value"]
    model.train()
    return acc


def main() -> None:
    torch.manual_seed(SEED)
    config = {"hidden": HIDDEN}
    model = build_model(config).to(DEVICE)
    opt_cls = torch.optim.Adam if OPTIMIZER == "adam" else torch.optim.SGD
    opt = opt_cls(model.parameters(), lr=LR)
    xtr, ytr = (t.to(DEVICE) for t in prepare.load_split("train"))
    run = __import__("pathlib").Path(__file__).stem
    started, steps, best = time.time(), 0, 0.0
    for epoch in range(1, EPOCHS + 1):
        perm = torch.randperm(len(xtr), device=DEVICE)
        for i in range(0, len(xtr), BATCH_SIZE):
            idx = perm[i : i + BATCH_SIZE]
            loss = nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            if not torch.isfinite(loss):
                raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if MAX_STEPS and steps >= MAX_STEPS:
                break
        acc = accuracy(model)
        best = max(best, acc)
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_acc {acc:.4f}", flush=True)
        prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=acc)
        if MAX_STEPS and steps >= MAX_STEPS:
            break
    print(f"val_acc: {acc:.4f}\nbest_val_acc: {best:.4f}\nsteps: {steps}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
