"""What ``onegc tasks`` and ``onegc sessions`` show of each task, without pydantic at start-up.

The task registry (``tasks/__init__.py``) validates every ``task.toml`` into a pydantic
``TaskSpec``; importing pydantic and building its models is most of the start-up of a command that
only lists tasks (README, benchmarks). The facts these commands show are taken from that very
validation and kept in ``$XDG_CACHE_HOME/onegc/`` (``~/.cache/onegc/``) under a key made of the
registry's code and every ``task.toml``: when either changes, the registry validates again and a
new file is written. A cache that cannot be read or written only costs the validation.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class TaskFacts:
    """The fields of a ``TaskSpec`` the listings show."""

    id: str
    short: str
    title: str
    metric_label: str
    scored_split: str  # what the official result is measured on (val or test)
    higher_is_better: bool
    budget_minutes: float
    baseline_score: float | None
    cpu_ok: bool = False  # the demo task: its data is made offline at its first run (no 'onegc prepare')
    sealable: bool = False  # a session chooses sealed or the paper's split (TaskSpec.sealable: t0, T1-T3, T7)


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "onegc"


def _tasks_dir() -> Path:
    """The ``tasks`` package's folder, found without running its ``__init__`` (which imports pydantic)."""
    spec = importlib.util.find_spec("tasks")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the tasks package is not importable")
    return Path(next(iter(spec.submodule_search_locations)))


def registry_key(root: Path | None = None) -> str:
    """A hash of what the registry's answer depends on: its code, each task folder's ``task.toml``
    and the facts kept (a field added here is read anew, not missing from an older file)."""
    root = root or _tasks_dir()
    h = hashlib.sha256((root / "__init__.py").read_bytes())
    h.update(",".join(TaskFacts.__dataclass_fields__).encode())
    for folder in sorted(root.iterdir()):  # as tasks.all_tasks() walks them
        toml = folder / "task.toml"
        if toml.is_file():
            h.update(b"\0" + folder.name.encode() + b"\0" + toml.read_bytes())
    return h.hexdigest()[:24]


def task_facts() -> dict[str, TaskFacts]:
    """Every task's facts, keyed by task id, in the registry's order (``tasks.all_tasks()``)."""
    key = registry_key()
    path = cache_dir() / f"task-facts-{key}.json"
    try:
        return {row["id"]: TaskFacts(**row) for row in json.loads(path.read_bytes())}
    except (OSError, ValueError, TypeError, KeyError):
        pass
    from tasks import all_tasks

    facts = {spec.id: TaskFacts(spec.id, spec.short, spec.title, spec.metric_label, spec.scored_split, spec.higher_is_better,
                                spec.budget_minutes, spec.baseline_score, spec.cpu_ok, spec.sealable)
             for spec in all_tasks().values()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps([asdict(f) for f in facts.values()]))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: the next command validates again
    return facts


def find(facts: dict[str, TaskFacts], name: str) -> TaskFacts | None:
    """The task named by folder name or short id, case-insensitively (as ``tasks.get_task``)."""
    key = name.strip().lower()
    return next((f for f in facts.values() if key in (f.id, f.short)), None)


@functools.cache
def _facts_once() -> dict[str, TaskFacts]:
    return task_facts()  # the task folders do not change under a running process


def facts_of(task: str | None) -> TaskFacts | None:
    """The facts of the task named ``task`` (None: unknown to this onegc, or no task), read once a process."""
    return find(_facts_once(), task) if task else None


def metric_label(task: str | None) -> str:
    """The task's metric label ("test MSE"), or "score" for a task this onegc does not know."""
    facts = facts_of(task)
    return facts.metric_label if facts else "score"


def scored_split(task: str | None) -> str:
    """The split a task's official result is measured on (val for a task this onegc does not know)."""
    facts = facts_of(task)
    return facts.scored_split if facts else "val"
