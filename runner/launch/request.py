"""One start request: every way to start sessions (``onegc run``, ``onegc demo``, the monitor's
new-session form, ``onegc baseline`` and each agent × task of ``onegc study``) builds a
:class:`StartRequest`. It owns three facts that used to have several owners:

- its **defaults**, resolved once, when it is made: no budget given is the task's own
  (:func:`default_budget_s`), no network policy given is the agent's (runner/wire/defaults.py);
- its **bounds**: a budget within runner/duration.py's, repeats within :data:`MAX_REPEATS`, the
  caps within the session's (runner/wire/session_config.py);
- the one place a :class:`~runner.wire.session_config.SessionConfig` is built from it
  (:meth:`StartRequest.config`).

The checks a request passes before anything is created (the agent usable, the data prepared,
the sandbox, the network policy, the GPU indices) are runner/launch/start.py's
:func:`~runner.launch.start.check_requests`, applied to every path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runner.duration import HINT, MAX_BUDGET_S, MIN_BUDGET_S
from runner.errors import OnegcError
from runner.wire.agents import default_network
from runner.wire.defaults import GRACE_S, NetworkPolicy
from runner.wire.session_config import SessionConfig

if TYPE_CHECKING:
    from tasks import TaskSpec

DEFAULT_PACE_S = 1.0  # the scripted agent's "thinking" between steps (onegc run --pace, the form)
MAX_REPEATS = 100  # repeats of one request; more is a study's job


# the fields a refusal names as a person gave them (the others' messages name themselves)
FIELD_NAMES = {"budget_s": "budget", "repeats": "repeats", "grace_s": "grace", "pace_s": "pace", "gpus": "gpus",
               "memory_bytes": "memory", "max_processes": "max processes", "cost_limit_usd": "cost limit",
               "model": "model", "network": "network"}


class BadRequest(OnegcError, ValueError):
    """A start request that cannot be: the message names the field."""


def default_budget_s(spec: TaskSpec) -> float:
    """The budget of a request that gives none: the task's own (``task.toml``, the paper's minutes)."""
    return spec.budget_minutes * 60.0


class StartRequest(BaseModel):
    """Sessions of one agent on one task: ``repeats`` of them, under one contract."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str  # the task's id; its short name or id is accepted and resolved
    agent: str
    model: str | None = None
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    budget_s: float  # not given: the task's budget (default_budget_s)
    grace_s: float = Field(default=GRACE_S, ge=0)
    gpus: str | None = None  # CUDA indices ("0,1") or UUIDs to use; None: every visible GPU
    network: NetworkPolicy  # not given: the agent's default (api-only for agent CLIs, else none)
    sealed: bool = True
    canaries: bool = True  # runner/integrity/canaries.py; False: the paper's workspace exactly
    scored_split: Literal["paper", "sealed"] = "paper"  # runner/integrity/sealed_split.py
    command: tuple[str, ...] = ()  # the command agent's command line
    agent_args: tuple[str, ...] = ()
    pace_s: float = Field(default=DEFAULT_PACE_S, ge=0)
    memory_bytes: int | None = Field(default=None, ge=64 << 20)
    max_processes: int | None = Field(default=None, ge=16)
    cost_limit_usd: float | None = Field(default=None, gt=0)
    study: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """The one place a start's defaults are resolved."""
        if not isinstance(data, dict):
            return data
        from tasks import UnknownTask, get_task

        try:
            spec = get_task(str(data.get("task")))
        except UnknownTask as exc:
            raise ValueError(str(exc)) from None
        out = {**data, "task": spec.id}
        if out.get("budget_s") is None:
            out["budget_s"] = default_budget_s(spec)
        if out.get("network") is None and isinstance(out.get("agent"), str):
            out["network"] = default_network(out["agent"])
        return out

    @field_validator("budget_s")
    @classmethod
    def _budget_in_bounds(cls, value: float) -> float:
        if not MIN_BUDGET_S <= value <= MAX_BUDGET_S:
            raise ValueError(f"{value:g} s: {HINT}")
        return value

    @field_validator("agent")
    @classmethod
    def _known_agent(cls, value: str) -> str:
        from runner.agents import ADAPTERS

        if value not in ADAPTERS:
            raise ValueError(f"unknown agent '{value}': choose one of {', '.join(ADAPTERS)}")
        return value

    @model_validator(mode="after")
    def _command_given(self) -> StartRequest:
        if self.agent == "command" and not self.command:
            raise ValueError("the command agent needs a command line: onegc run TASK --agent command -- CMD ...")
        return self

    @model_validator(mode="after")
    def _sealable(self) -> StartRequest:
        if self.scored_split == "sealed":
            from runner.integrity.sealed_split import check

            check(self.spec)  # CannotSeal is a ValueError: one line naming why
        return self

    @property
    def spec(self) -> TaskSpec:
        from tasks import get_task

        return get_task(self.task)

    def config(self, session_id: str, repeat: int, gpu: str | None) -> SessionConfig:
        """The session ``session_id``, repeat ``repeat`` of this request, on ``gpu`` (None: the
        queue assigns one, or the CPU)."""
        return SessionConfig(
            session_id=session_id, task=self.task, agent=self.agent, model=self.model, repeat=repeat,
            study=self.study, budget_s=self.budget_s, grace_s=self.grace_s, gpu=gpu, network=self.network,
            sealed=self.sealed, command=list(self.command), agent_args=list(self.agent_args), pace_s=self.pace_s,
            memory_bytes=self.memory_bytes, max_processes=self.max_processes, cost_limit_usd=self.cost_limit_usd,
            canaries=self.canaries, scored_split=self.scored_split)


def make_request(**fields: Any) -> StartRequest:
    """A :class:`StartRequest`; a field that cannot be is one :class:`BadRequest` line naming it."""
    try:
        return StartRequest.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = FIELD_NAMES.get(".".join(str(p) for p in err["loc"]))
        msg = str(err.get("ctx", {}).get("error") or err["msg"]).removeprefix("Value error, ")
        raise BadRequest(f"{where}: {msg}" if where else msg) from None
