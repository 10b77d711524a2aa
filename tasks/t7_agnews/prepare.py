"""AG News character-level text classification (t7). LOCKED — do not edit.

Raw data: the ag_news_csv files of Zhang, Zhao & LeCun (2015): train.csv (120 000 rows) and
test.csv (7 600 rows), no header, columns class index (1-4), title, description. Classes:
0 World, 1 Sports, 2 Business, 3 Sci/Tech (the file's 1-4 minus one), 30 000 / 1 900 of each.

Encoding: text = title + " " + description, exactly as in the CSV (backslash sequences and HTML
entities such as "#39;" are left as they are). Each character becomes its code point when it is
ASCII (1-127); any other character becomes 0, the padding value: as in Zhang et al.'s char-CNN,
where characters outside the alphabet are encoded like blanks (all-zero). Texts are cut to
1 014 characters and zero-padded at the end.

Splits: "train" (120 000, from train.csv) and "val" (7 600, the official test.csv; the scored
split). Both are in your workspace.

Loaders:
    load_split(split) -> (x, y): x uint8 tensor [N, 1014] of character codes (0 = padding),
                         y int64 tensor [N] of class ids 0-3
    CLASSES, SEQ_LEN, VOCAB_SIZE = ["World", "Sports", "Business", "Sci/Tech"], 1014, 128

Metric (scored split: val; higher is better): accuracy, given in one call by
``evaluate(model, split, device)``. It is ``judge(predict(model, inputs(split), device), split)``,
and the harness runs the parts apart (``predict`` in a sandbox that holds no label, ``judge``
where none of your code runs):
    inputs(split)  -> {"x": uint8 [N, 1014]}: the character codes, in file order
    predict(model, inputs, device) -> int64 [N]: the argmax of ``model(x)``, called with x int64
                      [B, 1014] (B ≤ 256), which must return logits [B, 4]
    judge(predictions, split) -> {"value": accuracy, "n": N}: the exact shape, integer class
                      indices 0-3 (anything else is refused)

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_acc)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)``, loads the weights strictly and calls ``predict``. Save the plain
module, not a ``torch.compile``d one (its keys start with ``_orig_mod.`` and will not load).
"""

import csv
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t7_agnews"
VERSION = "1"
METRIC = "val_acc"
SCORED_SPLIT = "val"
_BASE = "https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv"
RAW = {  # sha256 and size from huggingface/datasets' ag_news dataset_infos.json; md5 pinned by torchtext 0.18.0
    "train.csv": {
        "url": f"{_BASE}/train.csv",
        "sha256": "76a0a2d2f92b286371fe4d4044640910a04a803fdd2538e0f3f29a5c6f6b672e",
        "md5": "b1a00f826fdfbd249f79597b59e1dc12",
        "size": 29470338,
    },
    "test.csv": {
        "url": f"{_BASE}/test.csv",
        "sha256": "521465c2428ed7f02f8d6db6ffdd4b5447c1c701962353eb2c40d548c3c85699",
        "md5": "d52ea96a97a2d943681189a97654912d",
        "size": 1857427,
    },
}
SPLIT_FILES = {"train": "train.csv", "val": "test.csv"}
CLASSES = ["World", "Sports", "Business", "Sci/Tech"]
SEQ_LEN = 1014  # characters per text (Zhang et al.)
VOCAB_SIZE = 128  # ASCII codes; 0 is padding and any non-ASCII character
EVAL_BATCH = 256
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


def encode_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(x uint8 [N, SEQ_LEN], y int64 [N]) from one ag_news_csv file, encoded as documented above."""
    texts, labels = [], []
    with open(path, newline="", encoding="utf-8") as f:
        for line, row in enumerate(csv.reader(f), start=1):
            if len(row) != 3 or row[0] not in ("1", "2", "3", "4"):
                raise kit.KitError(f"{path.name} line {line}: expected class 1-4, title, description; "
                                   f"got {row[:1]} and {len(row)} fields")
            labels.append(int(row[0]) - 1)
            texts.append(f"{row[1]} {row[2]}"[:SEQ_LEN])
    x = np.zeros((len(texts), SEQ_LEN), dtype=np.uint8)
    for i, text in enumerate(texts):
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        x[i, : len(codes)] = np.where(codes < VOCAB_SIZE, codes, 0)
    return x, np.array(labels, dtype=np.int64)


def build(raw: dict, out: Path) -> dict:
    files = {}
    for split, name in SPLIT_FILES.items():
        x, y = encode_csv(raw[name])
        np.save(out / f"{split}_x.npy", x)
        np.save(out / f"{split}_y.npy", y)
        files[f"{split}_x.npy"] = {"split": split}
        files[f"{split}_y.npy"] = {"split": split}
    return files


def _split_file(split: str, part: str) -> Path:
    if split not in SPLIT_FILES:
        raise kit.KitError(f"unknown split {split!r}: choose one of {', '.join(SPLIT_FILES)}")
    return kit.require(data_dir() / f"{split}_{part}.npy")


def load_split(split: str):
    import torch

    x = np.load(_split_file(split, "x"))
    y = np.load(_split_file(split, "y"))
    return torch.from_numpy(x), torch.from_numpy(y)


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the character codes of the split's texts, uint8 [N, 1014]."""
    return {"x": np.load(_split_file(split, "x"), mmap_mode="r")}


def predict(model, inputs: dict, device: str):
    """The class of every text, the argmax of the model's logits: int64 [N]. Logits that are NaN
    or inf are refused (a KitError: the checkpoint cannot be scored), not argmax-ed into a class."""
    import torch

    x, out = inputs["x"], []
    with torch.no_grad():
        for i in range(0, len(x), EVAL_BATCH):
            batch = torch.from_numpy(x[i : i + EVAL_BATCH].astype(np.int64))
            logits = model(batch.to(device))
            if not isinstance(logits, torch.Tensor) or logits.shape != (len(batch), len(CLASSES)):
                got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
                raise kit.KitError(f"model(x) must return logits [B, {len(CLASSES)}]; got {got}")
            if not bool(torch.isfinite(logits).all()):
                raise kit.KitError(f"model(x) returned NaN or inf logits for texts {i}-{i + len(batch) - 1}: "
                                   "the checkpoint cannot be scored")
            out.append(logits.argmax(dim=1).cpu())
    return torch.cat(out).numpy()


def judge(predictions, split: str) -> dict:
    """Accuracy of int [N] class indices (0-3) against the split's labels."""
    y = np.load(_split_file(split, "y"))
    pred = kit.check_predictions(predictions, y.shape, "iu", "one class index 0-3 per text")
    if pred.min() < 0 or pred.max() >= len(CLASSES):
        raise kit.KitError(f"predictions must be class indices 0-{len(CLASSES) - 1}; got {pred.min()} to {pred.max()}")
    return {"value": int((pred == y).sum()) / len(y), "n": len(y)}


def evaluate(model, split: str, device: str) -> dict:
    """Accuracy on ``split`` in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.exit(kit.cli(sys.modules[__name__]))
