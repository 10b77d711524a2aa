"""The session configuration (``session.json``): one agent on one task for one repeat.

Imported from :mod:`runner.config` (``from runner.config import SessionConfig``), which loads this
module on first use.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runner.config import GRACE_S, SESSION_ID_RE, STALL_S, NetworkPolicy


class SessionConfig(BaseModel):
    """One agent on one task for one repeat, as given to the runner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: str
    task: str
    agent: str
    model: str | None = None
    repeat: int = Field(default=1, ge=1)
    study: str | None = None
    budget_s: float = Field(gt=0)
    cost_limit_usd: float | None = Field(default=None, gt=0)  # ends the session in order (runner/cost_limit.py)
    grace_s: float = Field(default=GRACE_S, ge=0)
    gpu: str | None = None  # CUDA_VISIBLE_DEVICES for the agent; None = no GPU assigned
    network: NetworkPolicy = "open"
    # the agent runs in the sandbox of runner/sandbox.py; False (`--unsealed`) is recorded in the
    # contract and flagged wherever the session's results are shown
    sealed: bool = True
    command: list[str] = Field(default_factory=list)  # the `command` agent's command line
    agent_args: list[str] = Field(default_factory=list)
    pace_s: float = Field(default=1.0, ge=0)  # scripted agent: seconds of "thinking" between steps
    live_eval_device: str = "cpu"  # live scoring must not take the GPU the budget is paying for
    stall_s: float = Field(default=STALL_S, gt=0)
    created: float = Field(default_factory=time.time)

    @field_validator("session_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not SESSION_ID_RE.match(value):
            raise ValueError("use letters, digits, '.', '_' or '-' (at most 128)")
        return value
