"""T5: Forest Cover Type — classify 30 m forest cells into 7 cover types. LOCKED — do not edit.

Raw data: UCI's ``covtype.data.gz`` (581 012 rows of 55 comma-separated integers: 10 continuous
measures, 4 binary wilderness-area columns, 40 binary soil-type columns, then the cover type
1–7), checked against the sha256 that scikit-learn pins. Prepared once by
``python prepare.py [--from DIR]`` into ``data/``.

Split (deterministic, fixed here): stratified on the class with seed 0. For each class c in
0..6, in that order, one ``np.random.default_rng(0)`` permutes the rows of class c; the first
(n_c + 5) // 10 (a tenth, halves rounded up) go to test, the next as many to val, the rest to train; each split keeps
file order. Sizes: train 464 810, val 58 101, test 58 101 (the held-out, scored split).

Features: the 10 continuous columns are standardised with the mean and standard deviation
(ddof = 0, like sklearn's StandardScaler) of the train split only; the 44 binary columns stay
0/1. Labels are the cover type minus 1.

    load_split(split) -> (x, y)
        x: float32 tensor [N, 54]  (columns 0–9 standardised, 10–53 binary 0/1)
        y: int64 tensor [N], class 0..6
        splits: "train", "val"; "test" features are in data/ but its labels are held out
    CONTINUOUS = 10                 the first 10 columns are the continuous ones
    NUM_CLASSES = 7
    scaler() -> float64 array [2, 10]: train mean and std of the continuous columns

Metric: accuracy on the test split (higher is better), given in one call by ``evaluate(model,
split, device)`` (score yourself on "val"). It is ``judge(predict(model, inputs(split), device),
split)``, and the harness runs the parts apart (``predict`` in a sandbox that holds no label,
``judge`` where none of your code runs):
    inputs(split)  -> {"x": float32 [N, 54]}: the features, as load_split gives them
    predict(model, inputs, device) -> int64 [N]: the argmax of ``model(x)``, called on float32
                      batches [B, 54] (B ≤ 65 536), which must return finite logits [B, 7]
    judge(predictions, split) -> {"value": accuracy, "n": N}: the exact shape, integer class
                      indices 0..6 (anything else is refused)

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_acc)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)`` and loads the weights strictly (save the uncompiled module).
"""

import gzip
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t5_covtype"
VERSION = "1"
METRIC = "test_acc"
SCORED_SPLIT = "test"
RAW = {
    "covtype.data.gz": {
        # UCI's own copy; scikit-learn's pin (sklearn/datasets/_covtype.py, 1.9.1) is this file's
        # sha256, fetched there from the figshare mirror below. No size is pinned anywhere.
        "url": "https://archive.ics.uci.edu/ml/machine-learning-databases/covtype/covtype.data.gz",
        "sha256": "614360d0257557dd1792834a85a1cdebfadc3c4f30b011d56afee7ffb5b15771",
        "mirrors": ["https://ndownloader.figshare.com/files/5976039"],  # tried after "url"
    }
}
COLUMNS = 55  # 54 features + the cover type
CONTINUOUS = 10
NUM_CLASSES = 7
SEED = 0
HOLDOUT_DIVISOR = 10  # test and val each take a tenth of every class
EVAL_BATCH = 65536
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


def holdout_size(n: int) -> int:
    """Rows of a class of ``n`` that go to test (and as many to val): n/10, halves rounded up."""
    return (int(n) + HOLDOUT_DIVISOR // 2) // HOLDOUT_DIVISOR  # integers: no float rounding at .5


def stratified_split(y: np.ndarray, seed: int = SEED) -> dict[str, np.ndarray]:
    """Row indices of train/val/test, stratified on ``y`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    parts: dict[str, list] = {"train": [], "val": [], "test": []}
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        k = holdout_size(len(rows))
        parts["test"].append(rows[:k])
        parts["val"].append(rows[k : 2 * k])
        parts["train"].append(rows[2 * k :])
    return {s: np.sort(np.concatenate(p)).astype(np.int64) for s, p in parts.items()}


def _read(path: Path) -> np.ndarray:
    try:
        with gzip.open(path, "rt") as f:
            table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, EOFError, ValueError) as exc:
        raise kit.KitError(f"{path.name} cannot be parsed ({type(exc).__name__}: {exc}): fetch it again") from None
    if table.shape[1] != COLUMNS or len(table) == 0:
        raise kit.KitError(f"{path.name} has {table.shape[1]} columns, expected {COLUMNS}: not covtype.data.gz")
    if table[:, -1].min() < 1 or table[:, -1].max() > NUM_CLASSES:
        raise kit.KitError(f"{path.name}: cover types outside 1..{NUM_CLASSES}: not covtype.data.gz")
    if not np.isin(table[:, CONTINUOUS:-1], (0, 1)).all():
        raise kit.KitError(f"{path.name}: the wilderness/soil columns are not all 0/1: not covtype.data.gz")
    return table


def build(raw: dict, out: Path) -> dict:
    table = _read(raw["covtype.data.gz"])
    x, y = table[:, :-1].astype(np.float64), table[:, -1] - 1
    splits = stratified_split(y)
    cont = x[splits["train"], :CONTINUOUS]
    mean, std = cont.mean(axis=0), cont.std(axis=0)
    std[std == 0] = 1.0  # a constant column stays at 0 rather than dividing by zero
    x[:, :CONTINUOUS] = (x[:, :CONTINUOUS] - mean) / std
    np.save(out / "scaler.npy", np.stack([mean, std]))
    files = {"scaler.npy": {"split": "train"}}
    for split, rows in splits.items():
        np.save(out / f"{split}_x.npy", x[rows].astype(np.float32))
        np.save(out / f"{split}_y.npy", y[rows].astype(np.int64))
        files[f"{split}_x.npy"] = {"split": split}
        files[f"{split}_y.npy"] = {"split": split, "private": split == SCORED_SPLIT}
    return files


def scaler() -> np.ndarray:
    return np.load(kit.require(data_dir() / "scaler.npy"))


def _split_file(split: str, part: str) -> Path:
    if split not in ("train", "val", "test"):
        raise kit.KitError(f"unknown split {split!r}: choose train, val or test")
    path = data_dir() / f"{split}_{part}.npy"
    if part == "y" and split == SCORED_SPLIT and not path.exists():
        raise kit.KitError("the test labels are held out: the test split is scored after the session; use val")
    return kit.require(path)


def load_split(split: str):
    import torch

    y = np.load(_split_file(split, "y"))
    x = np.load(_split_file(split, "x"))
    return torch.from_numpy(x), torch.from_numpy(y)


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the split's features, float32 [N, 54] (no label)."""
    return {"x": np.load(_split_file(split, "x"), mmap_mode="r")}


def predict(model, inputs: dict, device: str):
    """The class of every row, the argmax of ``model(x)``: int64 [N]."""
    import torch

    x, out = inputs["x"], []
    with torch.no_grad():
        for i in range(0, len(x), EVAL_BATCH):
            logits = model(torch.from_numpy(np.array(x[i : i + EVAL_BATCH])).to(device))
            if not bool(logits.isfinite().all()):
                raise kit.KitError("the model outputs NaN or inf")
            if logits.shape != (min(EVAL_BATCH, len(x) - i), NUM_CLASSES):
                raise kit.KitError(f"the model returned shape {tuple(logits.shape)}, expected [batch, {NUM_CLASSES}]")
            out.append(logits.argmax(dim=1).cpu())
    return torch.cat(out).numpy()


def judge(predictions, split: str) -> dict:
    """Accuracy of int [N] class indices (0-6) against the split's labels."""
    y = np.load(_split_file(split, "y"))
    pred = kit.check_predictions(predictions, y.shape, "iu", f"one class index 0-{NUM_CLASSES - 1} per row")
    if pred.min() < 0 or pred.max() >= NUM_CLASSES:
        raise kit.KitError(f"predictions must be class indices 0-{NUM_CLASSES - 1}; got {pred.min()} to {pred.max()}")
    return {"value": int((pred == y).sum()) / len(y), "n": len(y)}


def evaluate(model, split: str, device: str) -> dict:
    """Accuracy on ``split`` in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.modules["prepare"] = sys.modules[__name__]  # so data_dir() resolves beside this file
    sys.exit(kit.cli(sys.modules[__name__]))
