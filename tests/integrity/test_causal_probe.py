"""Hostile models against the causality probe of the sealed scorer (INTEGRITY.md V3;
runner/integrity/causal.py), on real tiny CPU models and the real T1 data: each one that reads
ahead is its checkpoint's error with the disqualifying verdict, never a score; honest baselines
(dropout left on included) score exactly as without the probe and are not flagged. (T6 reads
across by construction: tests/integrity/test_time_order.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrity import causal_models as cm

# the offline copies beside the repository, as tests/tasks/conftest.py finds them ($ONEGC_TEST_SHARED_DATA: elsewhere)
from tests.tasks.conftest import SHARED_DATA  # noqa: E402  (one place finds the offline copies)

GPT_TINY = {"n_layer": 1, "n_head": 2, "n_embd": 32}

pytestmark = pytest.mark.slow


def _prepared(tmp_path_factory, task_id: str, raw: str) -> Path:
    if not (SHARED_DATA / raw).is_dir():
        pytest.skip(f"offline dataset copies not found at {SHARED_DATA / raw}")
    return cm.prepare(task_id, tmp_path_factory.mktemp("data") / task_id, SHARED_DATA / raw)


@pytest.fixture(scope="module")
def t1_bench(tmp_path_factory):
    data = _prepared(tmp_path_factory, "t1_shakespeare", "tinyshakespeare")
    bench = cm.Bench("t1_shakespeare", data, tmp_path_factory.mktemp("home") / "runs" / "t1")
    yield bench
    bench.close()


def assert_flagged(score, prefix: str) -> None:
    assert score.value is None and score.error.startswith(prefix), score
    check = {"reads ahead": "reads_ahead", "causality not checked": "causality_unchecked"}[prefix.split(":")[0]]
    assert any(v.check == check and score.error.endswith(v.evidence) for v in score.verdicts), score


@pytest.mark.parametrize("config", [GPT_TINY, {**GPT_TINY, "dropout": 0.2, "dropout_on": True}],
                         ids=["baseline", "dropout-left-on"])
def test_an_honest_t1_model_scores_exactly_as_without_the_probe_and_is_not_flagged(t1_bench, config):
    """Deterministic, its official value is the whole split's in one pass, bit for bit; with dropout
    left on, its predictions differ between identical inputs: that is a look of its own
    (``nondeterministic``), and its value moves by its own noise only."""
    model = cm.train(cm.build(cm.GPT, config), cm.t1_batches(t1_bench.data), steps=20)
    probed, outcome = t1_bench.score(cm.GPT, config, model)
    plain, _ = t1_bench.score(cm.GPT, config, model, probe=False)
    assert probed.value is not None and probed.error is None
    assert not {v.check for v in probed.verdicts} & {"reads_ahead", "causality_unchecked"}
    assert outcome.verdict is None and outcome.error is None and outcome.units > 50_000
    shaky = {v.check for v in probed.verdicts} & {"nondeterministic"}
    if config.get("dropout_on"):
        assert shaky and outcome.p is not None and outcome.p > 1e-3
        assert probed.value == pytest.approx(plain.value, rel=0.01)
    else:
        assert not shaky and probed.value == plain.value


def test_a_t1_model_that_reads_the_next_character_is_an_error_with_the_flag(t1_bench):
    plain, _ = t1_bench.score(cm.NEXT, {}, probe=False)
    assert plain.value < 0.05  # what it would have scored, with no trained weight (the paper's best: 1.97)
    score, outcome = t1_bench.score(cm.NEXT, {})
    assert_flagged(score, "reads ahead: ")
    assert outcome.worst > 100 * outcome.floor


def test_a_gpt_without_its_causal_mask_is_an_error_with_the_flag(t1_bench):
    config = {**GPT_TINY, "causal": False}
    model = cm.train(cm.build(cm.GPT, config), cm.t1_batches(t1_bench.data), steps=30)
    score, _ = t1_bench.score(cm.GPT, config, model)
    assert_flagged(score, "reads ahead: ")


def test_a_t1_model_that_reads_ahead_only_late_in_its_window_is_caught(t1_bench):
    score, _ = t1_bench.score(cm.GPT, {**GPT_TINY, "leak_from": 230})
    assert_flagged(score, "reads ahead: ")


def test_t0_has_no_probe_and_scores_as_before(tmp_path):
    """t0's points are independent: no input holds another's label, so nothing is probed."""
    data = cm.prepare("t0_demo", tmp_path / "data" / "t0_demo", None)
    bench = cm.Bench("t0_demo", data, tmp_path / "home" / "runs" / "t0")
    try:
        model = cm.build(cm.T0_MLP, {"dropout": 0.5})
        probed, outcome = bench.score(cm.T0_MLP, {"dropout": 0.5}, model)
        plain, _ = bench.score(cm.T0_MLP, {"dropout": 0.5}, model, probe=False)
    finally:
        bench.close()
    assert probed.value == plain.value and probed.error is None and probed.verdicts == plain.verdicts
    assert outcome is None  # nothing holds another point's label: no twins, no probe


@pytest.mark.parametrize("tell", ["noise", "stack", "batch", "twins", "part"])
def test_a_reader_that_knows_the_probe_and_hides_by_a_tell_is_caught_or_gains_nothing(t1_bench, tell):
    """Issue 46: the probe rides inside the official passes, so no tell separates it from the evaluation.
    A model that widens the threshold with its own noise (0.05 % of positions), or reads ahead only
    in batches of the evaluator's 64 windows, or only in windows whose tail is not train text (a twin's,
    spotted by the 8-grams of train it carries) is its checkpoint's error. One that reads ahead only
    where its call stack names no probe, or only where its inputs did not come from a pass's folder,
    finds every official pass alike: it never reads ahead, and scores as a model that knows nothing."""
    import numpy as np

    config = {"tell": tell}
    if tell == "twins":
        config["train_grams"] = cm.train_grams(np.load(t1_bench.data / "train.npy", mmap_mode="r"))
    score, outcome = t1_bench.score(cm.PROBE_AWARE, config)
    if tell in ("stack", "part"):
        assert score.error is None and score.value > 5.9 and outcome.verdict is None  # log2(65) = 6.02
        return
    assert_flagged(score, "reads ahead: ")
    if tell == "noise":  # its noise shows as its own verdict, and widens nothing
        assert "nondeterministic" in {v.check for v in score.verdicts} and outcome.p < 1e-4
