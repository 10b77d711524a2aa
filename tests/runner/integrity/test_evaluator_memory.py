"""The replaced-evaluator check by behaviour (issue 46 part 5): a trusted process reads a forked
child's evaluation functions from outside (runner/integrity/evaluator_memory.py), and the runner
turns what it saw into verdicts by strength (runner/integrity/evaluator_check.py). Real forks,
real reads of /proc/<pid>/mem; the scorer's own use is tests/integrity/test_sealed_scoring.py."""

from __future__ import annotations

import os
import signal
import sys
import time
import types

import pytest

from runner.integrity import evaluator_check, evaluator_memory
from runner.wire import answer_check

TASK = """
def judge(predictions, split, strict=True):
    return {"value": 0.5, "n": 1}
def predict(model, inputs, device):
    return [0]
def evaluate(model, split, device):
    return judge(predict(model, None, device), split)
def inputs(split):
    return {}
def load_split(split):
    return None
"""
KIT = "def check_predictions(p, *a):\n    return p\ndef load_model(*a):\n    return None\n"


@pytest.fixture
def modules(monkeypatch):
    task, kit = types.ModuleType("prepare"), types.ModuleType("onegc_kit")
    exec(TASK, vars(task))  # noqa: S102 - the test's own stand-ins for the pristine modules
    exec(KIT, vars(kit))  # noqa: S102
    monkeypatch.setitem(sys.modules, "prepare", task)
    monkeypatch.setitem(sys.modules, "onegc_kit", kit)
    return task, kit


def in_child(change) -> int:
    """A forked child that runs ``change()`` then waits to be read (it ends when killed)."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            change()
            os.write(ready_w, b"x")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(ready_w)
    assert os.read(ready_r, 1) == b"x"
    os.close(ready_r)
    return pid


def read_child(change, p) -> evaluator_memory.Finding:
    pid = in_child(change)
    try:
        return evaluator_memory.stop_and_look(pid, p)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_the_layout_reads_this_pythons_own_objects_as_pristine(modules):
    task, kit = modules
    p = evaluator_memory.checked({"prepare": task, "onegc_kit": kit})
    assert p.disabled is None
    assert evaluator_memory.look(evaluator_memory.own_memory, p) == evaluator_memory.Finding()


@pytest.mark.slow  # forks
def test_every_spelling_that_leaves_a_replacement_standing_is_seen_from_outside(modules):
    task, kit = modules
    p = evaluator_memory.checked({"prepare": task, "onegc_kit": kit})
    fake = lambda *a, **k: {"value": 1.0, "n": 1}  # noqa: E731

    def patch(m):
        m.judge = fake

    class Module(types.ModuleType):
        pass

    spellings = {
        "alias": lambda: setattr(task, "judge", fake),
        "joined setattr": lambda: setattr(sys.modules.get("pre" + "pare"), "ju" + "dge", fake),
        "parameter": lambda: patch(task),
        "vars update": lambda: vars(task).update(judge=fake),
        "globals": lambda: task.predict.__globals__.__setitem__("judge", fake),
        "deleted": lambda: delattr(task, "judge"),
        "its code": lambda: setattr(task.judge, "__code__", fake.__code__),
        "its defaults": lambda: setattr(task.judge, "__defaults__", (False,)),
        "the kit": lambda: setattr(kit, "check_predictions", fake),
        "the module's class": lambda: setattr(task, "__class__", Module),
        "sys.modules": lambda: sys.modules.__setitem__("prepare", types.ModuleType("prepare")),
        "a new key string": lambda: (delattr(task, "judge"), vars(task).__setitem__("".join(["ju", "dge"]), fake)),
    }
    seen = {name: read_child(change, p).replaced for name, change in spellings.items()}
    assert seen == {
        "alias": ["prepare.judge"], "joined setattr": ["prepare.judge"], "parameter": ["prepare.judge"],
        "vars update": ["prepare.judge"], "globals": ["prepare.judge"], "deleted": ["prepare.judge (deleted)"],
        "its code": ["prepare.judge.__code__"], "its defaults": ["prepare.judge.__code__"],
        "the kit": ["onegc_kit.check_predictions"], "the module's class": ["prepare.__class__"],
        "sys.modules": ["sys.modules['prepare']"], "a new key string": ["prepare.judge"],
    }
    assert read_child(lambda: setattr(task, "EVAL_BATCH", 4), p).replaced == []  # not an evaluation function


@pytest.mark.slow  # forks
def test_a_replacement_undone_before_the_look_is_not_seen_and_a_child_gone_is_unchecked(modules):
    task, kit = modules
    p = evaluator_memory.checked({"prepare": task, "onegc_kit": kit})
    pristine = task.judge

    def replace_and_restore():
        task.judge = lambda *a: 1.0
        task.judge = pristine

    assert read_child(replace_and_restore, p) == evaluator_memory.Finding()  # the stated blind spot
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a child that leaves at once
        os._exit(0)
    os.waitpid(pid, 0)
    gone = evaluator_memory.stop_and_look(pid, p)
    assert gone.unchecked and gone.by_child and "ended before" in gone.unchecked


def test_a_layout_that_does_not_read_back_switches_the_check_off_and_says_so(modules):
    task, kit = modules
    p = evaluator_memory.pristine({"prepare": task, "onegc_kit": kit})
    wrong = evaluator_memory.Layout(ma_keys=24)
    found = evaluator_memory.look(evaluator_memory.own_memory, p, wrong)
    assert found.unchecked or found.replaced  # never a silent pass on a layout it cannot read
    off = evaluator_memory.Pristine(p.modules, p.module_types, p.dicts, p.values, p.keys, p.parts, p.sys_modules,
                                    p.str_type, "the layout of pypy 3.10 is not read")
    assert evaluator_memory.look(evaluator_memory.own_memory, off).record() == {
        "unchecked": "the layout of pypy 3.10 is not read", "by": "harness"}


def test_the_look_becomes_verdicts_by_strength_and_says_what_no_check_sees():
    (struck,) = evaluator_check.verdicts({"replaced": ["prepare.judge"]})
    assert struck.check == "evaluator_replaced" and struck.strength == "disqualifies"
    assert "prepare.judge" in struck.evidence and "undone before the child answered" in struck.evidence
    assert struck.power and struck.false_alarm == 0.0  # its measured figures, by name
    (child,) = evaluator_check.verdicts({"unchecked": "the child ended before the harness could look at it", "by": "child"})
    (harness,) = evaluator_check.verdicts({"unchecked": "no right to read", "by": "harness"})
    assert (child.check, child.strength, harness.strength) == ("evaluator_unchecked", "look", "note")
    assert evaluator_check.verdicts({"replaced": []}) == () and evaluator_check.verdicts(None) == ()


@pytest.mark.parametrize("looked", [["prepare.judge"], {"replaced": "prepare.judge"}, {"replaced": [1]},
                                    {"unchecked": "x", "by": "agent"}, {"replaced": [], "extra": 1}])
def test_a_malformed_look_is_an_invalid_answer(looked):
    with pytest.raises(answer_check.InvalidAnswer):
        answer_check.read_header({"ok": False, "error": "x", "looked": looked}, ["val"], 0)


def test_a_look_reads_back_from_the_answer():
    header = answer_check.read_header({"ok": False, "error": "x", "looked": {"replaced": ["prepare.judge"]}}, ["val"], 0)
    assert header.looked == {"replaced": ["prepare.judge"]}
