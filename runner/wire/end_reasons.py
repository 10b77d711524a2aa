"""Why a session ended: the reasons ``session_ended`` may carry, which of them are failures, and
the one rule by which a study runs a session again (:func:`harness_failure`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

EndReason = Literal["completed", "budget_exhausted", "cost_limit", "aborted", "agent_failed", "harness_error"]
FAILED_REASONS: tuple[EndReason, ...] = ("agent_failed", "harness_error")  # the others are a normal end


def harness_failure(ended: Mapping[str, Any] | None, has_result: bool) -> str | None:
    """Why a study should run an ended session again, or ``None`` when its end is its result.

    Only what the harness caused is run again (INTEGRITY.md S5, R3): an agent must not choose its
    own re-roll. The runner words an end the agent caused as the agent's — a disk the agent's own
    files filled is ``agent_failed`` (runner/session/diskguard.py), a hostile byte fails one
    checkpoint or line and never the runner (runner/wire/untrusted.py) — so ``harness_error``
    is left for the harness's own failures. docs/studies.md has this table:

    - no ``session_ended`` (its runner is gone): the harness failed → again;
    - ``harness_error``: the harness failed → again;
    - any other reason but no ``result.json``: the harness failed to write it → again;
    - any other reason with ``result.json`` (``agent_failed`` included) → the session's result.
    """
    if ended is None:
        return "the runner ended without session_ended"
    detail = str(ended.get("detail") or "")[:300]
    if ended.get("reason") == "harness_error":
        return detail or "harness error"
    if not has_result:
        return f"no result.json ({detail or ended.get('reason')})"
    return None
