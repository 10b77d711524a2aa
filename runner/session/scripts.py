"""The agent's training scripts, started and ended, as ``process`` events. Every launch through the
PATH shim is counted, however short (runner/sandbox/execlog.py); a scan of the agent's tree adds
those started by an absolute interpreter path that live through one scan, and sees every known
script end."""

from __future__ import annotations

from pathlib import Path

import psutil

from runner.sandbox.execlog import ExecLog, Launch
from runner.sandbox.proctree import ProcessTree
from runner.wire.jsonl import EventWriter

CMDLINE_CHARS = 300  # of a script's command line, in its events


class ScriptWatch:
    def __init__(self, workspace: Path, events: EventWriter):
        self.workspace = workspace
        self.events = events
        self.known: dict[int, tuple[str, str]] = {}  # pid -> (script, command line)

    def scan(self, tree: ProcessTree, launches: ExecLog) -> None:
        for launch in launches.drain():  # first: a record is sent before its script starts
            self._launched(launch)
        pids = set(tree.pids())
        for pid in pids - set(self.known):
            try:
                cmd = psutil.Process(pid).cmdline()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            script = python_script(cmd, self.workspace)
            if script:
                self._started(pid, script, " ".join(cmd)[:CMDLINE_CHARS])
        for pid, (script, cmdline) in list(self.known.items()):
            if pid not in pids:
                self.events.emit("process", action="ended", pid=pid, script=script, cmdline=cmdline)
                del self.known[pid]

    def _launched(self, launch: Launch) -> None:
        script = python_script(list(launch.argv), self.workspace, Path(launch.cwd) if launch.cwd else None)
        if script and launch.pid not in self.known:
            self._started(launch.pid, script, launch.cmdline[:CMDLINE_CHARS])

    def _started(self, pid: int, script: str, cmdline: str) -> None:
        self.known[pid] = (script, cmdline)
        self.events.emit("process", action="started", pid=pid, script=script, cmdline=cmdline)


def python_script(cmd: list[str], workspace: Path, cwd: Path | None = None) -> str | None:
    """The workspace ``*.py`` a python command line runs (``python [-u] run_1.py ...``), if any;
    harness helpers outside the workspace (the namespace init, the exec shim) do not count. A
    relative path is taken from ``cwd`` when it is known."""
    if not cmd or "python" not in Path(cmd[0]).name:
        return None
    for arg in cmd[1:]:
        if arg.endswith(".py"):
            path = Path(arg)
            if not path.is_absolute() and cwd is not None:
                path = cwd / path
            if path.is_absolute() and workspace not in path.parents:
                return None
            return path.name
        if arg in ("-c", "-m"):
            return None
    return None
