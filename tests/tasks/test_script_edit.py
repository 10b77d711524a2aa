import pytest

from tasks.script_edit import MissingConstant, set_constants

SRC = 'import x\nLR = 3e-4  # learning rate\nEPOCHS: int = 5\nNAME = "gpt"\n\ndef f():\n    LR = 1\n'


def test_changes_top_level_constants_and_keeps_comments():
    out, changes = set_constants(SRC, {"LR": 0.01, "EPOCHS": 2, "NAME": "big"})
    assert "LR = 0.01  # learning rate\n" in out
    assert "EPOCHS: int = 2\n" in out and "NAME = 'big'" in out
    assert "    LR = 1\n" in out  # not top level: untouched
    assert changes[0] == "LR: 3e-4 -> 0.01"


def test_missing_constant_is_an_error():
    with pytest.raises(MissingConstant):
        set_constants(SRC, {"WIDTH": 3})
