"""What ``onegc run`` and ``onegc demo`` exit with: how the sessions they followed ended.

A script (CI, a Slurm job, a shell loop) must tell a scored session from a failed, aborted or
broken one without parsing text. The table (also in docs/exit-codes.md):

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     every session ended with a valid official score (``--detach``: every session started)
2     nothing started: a usage error or a refused start (one line on stderr)
3     a session ended without a valid score: the paper's failed run, N/A in the statistics
4     a session was aborted (by a person or ``onegc abort``), whatever it scored
5     a session ended in a harness error (the harness broke, not the agent): rerun it
6     the monitor was closed while a session still runs (it goes on; nothing is known yet)
130   Ctrl-C stopped the following (``--plain``); the sessions go on
====  ==========================================================================================

With several sessions the most serious code wins, in the order 5, 4, 3, 6, 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EXIT_SCORED = 0
EXIT_NO_SCORE = 3
EXIT_ABORTED = 4
EXIT_HARNESS_ERROR = 5
EXIT_STILL_RUNNING = 6
EXIT_INTERRUPTED = 130  # the shell's code for SIGINT
_SERIOUSNESS = (EXIT_HARNESS_ERROR, EXIT_ABORTED, EXIT_NO_SCORE, EXIT_STILL_RUNNING, EXIT_SCORED)


@dataclass(frozen=True)
class Outcome:
    """How one session ended, as far as its exit code goes: ``reason`` None while it runs."""

    reason: str | None
    score: float | None


def session_code(outcome: Outcome) -> int:
    """The exit code of one session (the module's table)."""
    if outcome.reason is None:
        return EXIT_STILL_RUNNING
    if outcome.reason == "harness_error":
        return EXIT_HARNESS_ERROR
    if outcome.reason == "aborted":
        return EXIT_ABORTED
    return EXIT_SCORED if outcome.score is not None else EXIT_NO_SCORE


def exit_code(outcomes: Iterable[Outcome]) -> int:
    """The most serious code of the sessions' (0 for none)."""
    codes = {session_code(o) for o in outcomes}
    return next((c for c in _SERIOUSNESS if c in codes), EXIT_SCORED)
