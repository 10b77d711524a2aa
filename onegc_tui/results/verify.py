"""``onegc verify``: each stored session's record checked against its chain and seal, scored again
from its snapshots, and compared with what it says (docs/verify.md).

One :func:`verify_session` per session: the deep record check (runner/scoring/seal.py, every
snapshot object hashed), the re-score (runner/scoring/rescore.py), and what was found written
beside the record (onegc_tui/store/record_status.py) so that every view shows it. With
``rescore``, the harness of now scores the session and the new figures are kept beside the
original as a re-score of their own (``rescore.json``): differences are then what changed, not a
failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from onegc_tui.results.harness import harness_label
from onegc_tui.store import record_status
from runner.scoring import rescore as rescoring
from runner.scoring import seal
from runner.wire.paths import SessionPaths

Outcome = Literal["reproduced", "differs", "tampered", "unverifiable", "rescored"]
# onegc verify's exit codes (docs/exit-codes.md): the most serious wins, in the order 8, 7, 9, 0
EXIT_REPRODUCED = 0
EXIT_DIFFERS = 7
EXIT_TAMPERED = 8
EXIT_UNVERIFIABLE = 9
_CODES: dict[Outcome, int] = {"reproduced": EXIT_REPRODUCED, "rescored": EXIT_REPRODUCED, "differs": EXIT_DIFFERS,
                              "tampered": EXIT_TAMPERED, "unverifiable": EXIT_UNVERIFIABLE}
_SERIOUSNESS = (EXIT_TAMPERED, EXIT_DIFFERS, EXIT_UNVERIFIABLE, EXIT_REPRODUCED)
SHOWN = 3  # differences on a session's line; verify.json keeps more


@dataclass
class SessionVerify:
    """What verify found for one session."""

    session_id: str
    outcome: Outcome
    record: seal.RecordCheck
    why: str = ""  # unverifiable: why
    differences: list[str] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)  # within another device's tolerance, shown
    result: rescoring.Rescore | None = None
    seconds: float = 0.0

    def line(self) -> str:
        """The session's one line."""
        r = self.result
        cost = (f"{r.evaluations} of {r.recorded_evaluations} evaluations on the {r.device}"
                f"{'' if r.exact else f', within {rescoring.REL_TOL:g} relative of another device'}, "
                f"{self.seconds:.0f} s") if r is not None else ""
        record = f"record {self.record.line()}"
        if self.outcome == "reproduced":
            return f"{self.session_id}: reproduced ({cost}; {record})"
        if self.outcome == "rescored":
            changed = f"{len(self.differences)} figures changed" if self.differences else "nothing changed"
            return f"{self.session_id}: re-scored with {harness_label()}: {changed} ({cost}; {record})"
        if self.outcome == "unverifiable":
            return f"{self.session_id}: cannot verify: {self.why} ({record})"
        head = "TAMPERED: " + self.record.detail if self.outcome == "tampered" else "NOT reproduced"
        shown = "; ".join(self.differences[:SHOWN])
        more = f" (+{len(self.differences) - SHOWN} more)" if len(self.differences) > SHOWN else ""
        return f"{self.session_id}: {head}" + (f": {shown}{more}" if shown else "") + (f" ({cost})" if cost else "")


def exit_code(found: list[SessionVerify]) -> int:
    codes = {_CODES[f.outcome] for f in found}
    return next((c for c in _SERIOUSNESS if c in codes), EXIT_REPRODUCED)


def verify_session(paths: SessionPaths, home_id: str | None, data_root: Path, scratch: Path, *,
                   rescore: bool = False, progress: Callable[[str], None] | None = None) -> SessionVerify:
    """Check, score again and compare one session; writes ``verify.json`` (or, with ``rescore``,
    ``rescore.json``) beside its record."""
    started = time.monotonic()
    check = seal.check(paths, home_id, deep=True)
    try:
        again = rescoring.rescore(paths, data_root, scratch, progress)
    except rescoring.Unverifiable as exc:
        outcome: Outcome = "tampered" if check.tampered else "unverifiable"
        return SessionVerify(paths.session_id, outcome, check, why=str(exc), seconds=time.monotonic() - started)
    lines = [d.line() for d in again.differences]
    found = SessionVerify(paths.session_id, "reproduced", check, differences=lines,
                          tolerated=[d.line() for d in again.within_tolerance], result=again,
                          seconds=time.monotonic() - started)
    facts = {"harness": harness_label(), "device": again.device, "exact": again.exact,
             "evaluations": again.evaluations, "recorded_evaluations": again.recorded_evaluations,
             "within_tolerance": found.tolerated[:record_status.MAX_LINES]}
    if rescore:
        found.outcome = "tampered" if check.tampered else "rescored"
        if not check.tampered:  # a re-score is of the record the runner made, or of none
            record_status.write_rescore(paths, again.result, harness_label(), lines)
        return found
    if check.tampered:
        found.outcome = "tampered"
        record_status.write_verify(paths, "tampered", check.detail, lines, facts)
    elif lines:
        found.outcome = "differs"
        record_status.write_verify(paths, "differs", lines[0], lines, facts)
    else:
        record_status.write_verify(paths, "reproduced", "", [], facts)
    return found
