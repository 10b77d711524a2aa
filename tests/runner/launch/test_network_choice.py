"""The default network policies, and what happens where no network namespace can be made."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from runner.wire.agents import default_network
from runner.wire.session_config import SessionConfig


def test_no_offline_agent_gets_the_hosts_network_by_default():
    assert default_network("command") == default_network("scripted") == "none"
    assert {default_network(a) for a in ("claude-code", "codex", "opencode")} == {"api-only"}
    # a session.json without a policy gets its agent's default; an explicit one stays
    assert SessionConfig(session_id="s", task="t0", agent="command", budget_s=60).network == "none"
    assert SessionConfig(session_id="s", task="t0", agent="codex", budget_s=60).network == "api-only"
    assert SessionConfig(session_id="s", task="t0", agent="command", budget_s=60, network="open").network == "open"


@pytest.fixture
def no_namespaces(monkeypatch):
    import runner.sandbox.network

    monkeypatch.setattr(runner.sandbox.network, "namespaces_available", lambda: (False, "unshare: operation not permitted"))


@pytest.mark.slow  # the sandbox check before it probes bwrap
def test_run_refuses_in_one_line_where_no_namespace_can_be_made(home, monkeypatch, no_namespaces):
    from onegc_tui.cli.main import main

    monkeypatch.setenv("ONEGC_HOME", str(home))
    r = CliRunner().invoke(main, ["run", "t0", "--agent", "command", "--detach", "--", "python", "x.py"])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert line.startswith("error: network none needs a network namespace") and "--network open" in line
    assert "\n" not in line
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())  # no session made


def test_the_demo_falls_back_to_open_and_says_why(no_namespaces):
    from runner.launch.network_choice import demo_network

    assert demo_network() == ("open", "unshare: operation not permitted")
