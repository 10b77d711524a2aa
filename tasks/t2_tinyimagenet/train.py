"""Baseline for T2 (TinyImageNet): a 4-stage residual CNN trained from scratch.

The whole training set sits on the GPU as uint8 (1.2 GB); augmentation (random crop with
padding 8, horizontal flip, colour jitter) runs there on whole batches, so no data loader is
needed. Evaluates val top-1 after every epoch and saves a checkpoint each time.
Copy me to run_1.py and improve.
"""

import math
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import prepare

# --- hyper-parameters (edit these) ---
WIDTHS = (64, 128, 256, 512)  # the paper's four stages, each halving the resolution (64 -> 4)
LR = 1e-3  # AdamW peak learning rate, cosine decay to 0
WEIGHT_DECAY = 0.05
EPOCHS = 5
BATCH_SIZE = 256
PAD = 8  # random crop from the image zero-padded by 8 pixels
JITTER = 0.4  # brightness, contrast and saturation factors drawn from [1 - 0.4, 1 + 0.4]
SEED = 0
LOG_EVERY = 100  # steps between progress lines
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
TIME_LIMIT_S = 0  # 0 = no limit; stop training after this many seconds (then evaluate and save)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# channels-last convolutions are faster on GPUs (and crash torch 2.13's CPU backward on tiny widths)
MEMORY_FORMAT = torch.channels_last if DEVICE.startswith("cuda") else torch.contiguous_format


class Block(nn.Module):
    """Residual block: two 3x3 convolutions, the first with stride 2; a 1x1 strided shortcut."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, widths, num_classes: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        chans = [widths[0], *widths]
        self.stages = nn.Sequential(*(Block(a, b) for a, b in zip(chans[:-1], chans[1:])))
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(x.mean(dim=(2, 3)))


def build_model(config: dict) -> nn.Module:
    return ResNet(config["widths"], config["num_classes"])


def augment(x: torch.Tensor) -> torch.Tensor:
    """uint8 [B, 64, 64, 3] -> normalised float [B, 3, 64, 64]: crop, flip, colour jitter, batched."""
    b, h, w, _ = x.shape
    dev = x.device
    padded = F.pad(x, (0, 0, PAD, PAD, PAD, PAD))  # zero border on H and W (NHWC)
    top = torch.randint(0, 2 * PAD + 1, (b, 1), device=dev) + torch.arange(h, device=dev)
    left = torch.randint(0, 2 * PAD + 1, (b, 1), device=dev) + torch.arange(w, device=dev)
    x = padded[torch.arange(b, device=dev)[:, None, None], top[:, :, None], left[:, None, :]]
    x = torch.where(torch.rand(b, 1, 1, 1, device=dev) < 0.5, x.flip(2), x)
    x = x.permute(0, 3, 1, 2).float().div_(255)

    def factor():
        return 1 + (torch.rand(b, 1, 1, 1, device=dev) * 2 - 1) * JITTER

    luma = torch.tensor([0.299, 0.587, 0.114], device=dev).view(1, 3, 1, 1)
    x = x * factor()  # brightness
    mean = (x * luma).sum(1, keepdim=True).mean(dim=(2, 3), keepdim=True)
    x = (x - mean) * factor() + mean  # contrast
    grey = (x * luma).sum(1, keepdim=True)
    x = ((x - grey) * factor() + grey).clamp_(0, 1)  # saturation
    m = torch.tensor(prepare.MEAN, device=dev).view(1, 3, 1, 1)
    s = torch.tensor(prepare.STD, device=dev).view(1, 3, 1, 1)
    return (x - m) / s


def main() -> None:
    torch.manual_seed(SEED)
    torch.backends.cudnn.benchmark = True
    config = {"widths": list(WIDTHS), "num_classes": prepare.NUM_CLASSES}
    model = build_model(config).to(DEVICE, memory_format=MEMORY_FORMAT)
    xtr, ytr = prepare.load_split("train")
    xtr, ytr = xtr.to(DEVICE), ytr.to(DEVICE)
    steps_per_epoch = math.ceil(len(xtr) / BATCH_SIZE)
    total = EPOCHS * steps_per_epoch
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=DEVICE.startswith("cuda"))
    run = Path(__file__).stem
    started, train_s, images, steps, best, acc = time.time(), 0.0, 0, 0, 0.0, 0.0
    stop = False
    for epoch in range(1, EPOCHS + 1):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(xtr), device=DEVICE)
        for i in range(0, len(xtr), BATCH_SIZE):
            idx = perm[i : i + BATCH_SIZE]
            x = augment(xtr[idx]).contiguous(memory_format=MEMORY_FORMAT)
            with autocast:
                loss = F.cross_entropy(model(x), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            steps += 1
            images += len(idx)
            if steps % LOG_EVERY == 0:
                if not torch.isfinite(loss):
                    raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
                rate = images / (train_s + time.time() - t0)
                print(f"step {steps}/{total} loss {loss.item():.4f} img/s {rate:.0f}", flush=True)
            stop = bool(MAX_STEPS and steps >= MAX_STEPS) or bool(TIME_LIMIT_S and time.time() - started >= TIME_LIMIT_S)
            if stop:
                break
        if DEVICE.startswith("cuda"):
            torch.cuda.synchronize()
        train_s += time.time() - t0
        if not torch.isfinite(loss):
            raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
        model.eval()
        with torch.no_grad():
            acc = prepare.evaluate(model, "val", DEVICE)["value"]
        best = max(best, acc)
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_top1 {acc:.4f}", flush=True)
        prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=acc)
        if stop:
            break
    print(f"val_top1: {acc:.4f}\nbest_val_top1: {best:.4f}\nsteps: {steps}\nepochs: {epoch}\n"
          f"train_images_per_s: {images / max(train_s, 1e-9):.1f}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
