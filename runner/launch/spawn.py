"""Creating sessions and starting their runners.

The local launcher starts ``python -m runner.session DIR`` detached (its own session, output in
``runner.log``), so sessions outlive the command and the monitor that started them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from runner.launch.records import write_record
from runner.wire.liveness import launch_record
from runner.wire.paths import SessionPaths, runs_dir

if TYPE_CHECKING:
    from runner.wire.session_config import SessionConfig

REPO_ROOT = Path(__file__).resolve().parents[2]


def create_session(config: SessionConfig, home: Path) -> SessionPaths:
    """Write ``runs/<id>/session.json``; the folder must not exist yet."""
    paths = SessionPaths(runs_dir(home) / config.session_id)
    paths.root.parent.mkdir(parents=True, exist_ok=True)
    paths.write_config(config)
    return paths


def runner_argv(paths: SessionPaths) -> list[str]:
    return [sys.executable, "-m", "runner.session", str(paths.root)]


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with this checkout first on ``PYTHONPATH``: a runner or a
    queue daemon started from any folder imports the code that started it."""
    full_env = dict(env or os.environ)
    rest = full_env.get("PYTHONPATH")
    full_env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + rest if rest else "")
    return full_env


def start_runner(paths: SessionPaths, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``python -m runner.session DIR`` detached (own session, output in ``runner.log``)."""
    with open(paths.runner_log, "ab") as log:
        return subprocess.Popen(runner_argv(paths), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env=child_env(env), cwd=paths.root)


def start_recorded(paths: SessionPaths, record: dict, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start the runner and write ``launcher.json``: ``record`` and what runner.wire.liveness needs to
    know that very process later. The one way a runner starts on this machine, queued or not."""
    proc = start_runner(paths, env)
    write_record(paths, {**record, **launch_record(proc.pid)})
    return proc


def spawn_local(paths: SessionPaths, env: dict[str, str] | None = None) -> int:
    """Start the runner now, outside any queue; returns its pid."""
    return start_recorded(paths, {"kind": "local", "started": time.time()}, env).pid
