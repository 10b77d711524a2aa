"""How a judged split is shown to a checkpoint: the passes of its official evaluation, with the
integrity checks' items riding inside them (INTEGRITY.md V3, V7, V8; issue 46 part 3).

A probe the model can tell from the evaluation catches nothing: a model that reads ahead only where
it is not watched, or answers the canaries apart from the rest of the split, passes. So the checks'
items travel inside the official evaluation's own forward passes: the same call path (the task's
``predict`` on a part named after the split), the same process kind (a fresh child of the sealed
worker per pass), the same batch shapes and input distribution, in an order drawn from the
session's secret. There is no pass that is only a probe, and none that is only the evaluation.

- **Canary items** (runner/integrity/canaries.py) that are not rows of the split itself are mixed
  among the split's rows, in one pass, in a secret order; the official metric is judged on the
  split's rows, the canaries' test on the items' predictions from that same pass. T1's held-back
  chunks are rows of val: they need no items at all.
- **Twins** (T1, whose windows hold their own later characters): every real window k gets a twin,
  its first ``cut_k`` characters and then real text from the train split, the cut secret. Real
  windows and twins are spread over passes so that no pass holds a window and its own twin (the
  model never sees both, so it cannot learn the cut), and no real window shares a pass with any
  other window whose inputs hold one of its targets (a window's last target is the next window's
  first character: reading across windows is ruled out by construction). Before the cut, a causal
  model predicts the twin as it predicts the window; a model that reads ahead cannot, at the one
  position it cannot know: ``cut - 1`` (runner/integrity/causal.py decides).
- **Copies**: one more pass holds copies of windows and twins shown elsewhere, laid out by the same
  rules and looking like the others (real windows and twins alike), so that a model whose
  predictions differ between two identical inputs is seen to, by trusted code, instead of widening
  any threshold.

Everything here is trusted, numpy only, and never reads a target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

REAL, TWIN, ITEM = 0, 1, 2  # what a row of a pass is
HOME_PASSES = 3  # T1: real windows and twins spread over three passes, then the copies' pass


@dataclass(frozen=True)
class Twins:
    """T1's twins: ``inputs`` [W, L] (window k's first ``cuts[k]`` characters, then foreign text)."""

    inputs: np.ndarray
    cuts: np.ndarray


@dataclass
class Pass:
    """One child's rows, in the order it sees them: ``source`` (REAL, TWIN or ITEM) and ``index``
    (the window, twin or item); ``copies``: its rows repeat rows shown in another pass."""

    source: np.ndarray
    index: np.ndarray
    copies: bool = False

    def __len__(self) -> int:
        return len(self.source)


@dataclass
class Layout:
    """A split's passes. ``n_real``: the split's rows; ``items``: canary items' rows (name -> array,
    one row each) or None; ``twins``: T1's twins or None."""

    split: str
    n_real: int
    passes: list[Pass]
    twins: Twins | None = None
    items: dict[str, np.ndarray] | None = None
    n_items: int = 0
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # T1: (start, first counted, length) per window

    def inputs(self, p: Pass, real: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A pass's inputs, in the task's ``inputs()`` format: the rows of each array, in pass order."""
        out = {}
        for name, arr in real.items():
            parts = np.empty((len(p), *np.shape(arr)[1:]), dtype=np.asarray(arr[:1]).dtype)
            src = np.asarray(arr)
            for kind, rows in ((REAL, src), (TWIN, self.twins.inputs if self.twins is not None and name == "x" else None),
                               (ITEM, None if self.items is None else self.items.get(name))):
                at = p.source == kind
                if at.any():
                    if rows is None:
                        raise ValueError(f"a pass holds {kind} rows that {name!r} has no source for")
                    parts[at] = rows[p.index[at]]
            out[name] = parts
        return out

    def assemble(self, answers: list[np.ndarray]) -> Assembled:
        """The passes' predictions (one array per pass, rows in pass order) sorted back: each real
        row's official prediction (from the pass that is not a copy), the items', the twins', and
        the copies beside what they copy."""
        if len(answers) != len(self.passes):
            raise ValueError(f"{len(answers)} answers for {len(self.passes)} passes")
        shape = None
        for a, p in zip(answers, self.passes, strict=True):
            if len(a) != len(p):
                raise ValueError(f"a pass of {len(p)} rows was answered with {len(a)}")
            if shape is None:
                shape = a.shape[1:]
            elif a.shape[1:] != shape:
                raise ValueError(f"the passes' predictions have shapes {shape} and {a.shape[1:]}")
        assert shape is not None
        dtype = np.result_type(*answers)
        real = np.empty((self.n_real, *shape), dtype=dtype)
        items = np.empty((self.n_items, *shape), dtype=dtype)
        twins = np.empty((self.n_real, *shape), dtype=dtype) if self.twins is not None else None
        copies: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # (source, index, original, copy)
        seen_real = np.zeros(self.n_real, dtype=bool)
        for a, p in zip(answers, self.passes, strict=True):
            for kind, dest in ((REAL, real), (TWIN, twins), (ITEM, items)):
                at = np.flatnonzero(p.source == kind)
                if not len(at) or dest is None:
                    continue
                if p.copies:
                    continue  # compared below, once every original is in place
                dest[p.index[at]] = a[at]
                if kind == REAL:
                    seen_real[p.index[at]] = True
        if not seen_real.all():
            raise ValueError("a row of the split was in no pass")
        for a, p in zip(answers, self.passes, strict=True):
            if p.copies:
                for row, (kind, idx) in enumerate(zip(p.source, p.index, strict=True)):
                    original = real if kind == REAL else twins
                    assert original is not None
                    copies.append((int(kind), int(idx), original[idx], a[row]))
        return Assembled(real, items, twins, copies)


@dataclass
class Assembled:
    real: np.ndarray
    items: np.ndarray
    twins: np.ndarray | None
    copies: list[tuple[int, int, np.ndarray, np.ndarray]]


def mixed(split: str, n_real: int, items: dict[str, np.ndarray], rng: np.random.Generator) -> Layout:
    """One pass: the split's rows and the canary items' rows, in a secret order."""
    n_items = len(next(iter(items.values())))
    source = np.concatenate([np.full(n_real, REAL), np.full(n_items, ITEM)])
    index = np.concatenate([np.arange(n_real), np.arange(n_items)])
    order = rng.permutation(len(source))
    return Layout(split, n_real, [Pass(source[order], index[order])], items=items, n_items=n_items)


def sequence(split: str, x: np.ndarray, spans: list[tuple[int, int, int]], foreign: np.ndarray,
             rng: np.random.Generator) -> Layout:
    """T1's passes: ``x`` [W, L] the split's windows, ``spans`` each window's (start in the split,
    first counted position, length), ``foreign`` [F, L] windows of other text (the train split)."""
    w, length = x.shape
    cuts = np.asarray(rng.integers(1, length, size=w))  # positions before the cut are compared; cut - 1 is the telling one
    rows = np.asarray(rng.integers(0, len(foreign), size=w))
    twin_inputs = x.copy()
    for k in range(w):
        twin_inputs[k, cuts[k]:] = foreign[rows[k], cuts[k]:]
        if twin_inputs[k, cuts[k]] == x[k, cuts[k]]:  # the first changed character must change
            twin_inputs[k, cuts[k]] = (int(x[k, cuts[k]]) + 1 + int(rng.integers(0, 60))) % max(2, int(x.max()) + 1)
    twins = Twins(twin_inputs, cuts)
    home = np.arange(w) % HOME_PASSES
    twin_home = (home + 1) % HOME_PASSES
    home, twin_home = _untangle(home, twin_home, spans, cuts)
    passes = []
    for q in range(HOME_PASSES):
        source = np.concatenate([np.full((home == q).sum(), REAL), np.full((twin_home == q).sum(), TWIN)])
        index = np.concatenate([np.flatnonzero(home == q), np.flatnonzero(twin_home == q)])
        order = rng.permutation(len(source))
        passes.append(Pass(source[order], index[order]))
    copies = _copies(home, twin_home, spans, cuts, target=max(len(p) for p in passes))
    order = rng.permutation(len(copies))
    passes.append(Pass(np.array([s for s, _ in copies])[order], np.array([i for _, i in copies])[order], copies=True))
    return Layout(split, w, passes, twins=twins, spans=spans)


# ------------------------------------------------------------------------------ the rules
def _inputs_span(spans, cuts, kind: int, k: int) -> tuple[int, int]:
    """The characters of the split a row's inputs hold: [start, end)."""
    start, _, length = spans[k]
    return (start, start + length) if kind == REAL else (start, start + int(cuts[k]))


def _targets_span(spans, k: int) -> tuple[int, int]:
    """The characters of the split a real window's counted predictions are judged against."""
    start, first, length = spans[k]
    return start + first + 1, start + length + 1


def _clash(rows: list[tuple[int, int]], spans, cuts) -> bool:
    """Whether a set of rows breaks a rule: a window beside its own twin, or a real window beside
    another row whose inputs hold one of its targets."""
    reals = {k for kind, k in rows if kind == REAL}
    if any(kind == TWIN and k in reals for kind, k in rows):
        return True
    for r in reals:
        lo, hi = _targets_span(spans, r)
        for kind, k in rows:
            if kind == REAL and k == r:
                continue
            a, b = _inputs_span(spans, cuts, kind, k)
            if a < hi and lo < b:
                return True
    return False


def _pass_rows(home, twin_home, q) -> list[tuple[int, int]]:
    return [(REAL, int(k)) for k in np.flatnonzero(home == q)] + [(TWIN, int(k)) for k in np.flatnonzero(twin_home == q)]


def _neighbours(spans, cuts, k: int) -> set[int]:
    """The windows whose rows can clash with window k's (those whose spans meet or touch k's)."""
    a, b = spans[k][0], spans[k][0] + spans[k][2] + 1
    return {j for j, (s, _, n) in enumerate(spans) if s < b and a < s + n + 1}


def _untangle(home, twin_home, spans, cuts):
    """Move the rows that break a rule (the final, overlapping window of T1's val) to a pass where
    none is broken; every other window keeps its place in the round robin."""
    home, twin_home = home.copy(), twin_home.copy()
    for k in range(len(home)):
        near = _neighbours(spans, cuts, k)

        def ok(h, t, k=k, near=near) -> bool:
            for q in range(HOME_PASSES):
                rows = [(kind, j) for kind, j in _pass_rows(h, t, q) if j in near]
                if _clash(rows, spans, cuts):
                    return False
            return True

        if ok(home, twin_home):
            continue
        placed = False
        for a in range(HOME_PASSES):
            for b in range(HOME_PASSES):
                if a == b:
                    continue
                h, t = home.copy(), twin_home.copy()
                h[k], t[k] = a, b
                if ok(h, t):
                    home, twin_home, placed = h, t, True
                    break
            if placed:
                break
        if not placed:
            raise ValueError(f"window {k} cannot be placed without breaking a rule")
    return home, twin_home


def _copies(home, twin_home, spans, cuts, target: int) -> list[tuple[int, int]]:
    """Rows for the copies' pass: real windows and twins taken in turn from the passes, every rule
    kept within the pass, as many as the largest pass holds."""
    chosen: list[tuple[int, int]] = []
    candidates = [(REAL, int(k)) for k in np.flatnonzero(home == 0)] + [(TWIN, int(k)) for k in np.flatnonzero(twin_home == 0)]
    candidates.sort(key=lambda row: row[1])
    for row in candidates:
        near = _neighbours(spans, cuts, row[1])
        trial = [r for r in chosen if r[1] in near] + [row]
        if not _clash(trial, spans, cuts):
            chosen.append(row)
        if len(chosen) >= target:
            break
    return chosen
