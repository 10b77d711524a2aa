"""Hostile models against the causality probes of the sealed scorer (INTEGRITY.md V3, V4;
runner/integrity/causal.py), on real tiny CPU models and the real T1 and T6 data: each one that reads
ahead or across examples is its checkpoint's error with the trusted flag, never a score; honest
baselines (dropout left on included) score exactly as without the probe and are not flagged."""

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


@pytest.fixture(scope="module")
def t6_bench(tmp_path_factory):
    data = _prepared(tmp_path_factory, "t6_etth1", "etth1")
    bench = cm.Bench("t6_etth1", data, tmp_path_factory.mktemp("home") / "runs" / "t6")
    yield bench
    bench.close()


def assert_flagged(score, prefix: str) -> None:
    assert score.value is None and score.error.startswith(prefix), score
    check = {"reads ahead": "reads_ahead", "reads across examples": "reads_across",
             "causality not checked": "causality_unchecked"}[prefix.split(":")[0]]
    assert any(v.check == check and score.error.endswith(v.evidence) for v in score.verdicts), score


@pytest.mark.parametrize("config", [GPT_TINY, {**GPT_TINY, "dropout": 0.2, "dropout_on": True}],
                         ids=["baseline", "dropout-left-on"])
def test_an_honest_t1_model_scores_exactly_as_without_the_probe_and_is_not_flagged(t1_bench, config):
    model = cm.train(cm.build(cm.GPT, config), cm.t1_batches(t1_bench.data), steps=20)
    probed, outcome = t1_bench.score(cm.GPT, config, model)
    plain, _ = t1_bench.score(cm.GPT, config, model, probe=False)
    assert probed.value is not None and probed.value == plain.value and probed.error is None
    assert not {v.check for v in probed.verdicts} & {"reads_ahead", "reads_across", "causality_unchecked"}
    assert outcome.verdict is None and outcome.error is None and outcome.units > 50_000


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


@pytest.mark.parametrize("config", [{}, {"dropout": 0.3, "dropout_on": True}, {"hidden": 64}],
                         ids=["baseline", "dropout-left-on", "mlp"])
def test_an_honest_t6_model_scores_exactly_as_without_the_probe_and_is_not_flagged(t6_bench, config):
    model = cm.train(cm.build(cm.DLINEAR, config), cm.t6_batches(t6_bench.data), steps=20)
    probed, outcome = t6_bench.score(cm.DLINEAR, config, model)
    plain, _ = t6_bench.score(cm.DLINEAR, config, model, probe=False)
    assert probed.error is None and probed.value is not None
    if not config.get("dropout_on"):  # dropout left on draws differently in every run: no two runs agree
        assert probed.value == plain.value
    assert outcome.verdict is None and outcome.error is None and outcome.units >= 40


@pytest.mark.parametrize(("source", "config"), [
    (cm.COPY_BATCH, {}),  # copies each horizon from the window 96 later in its batch
    (cm.COPY_BATCH, {"from_step": 60}),  # only the horizon's last 36 steps
    (cm.PEEK_SERIES, {}),  # the whole series from the evaluator's frame
    (cm.REWRITE_EARLIER, {}),  # caches across batches: rewrites forecasts it returned earlier
    (cm.READ_INPUTS, {}),  # the scorer's own copy of the inputs: out of a probe's reach
], ids=["copy-batch", "copy-late-steps", "peek-frame", "rewrite-earlier", "read-inputs-file"])
def test_a_t6_model_that_reads_other_windows_horizons_is_an_error_with_the_flag(t6_bench, source, config):
    model = cm.train(cm.build(source, config), cm.t6_batches(t6_bench.data), steps=20)
    plain, _ = t6_bench.score(source, config, model, probe=False)
    honest, _ = t6_bench.score(cm.DLINEAR, {}, _same_weights(model), probe=False)
    assert plain.value < honest.value  # the leak pays: that is why it must be caught
    score, _ = t6_bench.score(source, config, model)
    assert_flagged(score, "reads across examples: ")


def _same_weights(model):
    honest = cm.build(cm.DLINEAR, {})
    honest.load_state_dict(model.state_dict())
    return honest


def test_a_model_too_slow_for_the_probe_is_an_error_saying_so(tmp_path, t6_bench):
    bench = cm.Bench("t6_etth1", t6_bench.data, tmp_path / "home" / "runs" / "slow", timeout_s=20)
    try:
        score, _ = bench.score(cm.SLOW_ON_SHORT, {})
    finally:
        bench.close()
    assert score.value is None and score.error.startswith("causality not checked: the model is too slow"), score


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
    assert outcome is not None and outcome.units == 0 and outcome.verdict is None
