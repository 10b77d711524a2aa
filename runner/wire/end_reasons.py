"""Why a session ended: the reasons ``session_ended`` may carry, and which of them are failures."""

from __future__ import annotations

from typing import Literal

EndReason = Literal["completed", "budget_exhausted", "cost_limit", "aborted", "agent_failed", "harness_error"]
FAILED_REASONS: tuple[EndReason, ...] = ("agent_failed", "harness_error")  # the others are a normal end
