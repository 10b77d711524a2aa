"""T2: TinyImageNet — classify 64×64 images into 200 classes. LOCKED — do not edit.

Raw data: cs231n's ``tiny-imagenet-200.zip`` (248 100 043 bytes, md5 pinned by the
``tinyimagenet``, ``tiny-imagenet-torch`` and ``avalanche-lib`` packages). Prepared once by
``python prepare.py [--from DIR]`` into ``data/``: every JPEG is decoded (greyscale ones
converted to RGB) straight into uint8 arrays on disk, one image at a time.

Classes: index ``i`` is the i-th wnid of ``wnids.txt`` **sorted** (``n01443537`` is 0); line ``i`` of
``data/classes.txt`` is ``<wnid>\\t<words>`` for class ``i``. The 10 000 unlabelled test images of
the archive are not used.

    load_split(split) -> (x, y)
        x: uint8 tensor [N, 64, 64, 3]  (RGB, channels last, as decoded)
        y: int64 tensor [N], class 0..199
        splits: "train" (100 000, in sorted file-name order), "val" (10 000, the scored split,
                in val_annotations.txt order, labels from that file)
    normalize(x) -> float32 [N, 3, 64, 64]: x / 255 minus MEAN, divided by STD (ImageNet's),
                    on x's device; this is what evaluate feeds the model
    MEAN, STD     ImageNet RGB mean and std (on the [0, 1] scale)
    NUM_CLASSES = 200, IMAGE_SIZE = 64
    class_names() -> list of (wnid, words)

Metric: top-1 accuracy on val (higher is better), given in one call by ``evaluate(model,
split, device)``. It is ``judge(predict(model, inputs(split), device), split)``, and the
harness runs the parts apart (``predict`` in a sandbox that holds no label, ``judge`` where
none of your code runs):
    inputs(split)  -> {"x": uint8 [N, 64, 64, 3]}: the images, in split order
    predict(model, inputs, device) -> int64 [N]: the argmax of ``model(normalize(x))``, called on
                      batches [B, 3, 64, 64] (B ≤ 1 000) in eval mode, which must return finite
                      logits [B, 200]
    judge(predictions, split) -> {"value": top1, "n": N}: the exact shape, integer class indices
                      0..199 (anything else is refused)

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_top1)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)`` and loads the weights strictly (save the uncompiled module).
"""

import io
import sys
import zipfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t2_tinyimagenet"
VERSION = "1"
METRIC = "val_top1"
SCORED_SPLIT = "val"
ARCHIVE = "tiny-imagenet-200.zip"
RAW = {
    ARCHIVE: {
        "url": "http://cs231n.stanford.edu/tiny-imagenet-200.zip",
        "md5": "90528d7ca1a48142e341f4ef8d21d0de",  # pinned by tinyimagenet 0.9.9 and others
        "size": 248100043,
    }
}
ROOT = "tiny-imagenet-200/"  # every member of the archive lives under this folder
NUM_CLASSES = 200
IMAGE_SIZE = 64
MEAN = (0.485, 0.456, 0.406)  # ImageNet RGB statistics, the usual normalisation
STD = (0.229, 0.224, 0.225)
EVAL_BATCH = 1000
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


# --------------------------------------------------------------------------- preparation
def _decode(data: bytes, name: str) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            im = im.convert("RGB")  # a few TinyImageNet JPEGs are greyscale
            if im.size != (IMAGE_SIZE, IMAGE_SIZE):
                im = im.resize((IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR)
            return np.asarray(im, dtype=np.uint8)
    except OSError as exc:
        raise kit.KitError(f"{name} in {ARCHIVE} cannot be decoded ({exc}): fetch the archive again") from None


def _write_split(archive: zipfile.ZipFile, members: list[str], labels: list[int], out: Path, split: str) -> None:
    x = np.lib.format.open_memmap(out / f"{split}_x.npy", mode="w+", dtype=np.uint8,
                                  shape=(len(members), IMAGE_SIZE, IMAGE_SIZE, 3))
    for i, name in enumerate(members):  # one image in memory at a time
        x[i] = _decode(archive.read(name), name)
    x.flush()
    del x
    np.save(out / f"{split}_y.npy", np.asarray(labels, dtype=np.int64))


def build(raw: dict, out: Path) -> dict:
    try:
        archive = zipfile.ZipFile(raw[ARCHIVE])
    except zipfile.BadZipFile:
        raise kit.KitError(f"{ARCHIVE} is not a zip archive: fetch it again") from None
    with archive:
        names = set(archive.namelist())
        for needed in ("wnids.txt", "words.txt", "val/val_annotations.txt"):
            if ROOT + needed not in names:
                raise kit.KitError(f"{ARCHIVE} has no {ROOT + needed}: not the TinyImageNet archive")
        wnids = sorted(archive.read(ROOT + "wnids.txt").decode().split())
        index = {w: i for i, w in enumerate(wnids)}
        words = dict(line.split("\t", 1) for line in archive.read(ROOT + "words.txt").decode().splitlines() if "\t" in line)

        train = sorted(n for n in names if n.startswith(ROOT + "train/") and n.upper().endswith(".JPEG"))
        train_labels = []
        for name in train:  # tiny-imagenet-200/train/<wnid>/images/<wnid>_<k>.JPEG
            wnid = name[len(ROOT + "train/"):].split("/", 1)[0]
            if wnid not in index:
                raise kit.KitError(f"{name}: class {wnid} is not in wnids.txt")
            train_labels.append(index[wnid])

        val, val_labels = [], []
        for line in archive.read(ROOT + "val/val_annotations.txt").decode().splitlines():
            if not line.strip():
                continue
            file, wnid = line.split("\t")[:2]  # val_0.JPEG  n03444034  0  32  44  62 (a box)
            if wnid not in index or f"{ROOT}val/images/{file}" not in names:
                raise kit.KitError(f"val_annotations.txt names {file} / {wnid}, which the archive lacks")
            val.append(f"{ROOT}val/images/{file}")
            val_labels.append(index[wnid])

        _write_split(archive, train, train_labels, out, "train")
        _write_split(archive, val, val_labels, out, "val")
    (out / "classes.txt").write_text("".join(f"{w}\t{words.get(w, '').strip()}\n" for w in wnids))
    files = {"classes.txt": {"split": None}}
    for split in ("train", "val"):
        files[f"{split}_x.npy"] = {"split": split}
        files[f"{split}_y.npy"] = {"split": split}
    return files


# --------------------------------------------------------------------------- loading and scoring
def _split_file(split: str, part: str) -> Path:
    if split not in ("train", "val"):
        raise kit.KitError(f"unknown split {split!r}: choose train or val")
    return kit.require(data_dir() / f"{split}_{part}.npy")


def load_split(split: str):
    import torch

    x = np.load(_split_file(split, "x"))
    y = np.load(_split_file(split, "y"))
    return torch.from_numpy(x), torch.from_numpy(y)


def class_names() -> list[tuple[str, str]]:
    lines = kit.require(data_dir() / "classes.txt").read_text().splitlines()
    return [tuple(line.split("\t", 1)) for line in lines]


def normalize(x):
    """uint8 [N, 64, 64, 3] -> float32 [N, 3, 64, 64], ImageNet-normalised, on x's device."""
    import torch

    mean = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
    return (x.permute(0, 3, 1, 2).float().div(255) - mean) / std


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the split's images, uint8 [N, 64, 64, 3]."""
    return {"x": np.load(_split_file(split, "x"), mmap_mode="r")}


def predict(model, inputs: dict, device: str):
    """The class of every image, the argmax of ``model(normalize(x))``: int64 [N]."""
    import torch

    x, out = inputs["x"], []
    with torch.no_grad():
        for i in range(0, len(x), EVAL_BATCH):
            logits = model(normalize(torch.from_numpy(np.array(x[i : i + EVAL_BATCH])).to(device)))
            n = min(EVAL_BATCH, len(x) - i)
            if tuple(logits.shape) != (n, NUM_CLASSES):
                raise kit.KitError(f"the model returned shape {tuple(logits.shape)}, expected [batch, {NUM_CLASSES}]")
            if not bool(logits.isfinite().all()):
                raise kit.KitError("the model outputs NaN or inf")
            out.append(logits.argmax(dim=1).cpu())
    return torch.cat(out).numpy()


def judge(predictions, split: str) -> dict:
    """Top-1 accuracy of int [N] class indices (0-199) against the split's labels."""
    y = np.load(_split_file(split, "y"))
    pred = kit.check_predictions(predictions, y.shape, "iu", f"one class index 0-{NUM_CLASSES - 1} per image")
    if pred.min() < 0 or pred.max() >= NUM_CLASSES:
        raise kit.KitError(f"predictions must be class indices 0-{NUM_CLASSES - 1}; got {pred.min()} to {pred.max()}")
    return {"value": int((pred == y).sum()) / len(y), "n": len(y)}


def evaluate(model, split: str, device: str) -> dict:
    """Top-1 accuracy on ``split`` in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.modules["prepare"] = sys.modules[__name__]  # so data_dir() resolves beside this file
    sys.exit(kit.cli(sys.modules[__name__]))
