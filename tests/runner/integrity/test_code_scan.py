"""What the code scan cannot read is "unscanned", never clean (runner/integrity/code_scan.py, INTEGRITY.md V6)."""

from __future__ import annotations

from runner.integrity import code_scan
from tests.helpers import REPO


def scan(tmp_path, source: str, **others: str) -> tuple[str, ...]:
    """The scan's verdicts as ``"unscanned: …"`` (code_unscanned, a look) and ``"code replaces …"``
    (evaluator_replaced, disqualifying)."""
    (tmp_path / "run.py").write_text(source)
    for name, text in others.items():
        (tmp_path / f"{name}.py").write_text(text)
    code_scan.verdicts.cache_clear()
    found = code_scan.verdicts(tmp_path, "run.py")
    as_text = {"code_unscanned": ("look", "unscanned: "), "evaluator_replaced": ("disqualifies", "")}
    assert all(v.strength == as_text[v.check][0] for v in found), found
    return tuple(as_text[v.check][1] + v.evidence.removeprefix("the ") for v in found)


def test_an_honest_script_is_clean(tmp_path):
    honest = """
import math, json, sys
import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F
import prepare
from helpers import block
try:
    import wandb  # optional: not installed here, guarded
except ImportError:
    wandb = None
"""
    kit = (REPO / "tasks" / "onegc_kit.py").read_text()  # the workspace's copies: the scorer uses the pristine ones
    prepare = (REPO / "tasks" / "t1_shakespeare" / "prepare.py").read_text()
    assert scan(tmp_path, honest, helpers="def block():\n    return 1\n", onegc_kit=kit, prepare=prepare) == ()


def test_a_judge_replacement_padded_past_the_size_limit_is_unscanned(tmp_path):
    padded = "import prepare\nprepare.judge = lambda *a: {'value': 0.0, 'n': 1}\n" + "#" * (code_scan.MAX_FILE_BYTES + 10)
    assert scan(tmp_path, padded) == ("unscanned: run.py is over the scan's 2 MiB limit",)


def test_a_replacement_through_importlib_with_a_constant_name_is_a_replacement(tmp_path):
    src = """
import importlib
p = importlib.import_module("prepare")
p.judge = lambda *a: 0.0
__import__("onegc_kit").check_predictions = lambda pred, *a: pred
"""
    assert scan(tmp_path, src) == ("code replaces prepare: judge", "code replaces onegc_kit: check_predictions")


def test_names_made_at_run_time_strings_run_as_code_and_unresolved_imports_are_unscanned(tmp_path):
    src = """
import importlib
name = "".join(["pre", "pare"])
importlib.import_module(name).judge = None
exec("import prepare; prepare.judge = None")
import not_a_module_anywhere
"""
    flags = scan(tmp_path, src)
    assert sorted(flags) == ["unscanned: run.py imports a module by a name made at run time (import_module)",
                             "unscanned: run.py imports what it cannot resolve (not_a_module_anywhere)",
                             "unscanned: run.py runs code from a string (exec)"]


def test_a_helper_module_is_scanned_too_and_named(tmp_path):
    flags = scan(tmp_path, "import helpers\n", helpers="import importlib\nimportlib.util.spec_from_file_location('x', 'y')\n")
    assert flags == ("unscanned: helpers.py loads a module from a file by hand (spec_from_file_location)",)
