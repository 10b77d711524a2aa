"""T1 (TinyShakespeare): preparation, the evaluation windows, the baseline on CPU and the scorer."""

import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from tasks import get_task

TASK = "t1_shakespeare"
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
        assert 0 <= start and start + 256 + 1 <= n  # inputs [start, start+256), targets one further
        seen[start + 1 + first : start + 257] += 1
    assert seen[0] == 0 and (seen[1:] == 1).all()


def test_eval_windows_reject_a_too_short_split(load_prepare):
    prepare = load_prepare(TASK)
    with pytest.raises(prepare.kit.KitError, match="too short"):
        prepare.eval_windows(256)


def test_fixture_prepare_train_and_score(raw_dir, prepare_fixture, make_workspace, save_state, monkeypatch, load_prepare):
    text = (raw_dir / "input.txt").read_text()
    data = prepare_fixture(TASK, raw_dir)
    monkeypatch.setenv("ONEGC_DATA_DIR", str(data))
    prepare = load_prepare(TASK)
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

    state = torch.load(ckpt, weights_only=True)
    compiled = {f"_orig_mod.{k}": v for k, v in state["state_dict"].items()}
    bad = save_state(ws.path / "checkpoints" / "compiled.pt", compiled, state["config"])
    result = ws.evaluate(bad)
    assert result["returncode"] == 1 and not result["ok"] and "_orig_mod." in result["error"]


def test_wrong_logit_shape_is_reported(raw_dir, prepare_fixture, make_workspace, save_state):
    data = prepare_fixture(TASK, raw_dir)
    ws = make_workspace(TASK, data)
    ws.write("uniform.py", UNIFORM_MODEL)
    ckpt = save_state(ws.path / "checkpoints" / "wrong.pt", {}, {"vocab_size": 7}, script="uniform.py")
    result = ws.evaluate(ckpt)
    assert not result["ok"] and "must return logits" in result["error"]


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
def test_real_file_splits_and_uniform_model(shared_data, tmp_path, kit, make_workspace, save_state):
    raw = shared_data / "tinyshakespeare" / "input.txt"
    assert kit.file_digest(raw) == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    data = tmp_path / "data" / TASK
    proc = subprocess.run(
        [sys.executable, str(get_task(TASK).folder / "prepare.py"), "--from", str(raw.parent), "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60,
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
