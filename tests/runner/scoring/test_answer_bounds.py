"""How large an honest answer can be, per part (runner/scoring/scorer.py, issue 38 part 2): a
judged split's from the task's judge, a pass's (its canary items among the split's rows) from its
inputs' rows, wider where the model's scores are asked for. A session with canaries once asked its
judge for the canary split's size, got no answer and fell back to the worker's 4 GiB bound for every
checkpoint: the bound has to hold whatever a pass holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runner.integrity.canaries import session_judge
from runner.scoring.scorer import SealedScorer, TaskJudge, WorkerPlan
from runner.wire import answer_check
from runner.wire.answer_check import NPY_HEADER_BYTES, InvalidAnswer, read_header
from tasks import get_task


@pytest.fixture
def judge(demo_data: Path, tmp_path: Path) -> TaskJudge:
    spec = get_task("t0")
    j = TaskJudge(spec, demo_data)
    j.canaries = session_judge(spec.id, spec.scored_split, tmp_path, demo_data, on=True)
    return j


def plan(judge: TaskJudge, tmp_path: Path) -> WorkerPlan:
    inputs = tmp_path / "scoring" / "inputs"
    judge.write_inputs(inputs)
    return WorkerPlan(judge=judge, inputs=inputs, snapshots=tmp_path / "snapshots", private=tmp_path / "private",
                      home=tmp_path / "home", session_id="bounds")


def test_every_part_a_session_with_canaries_asks_for_has_a_bound_near_its_honest_size(judge, tmp_path):
    scorer = SealedScorer(plan(judge, tmp_path))
    n_val = len(np.load(tmp_path / "scoring/inputs/val/x.npy"))
    assert scorer._part_bounds(["val"], None) == {"val": n_val * 8 + NPY_HEADER_BYTES}
    # t0's canaries are val's own rows (held back from the agent's copy): the model's scores behind
    # its predictions come back for val alone, 3 classes of up to 8 bytes each per row
    assert judge.canaries.kind.in_split and judge.layout("val") is None
    bounds = scorer._part_bounds(["val"], None, scores=["val"])
    assert bounds == {"val": n_val * 3 * 8 + NPY_HEADER_BYTES}
    assert sum(bounds.values()) < answer_check.MAX_PAYLOAD_BYTES // 1_000  # never the worker's 4 GiB fallback


def test_a_causality_probes_parts_are_bounded_by_their_own_rows(judge, tmp_path):
    scorer = SealedScorer(plan(judge, tmp_path))
    folder = tmp_path / "scoring/probes/call"
    for part, rows in (("w7", 8), ("w900", 343)):
        (folder / part).mkdir(parents=True)
        np.save(folder / part / "series.npy", np.zeros((rows, 7), dtype=np.float32))
    assert scorer._part_bounds(["w7", "w900"], folder) == {"w7": 8 * 8 + NPY_HEADER_BYTES,
                                                           "w900": 343 * 8 + NPY_HEADER_BYTES}


def test_a_part_over_its_own_bound_is_refused_even_when_the_total_fits():
    bounds = {"val": 1_000, "test": 100_000}
    # the total (60 000) is under the sum of the bounds; the val part alone is not
    message = {"ok": True, "parts": [{"split": "val", "bytes": 50_000}, {"split": "test", "bytes": 10_000}]}
    with pytest.raises(InvalidAnswer, match="part for 'val' has 50000 bytes, more than the task's predictions can be"):
        read_header(message, ["val", "test"], 60_000, bounds)
    honest = {"ok": True, "parts": [{"split": "val", "bytes": 1_000}, {"split": "test", "bytes": 10_000}]}
    assert read_header(honest, ["val", "test"], 11_000, bounds).parts == [("val", 1_000), ("test", 10_000)]
