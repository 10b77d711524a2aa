"""Every documented error of ``onegc`` is one line on stderr and exit 2 — never a traceback
(issue 13, "Tracebacks instead of one line"). Each case runs through the command group's own
entry (``OnegcGroup.main``, where errors are caught once) in this process, which is fast; a few
run the real executable in a process of its own, with real pipes for stdin and stdout."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from tests.helpers import REPO

CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY",
               "OPENROUTER_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@dataclass
class Case:
    args: list[str]
    says: str  # a part of the one line
    home: Path | None = None


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def in_process(case: Case, home: Path, monkeypatch) -> Outcome:
    monkeypatch.setenv("ONEGC_HOME", str(case.home or home))
    r = CliRunner().invoke(main, case.args)  # an exception escaping main is caught here: exit 1, its traceback kept
    trace = "".join(__import__("traceback").format_exception(r.exception)) if r.exception and not isinstance(
        r.exception, SystemExit) else ""
    return Outcome(r.exit_code, r.stdout, r.stderr + trace)


def as_a_process(case: Case, home: Path) -> Outcome:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    env.update(PYTHONPATH=str(REPO), ONEGC_HOME=str(case.home or home))
    r = subprocess.run([sys.executable, "-m", "onegc_tui.cli", *case.args], capture_output=True, text=True,
                       env=env, cwd=REPO, stdin=subprocess.PIPE, timeout=120)
    return Outcome(r.returncode, r.stdout, r.stderr)


def check(cases: list[Case], outcomes: list[Outcome], home: Path) -> None:
    wrong = []
    for case, r in zip(cases, outcomes, strict=True):
        lines = r.stderr.strip().splitlines()
        ok = (r.code == 2 and "Traceback" not in r.stdout + r.stderr and len(lines) == 1
              and lines[0].startswith("error: ") and case.says in lines[0] and not r.stdout.strip())
        if not ok:
            wrong.append(f"onegc {' '.join(case.args)} (ONEGC_HOME={case.home or home}): exit {r.code}\n"
                         f"  stdout: {r.stdout[-400:]!r}\n  stderr: {r.stderr[-1500:]!r}")
    assert not wrong, f"{len(wrong)} of {len(cases)} error paths are not one line and exit 2:\n" + "\n".join(wrong)
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())  # nothing was started


def unwritable_home(tmp_path: Path, small_tmpfs) -> Path:
    """A folder this user cannot write: a read-only tmpfs as root (root ignores permissions),
    a folder without write permission otherwise."""
    if os.geteuid() == 0:
        return small_tmpfs("1m", "ro")
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.mark.slow
def test_every_documented_error_is_one_line_and_exit_2(home, tmp_path, small_tmpfs, monkeypatch):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "onegc.db").write_bytes(b"this is not an SQLite database, whatever its name says\n" * 100)
    newer = tmp_path / "newer"
    newer.mkdir()
    with sqlite3.connect(newer / "onegc.db") as conn:
        conn.execute("PRAGMA user_version = 999")
    locked = unwritable_home(tmp_path, small_tmpfs)
    bad_study = tmp_path / "bad.toml"
    bad_study.write_text('name = "s"\ntasks = ["t0"]\nrepeats = 0\n[[agents]]\nadapter = "scripted"\n')
    cases = [
        Case(["run", "t0", "--agent", "scripted", "--budget", "0", "--detach"], "--budget"),
        Case(["run", "t0", "--agent", "scripted", "--budget", "-1", "--detach"], "--budget"),
        Case(["run", "t0", "--agent", "scripted", "--budget", "soon", "--detach"], "like 90s, 2m or 1h"),
        Case(["demo", "--budget", "0", "--plain"], "--budget"),
        Case(["demo", "--budget", "-1", "--plain"], "--budget"),
        Case(["run", "t0", "--agent", "scripted", "--pace", "-1", "--detach"], "--pace"),
        Case(["sessions"], "is a file, not a folder", home=a_file),
        Case(["sessions"], f"is under {a_file}, which is a file", home=a_file / "home"),
        Case(["run", "t0", "--agent", "scripted", "--detach"], "is a file, not a folder", home=a_file),
        Case(["run", "t0", "--agent", "scripted", "--detach"], f"ONEGC_HOME={locked} is not writable", home=locked),
        Case(["reindex"], "'onegc tasks', 'sessions', 'history', 'study status', 'monitor', 'report' and 'export' only read it",
             home=locked),
        Case(["history"], f"ONEGC_HOME={locked / 'sub'}", home=locked / "sub"),
        Case(["sessions"], "not a database: move it aside and run 'onegc reindex'", home=corrupt),
        Case(["history"], "not a database", home=corrupt),
        Case(["sessions"], "newer than this onegc", home=newer),
        Case(["history", "--format", "csv"], "newer than this onegc", home=newer),
        Case(["monitor"], "needs a terminal"),
        Case(["run", "t0", "--agent", "opencode", "--detach"], "opencode needs --model PROVIDER/MODEL"),
        Case(["run", "t0", "--agent", "claude-code", "--detach"], "claude-code: no credentials: set ANTHROPIC_API_KEY"),
        Case(["run", "t0", "--agent", "codex", "--model", "gpt-5", "--detach"], "codex: no credentials"),
        Case(["run", "t9", "--agent", "scripted"], "unknown task 't9'"),
        Case(["run", "t0", "--agent", "nope", "--detach"], "unknown agent 'nope'"),
        Case(["run", "t0", "--agent", "command", "--detach"], "needs a command line"),
        Case(["run", "t0"], "Missing option '--agent'"),
        Case(["frob"], "No such command 'frob'"),
        Case(["pause", "missing"], "no session 'missing'"),
        Case(["history", "--format", "pdf"], "--format"),
        Case(["study", str(tmp_path / "none.toml")], "no such study file"),
        Case(["study", "status", str(bad_study)], "field 'repeats'"),
        Case(["prepare"], "name the tasks to prepare"),
        Case(["run", "t0", "--agent", "opencode", "--unsealed", "--detach"], "opencode needs --model"),
        Case(["abort", "missing"], "no session 'missing'"),
        Case(["disqualify", "missing", "--reason", "copied"], "no session 'missing'"),
        Case(["disqualify", "missing"], "give --reason TEXT to disqualify"),
        Case(["monitor", "--web", "--port", "0"], "--port"),
        Case(["history", "--no-paper"], "nothing to print"),
        Case(["disqualify", "x", "--reason", "r"], "is a file, not a folder", home=a_file),
    ]
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    check(cases, [in_process(c, home, monkeypatch) for c in cases], home)


@pytest.mark.slow
def test_the_onegc_executable_answers_in_one_line_too(home, tmp_path):
    """The real entry point, real pipes: `onegc monitor` in a pipe wrote escape codes and hung."""
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "onegc.db").write_bytes(b"garbage" * 1000)
    cases = [Case(["monitor"], "needs a terminal"),
             Case(["demo", "--budget", "0"], "--budget"),
             Case(["sessions"], "not a database", home=corrupt)]
    check(cases, [as_a_process(c, home) for c in cases], home)
