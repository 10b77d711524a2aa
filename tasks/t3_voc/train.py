"""Baseline for T3 (Pascal VOC 2012): DINOv3 ConvNeXt-Tiny encoder + a light FPN decoder.

The encoder starts from the DINOv3 weights in weights/ (loaded in main(), not in build_model:
scoring rebuilds the model without them and loads your checkpoint). The train split sits on the
GPU as uint8 (prepare.evaluate reads val each epoch); a random horizontal flip is the only augmentation. Evaluates val mIoU after every
epoch and saves a checkpoint whenever it improves. Copy me to run_1.py and improve.
"""

import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import prepare

# --- hyper-parameters (edit these) ---
BACKBONE = "convnext_tiny.dinov3_lvd1689m"  # or "vit_small_patch16_dinov3.lvd1689m": the two in weights/
DECODER_DIM = 128  # channels of every FPN level
LR = 1e-4  # AdamW, constant, encoder and decoder alike
WEIGHT_DECAY = 0.01
EPOCHS = 15
BATCH_SIZE = 16
SEED = 0
LOG_EVERY = 20  # steps between progress lines
MAX_STEPS = 0  # 0 = no limit; tests set a few steps
TIME_LIMIT_S = 0  # 0 = no limit; stop training after this many seconds (then evaluate and save)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class FPNDecoder(nn.Module):
    """Lateral 1x1 convs, top-down sum, a 3x3 conv per level, all summed at stride 4, then a head."""

    def __init__(self, in_chans, dim: int, num_classes: int):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, dim, 1) for c in in_chans)
        self.smooth = nn.ModuleList(
            nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1, bias=False), nn.BatchNorm2d(dim), nn.ReLU()) for _ in in_chans
        )
        self.head = nn.Sequential(
            nn.Conv2d(dim, dim, 3, padding=1, bias=False), nn.BatchNorm2d(dim), nn.ReLU(), nn.Conv2d(dim, num_classes, 1)
        )

    def forward(self, feats):
        levels = [conv(f) for conv, f in zip(self.lateral, feats)]
        for i in range(len(levels) - 2, -1, -1):
            levels[i] = levels[i] + F.interpolate(levels[i + 1], size=levels[i].shape[-2:], mode="bilinear", align_corners=False)
        size = levels[0].shape[-2:]
        fused = sum(F.interpolate(s(p), size=size, mode="bilinear", align_corners=False) for s, p in zip(self.smooth, levels))
        return self.head(fused)


class Segmenter(nn.Module):
    def __init__(self, config: dict):
        super().__init__()
        self.encoder = prepare.create_backbone(config["backbone"], pretrained=False)
        self.is_vit = config["backbone"].startswith("vit")
        if self.is_vit:  # one stride-16 map from 4 evenly spaced blocks, resampled to strides 4..32
            depth = len(self.encoder.blocks)
            self.taps = [depth // 4 * (i + 1) - 1 for i in range(4)]
            chans = [self.encoder.embed_dim] * 4
        else:  # ConvNeXt: its 4 stages, strides 4, 8, 16, 32
            chans = [info["num_chs"] for info in self.encoder.feature_info]
        self.decoder = FPNDecoder(chans, config["decoder_dim"], config["num_classes"])

    def features(self, x):
        if not self.is_vit:
            return self.encoder.forward_intermediates(x, intermediates_only=True)
        f = self.encoder.forward_intermediates(x, indices=self.taps, intermediates_only=True)
        return [F.interpolate(f[0], scale_factor=4, mode="bilinear", align_corners=False),
                F.interpolate(f[1], scale_factor=2, mode="bilinear", align_corners=False), f[2], F.max_pool2d(f[3], 2)]

    def forward(self, x):
        logits = self.decoder(self.features(x))
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


def build_model(config: dict) -> nn.Module:
    return Segmenter(config)


def main() -> None:
    torch.manual_seed(SEED)
    torch.backends.cudnn.benchmark = True
    config = {"backbone": BACKBONE, "decoder_dim": DECODER_DIM, "num_classes": prepare.NUM_CLASSES}
    model = build_model(config)
    model.encoder.load_state_dict(prepare.backbone_state_dict(BACKBONE), strict=True)  # DINOv3 weights
    model.to(DEVICE)
    xtr, ytr = (t.to(DEVICE) for t in prepare.load_split("train"))
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=DEVICE.startswith("cuda"))
    run = Path(__file__).stem
    started, train_s, images, steps, best, score = time.time(), 0.0, 0, 0, -1.0, 0.0
    stop = False
    for epoch in range(1, EPOCHS + 1):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(xtr), device=DEVICE)
        for i in range(0, len(xtr), BATCH_SIZE):
            idx = perm[i : i + BATCH_SIZE]
            x, y = prepare.normalize(xtr[idx]), ytr[idx].long()
            flip = torch.rand(len(idx), device=DEVICE) < 0.5
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
            y = torch.where(flip[:, None, None], y.flip(2), y)
            with autocast:
                logits = model(x)
            loss = F.cross_entropy(logits.float(), y, ignore_index=prepare.IGNORE)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            images += len(idx)
            if steps % LOG_EVERY == 0:
                if not torch.isfinite(loss):
                    raise SystemExit(f"loss is {loss.item()} at step {steps}: lower the learning rate")
                print(f"step {steps} loss {loss.item():.4f} img/s {images / (train_s + time.time() - t0):.1f}", flush=True)
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
            score = prepare.evaluate(model, "val", DEVICE)["value"]
        print(f"epoch {epoch}/{EPOCHS} loss {loss.item():.4f} val_miou {score:.4f}", flush=True)
        if score > best:
            best = score
            prepare.save_checkpoint(model, config, f"{run}_epoch{epoch}", score=score)
        if stop:
            break
    print(f"val_miou: {score:.4f}\nbest_val_miou: {best:.4f}\nsteps: {steps}\nepochs: {epoch}\n"
          f"train_images_per_s: {images / max(train_s, 1e-9):.1f}\ntime_s: {time.time() - started:.1f}")


if __name__ == "__main__":
    main()
