"""``onegc baseline TASK``: the task's baseline measured under the same contract as any session.

Each baseline session is an ordinary session whose agent is the ``command`` adapter running the
workspace's own, unmodified ``train.py`` (the baseline the agents start from), recorded under the
study name ``baseline`` with ids ``baseline--<label>--<task>--r<k>``. It goes through everything a
real session does: the sandbox, the budget, live sealed scoring, the val-best official choice
and the re-evaluation on the scored split. So its score is the baseline *under this harness, on
this machine*: the reference of ``Agg_ours`` (onegc_tui/views/outcomes.py ``measured_baselines``) and
of the val-test gap flag (runner/integrity/selection_gap.py).

``constants`` changes UPPERCASE constants of ``train.py`` first (tests shrink it to a few steps;
a person may measure another recipe, then under its own ``label``). The change is made inside
the workspace by the command itself, a copy named ``baseline.py``; ``train.py`` stays as shipped.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import OnegcError
from runner.integrity.selection_gap import BASELINE_STUDY

if TYPE_CHECKING:
    from runner.launch.request import StartRequest
    from runner.wire.paths import SessionPaths
    from tasks import TaskSpec

LABEL_RE = re.compile(r"^[A-Za-z0-9_.]+(-[A-Za-z0-9_.]+)*$")
NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")

# Run inside the workspace by the command agent: copy train.py with the given constants, run it.
_RUN_WITH_CONSTANTS = r"""
import json, re, runpy, sys
from pathlib import Path
values = json.loads(sys.argv[1])
text = Path("train.py").read_text()
for name, value in values.items():
    text, n = re.subn(rf"^{name}(\s*:[^=]+)?\s*=.*$", f"{name} = {value!r}", text, count=1, flags=re.M)
    if not n:
        sys.exit(f"train.py has no top-level {name}")
Path("baseline.py").write_text(text)
sys.argv = ["baseline.py"]
runpy.run_path("baseline.py", run_name="__main__")
"""


def baseline_command(constants: dict[str, object]) -> list[str]:
    """The command agent's command line: ``train.py`` as it is, or a copy with ``constants``."""
    if not constants:
        return [sys.executable, "-u", "train.py"]
    for name, value in constants.items():
        if not NAME_RE.match(name) or not isinstance(value, int | float | str | bool):
            raise OnegcError(f"--set {name}: an UPPERCASE constant and a number, string or boolean")
    return [sys.executable, "-u", "-c", _RUN_WITH_CONSTANTS, json.dumps(constants)]


def next_repeat(runs: Path, label: str, short: str) -> int:
    """The first repeat number not yet used by a baseline session of this label and task."""
    prefix = f"{BASELINE_STUDY}--{label}--{short}--r"
    used = set()
    if runs.is_dir():
        for p in runs.iterdir():
            if p.name.startswith(prefix) and p.name[len(prefix):].isdigit():
                used.add(int(p.name[len(prefix):]))
    k = 1
    while k in used:
        k += 1
    return k


def baseline_request(spec: TaskSpec, repeats: int, budget_s: float | None, gpus: str | None,
                     constants: dict[str, object]) -> StartRequest:
    """The start request of ``repeats`` baseline sessions (runner/launch/request.py): the command
    agent running ``train.py`` (with ``constants``), under the study ``baseline``, with every
    default and check of any other start (its network policy: the command agent's)."""
    from runner.launch.request import make_request

    return make_request(task=spec.id, agent="command", repeats=repeats, budget_s=budget_s, gpus=gpus,
                        command=tuple(baseline_command(constants)), study=BASELINE_STUDY)


def start_baseline_sessions(home: Path, spec: TaskSpec, repeats: int, budget_s: float | None, gpus: str | None,
                            constants: dict[str, object], label: str = "train") -> list[SessionPaths]:
    """Create and launch ``repeats`` baseline sessions (``budget_s`` None: the task's budget),
    numbered on from the label's last repeat, through runner/launch/start.py like any start."""
    from runner.launch.start import start_sessions
    from runner.wire.paths import runs_dir

    if not LABEL_RE.match(label):
        raise OnegcError(f"--label {label!r}: use letters, digits, '.', '_' or single '-'")
    request = baseline_request(spec, repeats, budget_s, gpus, constants)
    return start_sessions(home, request, lambda k: f"{BASELINE_STUDY}--{label}--{spec.short}--r{k}",
                          first_repeat=next_repeat(runs_dir(home), label, spec.short))
