"""``onegc tasks`` says how each task meets each threat row, and ``--checks`` what each check caught when measured."""

from __future__ import annotations

from click.testing import CliRunner

from onegc_tui.cli.main import main


def test_tasks_lists_each_rows_coverage_and_checks_lists_the_measured_power(home):
    out = CliRunner().invoke(main, ["tasks"], env={"ONEGC_HOME": str(home), "COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["id", "V1", "V2"])
    rows = {line.split()[0]: line.split()[1:] for line in lines[header + 1: header + 9]}
    assert rows["t5"][:2] == ["built", "built"]  # the scored split, test, is never in the workspace
    assert rows["t1"][2] == "check" and rows["t0"][2] == "n/a"  # reading ahead: a probe on T1 only
    assert all(len(line) <= 90 for line in lines[header - 1:])
    detail = CliRunner().invoke(main, ["tasks", "--checks"], env={"ONEGC_HOME": str(home)}).output
    assert "canaries (V1, V2)" in detail and "t1_shakespeare: caught lookup 100%" in detail
    assert "honest flagged 0%" in detail and "measured by benchmarks/canary_power.py" in detail
