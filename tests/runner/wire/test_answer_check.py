"""The scorer's answer is checked before a byte of it is used (runner/wire/answer_check.py, issue 28);
the runner's reading of a snapshot's code from outside (runner/integrity/code_scan.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from runner.integrity import code_scan
from runner.wire import answer_check
from runner.wire.answer_check import InvalidAnswer, npy_array, payload_size, read_header


def npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def forged_header(descr: object, shape: tuple, data: bytes = b"") -> bytes:
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


def test_an_honest_part_is_a_read_only_view_of_the_bytes():
    arr = npy_array(npy(np.arange(6, dtype=np.int64).reshape(2, 3)))
    assert arr.tolist() == [[0, 1, 2], [3, 4, 5]] and not arr.flags.writeable
    assert npy_array(npy(np.zeros(0, dtype=np.float32))).shape == (0,)


@pytest.mark.parametrize(("blob", "says"), [
    (b"", "not an .npy"),
    (b"garbage", "not an .npy"),
    (forged_header("<f8", (2**43,)), "claims 8796093022208"),  # was "Unable to allocate 64.0 TiB"
    (forged_header("|O", (1,), b"\0" * 8), "object"),
    (forged_header([('a', '<f8')], (1,), b"\0" * 8), "structured"),
    (forged_header("<U3", (1,), b"\0" * 12), "not a number type"),
    (forged_header("<c16", (1,), b"\0" * 16), "not a number type"),
    (forged_header("<f8", (-1,)), "shape"),
    (forged_header("<f8", (1,) * 9, b"\0" * 8), "shape"),
    (forged_header("<i8", (2,), b"\0" * 8), "carries 8 bytes"),
    (npy(np.zeros(3))[:-1], "carries 23 bytes"),
])
def test_a_malformed_part_is_refused_before_anything_is_allocated(blob, says):
    with pytest.raises(InvalidAnswer, match=says):
        npy_array(blob)


@pytest.mark.parametrize(("message", "says"), [
    ([], "not a JSON object"),
    ({"ok": "yes"}, "ok is"),
    ({"ok": True, "parts": "val"}, "not a list"),
    ({"ok": True, "parts": [{"bytes": 8}]}, "nothing else"),
    ({"ok": True, "parts": [{"split": "val", "bytes": "8"}]}, "not a byte count"),
    ({"ok": True, "parts": [{"split": "val", "bytes": True}]}, "not a byte count"),
    ({"ok": True, "parts": [{"split": "val", "bytes": -1}]}, "not a byte count"),
    ({"ok": True, "parts": [{"split": "test", "bytes": 8}]}, "not asked for"),
    ({"ok": True, "parts": [{"split": "val", "bytes": 4}, {"split": "val", "bytes": 4}]}, "two parts"),
    ({"ok": True, "parts": []}, "no part for val"),
    ({"ok": True, "parts": [{"split": "val", "bytes": 7}]}, "add up to 7"),
    ({"ok": True, "parts": [{"split": "val", "bytes": 8, "x": 1}]}, "nothing else"),
    ({"ok": True, "flags": "x", "parts": [{"split": "val", "bytes": 8}]}, "flags"),
    ({"ok": False, "invalid": "the answer announces 9 bytes"}, "malformed"),
])
def test_a_malformed_header_is_refused(message, says):
    with pytest.raises(InvalidAnswer, match=says):
        read_header(message, ["val"], 8)


def test_the_childs_flags_are_labelled_self_reported_and_the_workers_kept():
    h = read_header({"ok": True, "parts": [{"split": "val", "bytes": 8}], "flags": ["changed prepare: judge\x1b[2J"],
                     "observed": ["wrote to stdout"]}, ["val"], 8)
    assert h.self_reported == ("changed prepare: judge [2J",) and h.observed == ("wrote to stdout",)
    h = read_header({"ok": False, "error": None}, ["val"], 0)
    assert not h.ok and h.error == "unknown error"


def test_the_announced_size_is_bounded():
    assert payload_size({"bytes": 12}) == 12
    for bad in ({"bytes": "12"}, {"bytes": -1}, {"bytes": 5 << 30}, {"bytes": 1.5}, "x"):
        with pytest.raises(InvalidAnswer):
            payload_size(bad)


def test_the_snapshot_code_is_read_for_replaced_evaluation_functions(tmp_path):
    from runner.integrity.code_scan import EVALUATION

    src = """
import prepare as p, onegc_kit, sys
p.judge = lambda *a: 1.0
setattr(onegc_kit, "check_predictions", None)
vars(p)["evaluate"] = None
sys.modules["prepare"].predict = None
onegc_kit.__dict__["load_model"] = None
del p.inputs
p.EVAL_BATCH = 4
other.judge = 1
"""
    assert code_scan.replaced(src, EVALUATION) == {"prepare": {"judge", "evaluate", "predict", "inputs"},
                                                   "onegc_kit": {"check_predictions", "load_model"}}
    (tmp_path / "helpers.py").write_text(src)
    (tmp_path / "run.py").write_text("import broken\nfrom helpers import x\n")
    (tmp_path / "broken.py").write_text("def (")
    (tmp_path / "other.py").write_text("import prepare\nprepare.judge = None\n")  # not this checkpoint's code
    def found(script):
        return [(v.check, v.strength, v.evidence) for v in code_scan.verdicts(tmp_path, script)]

    assert found("run.py") == [
        ("evaluator_replaced", "disqualifies", "the code replaces prepare: evaluate, inputs, judge, predict"),
        ("evaluator_replaced", "disqualifies", "the code replaces onegc_kit: check_predictions, load_model"),
        ("code_unscanned", "look", "broken.py cannot be read or parsed (SyntaxError)")]
    assert found("../run.py") == [] and found(None) == []
    assert found("other.py") == [("evaluator_replaced", "disqualifies", "the code replaces prepare: judge")]
    assert answer_check.text("a\x1b]0;x\x07b") == "a ]0;x b"


def test_any_exception_while_judging_is_that_checkpoints_error_with_the_trusted_flag(monkeypatch):
    """A judge that raises something other than the kit's refusal (here a RuntimeError) fails only
    that split's score, flagged invalid_answer; the kit's refusal (NaN, a wrong shape) is the
    checkpoint's own error without the flag; the child's flags stay labelled."""
    import sys
    from types import SimpleNamespace

    from runner.scoring.scorer import SealedScorer
    from tasks import onegc_kit

    monkeypatch.setitem(sys.modules, "onegc_kit", onegc_kit)

    def judge(pred, split):
        if split == "val":
            onegc_kit.check_predictions(pred, (2,), "f", "two scores")
            return 0.5, 2
        raise RuntimeError("boom")

    scorer = SealedScorer(SimpleNamespace(judge=SimpleNamespace(judge=judge)))  # type: ignore[arg-type]
    blob = npy(np.array([1.0, np.nan]))
    header = read_header({"ok": True, "parts": [{"split": "val", "bytes": len(blob)}, {"split": "test", "bytes": len(blob)}],
                          "flags": ["wrote a file"]}, ["val", "test"], 2 * len(blob))
    out = scorer._judge_parts(header, blob + blob, ["val", "test"])
    assert out["val"].value is None and "NaN or inf" in out["val"].error
    assert [(v.check, v.strength, v.evidence) for v in out["val"].verdicts] == [("child_report", "note", "wrote a file")]
    assert out["test"].error == "predictions unusable: RuntimeError: boom"
    assert [(v.check, v.strength) for v in out["test"].verdicts] == [("invalid_answer", "note"), ("child_report", "note")]
