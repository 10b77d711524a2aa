"""T1 (TinyShakespeare): preparation, the evaluation windows, the baseline on CPU and the scorer
(sealed: inputs, predict, judge; the same numbers as the evaluate it replaced)."""

import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from tasks import get_task

TASK = "t1_shakespeare"
# prepare.evaluate before sealed scoring (commit e5620db), verbatim: the reference that
# judge(predict(model, inputs(split))) must match to 1e-6 on every checkpoint.
OLD_EVALUATE = '''
def evaluate(model, split: str, device: str) -> dict:
    import torch
    import torch.nn.functional as F

    ids = torch.from_numpy(np.asarray(load_split(split), dtype=np.int64))
    vocab_size = len(vocab())
    spans = eval_windows(len(ids))
    offsets = torch.arange(EVAL_WINDOW)
    total, count = 0.0, 0
    for b in range(0, len(spans), EVAL_BATCH):
        batch = spans[b : b + EVAL_BATCH]
        starts = torch.tensor([s for s, _ in batch])
        x = ids[starts[:, None] + offsets]
        y = ids[starts[:, None] + offsets + 1]
        out = model(x.to(device))
        logits = out[0] if isinstance(out, (tuple, list)) else out
        if not isinstance(logits, torch.Tensor) or logits.shape != (len(batch), EVAL_WINDOW, vocab_size):
            got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise kit.KitError(f"model(idx) must return logits [B, {EVAL_WINDOW}, {vocab_size}]; "
                               f"got {got} for idx {tuple(x.shape)}")
        # float64: exact sums
        nll = F.cross_entropy(logits.double().reshape(-1, vocab_size), y.to(device).reshape(-1), reduction="none")
        nll = nll.view(len(batch), EVAL_WINDOW).cpu()
        for row, (_, first) in enumerate(batch):
            total += float(nll[row, first:].sum())
            count += EVAL_WINDOW - first
    return {"value": total / count / math.log(2), "n": count}
'''
UNIFORM_MODEL = '''
import torch
import torch.nn as nn


class Uniform(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, idx):
        return torch.zeros(*idx.shape, self.vocab_size)


def build_model(config):
    return Uniform(config["vocab_size"])
'''
TINY = {"N_LAYER": 1, "N_HEAD": 2, "N_EMBD": 32, "BATCH_SIZE": 4, "WARMUP_STEPS": 2, "MAX_STEPS": 3, "DEVICE": "cpu"}


def write_text(path, chars=12_000, seed=0):
    """Play-like ASCII text in TinyShakespeare's layout (speaker lines, verse, blank lines)."""
    rng = np.random.default_rng(seed)
    words = ["thou", "art", "the", "king", "of", "Rome", "and", "I", "shall", "speak", "no", "more", "what", "say", "you"]
    out = []
    while sum(map(len, out)) < chars:
        speaker = rng.choice(["ROMEO", "JULIET", "First Citizen"])
        verse = " ".join(rng.choice(words, size=rng.integers(4, 10)))
        out.append(f"{speaker}:\n{verse[0].upper()}{verse[1:]}{rng.choice(['.', '!', '?', ','])}\n\n")
    path.write_text("".join(out)[:chars])
    return path.read_text()


@pytest.fixture
def raw_dir(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    write_text(raw / "input.txt")
    return raw


@pytest.mark.parametrize("n", [257, 258, 300, 512, 513, 1000, 111_540])
def test_eval_windows_score_every_character_once(n, load_prepare):
    prepare = load_prepare(TASK)
    seen = np.zeros(n, dtype=int)
    for start, first in prepare.eval_windows(n):
        assert start >= 0 and start + 256 + 1 <= n  # inputs [start, start+256), targets one further
        seen[start + 1 + first : start + 257] += 1
    assert seen[0] == 0 and (seen[1:] == 1).all()


def test_eval_windows_reject_a_too_short_split(load_prepare):
    prepare = load_prepare(TASK)
    with pytest.raises(prepare.kit.KitError, match="too short"):
        prepare.eval_windows(256)


@pytest.mark.slow
def test_fixture_prepare_train_and_score(raw_dir, prepare_fixture, make_workspace, save_state, load_prepare,
                                         score_both, sealed_score):
    text = (raw_dir / "input.txt").read_text()
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    assert prepare.vocab() == "".join(sorted(set(text)))
    train, val = prepare.load_split("train"), prepare.load_split("val")
    assert train.dtype == np.uint16 and len(train) == int(0.9 * len(text)) and len(train) + len(val) == len(text)
    assert prepare.decode(val[:50]) == text[len(train) : len(train) + 50]

    ws = make_workspace(TASK, data)
    ws.set_constants(**TINY)
    out = ws.run()
    assert "val_bpb:" in out.stdout
    (ckpt,) = ws.checkpoints()
    result = ws.evaluate(ckpt)
    assert result["ok"] and result["n"] == len(val) - 1
    assert 0 < result["value"] < 2 * math.log2(len(prepare.vocab()))
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpt, ws.path, data)
    assert abs(old["value"] - new["value"]) <= 1e-6 and old["n"] == new["n"] == result["n"]
    assert result["value"] == pytest.approx(new["value"], abs=1e-6)
    sealed = sealed_score(TASK, data, ckpt, ws.path)  # a sandboxed worker predicts, the runner judges
    assert sealed.error is None and not sealed.verdicts and sealed.value == pytest.approx(new["value"], abs=1e-6), sealed

    state = torch.load(ckpt, weights_only=True)
    compiled = {f"_orig_mod.{k}": v for k, v in state["state_dict"].items()}
    bad = save_state(ws.path / "checkpoints" / "compiled.pt", compiled, state["config"])
    result = ws.evaluate(bad)
    assert result["returncode"] == 1 and not result["ok"] and "_orig_mod." in result["error"]


@pytest.mark.slow
def test_wrong_logit_shape_is_reported(raw_dir, prepare_fixture, make_workspace, save_state):
    data = prepare_fixture(TASK, raw_dir)
    ws = make_workspace(TASK, data)
    ws.write("uniform.py", UNIFORM_MODEL)
    ckpt = save_state(ws.path / "checkpoints" / "wrong.pt", {}, {"vocab_size": 7}, script="uniform.py")
    result = ws.evaluate(ckpt)
    assert not result["ok"] and "must return logits" in result["error"]


def test_inputs_are_the_windows_the_model_is_fed(raw_dir, prepare_fixture, load_prepare):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    ids = np.asarray(prepare.load_split("val"))
    spans = prepare.eval_windows(len(ids))
    given = prepare.inputs("val")
    assert list(given) == ["x"] and given["x"].dtype == np.uint16 and given["x"].shape == (len(spans), 256)
    for row, (start, _) in zip(given["x"], spans, strict=True):
        assert np.array_equal(row, ids[start : start + 256])
    assert max(start for start, _ in spans) + 256 == len(ids) - 1  # the last character is a target only

    class Echo(torch.nn.Module):  # logits that say which character each position was fed
        def forward(self, idx):
            return torch.nn.functional.one_hot(idx, 80).float()

    logits = prepare.predict(Echo(), given, "cpu")
    assert logits.dtype == np.float32 and logits.shape == (len(spans), 256, 80)
    assert np.array_equal(logits.argmax(-1), given["x"])


def test_judge_takes_logits_and_refuses_the_rest(raw_dir, prepare_fixture, load_prepare, rejects, hostile):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    v = len(prepare.vocab())
    w = len(prepare.eval_windows(len(prepare.load_split("val"))))
    good = np.zeros((w, 256, v), dtype=np.float32)
    for name, bad in hostile(good).items():
        message = rejects(prepare.judge, bad, "val")
        assert ("NaN or inf" if name in ("NaN", "inf") else "logits") in message, name
    rejects(prepare.judge, np.zeros((w, 256, v + 1), np.float32), "val")  # another vocabulary

    uniform = prepare.judge(good, "val")
    assert prepare.judge(good.astype(np.float64)[::-1], "val") == uniform  # any memory layout (negative strides)
    assert uniform == {"value": pytest.approx(math.log2(v), abs=1e-12), "n": len(prepare.load_split("val")) - 1}
    # not probabilities: the judge normalises whatever comes, so large or one-hot values gain nothing
    assert prepare.judge(np.full_like(good, 1e30), "val")["value"] == pytest.approx(math.log2(v), abs=1e-12)
    ids = np.asarray(prepare.load_split("val"), dtype=np.int64)
    one_hot = np.zeros_like(good)
    for row, (start, _) in enumerate(prepare.eval_windows(len(ids))):
        one_hot[row, np.arange(256), ids[start + 1 : start + 257]] = 1.0  # "probability 1" on every answer
    assert prepare.judge(one_hot, "val")["value"] == pytest.approx(-math.log2(math.e / (math.e + v - 1)), rel=1e-12)
    assert prepare.judge(one_hot.astype(np.float64) * 1e4, "val")["value"] == 0.0  # only a real margin gets there


def test_truncated_fixture_fails_and_leaves_nothing(raw_dir, tmp_path, kit, load_prepare, pin_raw):
    prepare = load_prepare(TASK)
    pin_raw(prepare, raw_dir)
    raw = raw_dir / "input.txt"
    raw.write_bytes(raw.read_bytes()[:-100])
    out = tmp_path / "data" / TASK
    with pytest.raises(kit.KitError, match="truncated"):
        kit.prepare(prepare, out, from_dir=raw_dir)
    assert not out.exists() and not list((tmp_path / "data").glob(".*partial*"))


def test_train_script_defines_the_edited_constants():
    text = (get_task(TASK).folder / "train.py").read_text()
    names = {n for edit in get_task(TASK).scripted_edits for n in edit.set} | set(TINY)
    assert not [n for n in names if not re.search(rf"^{n}\s*=", text, re.MULTILINE)]


# --------------------------------------------------------------------------- the real file
@pytest.mark.slow
def test_real_file_splits_and_uniform_model(shared_data, tmp_path, kit, make_workspace, save_state, load_prepare, score_both):
    raw = shared_data / "tinyshakespeare" / "input.txt"
    assert kit.file_digest(raw) == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    data = tmp_path / "data" / TASK
    proc = subprocess.run(
        [sys.executable, str(get_task(TASK).folder / "prepare.py"), "--from", str(raw.parent), "--data-dir", str(data)],
        capture_output=True, text=True, timeout=600,  # a hang guard: seconds on a quiet machine
    )
    assert proc.returncode == 0, proc.stderr
    train, val = np.load(data / "train.npy"), np.load(data / "val.npy")
    assert (len(train), len(val)) == (1_003_854, 111_540) and train.dtype == np.uint16
    text = raw.read_text()
    vocab = sorted(set(text))
    assert len(vocab) == 65 and int(train.max()) == 64
    assert "".join(vocab[i] for i in val[:40]) == text[1_003_854 : 1_003_854 + 40]

    ws = make_workspace(TASK, data)
    ws.write("uniform.py", UNIFORM_MODEL)
    ckpt = save_state(ws.path / "checkpoints" / "uniform.pt", {}, {"vocab_size": 65}, script="uniform.py")
    result = ws.evaluate(ckpt)
    assert result["ok"] and result["n"] == 111_539
    assert result["value"] == pytest.approx(math.log2(65), abs=1e-9)
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpt, ws.path, data)
    assert old == new and new["value"] == result["value"]
