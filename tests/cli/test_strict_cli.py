"""The CLI refuses what it does not know (issue 37 item 3): an unknown option or a stray word is exit 2
with "did you mean"; only the words after ``--`` reach a command agent; a misspelt study key gets
"did you mean"; ``onegc run``'s exit code says how its sessions ended; every ``--format json`` prints
one JSON document."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from onegc_tui.cli.exit_codes import (
    EXIT_ABORTED,
    EXIT_HARNESS_ERROR,
    EXIT_NO_SCORE,
    EXIT_SCORED,
    EXIT_STILL_RUNNING,
    Outcome,
    exit_code,
)
from onegc_tui.cli.main import main
from runner.launch.study import StudyError, load_study
from tests.homes import build_home


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def no_session_started(home):
    return not (home / "runs").exists() or not any((home / "runs").iterdir())


@pytest.mark.parametrize(("argv", "said"), [
    (["run", "t0", "--agent", "scripted", "--budgt", "2m", "--detach"], "No such option '--budgt'. Did you mean '--budget'?"),
    (["run", "t0", "--agnt", "scripted", "--detach"], "Did you mean one of: '--agent'"),
    (["run", "t0", "--agent", "command", "--detach", "python", "x.py"],
     "unexpected word(s) 'python x.py': a command agent's command line goes after '--'"),
    (["run", "t0", "--agent", "scripted", "--detach", "--", "python", "x.py"],
     "only --agent command takes a command line after '--'"),
    (["prepare", "t0", "--frm", "/tmp"], "No such option '--frm'"),  # was passed on to prepare.py
])
def test_a_typo_or_a_stray_word_starts_nothing(home, argv, said):
    r = invoke(*argv)
    assert r.exit_code == 2, r.output
    assert said in r.output and r.output.startswith("error: ")
    assert no_session_started(home)


def test_only_the_words_after_dash_dash_reach_the_command_agent():
    from onegc_tui.cli.base import AFTER_DASH_DASH

    run_cmd = main.commands["run"]
    ctx = run_cmd.make_context("run", ["t0", "--agent", "command", "--budget", "1m", "--", "python", "a.py",
                                       "--budget", "x", "--", "y"])
    assert ctx.meta[AFTER_DASH_DASH] == ["python", "a.py", "--budget", "x", "--", "y"]
    assert ctx.params["budget_s"] == 60 and ctx.params["agent"] == "command"
    ctx = run_cmd.make_context("run", ["t0", "--agent", "scripted"])
    assert ctx.meta[AFTER_DASH_DASH] == []


def test_a_misspelt_study_key_says_what_was_meant(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text('name = "s"\ntasks = ["t0"]\n[[agents]]\nadapter = "scripted"\nmodle = "x"\n')
    with pytest.raises(StudyError, match=r"field 'agents.0.modle': unknown key 'modle' \(did you mean 'model'\?\)"):
        load_study(study)
    study.write_text('name = "s"\ntasks = ["t0"]\n[[agents]]\nadapter = "scripted"\n[budget]\nzzzz = 1\n')
    with pytest.raises(StudyError, match=r"unknown key 'zzzz' \(allowed here: minutes, grace_s"):
        load_study(study)
    study.write_text('name = "s"\ntasks = ["t0"]\nrepets = 2\n[[agents]]\nadapter = "scripted"\n')
    r = invoke("study", str(study), "--dry-run")
    assert r.exit_code == 2 and "unknown key 'repets' (did you mean 'repeats'?)" in r.output


def test_the_exit_code_says_how_the_sessions_ended():
    assert exit_code([Outcome("completed", 0.9)]) == EXIT_SCORED == 0
    assert exit_code([Outcome("budget_exhausted", 0.9), Outcome("agent_failed", 0.5)]) == EXIT_SCORED
    assert exit_code([Outcome("budget_exhausted", None)]) == EXIT_NO_SCORE == 3  # the paper's failed run
    assert exit_code([Outcome("aborted", 0.9), Outcome("completed", None)]) == EXIT_ABORTED == 4
    assert exit_code([Outcome("harness_error", None), Outcome("aborted", None)]) == EXIT_HARNESS_ERROR == 5
    assert exit_code([Outcome(None, None), Outcome("completed", 0.9)]) == EXIT_STILL_RUNNING == 6
    assert exit_code([]) == 0


@pytest.mark.slow
def test_run_plain_exits_non_zero_for_a_session_without_a_score(home):
    r = CliRunner().invoke(main, ["run", "t0", "--agent", "command", "--plain", "--budget", "20s", "--", "true"],
                           catch_exceptions=False)
    assert r.exit_code == EXIT_NO_SCORE, r.output
    assert "no valid score (N/A: a failed run)" in r.output


@pytest.mark.parametrize("extra", [[], ["--paired"], ["--at-budget", "1"], ["--paired", "--at-budget", "90s"]])
def test_history_json_is_one_document_whatever_is_added(home, extra):
    build_home(home, full=True)
    r = invoke("history", "--demo", "--format", "json", *extra)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # one document: json.loads refuses anything after it
    assert doc["studies"]
    assert ("paired" in doc) == ("--paired" in extra)
    if "--at-budget" in extra:
        assert doc["at_budget"]["cells"] and doc["at_budget"]["minutes"] in (1.0, 1.5)


def test_closing_the_monitor_says_how_each_session_ended_and_how_to_reattach(built_home, monkeypatch, capsys):
    """The demo's (and run's) exit line: the result where there is one, else how to watch and end
    the session that goes on; the exit code says which (issue 37 item 7)."""
    import onegc_tui.app.guard as guard
    from onegc_tui.cli import main as cli_main
    from runner.wire.paths import SessionPaths

    monkeypatch.setattr(guard, "run_monitor", lambda *args, **kwargs: None)  # the monitor opened and closed
    monkeypatch.setattr(cli_main.sys.stdout, "isatty", lambda: True)
    ended, paused = (SessionPaths(built_home / "runs" / sid) for sid in ("a-ended", "b-paused"))
    assert cli_main._watch(built_home, [ended], plain=False, task="t0_demo") == EXIT_SCORED
    assert cli_main._watch(built_home, [paused], plain=False, task="t0_demo") == EXIT_STILL_RUNNING
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"a-ended: completed, official val accuracy 0.9300 (run_1_epoch3-1) (result: {ended.result})"
    assert err[1] == ("b-paused: still running; session b-paused goes on: 'onegc monitor --session b-paused' watches it, "
                      "'onegc abort b-paused' ends it")
