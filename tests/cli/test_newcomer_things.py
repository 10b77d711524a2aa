"""What a newcomer tripped on (issue 50 "small things"), each held here: `make demo` then `q`,
`onegc tasks` on a fresh home, `prepare`'s output, `run -h`, the README's commands and demo text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.cli.prepare_output import run_prepare
from runner.errors import OnegcError

REPO = Path(__file__).resolve().parents[2]


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _helps(command: click.Command, ctx: click.Context) -> list[str]:
    """The help text of ``command`` and of every subcommand under it."""
    out = [command.get_help(ctx)]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            out += _helps(sub, click.Context(sub, info_name=name, parent=ctx))
    return out


def test_no_help_text_shows_a_doubled_percent_sign():
    """`onegc run -h` said `80%%` (click does no %-formatting of help)."""
    helps = _helps(main, click.Context(main, info_name="onegc"))
    assert len(helps) > 15
    assert not [h for h in helps if "%%" in h]
    assert "80% of this machine's" in run("run", "--help").output


def test_a_fresh_home_lists_the_demo_task_as_made_at_its_first_run(tmp_path, monkeypatch):
    """`run t0` makes its own data; `onegc tasks` said `not prepared` for it."""
    monkeypatch.setenv("ONEGC_HOME", str(tmp_path / "fresh"))
    table = run("tasks").output.split("\n\n", 1)[0]  # the tasks' table (the threat rows' follows)
    lines = {line.split()[0]: line for line in table.splitlines()[1:]}
    assert lines["t0"].endswith("made at first run") and lines["t6"].endswith("not prepared")


def test_the_readme_commands_table_names_every_command():
    readme = (REPO / "README.md").read_text()
    table = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `onegc ([a-z]+)", table, flags=re.M))
    named |= {w for cell in re.findall(r"^\| `onegc ([a-z|\\]+) ", table, flags=re.M) for w in cell.split("\\|")}
    commands = set(main.list_commands(click.Context(main)))
    assert commands - named == set(), f"commands missing from the README's table: {sorted(commands - named)}"


def test_the_readme_demo_text_names_the_scripts_the_demo_runs():
    edits = tomllib.loads((REPO / "tasks" / "t0_demo" / "task.toml").read_text())["scripted_edits"]
    setup = (REPO / "README.md").read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert sorted(set(re.findall(r"run_\d+\.py", setup))) == [f"run_{k}.py" for k in range(1, len(edits) + 1)]


@pytest.mark.slow
@pytest.mark.parametrize(("code", "make_ok"), [(6, True), (0, True), (3, False)])
def test_make_demo_then_q_is_no_make_error(tmp_path, code, make_ok):
    """`make demo` then `q`: `onegc demo` exits 6 (the session goes on, docs/exit-codes.md), and
    make printed `*** [Makefile:78: demo] Error 6`. A demo that failed is still make's error."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    onegc = venv / "bin" / "onegc"
    onegc.write_text(f"#!/bin/sh\necho monitor closed\nexit {code}\n")
    onegc.chmod(0o755)
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (4e9, 4e9))  # newer than pyproject.toml: make installs nothing
    done = subprocess.run(["make", "-s", "-C", str(REPO), "demo", f"VENV={venv}"], capture_output=True, text=True)
    assert (done.returncode == 0) == make_ok, done.stderr
    assert ("Error" in done.stderr) != make_ok


PREPARE = """
import sys, time
print("progress: raw.csv 524288/1048576", file=sys.stderr, flush=True)
print("progress: raw.csv 1048576/1048576", file=sys.stderr, flush=True)
print("step: converting raw.csv into arrays", file=sys.stderr, flush=True)
time.sleep(1.3)
print("tx: prepared 2 files in /x", file=sys.stderr, flush=True)
print("error: the converted split is empty: fetch the raw file again", file=sys.stderr, flush=True)
sys.exit(2)
"""


@pytest.mark.slow
def test_prepare_shows_each_step_and_says_its_error_once(tmp_path, capfd):
    script = tmp_path / "prepare.py"
    script.write_text(PREPARE)
    with pytest.raises(OnegcError) as failed:
        run_prepare("tx", [sys.executable, str(script)])
    err = capfd.readouterr().err
    assert str(failed.value) == "preparing tx failed: the converted split is empty: fetch the raw file again"
    assert "the converted split is empty" not in err  # said once: by the error above (it was printed twice)
    assert "raw.csv [" in err and "1.0/1.0 MiB" in err
    assert re.search(r"converting raw\.csv into arrays: done in [12] s", err), err


@pytest.mark.slow
def test_prepare_prints_the_split_sizes_it_wrote(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ONEGC_HOME", str(tmp_path / "home"))
    r = run("prepare", "t0")
    err = capfd.readouterr().err + r.output
    assert r.exit_code == 0, err
    assert "making the arrays: done in" in err
    assert "t0_demo: split sizes train 6,000 (train_y.npy), val 1,500 (val_y.npy)" in err
