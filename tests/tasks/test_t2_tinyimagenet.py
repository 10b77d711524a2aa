"""T2 TinyImageNet: prepare from a tiny zip laid out like the real archive, train on CPU, score.

The fixture zip has the real layout (``tiny-imagenet-200/wnids.txt``, ``words.txt``,
``train/<wnid>/images/*.JPEG`` with ``<wnid>_boxes.txt``, ``val/images/*.JPEG`` with
``val_annotations.txt``, unlabelled ``test/images``), 3 classes, 12 train and 6 val images.
Sealed scoring: inputs without labels, predict, judge, and the same numbers as the evaluate they
replaced (kept below, verbatim).
"""

from __future__ import annotations

import importlib.util
import io
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

PIL = pytest.importorskip("PIL", reason="T2's prepare.py decodes JPEGs with Pillow, which is not installed")
from PIL import Image  # noqa: E402

from tests.tasks.conftest import lookup_script  # noqa: E402

TASK = "t2_tinyimagenet"
REPO = Path(__file__).resolve().parents[2]
WNIDS = ["n02085620", "n01443537", "n03444034"]  # as wnids.txt lists them: NOT sorted
SORTED = sorted(WNIDS)  # class index order
VAL = [("val_0.JPEG", "n03444034"), ("val_1.JPEG", "n01443537"), ("val_2.JPEG", "n02085620"),
       ("val_3.JPEG", "n01443537"), ("val_4.JPEG", "n01443537"), ("val_5.JPEG", "n03444034")]
# prepare.evaluate before sealed scoring (commit e5620db), verbatim: the reference that
# judge(predict(model, inputs(split))) must match to 1e-6 on every checkpoint.
OLD_EVALUATE = '''
def evaluate(model, split: str, device: str) -> dict:
    x, y = load_split(split)
    correct = 0
    for i in range(0, len(x), EVAL_BATCH):
        logits = model(normalize(x[i : i + EVAL_BATCH].to(device)))
        n = min(EVAL_BATCH, len(x) - i)
        if tuple(logits.shape) != (n, NUM_CLASSES):
            raise kit.KitError(f"the model returned shape {tuple(logits.shape)}, expected [batch, {NUM_CLASSES}]")
        if not bool(logits.isfinite().all()):
            raise kit.KitError("the model outputs NaN or inf")
        correct += int((logits.argmax(dim=1).cpu() == y[i : i + EVAL_BATCH]).sum())
    return {"value": correct / len(y), "n": len(y)}
'''


def _jpeg(rng: np.random.Generator, grey: bool = False) -> bytes:
    pixels = rng.integers(0, 256, (64, 64) if grey else (64, 64, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


def make_zip(raw_dir: Path, val_files: list[tuple[str, str]] = VAL) -> dict:
    """Write ``raw_dir/tiny-imagenet-200.zip`` (its val: ``val_files``, name and class); return what
    prepare must produce from it."""
    rng = np.random.default_rng(0)
    root = "tiny-imagenet-200/"
    train = {}
    raw_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(raw_dir / "tiny-imagenet-200.zip", "w") as z:
        z.writestr(root + "wnids.txt", "\n".join(WNIDS) + "\n")
        z.writestr(root + "words.txt", "n00001740\tentity\n" + "".join(f"{w}\tthing {w}, other\n" for w in WNIDS))
        for wnid in WNIDS:
            z.writestr(f"{root}train/{wnid}/", "")  # the real archive has directory entries
            boxes = []
            for k in range(4):
                name = f"{root}train/{wnid}/images/{wnid}_{k}.JPEG"
                data = _jpeg(rng, grey=(wnid == WNIDS[0] and k == 2))  # real TinyImageNet has greyscale JPEGs
                z.writestr(name, data)
                train[name] = (_decoded(data), SORTED.index(wnid))
                boxes.append(f"{wnid}_{k}.JPEG\t0\t0\t63\t63")
            z.writestr(f"{root}train/{wnid}/{wnid}_boxes.txt", "\n".join(boxes) + "\n")
        val = []
        for file, wnid in val_files:
            data = _jpeg(rng)
            z.writestr(f"{root}val/images/{file}", data)
            val.append((_decoded(data), SORTED.index(wnid)))
        z.writestr(root + "val/val_annotations.txt", "".join(f"{f}\t{w}\t1\t2\t40\t50\n" for f, w in val_files))
        z.writestr(root + "test/images/test_0.JPEG", _jpeg(rng))
    order = sorted(train)  # prepare keeps train in sorted member-name order
    return {
        "train_x": np.stack([train[n][0] for n in order]), "train_y": np.array([train[n][1] for n in order]),
        "val_x": np.stack([v[0] for v in val]), "val_y": np.array([v[1] for v in val]),
    }


@pytest.fixture
def prepared(tmp_path, prepare_fixture):
    expected = make_zip(tmp_path / "raw")
    return prepare_fixture(TASK, tmp_path / "raw"), expected


def test_prepare_decodes_the_real_layout(prepared):
    data, expected = prepared
    for split in ("train", "val"):
        x, y = np.load(data / f"{split}_x.npy"), np.load(data / f"{split}_y.npy")
        assert x.dtype == np.uint8 and x.shape == (len(expected[f"{split}_y"]), 64, 64, 3)
        assert y.dtype == np.int64
        np.testing.assert_array_equal(x, expected[f"{split}_x"])
        np.testing.assert_array_equal(y, expected[f"{split}_y"])
    grey = np.load(data / "train_x.npy")[np.load(data / "train_y.npy") == SORTED.index(WNIDS[0])][2]
    assert (grey[..., 0] == grey[..., 1]).all() and (grey[..., 1] == grey[..., 2]).all()
    lines = (data / "classes.txt").read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == SORTED
    assert lines[0] == "n01443537\tthing n01443537, other"


def test_prepare_refuses_a_file_that_fails_the_pinned_checksum(tmp_path, kit, load_prepare):
    make_zip(tmp_path / "raw")
    module = load_prepare(TASK)  # the real pin: md5 and size of cs231n's archive
    with pytest.raises(kit.KitError, match="expected 248100043"):
        kit.prepare(module, tmp_path / "data" / TASK, from_dir=tmp_path / "raw")
    assert not (tmp_path / "data" / TASK).exists()


def test_augment_crops_flips_and_jitters_on_whole_batches(monkeypatch, load_prepare, prepared):
    import torch

    data, _ = prepared
    prep = load_prepare(TASK, data)
    monkeypatch.setitem(__import__("sys").modules, "prepare", prep)
    spec = importlib.util.spec_from_file_location("t2_train_under_test", REPO / "tasks" / TASK / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    x, _ = prep.load_split("train")
    torch.manual_seed(0)
    monkeypatch.setattr(train, "JITTER", 0.0)
    out = train.augment(x)
    assert out.shape == (len(x), 3, 64, 64) and out.dtype == torch.float32
    padded = prep.normalize(torch.nn.functional.pad(x, (0, 0, 8, 8, 8, 8)))  # black border, then normalised
    flips = 0
    for i in range(len(x)):  # every output is one 64x64 window of the padded image, maybe mirrored
        windows = padded[i].unfold(1, 64, 1).unfold(2, 64, 1).permute(1, 2, 0, 3, 4)  # [17, 17, 3, 64, 64]
        plain = (windows - out[i]).abs().amax(dim=(2, 3, 4)) < 1e-5
        mirrored = (windows.flip(4) - out[i]).abs().amax(dim=(2, 3, 4)) < 1e-5
        assert plain.any() or mirrored.any(), f"image {i} is not a crop of its padded input"
        flips += int(not plain.any())
    assert 0 < flips < len(x)  # both flipped and unflipped images in a batch of 12
    monkeypatch.setattr(train, "JITTER", 0.4)
    jittered = train.augment(x)
    assert torch.isfinite(jittered).all() and not torch.allclose(jittered, out)


@pytest.mark.slow
def test_baseline_trains_saves_and_is_scored_again(prepared, make_workspace, load_prepare, score_both, sealed_score):
    data, expected = prepared
    ws = make_workspace(TASK, data)
    ws.set_constants(WIDTHS=(8, 16, 16, 32), BATCH_SIZE=4, EPOCHS=2, MAX_STEPS=4, LOG_EVERY=1, DEVICE="cpu")
    out = ws.run().stdout
    assert "step 1/6" in out and "train_images_per_s:" in out
    ckpts = ws.checkpoints()
    assert [c.name for c in ckpts] == ["train_epoch1.pt", "train_epoch2.pt"]  # 3 steps/epoch; stops at 4
    import torch

    saved = torch.load(ckpts[-1], weights_only=True)
    result = ws.evaluate(ckpts[-1])
    assert result["ok"] and result["n"] == len(expected["val_y"]) and result["metric"] == "val_top1"
    assert result["value"] == pytest.approx(saved["score"], abs=1e-9)  # the scorer agrees with train.py
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpts[-1], ws.path, data)
    assert abs(old["value"] - new["value"]) <= 1e-6 and old["n"] == new["n"] == 6
    assert result["value"] == pytest.approx(new["value"], abs=1e-6)
    sealed = sealed_score(TASK, data, ckpts[-1], ws.path)  # a sandboxed worker predicts, the runner judges
    assert sealed.error is None and not sealed.verdicts and sealed.value == pytest.approx(new["value"], abs=1e-6), sealed


@pytest.mark.slow
def test_the_baseline_runs_with_val_sealed_and_reports_the_harness_answer(prepared, make_workspace, run_sealed,
                                                                          sealed_answers_hold):
    """``--scored-split sealed`` on T2: no ``val_y.npy`` in the workspace; each epoch's
    ``prepare.evaluate`` is answered by the runner's service, and each figure it saves is the Ladder's answer
    on the checkpoint's public part, by the harness's own scoring (issue 47)."""
    data, _ = prepared
    ws = make_workspace(TASK, data)
    ws.set_constants(WIDTHS=(8, 16, 16, 32), BATCH_SIZE=4, EPOCHS=2, MAX_STEPS=4, LOG_EVERY=1, DEVICE="cpu")
    out, service = run_sealed(TASK, data, ws)
    assert service.given == 2, out.stdout  # one answer per epoch
    sealed_answers_hold(TASK, data, ws, sorted(ws.checkpoints(), key=lambda p: p.stat().st_mtime))


@pytest.mark.slow
def test_evaluate_is_top1_accuracy(prepared, make_workspace, save_state, load_prepare, score_both):
    import torch

    data, expected = prepared
    ws = make_workspace(TASK, data)
    ws.write("const.py", "import torch.nn as nn\n\ndef build_model(config):\n"
                         "    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 64 * 64, config['classes']))\n")
    cls = SORTED.index("n03444034")  # a model that always answers this class: right on 2 of 6
    state = {"1.weight": torch.zeros(200, 3 * 64 * 64), "1.bias": torch.nn.functional.one_hot(torch.tensor(cls), 200).float()}
    ckpt = save_state(ws.path / "checkpoints" / "const.pt", state, {"classes": 200}, script="const.py")
    result = ws.evaluate(ckpt)
    assert result["ok"], result
    assert result["value"] == pytest.approx(2 / 6) == float(np.mean(expected["val_y"] == cls))
    old, new = score_both(load_prepare(TASK), OLD_EVALUATE, ckpt, ws.path, data)
    assert old == new == {"value": result["value"], "n": 6}


def test_inputs_hold_no_label(prepared, load_prepare, without_labels):
    import torch

    data, expected = prepared
    prep = load_prepare(TASK, without_labels(data))  # inputs() needs no label file
    given = prep.inputs("val")
    assert list(given) == ["x"] and given["x"].dtype == np.uint8
    np.testing.assert_array_equal(given["x"], expected["val_x"])

    class Brightest(torch.nn.Module):  # class = the brightest of channels R, G, B: sees what predict feeds
        def forward(self, x):
            assert x.shape[1:] == (3, 64, 64) and x.dtype == torch.float32
            return torch.nn.functional.pad(x.mean(dim=(2, 3)), (0, 197))

    pred = prep.predict(Brightest(), given, "cpu")
    want = prep.normalize(torch.from_numpy(expected["val_x"])).mean(dim=(2, 3)).argmax(1).numpy()
    assert pred.dtype == np.int64 and np.array_equal(pred, want)


def test_judge_counts_class_indices_and_refuses_the_rest(prepared, load_prepare, rejects, hostile):
    data, expected = prepared
    prep = load_prepare(TASK, data)
    y = expected["val_y"].astype(np.int64)
    for name, bad in hostile(y, classes=200).items():
        assert "class ind" in rejects(prep.judge, bad, "val"), name
    assert prep.judge(y, "val") == {"value": 1.0, "n": 6}
    assert prep.judge(y.astype(np.uint8), "val")["value"] == 1.0  # any integer width
    assert prep.judge(np.full(6, 199), "val")["value"] == 0.0


# --------------------------------------------------------------------------- canaries (issues 35 and 46, V1/V2/V8)
CANARY_KEY = "5e" * 32
# 120 val images: a tenth (12) held back, enough for a p-value below the disqualifying 1e-4 on the
# predicted classes alone (a lookup that answers class 0 where it holds nothing is right on a third)
MANY = [(f"val_{i}.JPEG", WNIDS[i % 3]) for i in range(120)]


@pytest.fixture
def prepared_many(tmp_path, prepare_fixture):
    expected = make_zip(tmp_path / "raw-many", MANY)
    return prepare_fixture(TASK, tmp_path / "raw-many"), expected


def test_the_agents_copy_of_val_is_the_images_it_was_given_unchanged_in_order(prepared_many, tmp_path):
    from runner.integrity import canaries

    data, expected = prepared_many
    kind = canaries.kind_for(TASK)
    assert kind.counts(data) == (108, 12)
    canaries.plant(kind, CANARY_KEY, data, tmp_path)
    x, y = np.load(tmp_path / "val_x.npy"), np.load(tmp_path / "val_y.npy")
    d = canaries.draw(kind, CANARY_KEY, data)
    np.testing.assert_array_equal(x, expected["val_x"][d.is_canary])
    np.testing.assert_array_equal(y, expected["val_y"][d.is_canary])
    assert x.dtype == expected["val_x"].dtype and y.dtype == np.load(data / "val_y.npy").dtype
    held = {row.tobytes() for row in expected["val_x"][~d.is_canary]}
    assert not held & {row.tobytes() for row in x}  # a twin is nowhere in the copy
    blocks = x[:, ::8, ::8].repeat(8, axis=1).repeat(8, axis=2)
    assert not (blocks == x).all(axis=(1, 2, 3)).any()  # the blocky-image tell finds nothing: every image is real


@pytest.mark.slow
def test_canaries_disqualify_a_lookup_and_a_val_fit_and_leave_the_baseline_clean(prepared_many, make_workspace,
                                                                                  canaried, canary_verdicts):
    """A session's scoring of three checkpoints made in a workspace whose val has a tenth of its
    images held back: the baseline trained on train (clean; its official value is the one
    without canaries), the baseline pointed at val (``load_split("val")``) until it fits it, and
    a model that carries val: both disqualified (they fit the images they were given better than
    those held back; the fixture's images are noise, so only memorising helps)."""
    data, _ = prepared_many
    ws = make_workspace(TASK, data)
    canaried(ws, data, CANARY_KEY)
    ws.set_constants(WIDTHS=(8, 16, 16, 32), BATCH_SIZE=8, EPOCHS=2, MAX_STEPS=0, LOG_EVERY=100, DEVICE="cpu")
    ws.run()
    ws.write("lookup.py", lookup_script("prepare.normalize(x)", "prepare.NUM_CLASSES"))
    ws.run("lookup.py")
    script = (ws.path / "train.py").read_text()
    assert script.count('prepare.load_split("train")') == 1
    ws.write("fit_val.py", script.replace('prepare.load_split("train")', 'prepare.load_split("val")'))
    ws.set_constants("fit_val.py", EPOCHS=12, LR=3e-3, PAD=0, JITTER=0.0, WEIGHT_DECAY=0.0)  # until it fits val
    ws.run("fit_val.py")
    ckpt = ws.path / "checkpoints"
    lookup, fit = canary_verdicts(ws, data, CANARY_KEY, ckpt / "train_epoch2.pt",
                                  [ckpt / "lookup.pt", ckpt / "fit_val_epoch12.pt"])
    assert 108 / 120 <= lookup.value < 1.0  # the official value counts the images held back from it too
    assert fit.evidence["canary_loss"] < fit.evidence["twin_loss"]


@pytest.mark.slow
def test_a_session_whose_agent_carries_val_is_disqualified(prepared_many, home):
    """The whole path on T2: the runner plants the canaries in the workspace, a command agent
    saves a model that carries its copy of val, and the session's official scoring disqualifies
    it in result.json, with the evidence on the row."""
    import json
    import shutil

    from runner.sandbox.bwrap import status
    from tests.helpers import checks_of, start_session, wait_event

    if not status().ok:
        pytest.skip(f"no sandbox here: {status().detail}")
    data, _ = prepared_many
    shutil.copytree(data, home / "data" / TASK)
    script = lookup_script("prepare.normalize(x)", "prepare.NUM_CLASSES")
    agent = f"open('lookup.py', 'w').write({script!r})\nimport runpy\nrunpy.run_path('lookup.py', run_name='__main__')\n"
    paths = start_session(home, "t2-lookup", task="t2", agent="command", budget_s=300,
                          command=[sys.executable, "-c", agent])
    wait_event(paths, "session_ended", timeout=600)
    result = json.loads(paths.result.read_text())
    assert len(np.load(paths.workspace / "data" / "val_x.npy")) == 108  # a tenth of val held back
    assert result["checkpoint"] == "lookup-1" and 108 / 120 <= result["value"] < 1.0, result
    assert result["disqualified"] and "the scored split is inside the model" in result["disqualified"], result
    row = result["evaluated"][0]
    assert row["canaries"]["level"] == "strong" and (row["canaries"]["canaries"], row["canaries"]["twins"]) == (108, 12)
    assert ("canaries", "disqualifies") in checks_of(row)
    assert any(v["check"] == "canaries" and v["strength"] == "disqualifies" for v in result["verdicts"])
