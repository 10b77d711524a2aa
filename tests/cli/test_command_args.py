"""``--agent command`` passes its arguments through untouched (issue 28): only an argument that
names an existing file is made absolute; one that cannot be a path (ENAMETOOLONG) is no error."""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from runner.launch.start import absolute_if_file
from tests.helpers import wait_for


def inline_program(size: int) -> str:
    """A one-line ``python -c`` program of ``size`` bytes with slashes, dots and a 300-character
    run between two slashes (each alone made ``onegc run`` refuse it as "file name too long")."""
    head = "import os, pathlib; pathlib.Path('inline.txt').write_text(str(1/2) + ' a/b.c ' + os.getcwd())"
    comment = "  # " + "x" * 300 + "/" + "y.z/" * ((size - len(head) - 310) // 4)
    code = head + comment
    return code + "q" * (size - len(code))


def test_a_path_that_cannot_exist_is_passed_through_untouched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.py").write_text("")
    assert absolute_if_file("run.py") == str(tmp_path / "run.py")
    code = inline_program(5 << 10)
    assert absolute_if_file(code) == code  # ENAMETOOLONG inside: passed through
    assert absolute_if_file("a\0b/c.py") == "a\0b/c.py"
    assert absolute_if_file("./missing.py") == "./missing.py"


@pytest.mark.slow
def test_a_5_kib_inline_python_agent_with_slashes_and_dots_runs(home, tmp_path, monkeypatch):
    code = inline_program(5 << 10)
    assert len(code) == 5 << 10 and max(len(p) for p in code.split("/")) > 255
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["run", "t0", "--agent", "command", "--detach", "--budget", "20s", "--",
                                  sys.executable, "-c", code], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    (folder,) = (home / "runs").iterdir()
    assert json.loads((folder / "session.json").read_text())["command"] == [sys.executable, "-c", code]
    wait_for(lambda: (folder / "result.json").exists(), 120, "the session's result")
    written = folder / "workspace" / "inline.txt"
    assert written.read_text().startswith("0.5 a/b.c "), os.listdir(folder / "workspace")
