"""How a session stands, from its events: pure, without the event models (pydantic), so that the
light commands (``onegc sessions``) can use it.
"""

from __future__ import annotations

from typing import Literal

EndReason = Literal["completed", "budget_exhausted", "aborted", "agent_failed", "harness_error"]
FAILED_REASONS: tuple[EndReason, ...] = ("agent_failed", "harness_error")  # the others are a normal end


def end_state(reason: str) -> Literal["ended", "failed"]:
    """The state a session that ended for ``reason`` is in: ``failed`` when the agent or the harness
    broke (:data:`FAILED_REASONS`), else ``ended``."""
    return "failed" if reason in FAILED_REASONS else "ended"
