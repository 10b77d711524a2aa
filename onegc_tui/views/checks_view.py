"""How each task meets each threat row of ../shared/INTEGRITY.md (runner/integrity/checks.py), as
``onegc tasks`` prints it: a matrix of tasks by rows V1-V10 for a default session, and, with
``--checks``, each check with what it decides and its measured power and false-alarm rate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runner.integrity.checks import CHECKS, THREATS, coverage

MARKS = {"check": "check", "construction": "built", "not applicable": "n/a", "not checked": "NONE"}


def checks_lines(specs: Sequence[Any], detail: bool = False) -> list[str]:
    """The lines of the matrix (one row per task of ``specs``, TaskSpecs) and its legend; with
    ``detail``, one paragraph per check."""
    from onegc_tui.views.text_table import text_table

    rows = []
    for spec in specs:
        covers = coverage(spec.id, canaries_on=True, sealed=False)
        rows.append([spec.short, *(MARKS[c.how] for c in covers)])
    out = ["Threat rows (docs/threat-model.md) met in a default session (canaries on, paper split):",
           *text_table(["id", *THREATS], rows),
           "check: an integrity check judges it; built: ruled out by the session's layout;",
           "n/a: the task cannot be attacked that way; NONE: not checked (shown with the number).",
           "onegc tasks --checks: what each check decides and its measured power."]
    if detail:
        out.append("")
        for check in CHECKS.values():
            rows_of = ", ".join(check.threats) or "no threat row: a record"
            out.append(f"{check.name} ({rows_of}): {check.what}")
            for task, figures in check.power.items():
                shown = ", ".join(f"{name} {rate:.0%}" for name, rate in figures.items())
                alarm = check.false_alarm.get(task, check.false_alarm.get("*"))
                out.append(f"  {task}: caught {shown}" + ("" if alarm is None else f"; honest flagged {alarm:.0%}"))
            if check.measured_by:
                out.append(f"  measured by {check.measured_by}")
    return out
