"""Difficulty calibration (runner/integrity/difficulty.py): the references are distributions, the
calibration never reads the secret (the permutation test keeps its null on real text), and it finds
a gain from training that the spread between chunks hides."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from runner.integrity import canaries
from runner.integrity.canary_kinds import HeldChunks
from runner.integrity.difficulty import CONTEXTS, Calibration, CharNgram

REPO = Path(__file__).resolve().parents[3]
SHAKESPEARE = Path(os.environ.get("ONEGC_TEST_SHARED_DATA") or REPO.parent / "shared" / "data") / "tinyshakespeare"


def test_every_reference_is_a_distribution_over_the_next_character() -> None:
    rng = np.random.default_rng(0)
    vocab = 5
    train = rng.integers(0, vocab, 3000) * (rng.random(3000) < 0.7)  # skewed: some contexts unseen at 7 characters
    ngram = CharNgram(train, vocab)
    windows = rng.integers(0, vocab, (6, 40))
    total = np.zeros((6, 40, len(CONTEXTS)))
    for c in range(vocab):  # the probability of every possible next character, summed
        total += np.exp(-ngram.position_losses(windows, np.full((6, 40), c)).astype(np.float64))
    assert np.allclose(total, 1.0, atol=1e-5)


def test_a_vocabulary_outside_the_ids_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the vocabulary"):
        CharNgram(np.array([0, 1, 7]), 5)


@pytest.fixture(scope="module")
def t1_text() -> tuple[np.ndarray, np.ndarray]:
    """TinyShakespeare as T1 makes it: ids in sorted-character order, the last tenth val."""
    raw = SHAKESPEARE / "input.txt"
    if not raw.is_file():
        pytest.skip(f"TinyShakespeare's input.txt is not at {raw}")
    codes = np.frombuffer(raw.read_bytes(), dtype=np.uint8)
    ids = np.searchsorted(np.unique(codes), codes).astype(np.uint16)  # 65 ASCII characters, sorted
    cut = int(len(ids) * 0.9)
    return ids[:cut], ids[cut:]


def _t1_data(folder: Path, train: np.ndarray, val: np.ndarray) -> Path:
    folder.mkdir()
    np.save(folder / "train.npy", train)
    np.save(folder / "val.npy", val)
    (folder / "meta.json").write_text(json.dumps({"vocab": "x" * 65, "vocab_size": 65, "train": len(train), "val": len(val)}))
    return folder


def _logits_for(losses: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Logits [n, T, 65] whose cross-entropy at each position is exactly ``losses``."""
    q = np.exp(-np.maximum(losses, 1e-3))
    logits = np.zeros((*targets.shape, 65), dtype=np.float32)
    np.put_along_axis(logits, targets[:, :, None], np.log(64 * q / (1 - q))[:, :, None].astype(np.float32), axis=2)
    return logits


def _a_model(data: Path, d: canaries.Draw) -> np.ndarray:
    """An honest model's per-position losses on every chunk: another n-gram, counted on half of
    train and discounted its own way, mixed its own way, with noise of its own (never the
    references, never the secret)."""
    train = np.load(data / "train.npy")
    x = d.items.inputs["x"].astype(np.int64)
    own = CharNgram(train[: len(train) // 2], 65, discount=0.5).position_losses(x, d.items.targets).astype(np.float64)
    noise = np.random.default_rng(1).normal(0.0, 0.3, own.shape[:2])
    return np.clip(0.1 + 0.7 * own[:, :, 2] + 0.3 * own[:, :, 1] + noise, 0.05, 6.0)


def test_the_calibration_never_reads_the_secret_so_an_honest_model_stays_clean(t1_text, tmp_path: Path) -> None:
    data = _t1_data(tmp_path / "data", *t1_text)
    kind = HeldChunks()
    first = canaries.draw(kind, "00" * 32, data)
    honest = _a_model(data, first)
    calibrate = kind.calibration(first.items, data)
    _, stat = calibrate(_logits_for(honest, first.items.targets))
    ps = []
    for i in range(200):  # every secret draws the same chunks; only which are held moves
        d = canaries.draw(kind, f"{i:064x}", data)
        assert np.array_equal(d.items.targets, first.items.targets)
        ps.append(canaries.evidence(honest.mean(axis=1), d.is_canary, statistic=stat).p)
    ps = np.array(ps)
    assert 0.01 <= (ps <= 0.05).mean() <= 0.12 and 0.3 <= np.median(ps) <= 0.7  # uniform, as the null says
    assert ps.min() > canaries.P_LOOK


def test_a_gain_hidden_by_the_spread_between_chunks_is_caught_once_calibrated(t1_text, tmp_path: Path) -> None:
    data = _t1_data(tmp_path / "data", *t1_text)
    kind = HeldChunks()
    judge = canaries.CanaryJudge(kind, "ef" * 32, data, "val")
    d = canaries.draw(kind, judge.key, data)
    fitted = _a_model(data, d)
    fitted[d.is_canary] -= 0.05  # what a few passes over the given chunks bought: 2.5 % of the loss
    logits = _logits_for(fitted, d.items.targets)
    raw = canaries.judge_draw(d, logits)
    ev, flag = judge.judge(logits)
    assert raw.level == "clean", raw  # the chunks' spread hides it from the raw losses
    assert ev.level == "strong" and ev.margin == pytest.approx(0.05, abs=0.015), ev
    assert flag is not None and "lower than their difficulty predicts" in flag.evidence and flag.strength == "disqualifies"
    assert ev.record()["calibrated_margin"] == pytest.approx(ev.margin, abs=1e-6)
    assert ev.canary_loss == pytest.approx(fitted[d.is_canary].mean(), abs=1e-4)  # what is shown: the real losses


def test_the_calibration_refuses_losses_of_another_shape() -> None:
    rng = np.random.default_rng(0)
    windows, targets = rng.integers(0, 4, (5, 12)), rng.integers(0, 4, (5, 12))
    cal = Calibration(windows, targets, rng.random((5, 12, 4)), 4)
    with pytest.raises(ValueError, match="shape"):
        cal.residuals(np.zeros((5, 11)))


def test_a_few_items_are_not_fitted_away_by_their_character_shares() -> None:
    """With fewer items than 4 per item-level feature, only their mean is taken out: a gain on
    the canaries is still there to find."""
    rng = np.random.default_rng(2)
    windows, targets = rng.integers(0, 65, (40, 32)), rng.integers(0, 65, (40, 32))
    cal = Calibration(windows, targets, rng.random((40, 32, 4)), 65)
    losses = rng.normal(2.0, 0.05, (40, 32))
    losses[:30] -= 0.5  # the first 30 fitted
    left = cal.residuals(losses)
    assert left[:30].mean() < left[30:].mean() - 0.3
