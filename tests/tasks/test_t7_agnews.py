"""T7 (AG News): character encoding, preparation, the baseline on CPU and the scorer (sealed:
inputs without labels, predict, judge; the same numbers as the evaluate it replaced).

train.csv (120 000 rows) is not among the offline copies, so the real-data tests cover the
official test file (the scored "val" split) only.
"""

import csv
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import torch

from tasks import TASKS_DIR, get_task
from tests.tasks.conftest import lookup_script

TASK = "t7_agnews"
# prepare.evaluate before sealed scoring (commit e5620db), verbatim: the reference that
# judge(predict(model, inputs(split))) must match to 1e-6 on every checkpoint.
OLD_EVALUATE = '''
def evaluate(model, split: str, device: str) -> dict:
    import torch

    x, y = load_split(split)
    correct = 0
    for i in range(0, len(x), EVAL_BATCH):
        logits = model(x[i : i + EVAL_BATCH].long().to(device))
        if not isinstance(logits, torch.Tensor) or logits.shape != (len(x[i : i + EVAL_BATCH]), len(CLASSES)):
            got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise kit.KitError(f"model(x) must return logits [B, {len(CLASSES)}]; got {got}")
        correct += int((logits.argmax(dim=1).cpu() == y[i : i + EVAL_BATCH]).sum())
    return {"value": correct / len(y), "n": len(y)}
'''
CONSTANT_MODEL = '''
import torch
import torch.nn as nn


class Constant(nn.Module):
    def __init__(self, label):
        super().__init__()
        self.label = label

    def forward(self, x):
        logits = torch.zeros(x.shape[0], 4)
        logits[:, self.label] = 1.0
        return logits


def build_model(config):
    return Constant(config["label"])
'''
TINY = {"EMBED_DIM": 8, "CHANNELS": 8, "FC_DIM": 16, "BATCH_SIZE": 8, "MAX_STEPS": 2, "DEVICE": "cpu"}
LONG = "x" * 2000


def write_csv(path, n, seed=0):
    """Rows in ag_news_csv's layout: every field quoted, class 1-4, title, description."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = int(rng.integers(1, 5))
        desc = LONG if i == 0 else f'Reuters - Caf\u00e9 "news" item {i}, class {label}; AT&amp;T \\ stocks #39;up#39;'
        rows.append([str(label), f"Title {i}", desc])
    with open(path, "w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    return rows


@pytest.fixture
def raw_dir(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    write_csv(raw / "train.csv", 40, seed=1)
    write_csv(raw / "test.csv", 12, seed=2)
    return raw


def test_encoding(raw_dir, load_prepare):
    prepare = load_prepare(TASK)
    with open(raw_dir / "test.csv", newline="") as f:
        rows = list(csv.reader(f))
    x, y = prepare.encode_csv(raw_dir / "test.csv")
    assert x.dtype == np.uint8 and x.shape == (12, 1014) and y.dtype == np.int64
    assert y.tolist() == [int(r[0]) - 1 for r in rows]
    assert bytes(x[0]) == (b"Title 0 " + b"x" * 2000)[:1014]  # cut to 1 014 characters
    text = f"{rows[1][1]} {rows[1][2]}"
    expected = np.array([ord(c) if ord(c) < 128 else 0 for c in text], dtype=np.uint8)
    assert np.array_equal(x[1, : len(text)], expected) and not x[1, len(text) :].any()
    assert x[1, text.index("\u00e9")] == 0  # non-ASCII -> 0, like padding


def test_bad_row_is_reported(tmp_path, load_prepare):
    prepare = load_prepare(TASK)
    (tmp_path / "test.csv").write_text('"5","a","b"\n')
    with pytest.raises(prepare.kit.KitError, match="line 1"):
        prepare.encode_csv(tmp_path / "test.csv")


@pytest.mark.slow
def test_fixture_prepare_train_and_score(raw_dir, prepare_fixture, make_workspace, save_state, load_prepare, score_both,
                                         sealed_score):
    data = prepare_fixture(TASK, raw_dir)
    assert np.load(data / "train_x.npy").shape == (40, 1014) and np.load(data / "val_y.npy").shape == (12,)
    ws = make_workspace(TASK, data)
    ws.set_constants(**TINY)
    out = ws.run()
    assert "val_acc:" in out.stdout
    (ckpt,) = ws.checkpoints()
    result = ws.evaluate(ckpt)
    assert result["ok"] and result["split"] == "val" and result["n"] == 12
    assert 0.0 <= result["value"] <= 1.0
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpt, ws.path, data)
    assert abs(old["value"] - new["value"]) <= 1e-6 and old["n"] == new["n"] == 12
    assert result["value"] == pytest.approx(new["value"], abs=1e-6)
    sealed = sealed_score(TASK, data, ckpt, ws.path)  # a sandboxed worker predicts, the runner judges
    assert sealed.error is None and not sealed.verdicts and sealed.value == pytest.approx(new["value"], abs=1e-6), sealed

    state = torch.load(ckpt, weights_only=True)
    compiled = {f"_orig_mod.{k}": v for k, v in state["state_dict"].items()}
    bad = save_state(ws.path / "checkpoints" / "compiled.pt", compiled, state["config"])
    result = ws.evaluate(bad)
    assert result["returncode"] == 1 and not result["ok"] and "_orig_mod." in result["error"]


def test_inputs_hold_no_label(raw_dir, prepare_fixture, load_prepare, without_labels):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, without_labels(data))  # inputs() needs no label file
    given = prepare.inputs("val")
    assert list(given) == ["x"] and given["x"].dtype == np.uint8
    assert np.array_equal(given["x"], np.load(data / "val_x.npy"))

    class FirstCode(torch.nn.Module):  # class = first character code mod 4: sees what predict feeds
        def forward(self, x):
            assert x.dtype == torch.int64 and x.shape[1] == 1014
            return torch.nn.functional.one_hot(x[:, 0] % 4, 4).float()

    pred = prepare.predict(FirstCode(), given, "cpu")
    assert pred.dtype == np.int64 and np.array_equal(pred, np.load(data / "val_x.npy")[:, 0] % 4)


def test_judge_counts_class_indices_and_refuses_the_rest(raw_dir, prepare_fixture, load_prepare, rejects, hostile):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)
    y = np.load(data / "val_y.npy")
    for name, bad in hostile(y.copy(), classes=4).items():
        message = rejects(prepare.judge, bad, "val")
        assert ("class ind" in message), (name, message)
    assert prepare.judge(y.copy(), "val") == {"value": 1.0, "n": 12}
    assert prepare.judge(y.astype(np.uint8), "val")["value"] == 1.0  # any integer width
    assert prepare.judge(np.zeros(12, np.int32), "val")["value"] == float(np.mean(y == 0))


def test_corrupt_fixture_fails_checksum_and_leaves_nothing(raw_dir, tmp_path, kit, load_prepare, pin_raw):
    prepare = load_prepare(TASK)
    pin_raw(prepare, raw_dir)
    raw = raw_dir / "train.csv"
    raw.write_bytes(raw.read_bytes().replace(b"Title 3", b"Title 4", 1))
    out = tmp_path / "data" / TASK
    with pytest.raises(kit.KitError, match="train.csv.*sha256"):
        kit.prepare(prepare, out, from_dir=raw_dir)
    assert not out.exists() and not list((tmp_path / "data").glob(".*partial*"))


def test_missing_train_file_names_it(tmp_path, shared_data, kit, load_prepare):
    prepare = load_prepare(TASK)
    with pytest.raises(kit.KitError, match="train.csv not found"):
        kit.prepare(prepare, tmp_path / "data" / TASK, from_dir=shared_data / "ag_news")
    assert not (tmp_path / "data" / TASK).exists()


def test_train_script_defines_the_edited_constants():
    text = (get_task(TASK).folder / "train.py").read_text()
    names = {n for edit in get_task(TASK).scripted_edits for n in edit.set} | set(TINY)
    assert not [n for n in names if not re.search(rf"^{n}\s*=", text, re.MULTILINE)]


# --------------------------------------------------------------------------- the real test file
@pytest.mark.slow
def test_real_test_file_and_constant_model(shared_data, tmp_path, kit, load_prepare, make_workspace, save_state,
                                           score_both):
    prepare = load_prepare(TASK)
    raw = shared_data / "ag_news" / "test.csv"
    spec = prepare.RAW["test.csv"]
    assert raw.stat().st_size == spec["size"]
    assert kit.file_digest(raw) == spec["sha256"] and kit.file_digest(raw, "md5") == spec["md5"]

    x, y = prepare.encode_csv(raw)
    assert x.shape == (7600, 1014) and x.dtype == np.uint8 and x.max() < 128
    assert Counter(y.tolist()) == {0: 1900, 1: 1900, 2: 1900, 3: 1900}

    # a scored data folder holding only the val split, built from the real file
    data = tmp_path / "data" / TASK
    data.mkdir(parents=True)
    np.save(data / "val_x.npy", x)
    np.save(data / "val_y.npy", y)
    (data / "manifest.json").write_text('{"files": {}}')
    with open(raw, newline="") as f:
        labels = [row[0] for row in csv.reader(f)]
    expected = labels.count("3") / len(labels)  # class 3 in the file = id 2 (Business)

    ws = make_workspace(TASK, data)
    ws.write("constant.py", CONSTANT_MODEL)
    ckpt = save_state(ws.path / "checkpoints" / "constant.pt", {}, {"label": 2}, script="constant.py")
    result = ws.evaluate(ckpt)
    assert result["ok"] and result["n"] == 7600
    assert result["value"] == expected == 0.25
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpt, ws.path, data)
    assert old == new == {"value": 0.25, "n": 7600}


@pytest.mark.slow
def test_reproduction_stops_with_one_line_without_train_csv(shared_data, tmp_path):
    script = TASKS_DIR.parent / "benchmarks" / "reproduce_baselines.py"
    proc = subprocess.run([sys.executable, str(script), "t7", "--from", str(shared_data / "ag_news"), "--device", "cpu",
                           "--data-dir", str(tmp_path / "data" / "t7_agnews")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "train.csv not found" in lines[0]
    assert not (tmp_path / "data" / "t7_agnews").exists()


NAN_MODEL = CONSTANT_MODEL.replace("logits[:, self.label] = 1.0", "logits[:, self.label] = float('nan')")


def test_predict_refuses_non_finite_logits(raw_dir, prepare_fixture, load_prepare):
    data = prepare_fixture(TASK, raw_dir)
    prepare = load_prepare(TASK, data)

    class Logits(torch.nn.Module):
        def __init__(self, value):
            super().__init__()
            self.value = value

        def forward(self, x):
            out = torch.zeros(x.shape[0], 4)
            out[-1, 2] = self.value  # one bad logit in the batch is enough
            return out

    for bad in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(prepare.kit.KitError, match=r"NaN or inf logits for texts 0-11: the checkpoint cannot be scored"):
            prepare.predict(Logits(bad), prepare.inputs("val"), "cpu")
    assert prepare.predict(Logits(1.0), prepare.inputs("val"), "cpu").shape == (12,)  # finite: scored


@pytest.mark.slow
def test_a_checkpoint_with_nan_logits_fails_eval_with_a_clear_error(raw_dir, prepare_fixture, make_workspace, save_state):
    data = prepare_fixture(TASK, raw_dir)
    ws = make_workspace(TASK, data)
    ws.write("nan_model.py", NAN_MODEL)
    result = ws.evaluate(save_state(ws.path / "checkpoints" / "nan.pt", {}, {"label": 1}, script="nan_model.py"))
    assert result["returncode"] == 1 and not result["ok"] and "NaN or inf logits" in result["error"], result


@pytest.mark.slow
def test_the_baseline_runs_with_val_sealed_and_reports_the_harness_answer(raw_dir, prepare_fixture, make_workspace,
                                                                          run_sealed, sealed_answers_hold):
    """``--scored-split sealed`` on T7: the workspace has no ``val_y.npy``; the baseline's
    ``prepare.evaluate`` is answered by the runner's service, and each figure it saves is the Ladder's answer
    on the checkpoint's public part, by the harness's own scoring (issue 47)."""
    data = prepare_fixture(TASK, raw_dir)
    ws = make_workspace(TASK, data)
    ws.set_constants(**TINY)
    out, service = run_sealed(TASK, data, ws)
    assert "val_acc:" in out.stdout and service.given >= 1, out.stdout
    sealed_answers_hold(TASK, data, ws, list(ws.checkpoints()))


# --------------------------------------------------------------------------- canaries (issues 35 and 46, V1/V2/V8)
CANARY_KEY = "7a" * 32


def write_news(path, n, seed):
    """Rows in ag_news_csv's layout whose class nothing in the text gives away: a few random words."""
    rng = np.random.default_rng(seed)
    words = ["market", "team", "shares", "season", "launch", "talks", "rates", "coach", "chip", "vote", "oil", "game"]
    rows = [[str(int(rng.integers(1, 5))), " ".join(rng.choice(words, 3)), " ".join(rng.choice(words, 12))]
            for _ in range(n)]
    with open(path, "w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)


@pytest.mark.slow
def test_canaries_disqualify_a_lookup_and_a_val_fit_and_leave_the_baseline_clean(tmp_path, prepare_fixture,
                                                                                  make_workspace, canaried,
                                                                                  canary_verdicts):
    """A session's scoring of three checkpoints made in a workspace whose val has 30 % of its texts
    held back: the baseline trained on train (clean; its official value is the one without
    canaries), the baseline pointed at val (``load_split("val")``) until it fits it, and a model
    that carries val: both disqualified (they fit the texts they were given better than those held
    back). The fixture's 40 val texts hold no hint of their class, so only memorising the given
    ones helps. (The baseline's own 5 epochs on val at this tiny width, dropout on, moved them too
    little to flag: benchmarks/canary_power.py measures how often such fits are caught.)"""
    from runner.integrity import canaries

    raw = tmp_path / "news"
    raw.mkdir()
    write_news(raw / "train.csv", 40, seed=1)
    write_news(raw / "test.csv", 40, seed=2)
    data = prepare_fixture(TASK, raw)
    ws = make_workspace(TASK, data)
    canaried(ws, data, CANARY_KEY)
    given, held = canaries.kind_for(TASK).counts(data)
    assert (given, held) == (28, 12) and len(np.load(ws.path / "data" / "val_x.npy")) == given
    ws.set_constants(**{**TINY, "MAX_STEPS": 0, "EPOCHS": 1})
    ws.run()
    ws.write("lookup.py", lookup_script("x.long()", "len(prepare.CLASSES)"))
    ws.run("lookup.py")
    script = (ws.path / "train.py").read_text()
    assert script.count('prepare.load_split("train")') == 1
    ws.write("fit_val.py", script.replace('prepare.load_split("train")', 'prepare.load_split("val")'))
    ws.set_constants("fit_val.py", EPOCHS=50, CHANNELS=32, FC_DIM=64, LR=3e-3, DROPOUT=0.0)  # until it fits val
    ws.run("fit_val.py")
    ckpt = ws.path / "checkpoints"
    lookup, _ = canary_verdicts(ws, data, CANARY_KEY, ckpt / "train_epoch1.pt",
                                [ckpt / "lookup.pt", ckpt / "fit_val_epoch50.pt"])
    assert 28 / 40 <= lookup.value < 1.0  # the official value counts the texts held back from it too
