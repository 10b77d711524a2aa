"""The passes of a judged split (runner/integrity/passes.py): the checks' items ride inside the official
evaluation, and the layout keeps the rules that make the probe one the model cannot tell apart."""

from __future__ import annotations

import numpy as np
import pytest

from runner.integrity import passes
from tests.tasks.conftest import SHARED_DATA

L = 256


def t1_spans(n: int) -> list[tuple[int, int, int]]:
    """T1's evaluation windows of a split of ``n`` characters, as its prepare.py cuts them."""
    full = (n - 1) // L
    spans = [(k * L, 0, L) for k in range(full)]
    if (n - 1) % L:
        spans.append((n - 1 - L, L - (n - 1) % L, L))
    return spans


@pytest.fixture(scope="module")
def t1_layout():
    rng = np.random.default_rng(0)
    n = 111_540  # T1's val
    ids = rng.integers(0, 65, size=n).astype(np.uint16)
    spans = t1_spans(n)
    x = np.stack([ids[s:s + L] for s, _, _ in spans])
    foreign = rng.integers(0, 65, size=(200, L)).astype(np.uint16)
    return passes.sequence("val", x, spans, foreign, np.random.default_rng(7)), x, spans


def test_every_window_is_judged_once_and_never_shown_beside_its_twin(t1_layout):
    layout, x, spans = t1_layout
    homes = [p for p in layout.passes if not p.copies]
    assert len(homes) == 3 and sum(p.copies for p in layout.passes) == 1
    seen = np.concatenate([p.index[p.source == passes.REAL] for p in homes])
    assert sorted(seen.tolist()) == list(range(len(x)))  # each real window once, outside the copies
    twins = np.concatenate([p.index[p.source == passes.TWIN] for p in homes])
    assert sorted(twins.tolist()) == list(range(len(x)))
    for p in layout.passes:
        reals = set(p.index[p.source == passes.REAL].tolist())
        assert not reals & set(p.index[p.source == passes.TWIN].tolist())  # the cut is never learnt
    sizes = [len(p) for p in layout.passes]
    assert max(sizes) - min(sizes) <= 2, sizes  # no pass stands out by its size


def test_no_real_window_shares_a_pass_with_another_that_holds_its_targets(t1_layout):
    layout, x, spans = t1_layout
    cuts = layout.twins.cuts
    for p in layout.passes:
        rows = list(zip(p.source.tolist(), p.index.tolist(), strict=True))
        assert not passes._clash(rows, spans, cuts)
    final = len(spans) - 1  # the overlapping last window: never beside the one whose targets it holds
    home = {int(i): q for q, p in enumerate(layout.passes[:3]) for s, i in zip(p.source, p.index, strict=True)
            if s == passes.REAL}
    assert home[final] != home[final - 1]


def test_a_twin_keeps_its_window_up_to_the_cut_and_changes_there(t1_layout):
    layout, x, _ = t1_layout
    t = layout.twins
    for k in range(len(x)):
        c = int(t.cuts[k])
        assert 1 <= c < L and np.array_equal(t.inputs[k, :c], x[k, :c]) and t.inputs[k, c] != x[k, c]


def test_passes_are_assembled_back_and_copies_lined_up_with_their_originals(t1_layout):
    layout, x, _ = t1_layout
    real = {"x": x}
    answers = []
    for p in layout.passes:
        inputs = layout.inputs(p, real)["x"]
        answers.append(inputs.astype(np.float64)[:, :, None].repeat(2, axis=2))  # a "model": its input, echoed
    got = layout.assemble(answers)
    assert np.array_equal(got.real[:, :, 0], x) and np.array_equal(got.twins[:, :, 0], layout.twins.inputs)
    assert got.copies and all(np.array_equal(a, b) for _, _, a, b in got.copies)
    with pytest.raises(ValueError):
        layout.assemble(answers[:-1])


def test_mixed_items_ride_in_one_pass_in_a_secret_order():
    items = {"x": np.arange(20, dtype=np.float32).reshape(10, 2) + 1000}
    layout = passes.mixed("val", 50, items, np.random.default_rng(1))
    (p,) = layout.passes
    assert len(p) == 60 and (p.source == passes.ITEM).sum() == 10
    assert not np.array_equal(p.source, np.sort(p.source))  # mixed, not appended
    real = {"x": np.arange(100, dtype=np.float32).reshape(50, 2)}
    shown = layout.inputs(p, real)["x"]
    got = layout.assemble([shown])
    assert np.array_equal(got.real, real["x"]) and np.array_equal(got.items, items["x"])


@pytest.mark.skipif(not (SHARED_DATA / "tinyshakespeare").is_dir(), reason="no offline TinyShakespeare")
def test_t1s_real_val_lays_out():
    text = (SHARED_DATA / "tinyshakespeare" / "input.txt").read_bytes()
    vocab = sorted(set(text))
    ids = np.array([vocab.index(b) for b in text], dtype=np.uint16)
    n = int(len(ids) * 0.9)
    val = ids[n:]
    spans = t1_spans(len(val))
    x = np.stack([val[s:s + L] for s, _, _ in spans])
    foreign = np.stack([ids[i:i + L] for i in range(0, 50 * L, L)])
    layout = passes.sequence("val", x, spans, foreign, np.random.default_rng(3))
    assert len(x) == 436 and [len(p) for p in layout.passes[:3]] == [291, 291, 290]
