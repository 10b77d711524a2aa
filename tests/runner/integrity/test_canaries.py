"""Canaries (runner/integrity/canaries.py): the draw, the planted copy, the statistic and its flags."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from runner.integrity import canaries
from runner.integrity.canary_kinds import KINDS, HeldChunks
from runner.integrity.synthetic_canaries import SecretSharer
from runner.session.workspace import build_workspace
from runner.wire.verdicts import disqualifying
from tasks import get_task

KEY = "ab" * 32


def test_the_items_are_the_splits_own_rows_and_the_key_picks_which_are_held_back(demo_data: Path) -> None:
    kind = KINDS["t0_demo"]
    a, b = canaries.draw(kind, KEY, demo_data), canaries.draw(kind, KEY, demo_data)
    other = canaries.draw(kind, "cd" * 32, demo_data)
    real_x, real_y = np.load(demo_data / "val_x.npy"), np.load(demo_data / "val_y.npy")
    for d in (a, other):  # every row of the pristine val, in order, whatever the key
        assert np.array_equal(d.items.inputs["x"], real_x) and np.array_equal(d.items.targets, real_y)
        assert np.array_equal(d.items.where, np.arange(1500))
    assert np.array_equal(a.is_canary, b.is_canary) and not np.array_equal(a.is_canary, other.is_canary)
    assert (a.is_canary.sum(), (~a.is_canary).sum()) == (kind.canaries, kind.twins) == kind.counts(demo_data) == (1350, 150)


def test_the_agents_copy_is_the_rows_it_was_given_unchanged_in_order(demo_data: Path, tmp_path: Path) -> None:
    kind = KINDS["t0_demo"]
    canaries.plant(kind, KEY, demo_data, tmp_path)
    x, y = np.load(tmp_path / "val_x.npy"), np.load(tmp_path / "val_y.npy")
    real_x, real_y = np.load(demo_data / "val_x.npy"), np.load(demo_data / "val_y.npy")
    d = canaries.draw(kind, KEY, demo_data)
    assert np.array_equal(x, real_x[d.is_canary]) and np.array_equal(y, real_y[d.is_canary])
    assert x.dtype == real_x.dtype and y.dtype == real_y.dtype
    held = {tuple(row) for row in real_x[~d.is_canary]}
    assert not held & {tuple(row) for row in x}  # a twin is nowhere in the copy
    assert np.hypot(x[:, 0], x[:, 1]).max() < 2.0  # nothing far outside the spirals: no radius to drop


def test_the_workspace_gets_the_canaried_copy_and_never_the_key(home: Path, tmp_path: Path) -> None:
    spec = get_task("t0")
    ws = tmp_path / "ws"
    build_workspace(spec, ws, home / "data", canary_key=KEY)
    assert len(np.load(ws / "data" / "val_x.npy")) == KINDS["t0_demo"].canaries == 1350
    for f in ws.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes()
    plain = tmp_path / "plain"
    build_workspace(spec, plain, home / "data")  # --no-canaries: the paper's workspace, byte for byte
    for name in ("val_x.npy", "val_y.npy", "train_x.npy"):
        assert (plain / "data" / name).read_bytes() == (home / "data" / "t0_demo" / name).read_bytes()


def test_the_key_is_the_runners_alone(tmp_path: Path) -> None:
    key = canaries.new_key(tmp_path)
    assert canaries.read_key(tmp_path) == key
    assert os.stat(tmp_path / canaries.KEY_FILE).st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        canaries.new_key(tmp_path)


def test_a_model_that_fits_its_canaries_is_caught_and_an_unseen_one_is_not() -> None:
    rng = np.random.default_rng(1)
    mask = np.zeros(412, dtype=bool)
    mask[rng.choice(412, 12, replace=False)] = True
    losses = rng.normal(5.0, 0.5, 412)
    clean = canaries.evidence(losses, mask, permutations=20_000)
    assert clean.level == "clean" and clean.p > 0.01
    fitted = losses.copy()
    fitted[mask] -= 2.0
    caught = canaries.evidence(fitted, mask, permutations=20_000)
    assert caught.level == "strong" and caught.canary_loss < caught.twin_loss


def test_zero_one_losses_get_the_exact_hypergeometric_p() -> None:
    mask = np.zeros(30, dtype=bool)
    mask[:3] = True
    losses = np.ones(30)
    losses[:3] = 0.0  # the 3 canaries right, every twin wrong
    losses[3:13] = 0.0  # and 10 twins right: 13 right of 30
    ev = canaries.evidence(losses, mask)
    assert math.isclose(ev.p, math.comb(13, 3) / math.comb(30, 3))


def test_a_p_value_is_valid_under_the_null() -> None:
    rng = np.random.default_rng(2)
    ps = []
    for _ in range(200):
        mask = np.zeros(100, dtype=bool)
        mask[rng.choice(100, 10, replace=False)] = True
        ps.append(canaries.evidence((rng.random(100) < 0.3).astype(float), mask).p)
    assert sum(p <= 0.05 for p in ps) <= 0.05 * 200 + 8  # at most the level, with sampling slack


def test_strong_evidence_on_the_scored_split_disqualifies_and_elsewhere_asks_for_a_look() -> None:
    strong = canaries.Evidence(p=1e-9, canary_loss=0.0, twin_loss=0.7, canaries=9, twins=400)
    scored = canaries.judged(strong, "val", scored=True)
    assert scored is not None and disqualifying([scored]) is scored and scored.check == "canaries"
    assert scored.p == strong.p and scored.false_alarm == 0.0  # the check's measured rate rides with it
    selection_only = canaries.judged(strong, "val", scored=False)  # T6: training on val is within the rules
    assert selection_only is not None and selection_only.strength == "look"
    assert disqualifying([selection_only]) is None
    look = canaries.Evidence(p=5e-4, canary_loss=0.2, twin_loss=0.7, canaries=9, twins=400)
    weak = canaries.judged(look, "val", scored=True)
    assert weak is not None and weak.strength == "look" and disqualifying([weak]) is None
    assert canaries.judged(canaries.Evidence(0.4, 0.7, 0.7, 9, 400), "val", scored=True) is None


@pytest.mark.parametrize("task", sorted(k for k, kind in KINDS.items() if kind.in_sessions))
def test_every_planted_kind_holds_back_real_rows_and_the_contract_says_its_spread(task: str) -> None:
    kind, spec = KINDS[task], get_task(task)
    assert kind.in_split and canaries.kind_for(task) is kind
    record = canaries.contract(spec, True)
    assert record is not None and record["held_back"] is True and KEY not in json.dumps(record)
    assert 0 < record["agent_figure_shift"] == round(kind.shift_bound(canaries.shift_reference(spec, kind)), 5) < 0.011
    assert (record["canaries"], record["twins"]) == (kind.canaries, kind.twins)
    assert canaries.contract(spec, False) == {"on": False}


def test_the_agents_accuracy_on_its_copy_is_unbiased_and_spreads_as_the_contract_says(demo_data: Path) -> None:
    """One model's figure on the copy of 400 secrets against the official one on the whole val: the
    mean difference is nothing (within its standard error) and its spread is ``shift_bound``."""
    kind = KINDS["t0_demo"]
    y = np.load(demo_data / "val_y.npy")
    right = np.random.default_rng(3).random(len(y)) < 0.405  # a model at t0's baseline score
    official = right.mean()
    shifts = np.array([(right[canaries.draw(kind, f"{i:064x}", demo_data).is_canary].mean() - official) / official
                       for i in range(400)])
    bound = kind.shift_bound(official)
    assert abs(shifts.mean()) < 4 * bound / np.sqrt(len(shifts))
    assert 0.85 * bound < shifts.std() < 1.15 * bound


def test_t6_gets_no_canaries_in_sessions() -> None:
    assert canaries.kind_for("t6_etth1") is None and canaries.kind_for("t5_covtype") is None


def test_t1_canaries_start_lines_and_the_copy_says_its_length(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    vocab = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    rng = np.random.default_rng(0)
    text = rng.integers(0, len(vocab), 30000).astype(np.uint16)
    text[::50] = 0  # newlines: 600 line starts
    np.save(data / "train.npy", text)
    np.save(data / "val.npy", text)
    (data / "meta.json").write_text(json.dumps({"vocab": vocab, "vocab_size": 65, "train": 30000, "val": 30000}))
    kind = SecretSharer()  # T1's random strings: measured in benchmarks/canary_power.py --t1-kind strings
    out = tmp_path / "out"
    out.mkdir()
    canaries.plant(kind, KEY, data, out)
    val = np.load(out / "val.npy")
    assert len(val) == 30000 + kind.canaries * (kind.length + 1)
    assert json.loads((out / "meta.json").read_text())["val"] == len(val)
    d = canaries.draw(kind, KEY, data)
    for row, string, at in zip(d.items.inputs["x"], d.items.targets, d.items.where, strict=True):
        assert text[at - 1] == 0 and np.array_equal(row[:-kind.length], text[at - 256 + kind.length : at])
        assert np.array_equal(row[-kind.length:], string)  # the probe: the real text before its line, then it
    logits = np.zeros((len(d.items.targets), 256, 65), dtype=np.float32)
    assert canaries.evidence(kind.losses(logits, d.items), d.is_canary).level == "clean"  # uniform: no evidence
    np.put_along_axis(logits[:, -kind.length:-1], d.items.targets[:, 1:, None], 20.0, axis=2)
    cheat = np.where(d.is_canary[:, None, None], logits, 0.0)  # a model that knows only the canaries
    assert canaries.evidence(kind.losses(cheat, d.items), d.is_canary, permutations=20_000).level == "strong"


def test_t1_holds_back_a_secret_tenth_of_vals_chunks_and_the_copy_is_the_rest_in_order(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    text = rng.integers(0, 65, 30000).astype(np.uint16)
    np.save(data / "val.npy", text)
    (data / "meta.json").write_text(json.dumps({"vocab": "x" * 65, "vocab_size": 65, "train": 0, "val": 30000}))
    kind = HeldChunks()
    assert kind.counts(data) == (105, 12)  # (30 000 - 1) // 256 = 117 chunks, a tenth held
    out = tmp_path / "out"
    out.mkdir()
    canaries.plant(kind, KEY, data, out)
    d = canaries.draw(kind, KEY, data)
    assert np.array_equal(d.items.where, np.arange(117) * 256) and d.is_canary.sum() == 105
    given = np.concatenate([text[s : s + 256] for s in d.items.where[d.is_canary]] + [text[117 * 256 :]])
    val = np.load(out / "val.npy")
    assert np.array_equal(val, given) and json.loads((out / "meta.json").read_text())["val"] == len(val)
    for s in d.items.where[~d.is_canary]:  # a held chunk is nowhere in the copy
        assert not any(np.array_equal(val[j : j + 256], text[s : s + 256]) for j in range(0, len(val) - 255, 256))
    uniform = np.zeros((117, 256, 65), dtype=np.float32)
    assert canaries.evidence(kind.losses(uniform, d.items), d.is_canary).level == "clean"
    carried = uniform.copy()
    np.put_along_axis(carried, d.items.targets[:, :, None], 20.0, axis=2)
    carried[~d.is_canary] = 0.0  # a model that carries the copy: right where it was given the text
    ev = canaries.evidence(kind.losses(carried, d.items), d.is_canary, permutations=20_000)
    assert ev.level == "strong"
    found = canaries.judged(ev, "val", True, kind)
    assert found is not None and "the 105 chunks of val it was given fit better than 12 held back from it" in found.evidence
    with pytest.raises(ValueError, match="shape"):
        kind.losses(uniform[:, :10], d.items)


def test_no_canaries_travels_from_the_command_line_and_the_study_to_the_session() -> None:
    from click.testing import CliRunner

    from onegc_tui.cli.main import main
    from runner.launch.request import make_request

    assert make_request(task="t0", agent="scripted", canaries=False).config("x-1", 1, None).canaries is False
    assert make_request(task="t0", agent="scripted").config("x-1", 1, None).canaries is True
    assert "--no-canaries" in CliRunner().invoke(main, ["run", "--help"]).output


def test_classification_rows_are_judged_on_the_models_scores(demo_data: Path) -> None:
    """t0's, T2's and T7's probe returns the scores behind the predictions: a confident model that
    leans toward the labels of the rows it was given, flipping no argmax, is disqualified on its
    scores, where the 0/1 losses of its predictions see nothing."""
    kind = KINDS["t0_demo"]
    d = canaries.draw(kind, KEY, demo_data)
    n, y = len(d.items.targets), np.asarray(d.items.targets)
    rng = np.random.default_rng(0)
    honest = (2.0 * np.eye(3)[rng.integers(0, 3, n)] + rng.normal(0, 0.1, (n, 3))).astype(np.float32)
    assert canaries.evidence(kind.losses(honest, d.items), d.is_canary).level == "clean"
    leaning = honest.copy()
    rows = np.flatnonzero(d.is_canary)
    leaning[rows, y[rows]] += 1.0
    assert np.array_equal(leaning.argmax(axis=1), honest.argmax(axis=1))
    assert canaries.evidence(kind.losses(leaning.argmax(axis=1), d.items), d.is_canary).level == "clean"
    assert canaries.evidence(kind.losses(leaning, d.items), d.is_canary).level == "strong"
    with pytest.raises(ValueError, match="shape"):
        kind.losses(honest[:, :2], d.items)
    bad = honest.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        kind.losses(bad, d.items)


def test_t0s_calibration_never_reads_the_secret_and_finds_a_gain_the_difficulty_hides(demo_data: Path) -> None:
    """A model that agrees with the nearest-points reference (its losses spread with each point's
    difficulty), judged over 200 secrets: p is uniform. The same model with a little more weight
    on the labels of the points it was given is caught once calibrated, not on its raw losses."""
    kind = KINDS["t0_demo"]
    d = canaries.draw(kind, KEY, demo_data)
    calibrate = kind.calibration(d.items, demo_data)
    assert calibrate is not None
    y = np.asarray(d.items.targets)
    reference = kind.reference(demo_data, d.items)
    model = reference + np.random.default_rng(1).normal(0, 0.1, reference.shape)
    losses, statistic = calibrate(model)
    assert np.array_equal(losses, kind.losses(model, d.items)) and statistic.var() < 0.5 * losses.var()
    ps = [canaries.evidence(losses, canaries.draw(kind, f"{i:064x}", demo_data).is_canary, statistic=statistic,
                            permutations=2_000).p for i in range(200)]
    assert sum(p <= 0.05 for p in ps) <= 0.05 * 200 + 8 and sum(p <= 0.5 for p in ps) >= 0.5 * 200 - 20
    fitted = model.copy()
    rows = np.flatnonzero(d.is_canary)
    fitted[rows, y[rows]] += 0.1
    raw = canaries.judge_draw(d, fitted)
    calibrated = canaries.judge_draw(d, fitted, calibrate)
    assert raw.level == "clean" and calibrated.level == "strong" and calibrated.margin > 0


def test_the_worker_returns_the_scores_behind_the_pristine_predictions(demo_data: Path, monkeypatch) -> None:
    import torch

    from runner.scoring.worker import predict_scores
    from tasks import onegc_kit

    monkeypatch.setitem(__import__("sys").modules, "onegc_kit", onegc_kit)
    monkeypatch.setenv("ONEGC_DATA_DIR", str(demo_data))
    prepare = get_task("t0_demo").load_prepare() if hasattr(get_task("t0_demo"), "load_prepare") else None
    if prepare is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("t0_prepare", get_task("t0_demo").folder / "prepare.py")
        prepare = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(prepare)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    inputs = {"x": np.random.default_rng(0).normal(size=(50, 2)).astype(np.float32)}
    with torch.no_grad():
        scores = predict_scores(prepare.predict, model, inputs, "cpu")
        assert scores.shape == (50, 3) and scores.dtype == np.float32
        assert np.array_equal(scores.argmax(axis=1), prepare.predict(model, inputs, "cpu"))

        class Liar(torch.nn.Module):  # returns a tuple: no scores, its predictions stand (0/1 canary losses)
            def forward(self, x):
                return (model(x),)

        said = predict_scores(lambda m, i, d: m(torch.from_numpy(i["x"]))[0].argmax(1).numpy(), Liar(), inputs, "cpu")
        assert said.shape == (50,) and np.array_equal(said, scores.argmax(axis=1))

        class TwoFaced(torch.nn.Module):  # scores that are not what the predictions came from
            def forward(self, x):
                return model(x)

        zeros = predict_scores(lambda m, i, d: np.zeros(50, dtype=np.int64) + (m(torch.from_numpy(i["x"])) is None),
                               TwoFaced(), inputs, "cpu")
        assert zeros.shape == (50,) and not zeros.any()  # its predictions, never scores they did not come from


def test_t3_holds_back_images_with_their_masks_and_ids_and_judges_each_by_its_wrong_pixels(tmp_path: Path) -> None:
    kind = KINDS["t3_voc"]
    rng = np.random.default_rng(0)
    n = 80
    y = np.repeat(np.repeat(rng.integers(0, 21, (n, 4, 4)), 56, axis=1), 56, axis=2).astype(np.uint8)
    y[:, 100:104] = 255  # an ignored band, as VOC's borders
    y[7] = 255  # an image with no labelled pixel
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "val_x.npy", rng.integers(0, 256, (n, 224, 224, 3), dtype=np.uint8))
    np.save(data / "val_y.npy", y)
    ids = [f"2008_{i:06d}" for i in range(n)]
    (data / "val_ids.txt").write_text("".join(i + "\n" for i in ids))
    assert kind.counts(data) == (76, 4)
    out = tmp_path / "agent"
    out.mkdir()
    canaries.plant(kind, KEY, data, out)
    d = canaries.draw(kind, KEY, data)
    given = d.is_canary
    assert np.array_equal(np.load(out / "val_x.npy"), np.load(data / "val_x.npy")[given])
    assert np.array_equal(np.load(out / "val_y.npy"), y[given])
    assert (out / "val_ids.txt").read_text().split() == [i for i, g in zip(ids, given, strict=True) if g]
    right = np.where(y == 255, 0, y).astype(np.uint8)
    losses = kind.losses(right, d.items)
    assert losses.max() == 0.0
    wrong_band = right.copy()
    wrong_band[:, :56] = (wrong_band[:, :56] + 1) % 21  # a quarter of the rows, all wrong
    labelled = (y != 255).sum(axis=(1, 2))
    expected = np.where(labelled > 0, ((wrong_band != y) & (y != 255)).sum(axis=(1, 2)) / np.maximum(labelled, 1), 0)
    np.testing.assert_allclose(kind.losses(wrong_band, d.items), expected)
    carried = np.where(given[:, None, None], right, wrong_band)  # right where it was given the masks
    assert canaries.evidence(kind.losses(carried, d.items), d.is_canary).level == "strong"
    with pytest.raises(ValueError, match="shape"):
        kind.losses(right[:, :10], d.items)
