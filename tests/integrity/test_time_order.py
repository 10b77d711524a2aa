"""T6 by construction (INTEGRITY.md V4): the sealed scorer streams a split's rows to the model in time
order, a row only once every forecast it holds a target of is committed (onegc_kit.forecast_in_time_order,
runner/scoring/worker.py's Streams). Hostile models that read other windows' horizons — from their
batch, the evaluator's frame, the scorer's inputs file, forecasts rewritten once a later batch shows
them, or the stream itself — gain nothing: each scores what its honest base scores, bit for bit, or
fails. The honest baseline scores as the agent's own ``evaluate`` does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.integrity import causal_models as cm
from tests.tasks.conftest import SHARED_DATA

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def t6_bench(tmp_path_factory):
    if not (SHARED_DATA / "etth1").is_dir():
        pytest.skip(f"offline dataset copies not found at {SHARED_DATA / 'etth1'}")
    data = cm.prepare("t6_etth1", tmp_path_factory.mktemp("data") / "t6_etth1", SHARED_DATA / "etth1")
    bench = cm.Bench("t6_etth1", data, tmp_path_factory.mktemp("home") / "runs" / "t6")
    yield bench
    bench.close()


def _same_weights(model):
    honest = cm.build(cm.DLINEAR, {})
    honest.load_state_dict(model.state_dict())
    return honest


def test_the_honest_baseline_scores_as_the_agents_own_evaluate_and_near_the_batched_value(t6_bench):
    """The harness's streamed value is the workspace's ``evaluate`` to 1e-12 (the same forecasts, one
    window at a time; CI's CPU once gave them one ulp apart, a parent's and a child's kernels need not
    take the same code path); against forecasts made 512 windows a batch (the evaluation before issue
    46) it differs only by float32 rounding."""
    from runner.scoring.scorer import load_task_module

    model = cm.train(cm.build(cm.DLINEAR, {}), cm.t6_batches(t6_bench.data), steps=20)
    score, _ = t6_bench.score(cm.DLINEAR, {}, model)
    task = load_task_module(t6_bench.spec, t6_bench.data)
    model.eval()
    torch.set_num_threads(1)  # as the scorer's child (WorkerPlan.threads): kernels split work by thread count
    own = task.judge(task.predict(model, task.inputs("test"), "cpu"), "test")  # what evaluate is
    assert score.error is None and score.value == pytest.approx(own["value"], rel=1e-12, abs=0)
    with torch.no_grad():
        series = torch.from_numpy(np.array(task.inputs("test")["series"]))
        x = series.unfold(0, task.LOOKBACK, 1).transpose(1, 2)
        batched = torch.cat([model(x[i:i + 512].contiguous()) for i in range(0, len(x), 512)]).numpy()
    assert abs(task.judge(batched, "test")["value"] - score.value) <= 1e-6 * score.value


@pytest.mark.parametrize(("source", "config"), [
    (cm.COPY_BATCH, {}),  # copies each horizon from the window 96 later in its batch
    (cm.PEEK_SERIES, {}),  # the whole series from the evaluator's frame
    (cm.REWRITE_EARLIER, {}),  # caches across calls: rewrites forecasts it returned earlier
    (cm.READ_INPUTS, {}),  # the scorer's own copy of the inputs
], ids=["copy-batch", "peek-frame", "rewrite-earlier", "read-inputs-file"])
def test_a_model_that_reads_other_windows_horizons_scores_exactly_its_honest_base(t6_bench, source, config):
    model = cm.train(cm.build(source, config), cm.t6_batches(t6_bench.data), steps=20)
    score, _ = t6_bench.score(source, config, model)
    honest, _ = t6_bench.score(cm.DLINEAR, {}, _same_weights(model))
    assert score.error is None and score.value == honest.value, (score, honest)
    assert honest.value > 0.3  # a forecaster's error, not a copy's (0.03 before issue 46)


def test_a_model_that_pulls_rows_ahead_from_the_stream_only_commits_forecasts_early(t6_bench):
    model = cm.train(cm.build(cm.COMMIT_AHEAD, {}), cm.t6_batches(t6_bench.data), steps=20)
    score, _ = t6_bench.score(cm.COMMIT_AHEAD, {}, model)
    honest, _ = t6_bench.score(cm.DLINEAR, {}, _same_weights(model))
    assert score.value is None or score.value > honest.value, (score, honest)
