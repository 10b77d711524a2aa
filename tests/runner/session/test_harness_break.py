"""Session.run's clean-up is an ExitStack (runner/session/main.py): when the harness itself breaks
half-way through the start, every part started so far is cleaned up, in order, and the session
still ends with its reason and its result.json."""

from __future__ import annotations

import json

import pytest

from runner.launch.spawn import create_session
from runner.session import main as session_main
from runner.wire.session_config import SessionConfig


@pytest.mark.slow  # the live scorer's worker starts before the agent would
def test_a_harness_error_while_starting_the_agent_cleans_up_and_still_ends_the_session(home, monkeypatch):
    paths = create_session(SessionConfig(session_id="broken", task="t0", agent="scripted", budget_s=60, sealed=False,
                                         network="open"), home)

    def broken(*args, **kwargs):
        raise RuntimeError("no agent today")

    monkeypatch.setattr(session_main, "start_agent", broken)
    session = session_main.Session(paths)
    assert session.run() == 0
    ended = [json.loads(line) for line in paths.events.read_text().splitlines()][-1]
    assert ended["type"] == "session_ended" and ended["reason"] == "harness_error"
    assert ended["detail"].startswith("RuntimeError: no agent today")
    result = json.loads(paths.result.read_text())
    assert result["end_reason"] == "harness_error" and result["failure"] == "no checkpoint was saved"
    assert not session.clock.running  # stopped by its own clean-up
    assert session.scoring.scorer is None  # the warm live scorer closed after the official phase
    assert session._done.is_set() and session.tree is None
