"""``onegc baseline TASK``: the task's baseline measured under the same contract as any session.

Each baseline session is an ordinary session whose agent is the ``command`` adapter running the
workspace's own, unmodified ``train.py`` (the baseline the agents start from), recorded under the
study name ``baseline`` with ids ``baseline--<label>--<task>--r<k>``. It goes through everything a
real session does: the sandbox, the budget, live sealed scoring, the val-best official choice
and the re-evaluation on the scored split. So its score is the baseline *under this harness, on
this machine*: the reference of ``Agg_ours`` (onegc_tui/views/outcomes.py ``measured_baselines``) and
of the val-test gap flag (runner/scoring/selection_gap.py).

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
from runner.scoring.selection_gap import BASELINE_STUDY

if TYPE_CHECKING:
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


def start_baseline_sessions(home: Path, spec: TaskSpec, repeats: int, budget_s: float, gpus: str | None,
                            constants: dict[str, object], label: str = "train") -> list[SessionPaths]:
    """Create and launch ``repeats`` baseline sessions (the checks of runner/launch/start.py first)."""
    from runner.launch.local import gpu_slots
    from runner.launch.spawn import create_session
    from runner.launch.start import ensure_prepared, ensure_sandbox, launch_local
    from runner.wire.defaults import default_network
    from runner.wire.paths import runs_dir
    from runner.wire.session_config import SessionConfig

    if not LABEL_RE.match(label):
        raise OnegcError(f"--label {label!r}: use letters, digits, '.', '_' or single '-'")
    ensure_prepared(spec, home)
    ensure_sandbox(True)
    command = baseline_command(constants)
    slots = gpu_slots(gpus)
    queued = repeats > 1
    first = next_repeat(runs_dir(home), label, spec.short)
    started = []
    for k in range(first, first + repeats):
        config = SessionConfig(session_id=f"{BASELINE_STUDY}--{label}--{spec.short}--r{k}", task=spec.id,
                               agent="command", model=None, repeat=k, study=BASELINE_STUDY, budget_s=budget_s,
                               gpu=None if queued else slots[0], command=command, network=default_network("command"),
                               sealed=True)
        started.append(create_session(config, home))
    launch_local(home, started, slots, queued=queued)
    return started
