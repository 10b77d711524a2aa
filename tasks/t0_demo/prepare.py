"""Demo task (t0): classify 2-D points lying on three interleaved spirals. LOCKED — do not edit.

Data (made here, deterministically; no download):
    load_split(split) -> (x, y)
        x: float32 tensor [N, 2], point coordinates (roughly in [-1, 1])
        y: int64 tensor [N], the spiral each point lies on (0, 1 or 2)
    splits: "train" (6 000 points), "val" (1 500 points, the scored split)

Metric: val accuracy (higher is better), computed by ``evaluate(model, split, device)``, which is
``judge(predict(model, inputs(split), device), split)``: the harness runs ``predict`` apart from
the labels and ``judge`` apart from your code.

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_acc)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)`` and loads the weights strictly.
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t0_demo"
VERSION = "1"
METRIC = "val_acc"
SCORED_SPLIT = "val"
RAW: dict = {}  # nothing to download
SIZES = {"train": 6000, "val": 1500}
NOISE = 0.35
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


def _spirals(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 3, n)
    r = rng.uniform(0.05, 1.0, n)
    theta = 2.5 * np.pi * r + y * (2 * np.pi / 3) + rng.normal(0, NOISE, n)
    x = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).astype(np.float32)
    return x, y.astype(np.int64)


def build(raw: dict, out: Path) -> dict:
    rng = np.random.default_rng(0)
    files = {}
    for split, n in SIZES.items():
        x, y = _spirals(n, rng)
        np.save(out / f"{split}_x.npy", x)
        np.save(out / f"{split}_y.npy", y)
        files[f"{split}_x.npy"] = {"split": split}
        files[f"{split}_y.npy"] = {"split": split}
    return files


def load_split(split: str):
    import torch

    root = data_dir()
    x = np.load(kit.require(root / f"{split}_x.npy"))
    y = np.load(kit.require(root / f"{split}_y.npy"))
    return torch.from_numpy(x), torch.from_numpy(y)


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the points (float32 [N, 2])."""
    return {"x": np.load(kit.require(data_dir() / f"{split}_x.npy"))}


def predict(model, inputs: dict, device: str):
    """The predicted spiral of each point: int64 [N]."""
    import torch

    x = torch.from_numpy(np.asarray(inputs["x"]))
    return model(x.to(device)).argmax(dim=1).cpu().numpy()


def judge(predictions, split: str) -> dict:
    """Accuracy of int64 [N] predictions against the split's labels."""
    y = np.load(kit.require(data_dir() / f"{split}_y.npy"))
    pred = kit.check_predictions(predictions, y.shape, "iu", "one class index (0, 1 or 2) per point")
    return {"value": float((pred == y).mean()), "n": len(y)}


def evaluate(model, split: str, device: str) -> dict:
    """Val accuracy in one call (what the harness computes, in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.exit(kit.cli(sys.modules[__name__]))
