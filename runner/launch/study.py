"""Studies: agents × tasks × repeats from one ``study.toml``, launched, resumed and surveyed.

    name = "demo"
    tasks = ["t0"]
    repeats = 2
    [[agents]]
    adapter = "scripted"
    label = "fast"             # optional; default adapter[-model]
    [launcher]
    kind = "local"             # or "slurm", with a [launcher.slurm] table

Each planned session has a stable id, ``<study>--<agent label>--<task short>--r<k>``, so running
the study again finds what already exists:

- ended with a result (``result.json`` + ``session_ended`` whose reason is not
  ``harness_error``) → skipped: a crash of the agent, a timeout or an abort is a *result*;
- ended with ``harness_error``, or its runner is gone without ``session_ended``
  (:func:`runner.launch.reconcile.reconcile`) → a harness failure: the folder moves aside to
  ``runs/<id>.attempt-<n>`` and the session starts afresh, up to ``max_attempts`` in all;
- queued or running → left alone; created but never launched → launched.

:func:`survey` classifies every planned session; :func:`launch` acts on a survey;
:func:`status_report` renders progress per agent × task and flags cells whose sessions ran
under different contracts (the ``contract`` of each ``session_started`` event).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
import tomllib
import typing
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from runner.duration import to_minutes
from runner.errors import OnegcError
from runner.launch.reconcile import reconcile
from runner.launch.records import has_started, read_record, session_ended
from runner.launch.request import MAX_REPEATS, StartRequest, make_request
from runner.launch.slurm import SlurmOptions
from runner.sandbox.caps import parse_size
from runner.wire.defaults import GRACE_S, NetworkPolicy
from runner.wire.end_reasons import harness_failure
from runner.wire.paths import SessionPaths, runs_dir
from runner.wire.session_config import SessionConfig

MAX_ATTEMPTS = 3  # a harness failure (node died, runner crashed) is retried; agent failures are results
WAIT_POLL_S = 2.0  # --wait: how often to look at the sessions
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ATTEMPT_FILE = "attempt.json"
# What must match for sessions to be pooled in one cell (and, minus the agent's own, across agents).
CONTRACT_KEYS = ("task_hash", "budget_s", "grace_s", "gpu", "agent_version", "model", "sealed", "network", "canaries",
                 "scored_split", "harness_version")
SHARED_KEYS = ("task_hash", "budget_s", "grace_s", "gpu", "sealed", "network", "canaries", "scored_split",
               "harness_version")

State = Literal["new", "unlaunched", "queued", "running", "done", "retry", "failed", "cancelled"]


class StudyError(OnegcError, ValueError):
    """A study that cannot be run as written; the message names the file and field."""


# ---------------------------------------------------------------------- the study file
class AgentSpec(BaseModel):
    """One agent configuration: an adapter, a model and its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    adapter: str
    model: str | None = None
    label: str | None = None  # in session ids and tables; default adapter[-model]
    args: list[str] = Field(default_factory=list)  # extra CLI arguments for the agent
    command: list[str] = Field(default_factory=list)  # the `command` adapter's command line
    pace_s: float | None = Field(default=None, ge=0)  # the scripted agent's thinking time

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, value: str) -> str:
        from runner.agents import ADAPTERS

        if value not in ADAPTERS:
            raise ValueError(f"unknown adapter '{value}': choose one of {', '.join(ADAPTERS)}")
        return value

    @field_validator("label")
    @classmethod
    def _valid_label(cls, value: str | None) -> str | None:
        if value is not None and (not NAME_RE.match(value) or "--" in value):
            raise ValueError("use letters, digits, '.', '_' or single '-'")
        return value

    @model_validator(mode="after")
    def _command_given(self) -> AgentSpec:
        if self.adapter == "command" and not self.command:
            raise ValueError("the command adapter needs command = [\"prog\", \"arg\", ...]")
        return self

    @property
    def key(self) -> str:
        if self.label:
            return self.label
        raw = self.adapter if not self.model else f"{self.adapter}-{self.model}"
        return re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._-]+", "-", raw)).strip("-.")


Minutes = Annotated[float, BeforeValidator(to_minutes)]  # 40, "90s", "2m", "1h" (runner/duration.py)


class BudgetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    minutes: Minutes | None = None  # every task; default: each task's own budget
    grace_s: float = Field(default=GRACE_S, ge=0)
    tasks: dict[str, Minutes] = Field(default_factory=dict)  # per-task minutes, e.g. {t2 = 60} or {t2 = "1h"}
    cost_usd: float | None = Field(default=None, gt=0)  # each session's cost limit (runner/session/cost_limit.py)

    @field_validator("tasks")
    @classmethod
    def _positive(cls, value: dict[str, float]) -> dict[str, float]:
        from tasks import get_task

        for name, minutes in value.items():
            try:
                get_task(name)
            except LookupError as exc:
                raise ValueError(str(exc.args[0])) from None
            if minutes <= 0:
                raise ValueError(f"{name}: minutes must be > 0")
        return value


class LauncherSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["local", "slurm"] = "local"
    gpus: str | None = None  # local: CUDA indices to use, "0,1"; default every visible GPU
    slurm: SlurmOptions = Field(default_factory=SlurmOptions)


class StudySpec(BaseModel):
    """A ``study.toml``: who (agents) does what (tasks), how often (repeats), and where (launcher)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    tasks: list[str] = Field(min_length=1)
    agents: list[AgentSpec] = Field(min_length=1)
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)  # the start request's bound (runner/launch/request.py)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    network: NetworkPolicy | None = None  # None: api-only for real agent CLIs, none for scripted/command
    unsealed: bool = False  # agents without their sandbox: recorded in every contract, flagged in results
    canaries: bool = True  # runner/integrity/canaries.py; false: the paper's workspace exactly (in the contract)
    # runner/integrity/sealed_split.py (in the contract); None: sealed wherever the split would be in the workspace
    scored_split: Literal["paper", "sealed"] | None = None
    memory: str | None = None  # each session's memory cap ("512M", "8G"); None: the machine's default (runner/sandbox/caps.py)
    max_processes: int | None = Field(default=None, ge=16)  # each session's process cap; None: the machine's default
    max_attempts: int = Field(default=MAX_ATTEMPTS, ge=1)
    launcher: LauncherSpec = Field(default_factory=LauncherSpec)

    @field_validator("memory")
    @classmethod
    def _valid_memory(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)  # ValueError: the study file's error, in one line
        return value

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not NAME_RE.match(value) or "--" in value:
            raise ValueError("use letters, digits, '.', '_' or single '-'")
        return value

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: list[str]) -> list[str]:
        from tasks import get_task

        try:
            shorts = [get_task(name).short for name in value]
        except LookupError as exc:
            raise ValueError(str(exc.args[0])) from None
        dup = next((s for s, n in Counter(shorts).items() if n > 1), None)
        if dup:
            raise ValueError(f"task {dup} is listed twice")
        return shorts

    @field_validator("agents")
    @classmethod
    def _unique_labels(cls, value: list[AgentSpec]) -> list[AgentSpec]:
        keys = Counter(a.key for a in value)
        dup = next((k for k, n in keys.items() if n > 1), None)
        if dup:
            raise ValueError(f"two agents share the label '{dup}': give each a distinct 'label'")
        return value

    @model_validator(mode="after")
    def _short_enough_ids(self) -> StudySpec:
        longest = max(len(session_id(self.name, a.key, t, self.repeats)) for a in self.agents for t in self.tasks)
        if longest > 128:
            raise ValueError("session ids would exceed 128 characters: shorten the study name or agent labels")
        return self


def load_study(path: Path) -> StudySpec:
    """Read and validate a study file; every problem is one :class:`StudyError` line."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise StudyError(f"{path}: no such study file") from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path}: not valid TOML: {exc}") from None
    try:
        return StudySpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        msg = str(err.get("ctx", {}).get("error") or err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key{did_you_mean(str(err['loc'][-1]), known_keys(StudySpec, err['loc'][:-1]))}"
        raise StudyError(f"{path}: field '{where}': {msg}") from None


def known_keys(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys a study file may write at ``loc`` (a pydantic error's location, without its last
    part): the fields of the model found by following ``loc`` from ``model``."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            continue
        field = current.model_fields.get(part)
        if field is None:
            return []
        current = _model_in(field.annotation)
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return []
    return [f.alias or name for name, f in current.model_fields.items()]


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (``list[AgentSpec]``, ``BudgetSpec | None``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """" (did you mean 'budget'?)", or the keys allowed there when none is close."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return f" '{word}' (did you mean '{close[0]}'?)"
    return f" '{word}'" + (f" (allowed here: {', '.join(choices)})" if choices else "")


def session_id(study: str, agent: str, task_short: str, repeat: int) -> str:
    return f"{study}--{agent}--{task_short}--r{repeat}"


# ---------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Planned:
    agent: str  # the agent's label
    task: str  # the task's short id
    repeat: int
    config: SessionConfig

    @property
    def session_id(self) -> str:
        return self.config.session_id


def requests(study: StudySpec, gpus: str | None = None) -> dict[tuple[str, str], StartRequest]:
    """Each task × agent of the study as one start request (runner/launch/request.py), by (task
    short, agent label): the study's budget for the task where it gives one, else the request's
    default (the task's own). ``gpus``: where a local launch runs them (default the launcher's)."""
    from tasks import get_task

    out = {}
    for short in study.tasks:
        spec = get_task(short)
        minutes = study.budget.tasks.get(short) or study.budget.tasks.get(spec.id) or study.budget.minutes
        for agent in study.agents:
            extra = {"pace_s": agent.pace_s} if agent.pace_s is not None else {}
            try:
                out[(short, agent.key)] = make_request(
                    task=spec.id, agent=agent.adapter, model=agent.model, repeats=study.repeats, study=study.name,
                    budget_s=minutes * 60 if minutes else None, grace_s=study.budget.grace_s, network=study.network,
                    gpus=gpus if gpus is not None else study.launcher.gpus, sealed=not study.unsealed,
                    canaries=study.canaries, scored_split=study.scored_split, command=tuple(agent.command),
                    agent_args=tuple(agent.args),
                    cost_limit_usd=study.budget.cost_usd,
                    memory_bytes=parse_size(study.memory) if study.memory is not None else None,
                    max_processes=study.max_processes, **extra)
            except OnegcError as exc:
                raise StudyError(f"agent {agent.key} on {short}: {exc}") from None
    return out


def plan(study: StudySpec) -> list[Planned]:
    """Every session of the study, repeat-major: all cells get a first repeat before any a second,
    so a study stopped half-way still covers every agent × task."""
    cells = requests(study)
    return [Planned(agent.key, short, k, cells[(short, agent.key)].config(session_id(study.name, agent.key, short, k),
                                                                          k, gpu=None))
            for k in range(1, study.repeats + 1) for short in study.tasks for agent in study.agents]


# ---------------------------------------------------------------------- the survey
@dataclass
class SessionState:
    planned: Planned
    state: State
    reason: str = ""
    attempts: int = 0  # attempts made so far, this one included
    end_reason: str | None = None
    value: float | None = None
    contract: dict | None = None

    def as_dict(self) -> dict:
        return {"session_id": self.planned.session_id, "agent": self.planned.agent, "task": self.planned.task,
                "repeat": self.planned.repeat, "state": self.state, "reason": self.reason,
                "attempts": self.attempts, "end_reason": self.end_reason, "value": self.value}


def attempt_folders(runs: Path, sid: str) -> list[Path]:
    return sorted(runs.glob(f"{sid}.attempt-*"), key=lambda p: int(p.name.rpartition("-")[2] or 0))


def classify(paths: SessionPaths, planned: Planned, max_attempts: int) -> SessionState:
    """Where one planned session stands, from its folder alone (plus its launcher for liveness)."""
    earlier = len(attempt_folders(paths.root.parent, planned.session_id))
    if not paths.config.exists():
        return SessionState(planned, "new", attempts=earlier)
    attempts = earlier + 1
    ended = session_ended(paths)
    contract = _contract(paths) if has_started(paths) else None
    if ended is not None:
        result = paths.read_result()
        why = harness_failure(ended, result is not None)
        if why is not None or result is None:
            return _failed(planned, attempts, max_attempts, why or "no result.json", contract, ended.get("reason"))
        return SessionState(planned, "done", attempts=attempts, end_reason=ended.get("reason"),
                            value=result.get("value"), contract=contract,
                            reason=result.get("failure") or "")
    record = read_record(paths)
    if record is None and not has_started(paths):
        return SessionState(planned, "unlaunched", attempts=attempts)
    if record is not None and record.get("state") == "cancelled" and not has_started(paths):
        return SessionState(planned, "cancelled", "cancelled before it started", attempts)
    why = reconcile(paths)
    if why is not None:
        return _failed(planned, attempts, max_attempts, why, contract, None)
    if has_started(paths):
        return SessionState(planned, "running", attempts=attempts, contract=contract)
    return SessionState(planned, "queued", attempts=attempts)


def _failed(planned, attempts, max_attempts, why, contract, end_reason) -> SessionState:
    state: State = "retry" if attempts < max_attempts else "failed"
    return SessionState(planned, state, why, attempts, end_reason=end_reason, contract=contract)


def survey(study: StudySpec, home: Path) -> list[SessionState]:
    runs = runs_dir(home)
    return [classify(SessionPaths(runs / p.session_id), p, study.max_attempts) for p in plan(study)]


def _contract(paths: SessionPaths) -> dict | None:
    """The ``contract`` of the session_started event (among the first lines of events.jsonl)."""
    try:
        with open(paths.events, "rb") as f:
            for _ in range(20):
                line = f.readline()
                if not line:
                    break
                if b'"session_started"' in line:
                    try:
                        return json.loads(line).get("contract") or {}
                    except ValueError:
                        return None
    except FileNotFoundError:
        pass
    return None


# ---------------------------------------------------------------------- launching
@dataclass
class LaunchReport:
    created: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    launched: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped_done: int = 0
    active: int = 0
    failed: list[SessionState] = field(default_factory=list)
    where: str = ""


def check_start(study: StudySpec, home: Path, kind: str, gpus: str | None = None) -> list[str | None]:
    """What ``onegc run`` checks before it creates anything (runner/launch/start.py), for every
    request of the study: every task's data prepared before hundreds of sessions fail on it, and
    for a local study the sandbox (when sealed), each agent's network policy and the GPUs (on
    Slurm the compute nodes have their own). The agents are asked apart (:func:`check_agents`).
    Returns the local GPU slots."""
    from runner.launch import start

    try:
        return start.check_requests(home, list(requests(study, gpus).values()), local=kind == "local", prepare=False,
                                    agents=False, unsealed_hint="set unsealed = true in the study",
                                    open_hint='set network = "open" in the study')
    except StudyError:
        raise
    except OnegcError as exc:
        where = f" (ONEGC_HOME={home})" if "not prepared" in exc.message or "not fetched" in exc.message else ""
        raise StudyError(f"{exc.message}{where}") from None


def check_agents(study: StudySpec) -> None:
    """Each agent's CLI found, its credentials set, a model where it needs one (``onegc run``'s
    check, runner.launch.start.ensure_agent): ``onegc study`` asks before a local launch; on Slurm the CLIs
    live on the compute nodes."""
    from runner.launch.start import ensure_agent

    for agent in study.agents:
        try:
            ensure_agent(agent.adapter, agent.model)
        except OnegcError as exc:
            raise StudyError(f"agent {agent.key}: {exc}") from None


def launch(study: StudySpec, home: Path, *, gpus: str | None = None, kind: str | None = None) -> LaunchReport:
    """Create, retry and launch whatever the study still needs; leave the rest alone."""
    from runner.launch import local, slurm
    from runner.launch.start import create_sessions, launch_local

    kind = kind or study.launcher.kind
    home = Path(home).resolve()
    runs = runs_dir(home)
    runs.mkdir(parents=True, exist_ok=True)
    slots = check_start(study, home, kind, gpus)  # local: one session per GPU, or [None] for the CPU
    if kind == "slurm" and not slurm.available():
        raise StudyError("sbatch not found: run the study on a Slurm login node, or set launcher.kind = \"local\"")
    report = LaunchReport()
    to_launch: list[SessionPaths] = []
    with local.book_lock(runs):  # the local queue must not start a session while we rewrite it
        for st in survey(study, home):
            paths = SessionPaths(runs / st.planned.session_id)
            if st.state == "done":
                report.skipped_done += 1
            elif st.state in ("running", "queued"):
                report.active += 1
                if st.state == "queued" and _refresh_queued(paths, st.planned.config):
                    report.updated.append(paths.session_id)
            elif st.state in ("failed", "cancelled"):
                report.failed.append(st)
            elif st.state == "retry":
                _move_aside(paths, st)
                create_sessions(home, [st.planned.config])
                report.retried.append(paths.session_id)
                to_launch.append(paths)
            elif st.state == "new":
                create_sessions(home, [st.planned.config])
                report.created.append(paths.session_id)
                to_launch.append(paths)
            elif st.state == "unlaunched":
                to_launch.append(paths)
        if kind == "local" and (to_launch or report.active):
            launch_local(home, to_launch, slots, study=study.name)  # under the lock: no daemon starts one mid-rewrite
            report.launched += [paths.session_id for paths in to_launch]
    if kind == "local":
        report.where = "local queue on " + (", ".join(f"GPU {s}" for s in slots) if slots != [None] else "the CPU, one at a time")
    else:
        for paths in to_launch:
            try:
                job = slurm.submit(paths, study.launcher.slurm, home, study=study.name)
            except slurm.SlurmError as exc:
                raise StudyError(f"{exc} ({len(report.launched)} of {len(to_launch)} sessions submitted; "
                                 "run the study again to submit the rest)") from None
            report.launched.append(f"{paths.session_id} (job {job})")
        report.where = "slurm"
    return report


def _refresh_queued(paths: SessionPaths, planned: SessionConfig) -> bool:
    """A session that has not started yet takes the study file's current settings."""
    current = paths.read_config()
    ignore = {"created", "gpu"}
    if current.model_dump(exclude=ignore) == planned.model_dump(exclude=ignore):
        return False
    paths.write_config(planned.model_copy(update={"gpu": current.gpu}), new=False)
    return True


def _move_aside(paths: SessionPaths, st: SessionState) -> Path:
    """Keep a failed attempt as ``runs/<id>.attempt-<n>`` so the stable id can be used again."""
    n = len(attempt_folders(paths.root.parent, paths.session_id)) + 1
    target = paths.root.parent / f"{paths.session_id}.attempt-{n}"
    os.rename(paths.root, target)
    (target / ATTEMPT_FILE).write_text(json.dumps({"session_id": paths.session_id, "attempt": n,
                                                   "reason": st.reason, "moved_at": time.time()}, indent=1))
    return target


def wait(study: StudySpec, home: Path, *, gpus: str | None = None, kind: str | None = None,
         on_progress: Callable[[Counter], None] | None = None, poll_s: float = WAIT_POLL_S,
         timeout_s: float | None = None) -> list[SessionState]:
    """Block until no session is queued or running, retrying harness failures as they appear."""
    start = time.monotonic()
    last = None
    while True:
        states = survey(study, home)
        counts = Counter(s.state for s in states)
        if counts != last and on_progress:
            on_progress(counts)
        last = counts
        if counts["retry"] or counts["unlaunched"] or counts["new"]:
            launch(study, home, gpus=gpus, kind=kind)
            continue
        if counts["queued"] and (kind or study.launcher.kind) == "local":
            from runner.launch import local

            if local.daemon_info(runs_dir(home)) is None:  # the queue died (kill -9): start another
                local.start_daemon(home)
        if not (counts["queued"] or counts["running"]):
            return states
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise TimeoutError(f"study {study.name}: still {counts['queued']} queued, {counts['running']} running")
        time.sleep(poll_s)


# ---------------------------------------------------------------------- status
@dataclass
class Cell:
    agent: str
    task: str
    counts: Counter = field(default_factory=Counter)
    values: list[float] = field(default_factory=list)
    mixed: dict[str, list] = field(default_factory=dict)  # contract key -> the distinct values


def contract_view(contract: dict, keys=CONTRACT_KEYS) -> dict:
    """The contract reduced to what decides comparability; GPUs by model and driver."""
    out = {}
    for key in keys:
        value = contract.get(key)
        if key == "gpu":
            value = tuple(sorted((g.get("name"), g.get("driver")) for g in value or [] if isinstance(g, dict))) or None
        out[key] = value
    return out


def _distinct(contracts: list[dict], keys) -> dict[str, list]:
    views = [contract_view(c, keys) for c in contracts]
    mixed = {}
    for key in keys:
        values = list(dict.fromkeys(json.dumps(v[key], default=str) for v in views))
        if len(values) > 1:
            mixed[key] = [json.loads(v) for v in values]
    return mixed


def cells(study: StudySpec, states: list[SessionState]) -> list[Cell]:
    table: dict[tuple[str, str], Cell] = {}
    for agent in study.agents:
        for task in study.tasks:
            table[(agent.key, task)] = Cell(agent.key, task)
    contracts: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for st in states:
        cell = table[(st.planned.agent, st.planned.task)]
        cell.counts[_column(st.state)] += 1
        if st.value is not None:
            cell.values.append(st.value)
        if st.contract and st.state in ("done", "running"):
            contracts[(cell.agent, cell.task)].append(st.contract)
    for key, found in contracts.items():
        table[key].mixed = _distinct(found, CONTRACT_KEYS)
    return list(table.values())


def _column(state: State) -> str:
    return {"new": "queued", "unlaunched": "queued", "retry": "failed", "cancelled": "failed"}.get(state, state)


def cross_agent_mismatches(study: StudySpec, states: list[SessionState]) -> dict[str, dict[str, list]]:
    """Per task: contract keys (other than the agent's own) that differ between agents' sessions."""
    by_task: dict[str, list[dict]] = defaultdict(list)
    for st in states:
        if st.contract and st.state in ("done", "running"):
            by_task[st.planned.task].append(st.contract)
    return {task: mixed for task, found in by_task.items() if (mixed := _distinct(found, SHARED_KEYS))}


def status_report(study: StudySpec, home: Path) -> str:
    states = survey(study, home)
    table = cells(study, states)
    total = Counter(_column(s.state) for s in states)
    lines = [f"study {study.name}: {len(states)} sessions — {total['done']} done, {total['running']} running, "
             f"{total['queued']} queued, {total['failed']} failed"]
    not_launched = sum(s.state in ("new", "unlaunched") for s in states)
    if not_launched:
        lines[0] += f" ({not_launched} not launched yet: run 'onegc study FILE')"
    width = max(len("agent"), *(len(c.agent) for c in table))
    lines.append(f"{'agent':<{width}}  task  {'done':>5}  {'run':>4}  {'queue':>5}  {'fail':>4}  {'mean':>8}  contract")
    for c in table:
        n = sum(c.counts.values())
        mean = f"{sum(c.values) / len(c.values):8.4f}" if c.values else f"{'-':>8}"
        contract = "ok" if not c.mixed else "MIXED " + "; ".join(f"{k}: {' / '.join(_short(v) for v in vs)}"
                                                               for k, vs in c.mixed.items())
        lines.append(f"{c.agent:<{width}}  {c.task:<4}  {c.counts['done']:>2}/{n:<2}  {c.counts['running']:>4}  "
                     f"{c.counts['queued']:>5}  {c.counts['failed']:>4}  {mean}  {contract}")
    for task, mixed in cross_agent_mismatches(study, states).items():
        lines.append(f"warning: {task}: agents ran under different contracts — " +
                     "; ".join(f"{k}: {' / '.join(_short(v) for v in vs)}" for k, vs in mixed.items()))
    for st in states:
        if st.state in ("retry", "failed", "cancelled"):
            note = {"retry": f"attempt {st.attempts}/{study.max_attempts}, retried on the next 'onegc study FILE'",
                    "failed": f"gave up after {st.attempts} attempts" if st.attempts >= study.max_attempts else "failed",
                    "cancelled": "not retried"}[st.state]
            lines.append(f"  {st.planned.session_id}: {st.reason} ({note})")
    return "\n".join(lines)


def _short(value) -> str:
    if isinstance(value, list) and value and isinstance(value[0], list):
        return "+".join(str(v[0]) for v in value)  # GPUs: their names
    text = "-" if value is None else str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def status_json(study: StudySpec, home: Path) -> dict:
    states = survey(study, home)
    return {
        "study": study.name,
        "sessions": [s.as_dict() for s in states],
        "cells": [{"agent": c.agent, "task": c.task, **{k: c.counts[k] for k in ("done", "running", "queued", "failed")},
                   "mixed": c.mixed} for c in cells(study, states)],
        "cross_agent": cross_agent_mismatches(study, states),
    }
