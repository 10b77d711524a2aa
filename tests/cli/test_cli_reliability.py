"""The command line keeps its word (issue 13): pause and resume wait for the runner's answer,
--plain prints every event whoever ingests, one budget unit, and checks before starting."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.store.ingest import Ingester
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tests.helpers import start_session, wait_event, write_agent

CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY",
               "OPENROUTER_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def run(*args):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def no_launch(monkeypatch):
    """Sessions are created as `onegc run` creates them, and their runners are not started."""
    import runner.launch.spawn

    started = []
    monkeypatch.setattr(runner.launch.spawn, "spawn_local", lambda paths, env=None: started.append(paths) or 0)
    monkeypatch.setattr("onegc_tui.cli.main._watch", lambda home, sessions, plain, task: 0)  # followed: all scored
    return started


def configs(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((home / "runs").glob("*/session.json"))]


# ---------------------------------------------------------------------------- pause / resume
@pytest.mark.slow
def test_pause_and_resume_wait_for_the_runner_and_a_refusal_exits_2(home, tmp_path):
    """Before: exit 0 and "pause requested" while the event said accepted:false, already paused."""
    from runner.launch.abort import abort_session

    cmd = write_agent(tmp_path, "idle.py", "import time\nprint('thinking', flush=True)\ntime.sleep(300)\n")
    paths = start_session(home, "ctl", agent="command", command=cmd, budget_s=300)
    wait_event(paths, "agent_started", timeout=60)
    try:
        r = run("pause", "ctl")
        assert r.exit_code == 0 and r.stdout.startswith("ctl: paused"), r.output
        r = run("pause", "ctl")
        assert r.exit_code == 2 and r.stderr.strip() == "error: the runner of ctl refused to pause it: already paused"
        r = run("resume", "ctl")
        assert r.exit_code == 0 and r.stdout.startswith("ctl: resumed"), r.output
        r = run("resume", "ctl")
        assert r.exit_code == 2 and "refused to resume it: not paused" in r.stderr
    finally:
        abort_session(paths, wait_s=60)
    r = run("pause", "ctl")
    assert r.exit_code == 2 and "has already ended" in r.stderr


def test_pause_of_a_session_that_has_not_started_says_so(home):
    create_session(SessionConfig(session_id="waiting", task="t0", agent="scripted", budget_s=60), home)
    r = run("pause", "waiting")
    assert r.exit_code == 2 and "has not started yet" in r.stderr


# ---------------------------------------------------------------------------- --plain
def finished_session(home: Path, sid: str = "p1") -> None:
    paths = create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=60), home)
    w = EventWriter(paths.events, sid)
    w.emit("session_started", task="t0_demo", agent="scripted", budget_s=60, grace_s=30)
    w.emit("checkpoint_found", name="a-1", path="p", snapshot="s", budget_elapsed_s=3)
    w.emit("checkpoint_scored", name="a-1", value=0.61, metric="val_acc", split="val", budget_elapsed_s=3)
    w.emit("warning", code="network_blocked", message="blocked example.com:443")
    w.emit("session_ended", reason="completed", detail="the agent finished", active_s=9, wall_s=9, paused_s=0,
           score=0.61, best_checkpoint="a-1")
    w.close()


def test_plain_prints_every_event_even_when_another_process_ingested_them_first(home, store):
    """Before: it printed only what its own ingester inserted — nothing, once a monitor had."""
    from onegc_tui.cli.plain import follow

    finished_session(home)
    Ingester(home, store).ingest_all()  # a monitor got there first
    out = io.StringIO()
    ends = follow(home, ["p1"], out=out)
    text = out.getvalue()
    for line in ("p1: started: t0_demo with scripted", "p1: checkpoint a-1: live val accuracy 0.6100",
                 "p1: WARNING network_blocked: blocked example.com:443", "p1: ended: completed, official val accuracy 0.6100"):
        assert line in text, text
    assert (ends["p1"].reason, ends["p1"].score) == ("completed", 0.61)


def test_plain_says_how_many_warnings_a_coalesced_one_stands_for():
    from onegc_tui.views.transcript_view import event_words
    from runner.wire.events import EVENT_TYPES

    warning = EVENT_TYPES["warning"](session_id="s", seq=1, ts=0.0, code="network_blocked", count=1499,
                                     message="1499 more network_blocked warnings in 2 s; the latest: blocked h9.example:53")
    assert event_words(warning).line.startswith("WARNING network_blocked (×1499): 1499 more")


def test_plain_follows_on_when_the_store_cannot_be_written(home):
    from onegc_tui.cli.plain import follow

    finished_session(home)
    (home / "onegc.db").write_bytes(b"not a database" * 100)
    out = io.StringIO()
    ends = follow(home, ["p1"], out=out)
    assert ends["p1"].reason == "completed"
    warnings = [line for line in out.getvalue().splitlines() if line.startswith("warning: the store is not updated")]
    assert len(warnings) == 1 and "onegc reindex" in warnings[0]


# ---------------------------------------------------------------------------- budgets
def test_one_budget_unit_minutes_and_90s_2m_1h():
    from runner.duration import BadDuration, duration_s

    assert [duration_s(v) for v in ("90s", "2m", "1h", "1.5", " 45 ", "2 min", 2, 0.5)] == [90, 120, 3600, 90, 2700, 120,
                                                                                           120, 30]
    for bad in ("0", "-1", "soon", "1d", "nan", 0, -3, True):
        with pytest.raises(BadDuration, match="like 90s, 2m or 1h"):
            duration_s(bad)


@pytest.mark.slow
def test_run_and_demo_budgets_are_minutes_or_a_unit(home, no_launch):
    """Before: `onegc demo --budget 2` meant 2 seconds, `onegc run --budget 2` 2 minutes."""
    assert run("run", "t0", "--agent", "scripted", "--budget", "90s", "--detach").exit_code == 0
    assert run("run", "t0", "--agent", "scripted", "--budget", "2", "--detach").exit_code == 0
    assert run("demo", "--budget", "2").exit_code == 0
    assert run("demo").exit_code == 0
    assert sorted(c["budget_s"] for c in configs(home)) == [90, 120, 120, 120]


def test_a_study_budget_takes_the_same_forms(tmp_path):
    from runner.launch.study import StudyError, load_study

    path = tmp_path / "s.toml"
    path.write_text('name = "s"\ntasks = ["t0"]\n[[agents]]\nadapter = "scripted"\n[budget]\nminutes = "90s"\n'
                    'tasks = {t0 = "1h"}\n')
    study = load_study(path)
    assert (study.budget.minutes, study.budget.tasks) == (1.5, {"t0": 60.0})
    path.write_text('name = "s"\ntasks = ["t0"]\n[[agents]]\nadapter = "scripted"\n[budget]\nminutes = "soon"\n')
    with pytest.raises(StudyError, match="budget.minutes.*like 90s, 2m or 1h"):
        load_study(path)


# ---------------------------------------------------------------------------- preflight
def fake_cli(prefix: Path, name: str) -> None:
    exe = prefix / "node_modules" / ".bin" / name
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text("#!/bin/sh\necho '9.9.9 (fake)'\n")
    exe.chmod(0o755)


def isolate_agents(monkeypatch, tmp_path: Path) -> Path:
    """No agent CLI anywhere but in the returned prefix, and no credentials."""
    prefix = tmp_path / "agents"
    prefix.mkdir()
    monkeypatch.setattr("runner.agents.locate.prefixes", lambda: [prefix])
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    return prefix


def test_run_checks_the_cli_credentials_and_model_before_it_starts_anything(home, tmp_path, monkeypatch, no_launch):
    """Before: "started" and exit 0, then `nsenter: failed to execute opencode` 2 s later."""
    prefix = isolate_agents(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    r = run("run", "t0", "--agent", "opencode", "--model", "openrouter/moonshotai/kimi-k2", "--detach")
    assert r.exit_code == 2 and r.stderr.strip() == (
        "error: opencode: 'opencode' not found: run 'make agents' (project-local, pinned versions) "
        "or 'npm install -g opencode-ai'")
    r = run("run", "t0", "--agent", "opencode", "--detach")
    assert r.exit_code == 2 and "opencode needs --model PROVIDER/MODEL" in r.stderr
    fake_cli(prefix, "claude")
    r = run("run", "t0", "--agent", "claude-code", "--detach")
    assert r.exit_code == 2 and "claude-code: no credentials: set ANTHROPIC_API_KEY" in r.stderr
    assert not no_launch
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())  # nothing was created


@pytest.mark.slow
def test_preflight_passes_an_agent_that_can_start(tmp_path, monkeypatch):
    from runner.agents.preflight import preflight

    prefix = isolate_agents(monkeypatch, tmp_path)
    fake_cli(prefix, "claude")
    preflight("claude-code", None, {"ANTHROPIC_API_KEY": "sk-test"})
    fake_cli(prefix, "opencode")
    preflight("opencode", "openrouter/moonshotai/kimi-k2", {"OPENROUTER_API_KEY": "sk-or"})
    preflight("scripted", None, {})
    preflight("command", None, {})
    assert os.environ.get("ANTHROPIC_API_KEY") is None  # the check reads what it is given
