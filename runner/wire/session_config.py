"""The session configuration (``session.json``): one agent on one task for one repeat.

A module of its own so that what only needs a session's paths (runner/wire/paths.py) or its
defaults (runner/wire/defaults.py) starts without importing pydantic.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runner.wire.agents import default_network
from runner.wire.defaults import GRACE_S, SEALED_ANSWERS, SESSION_ID_RE, STALL_S, NetworkPolicy


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
    cost_limit_usd: float | None = Field(default=None, gt=0)  # ends the session in order (runner/session/cost_limit.py)
    grace_s: float = Field(default=GRACE_S, ge=0)
    gpu: str | None = None  # CUDA_VISIBLE_DEVICES for the agent; None = no GPU assigned
    network: NetworkPolicy = "none"  # not given: default_network(agent) (api-only for agent CLIs, else none)
    # the agent runs in the sandbox of runner/sandbox/bwrap.py; False (`--unsealed`) is recorded in the
    # contract and flagged wherever the session's results are shown
    sealed: bool = True
    # canaries in the agent's copy of the scored split (runner/integrity/canaries.py); False
    # (`--no-canaries`) is the paper's workspace exactly, recorded in the contract
    canaries: bool = True
    # "sealed" (`--scored-split sealed`): the scored split's targets stay out of the workspace and the
    # harness answers the agent's evaluations on it, at most `sealed_answers` (runner/integrity/sealed_split.py)
    scored_split: Literal["paper", "sealed"] = "paper"
    sealed_answers: int = Field(default=SEALED_ANSWERS, ge=0)
    command: list[str] = Field(default_factory=list)  # the `command` agent's command line
    agent_args: list[str] = Field(default_factory=list)
    pace_s: float = Field(default=1.0, ge=0)  # scripted agent: seconds of "thinking" between steps
    live_eval_device: str = "cpu"  # live scoring must not take the GPU the budget is paying for
    stall_s: float = Field(default=STALL_S, gt=0)
    # the agent tree's caps (runner/sandbox/caps.py); None: this machine's defaults, resolved by the runner
    memory_bytes: int | None = Field(default=None, ge=64 << 20)
    max_processes: int | None = Field(default=None, ge=16)
    # the session's snapshot objects (runner/scoring/snapshots.py); None: SNAPSHOT_CAP_BYTES
    snapshot_cap_bytes: int | None = Field(default=None, ge=1 << 20)
    # the checkpoint versions the session takes (runner/wire/record_caps.py); None: from the budget
    max_checkpoints: int | None = Field(default=None, ge=1)
    created: float = Field(default_factory=time.time)

    @property
    def plants_canaries(self) -> bool:
        """Canaries go into the agent's copy of the scored split: asked for, and the split's targets
        are there to plant them among (not when sealed)."""
        return self.canaries and self.scored_split == "paper"

    @model_validator(mode="before")
    @classmethod
    def _network_by_agent(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("network") is None and isinstance(data.get("agent"), str):
            return {**data, "network": default_network(data["agent"])}
        return data

    @field_validator("session_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not SESSION_ID_RE.match(value):
            raise ValueError("use letters, digits, '.', '_' or '-' (at most 128)")
        return value
