"""TinyShakespeare character language model (t1). LOCKED — do not edit.

Raw data: input.txt from karpathy/char-rnn, 1 115 394 characters of Shakespeare (ASCII).
The vocabulary is the sorted set of its characters (65 of them: newline, space, 10 punctuation
marks, the digit 3, A-Z and a-z); each character is one uint16 id, its index in that sorted string.

Splits: the first 90 % of the characters is "train" (1 003 854), the rest "val" (111 540, the
scored split). Both are in your workspace.

Loaders:
    load_split(split) -> numpy uint16 array [N] of character ids, memory-mapped (read-only)
    vocab()           -> str, the 65 characters in id order (vocab()[i] is id i)
    encode(text)      -> numpy uint16 array of ids;  decode(ids) -> str

Metric (scored split: val; lower is better): bits per byte = mean cross-entropy in nats / ln 2
over val characters (ASCII: one byte per character). ``evaluate`` cuts val into non-overlapping
windows of 256 targets: window k feeds ids[256k : 256k+256] and scores the next-character
predictions ids[256k+1 : 256k+257], so each character is predicted from the characters before it
in its window only (the first target of a window sees one character). The first val character
has no context and is not scored; the last (111 539 mod 256 = 179) targets are scored with the
final full window, ids[N-257 : N-1] -> ids[N-256 : N], counting only its last 179 predictions.
So every val character from the second on is scored exactly once (111 539 predictions), and
every forward pass sees exactly [B, 256] inputs. A model that outputs uniform logits scores
log2(65) = 6.022 bits.

Model contract: ``model(idx)`` with idx int64 [B, 256] returns logits [B, 256, 65] (float), or
a tuple whose first element is those logits. Your model must accept 256 characters of context.

Evaluation: ``evaluate(model, split, device)`` gives the metric in one call. It is
``judge(predict(model, inputs(split), device), split)``, and the harness runs the parts apart
(``predict`` in a sandbox that holds no target, ``judge`` where none of your code runs):
    inputs(split)  -> {"x": uint16 [W, 256]}: the characters fed by each window, in the order
                      above (W = 436 on val: 435 full windows and the final one)
    predict(model, inputs, device) -> float32 [W, 256, V] logits (float64 if the model's are),
                      from ``model(idx)`` on batches of B ≤ 64 windows
    judge(predictions, split) -> {"value": bpb, "n": 111539}: the exact shape, finite floats;
                      the log-softmax and cross-entropy are taken here, in float64

Checkpoints (rule 7): your run script defines ``build_model(config)`` and saves with
    import prepare
    prepare.save_checkpoint(model, config, "run1_epoch3", score=val_bpb)
which writes ``checkpoints/run1_epoch3.pt``. The harness rebuilds the model with
``build_model(config)``, loads the weights strictly and calls ``predict``. Save the plain
module, not a ``torch.compile``d one (its keys start with ``_orig_mod.`` and will not load).
"""

import json
import math
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import numpy as np  # noqa: E402
import onegc_kit as kit  # noqa: E402  (beside this file in a workspace, in tasks/ in the repo)

TASK = "t1_shakespeare"
VERSION = "1"
METRIC = "val_bpb"
SCORED_SPLIT = "val"
RAW = {
    "input.txt": {
        "url": "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
        "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",  # pinned by tensorflow-datasets 4.9.10
        "size": 1115394,
    }
}
TRAIN_FRACTION = 0.9
EVAL_WINDOW = 256  # characters of context per evaluation window (shared/TASKS.md)
EVAL_BATCH = 64  # windows per forward pass
SPLITS = ("train", "val")
save_checkpoint = kit.save_checkpoint
data_dir = kit.data_dir


def build(raw: dict, out: Path) -> dict:
    try:
        text = raw["input.txt"].read_bytes().decode("ascii")
    except UnicodeDecodeError as exc:
        raise kit.KitError(f"input.txt is not ASCII text ({exc}): not the TinyShakespeare file") from None
    chars = "".join(sorted(set(text)))
    lookup = np.zeros(128, dtype=np.uint16)
    lookup[[ord(c) for c in chars]] = np.arange(len(chars), dtype=np.uint16)
    ids = lookup[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    n = int(len(ids) * TRAIN_FRACTION)
    np.save(out / "train.npy", ids[:n])
    np.save(out / "val.npy", ids[n:])
    (out / "meta.json").write_text(json.dumps({"vocab": chars, "vocab_size": len(chars), "train": n, "val": len(ids) - n}))
    return {"train.npy": {"split": "train"}, "val.npy": {"split": "val"}, "meta.json": {"split": None}}


def vocab() -> str:
    return json.loads(kit.require(data_dir() / "meta.json").read_text())["vocab"]


def encode(text: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(vocab())}
    return np.array([index[c] for c in text], dtype=np.uint16)


def decode(ids) -> str:
    chars = vocab()
    return "".join(chars[int(i)] for i in ids)


def load_split(split: str) -> np.ndarray:
    if split not in SPLITS:
        raise kit.KitError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    return np.load(kit.require(data_dir() / f"{split}.npy"), mmap_mode="r")


def eval_windows(n: int, window: int = EVAL_WINDOW) -> list[tuple[int, int]]:
    """(start, first scored position within the window) for a split of n ids, as documented above."""
    if n <= window:
        raise kit.KitError(f"a split of {n} characters is too short for {window}-character evaluation windows")
    full = (n - 1) // window
    spans = [(k * window, 0) for k in range(full)]
    tail = (n - 1) % window
    if tail:
        spans.append((n - 1 - window, window - tail))
    return spans


def _rows(ids: np.ndarray, spans: list[tuple[int, int]], shift: int = 0) -> np.ndarray:
    """ids[start + shift : start + shift + EVAL_WINDOW] of every window, one row each."""
    starts = np.array([start for start, _ in spans])
    return ids[starts[:, None] + np.arange(EVAL_WINDOW) + shift]


# --------------------------------------------------------------------------- evaluation
def inputs(split: str) -> dict:
    """What the model is given: the characters each window feeds, uint16 [W, 256]."""
    ids = load_split(split)
    return {"x": _rows(ids, eval_windows(len(ids)))}


def predict(model, inputs: dict, device: str):
    """The logits of every window: float32 [W, 256, V] (float64 if the model's are)."""
    import torch

    x, out = inputs["x"], []
    with torch.no_grad():
        for b in range(0, len(x), EVAL_BATCH):
            idx = torch.from_numpy(x[b : b + EVAL_BATCH].astype(np.int64))
            res = model(idx.to(device))
            logits = res[0] if isinstance(res, (tuple, list)) else res
            ok = isinstance(logits, torch.Tensor) and logits.dim() == 3 and tuple(logits.shape[:2]) == tuple(idx.shape)
            if not ok or (out and logits.shape[2] != out[0].shape[2]):  # one vocabulary for every batch
                got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
                raise kit.KitError(f"model(idx) must return logits [B, {EVAL_WINDOW}, vocab]; got {got} for idx {tuple(idx.shape)}")
            out.append(logits.cpu() if logits.dtype == torch.float64 else logits.float().cpu())
    return torch.cat(out).numpy()


def judge(predictions, split: str) -> dict:
    """Bits per byte of float logits [W, 256, V]: the log-softmax and cross-entropy are taken
    here, in float64, so only the differences between a position's logits count."""
    import torch
    import torch.nn.functional as F

    ids = np.asarray(load_split(split), dtype=np.int64)
    vocab_size = len(vocab())
    spans = eval_windows(len(ids))
    logits = kit.check_predictions(predictions, (len(spans), EVAL_WINDOW, vocab_size), "f",
                                   f"model(idx) must return logits [B, {EVAL_WINDOW}, {vocab_size}] for every window")
    y = torch.from_numpy(_rows(ids, spans, shift=1))  # the next character of each position
    total, count = 0.0, 0
    for b in range(0, len(spans), EVAL_BATCH):  # batch by batch, as the model ran: the same sums
        batch = torch.from_numpy(np.ascontiguousarray(logits[b : b + EVAL_BATCH], dtype=np.float64))  # exact sums
        nll = F.cross_entropy(batch.reshape(-1, vocab_size), y[b : b + EVAL_BATCH].reshape(-1), reduction="none")
        nll = nll.view(len(batch), EVAL_WINDOW)
        for row, (_, first) in enumerate(spans[b : b + EVAL_BATCH]):
            total += float(nll[row, first:].sum())
            count += EVAL_WINDOW - first
    return {"value": total / count / math.log(2), "n": count}


def evaluate(model, split: str, device: str) -> dict:
    """Bits per byte of ``split`` in one call (what the harness computes in two processes)."""
    return kit.evaluate_split(sys.modules[__name__], model, split, device)


if __name__ == "__main__":
    sys.exit(kit.cli(sys.modules[__name__]))
