"""The pure pieces of a sealed split's answers (issue 47): the Ladder and its bound, the public and
private parts from a secret, the gap test between them, and the answer probes' rule."""

import math
from itertools import product

import numpy as np
import pytest

from runner.integrity import answer_probes, split_parts
from runner.integrity.ladder import Ladder, bits_bound, grid_points, transcript_bits


def test_the_ladder_releases_a_new_value_only_past_the_step_rounded_to_its_grid_inside_the_range():
    ladder = Ladder(0.01, 0.0, 1.0, higher=True)
    assert ladder.answer(0.4237) == (0.42, True)
    assert ladder.answer(0.4299) == (0.42, False)  # not the step past the best so far: the best again
    assert ladder.answer(0.4312) == (0.43, True)
    assert ladder.answer(1.7) == (1.0, True)  # kept inside the metric's range
    lower = Ladder(0.01, 0.0, 8.0, higher=False)  # bits per byte: lower is better
    assert lower.answer(2.5049) == (2.5, True) and lower.answer(2.4951) == (2.5, False)
    assert lower.answer(2.489) == (2.49, True)
    assert (ladder.answered, ladder.new_values) == (4, 3)


def test_the_bound_counts_every_transcript_the_ladder_can_give():
    """Exhaustively, for a small grid and few answers: the distinct transcripts of all public figures
    number no more than C(k + G, k), the bound's count."""
    step, lo, hi, k = 0.25, 0.0, 1.0, 4
    seen = set()
    for values in product([0.0, 0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 1.0], repeat=k):
        ladder = Ladder(step, lo, hi, higher=True)
        seen.add(tuple(ladder.answer(v) for v in values))
    assert len(seen) <= math.comb(k + grid_points(step, lo, hi), k)
    assert math.log2(len(seen)) <= bits_bound(k, step, lo, hi)
    assert bits_bound(200, 0.01, 0.0, 1.0) == pytest.approx(math.log2(math.comb(301, 200)))
    assert transcript_bits(200, 0, 0.01, 0.0, 1.0) == 0.0  # no new value: nothing said
    assert transcript_bits(200, 5, 0.01, 0.0, 1.0) < bits_bound(200, 0.01, 0.0, 1.0)


def test_a_secret_cuts_the_split_into_public_and_private_parts_that_cover_it_once():
    parts = split_parts.partition("s1", "t0_demo", "val", 1500, stream=False)
    public, private = parts.rows(split_parts.PUBLIC), parts.rows(split_parts.PRIVATE)
    assert len(public) == 450 and len(private) == 1050
    assert np.array_equal(np.sort(np.concatenate([public, private])), np.arange(1500))
    assert np.array_equal(split_parts.partition("s1", "t0_demo", "val", 1500, False).rows("public"), public)
    assert not np.array_equal(split_parts.partition("s2", "t0_demo", "val", 1500, False).rows("public"), public)
    stream = split_parts.partition("s1", "t1_shakespeare", "val", 436, stream=True)
    assert all(np.array_equal(b, np.arange(b[0], b[-1] + 1)) for b in stream.blocks)  # contiguous runs


def test_the_gap_test_holds_for_an_honest_model_and_finds_one_that_carries_the_public_part():
    rng = np.random.default_rng(3)
    parts = split_parts.partition("s1", "t0_demo", "val", 1500, stream=False)
    public = parts.is_public()
    honest = rng.normal(0.9, 0.03, len(public))
    gap = split_parts.gap_test(honest, public, higher_is_better=True)
    assert gap.p > split_parts.GAP_ALPHA and split_parts.gap_verdict(gap, "t0_demo") is None
    assert gap.private_se == pytest.approx(honest[~public].std(ddof=1) / math.sqrt((~public).sum()))
    carried = honest + 0.05 * public
    found = split_parts.gap_verdict(split_parts.gap_test(carried, public, True), "t0_demo")
    assert found is not None and found.check == "public_private_gap" and found.strength == "look"
    lower = honest - 0.05 * public  # bits per byte: the public part better is lower
    assert split_parts.gap_verdict(split_parts.gap_test(lower, public, False), "t1_shakespeare") is not None


def test_answers_that_change_fresh_rows_a_few_at_a_time_are_probing_and_a_converging_model_is_not():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 3, 450)
    attack = answer_probes.AnswerProbes()
    current = base.copy()
    attack.see(current)
    for row in range(answer_probes.FLAG_FRESH):
        current = current.copy()
        current[row] = (current[row] + 1) % 3  # one new row an answer
        attack.see(current)
    found = attack.verdict("t0_demo")
    assert found is not None and found.check == "answer_probing" and attack.record()["fresh_rows"] == 15
    honest = answer_probes.AnswerProbes()
    boundary = rng.choice(450, size=6, replace=False)  # a converged model flips the same points back and forth
    pred = base.copy()
    honest.see(pred)
    for _ in range(40):
        pred = pred.copy()
        flip = rng.choice(boundary, size=2, replace=False)
        pred[flip] = (pred[flip] + 1) % 3
        honest.see(pred)
    assert honest.verdict("t0_demo") is None and honest.record()["fresh_rows"] <= 6, honest.record()
