"""The test tiers hold: tests/conftest.py fails a test whose body starts a process unless it is
marked slow, so `make test-fast` (-m "not slow") never starts one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.helpers import REPO

CASES = textwrap.dedent("""
    import subprocess, sys
    import pytest

    def test_unmarked_spawn():
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    @pytest.mark.slow
    def test_marked_spawn():
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    def test_no_spawn():
        assert True
""")


@pytest.mark.slow
def test_a_process_in_an_unmarked_test_fails_it(tmp_path):
    case = tmp_path / "test_case.py"
    case.write_text(CASES)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                          "-W", "ignore::pytest.PytestUnknownMarkWarning", str(case)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "1 failed, 2 passed" in out.stdout, out.stdout
    assert "test_unmarked_spawn started a process (subprocess.Popen) but is not marked slow" in out.stdout
