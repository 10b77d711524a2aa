"""The task registry: every folder under ``tasks/`` with a ``task.toml`` is one task.

A task folder holds ``task.toml`` (the spec, loaded into :class:`TaskSpec`), ``program.md``
(what the agent is told), ``prepare.py`` (locked: data, loaders, evaluation, checkpoint helper)
and ``train.py`` (the baseline). ``onegc_kit.py`` beside this file is the locked helper every
``prepare.py`` imports; it is copied read-only into each workspace next to ``prepare.py``.

Tasks are named by folder (``t6_etth1``) or by the short id before the underscore (``t6``, ``T6``).
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

TASKS_DIR = Path(__file__).resolve().parent
Direction = Literal["higher", "lower"]  # which way a task's metric improves
T = TypeVar("T")
KIT_FILE = TASKS_DIR / "onegc_kit.py"
TASK_FILES = ("task.toml", "program.md", "prepare.py", "train.py")


class UnknownTask(LookupError):
    """A task name that matches no folder."""


class PaperResult(BaseModel):
    """One agent's row for this task in the paper (Table 4 mean ± std, Table 6 best)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    mean: float | None = None
    std: float | None = None
    best: float | None = None
    n_success: int = 5
    n_total: int = 5


class ScriptedEdit(BaseModel):
    """Constants the scripted agent changes in ``train.py`` to make one ``run_{x}.py``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    note: str = ""
    set: dict[str, int | float | str | bool] = Field(default_factory=dict)


class TaskSpec(BaseModel):
    """What ``task.toml`` declares about a task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    short: str
    title: str
    version: str
    metric: str
    metric_label: str
    direction: Direction
    budget_minutes: float
    scored_split: str
    baseline_score: float | None
    paper_reference: float | None = None
    baseline_note: str = ""
    # the baseline's val advantage over its test score, and the margin beyond it that flags a
    # session (runner/integrity/selection_gap.py); measured by benchmarks/reproduce_baselines.py --seeds 5
    baseline_val_gap: float | None = None
    val_gap_margin: float | None = None
    # the scored split's files that hold its targets: withheld from a sealed session's workspace
    # (runner/integrity/sealed_split.py); empty: the split cannot be sealed (T1) or need not be (T4-T6)
    scored_targets: list[str] = Field(default_factory=list)
    # the scored split's inputs are its targets (T1: the text a language model predicts): sealed, its
    # text stays out of the workspace too, and the agent's evaluation hands the harness the model itself
    inputs_are_targets: bool = False
    # a sealed split's answers (runner/integrity/ladder.py): the Ladder's margin and grid on the metric,
    # and the range of the values it gives (the bound on what the answers can tell depends on both)
    ladder_step: float | None = Field(default=None, gt=0)
    metric_range: tuple[float, float] | None = None
    eval_timeout_s: float = 600.0
    cpu_ok: bool = False  # the demo task: data made offline on first use, baseline trains on a CPU in seconds
    pretrained_weights: list[str] = Field(default_factory=list)
    scripted_edits: list[ScriptedEdit] = Field(default_factory=list)
    paper: list[PaperResult] = Field(default_factory=list)

    @property
    def folder(self) -> Path:
        return TASKS_DIR / self.id

    @property
    def sealable(self) -> bool:
        """Whether the agent's workspace would hold the scored split's targets under the paper's
        protocol (t0, T1-T3, T7), so that a session chooses: sealed (the default) or the paper's
        split. T4-T6 score on a test split that is never in the workspace: no choice there."""
        return bool(self.scored_targets)

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` beats score ``b`` on this task's metric."""
        return better(a, b, self.direction)

    def version_hash(self) -> str:
        """Hash of the task's locked files: two sessions compare only if these match."""
        h = hashlib.sha256()
        for name in (*TASK_FILES, "../onegc_kit.py"):
            path = (self.folder / name).resolve()
            h.update(name.encode())
            h.update(path.read_bytes() if path.exists() else b"")
        return h.hexdigest()[:16]


def _load(folder: Path) -> TaskSpec:
    path = folder / "task.toml"
    try:
        raw = tomllib.loads(path.read_text())
        return TaskSpec.model_validate(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{path}: field '{where}': {err['msg']}") from None


@cache
def all_tasks() -> dict[str, TaskSpec]:
    """Every task, keyed by folder name, in order (t0_demo, t1_…, …)."""
    specs = {}
    for folder in sorted(TASKS_DIR.iterdir()):
        if (folder / "task.toml").is_file():
            spec = _load(folder)
            specs[spec.id] = spec
    return specs


def get_task(name: str) -> TaskSpec:
    """Look a task up by folder name or short id, case-insensitively."""
    key = name.strip().lower()
    for spec in all_tasks().values():
        if key in (spec.id, spec.short):
            return spec
    known = ", ".join(s.short for s in all_tasks().values())
    raise UnknownTask(f"unknown task '{name}': choose one of {known} (see 'onegc tasks')")


def better(a: float, b: float, direction: Direction) -> bool:
    """Does score ``a`` beat score ``b`` (strictly)? Every direction question in the harness, the
    store and the monitor comes here, through :meth:`TaskSpec.better` or with a task's direction."""
    return a > b if direction == "higher" else a < b


def best_of(values: Iterable[T], direction: Direction, key: Callable[[T], float] | None = None) -> T:
    """The best of ``values`` (not empty) in ``direction``, compared by ``key``; the first of equals."""
    pick = max if direction == "higher" else min
    return pick(values, key=key) if key is not None else pick(values)  # type: ignore[type-var]  # T is a float without key


def direction_of(task: str | None) -> Direction:
    """The direction of a task named by folder or short id; "higher" for none or an unknown one
    (a session folder from a checkout with other tasks)."""
    try:
        return get_task(task or "").direction
    except UnknownTask:
        return "higher"


def benchmark_tasks() -> list[TaskSpec]:
    """The seven paper tasks, without the demo."""
    return [s for s in all_tasks().values() if s.short != "t0"]
