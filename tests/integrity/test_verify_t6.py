"""A short real T6 session (its baseline train.py as the agent, ETTh1 from the offline copy beside the
checkout) verifies as reproduced: the val-best selection, its test re-evaluations, the causality
probe and the val-test gap check re-derived exactly on the CPU."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from tests.helpers import REPO, wait_for

pytestmark = pytest.mark.slow
ETTH1 = Path(os.environ.get("ONEGC_TEST_SHARED_DATA") or REPO.parent / "shared" / "data") / "etth1"


def test_a_short_t6_session_verifies_as_reproduced(tmp_path, monkeypatch):
    if not ETTH1.is_dir():
        pytest.skip(f"ETTh1's offline copy not found at {ETTH1}")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ONEGC_HOME", str(home))
    runner = CliRunner()
    r = runner.invoke(main, ["prepare", "t6", "--from", str(ETTH1)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["baseline", "t6", "--budget", "3m"])
    assert r.exit_code == 0, r.output
    session = home / "runs" / "baseline--train--t6--r1"
    wait_for(lambda: (session / "seal.json").exists(), 600, "the T6 session's seal")
    r = runner.invoke(main, ["verify", session.name])
    assert r.exit_code == 0, r.output
    assert f"{session.name}: reproduced (" in r.stdout and "record sealed" in r.stdout, r.stdout
    shutil.rmtree(home / "data")  # its task not prepared here: a session verify cannot score again
    r = runner.invoke(main, ["verify", session.name])
    assert r.exit_code == 9 and "data for t6 not prepared here: run 'onegc prepare t6'" in r.stdout, r.output
