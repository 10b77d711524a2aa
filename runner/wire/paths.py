"""The layout of onegc's state: the home, its ``runs/`` and ``data/``, and one session's folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import ConfigError, describe_validation_error

if TYPE_CHECKING:
    from runner.wire.session_config import SessionConfig

def onegc_home() -> Path:
    """All state lives here: ``data/``, ``runs/``, ``onegc.db`` (../shared/DESIGN.md §6)."""
    return Path(os.environ.get("ONEGC_HOME") or Path.cwd()).resolve()


def usable_home() -> Path:
    """:func:`onegc_home`, made if it does not exist yet; a :class:`ConfigError` naming the fix
    when it cannot hold onegc's state (a file, under a file, not writable)."""
    home = onegc_home()
    fix = "point ONEGC_HOME at a folder you can write (all of onegc's state lives there)"
    if home.exists() and not home.is_dir():
        raise ConfigError(f"ONEGC_HOME={home} is a file, not a folder: {fix}")
    try:
        home.mkdir(parents=True, exist_ok=True)
    except (NotADirectoryError, FileExistsError):
        blocker = next((p for p in home.parents if p.exists() and not p.is_dir()), home.parent)
        raise ConfigError(f"ONEGC_HOME={home} is under {blocker}, which is a file: {fix}") from None
    except OSError as exc:
        raise ConfigError(f"ONEGC_HOME={home} cannot be made: {(exc.strerror or str(exc)).lower()}: {fix}") from None
    if not os.access(home, os.W_OK | os.X_OK):
        raise ConfigError(f"ONEGC_HOME={home} is not writable by this user, and this command writes there: {fix} "
                          "('onegc tasks', 'sessions', 'history', 'study status', 'monitor', 'report' and 'export' "
                          "only read it and work as it is)")
    return home


@dataclass(frozen=True)
class SessionPaths:
    """Where everything of one session lives (../shared/DESIGN.md §3)."""

    root: Path

    @property
    def session_id(self) -> str:
        return self.root.name

    config = property(lambda self: self.root / "session.json")
    events = property(lambda self: self.root / "events.jsonl")
    control = property(lambda self: self.root / "control.jsonl")
    agent_stdout = property(lambda self: self.root / "agent.stdout.jsonl")
    agent_stderr = property(lambda self: self.root / "agent.stderr.log")
    runner_log = property(lambda self: self.root / "runner.log")
    runner_info = property(lambda self: self.root / "runner.json")
    launcher = property(lambda self: self.root / "launcher.json")
    workspace = property(lambda self: self.root / "workspace")
    checkpoints = property(lambda self: self.root / "workspace" / "checkpoints")
    snapshots = property(lambda self: self.root / "snapshots")
    agent_home = property(lambda self: self.root / "agent_home")
    sandbox = property(lambda self: self.root / "sandbox")  # the runner's files for the sandbox (passwd, group)
    result = property(lambda self: self.root / "result.json")

    def write_config(self, config: SessionConfig, *, new: bool = True) -> None:
        """Write ``session.json`` atomically (temp file + rename): ``new``, into a folder made now,
        which must not exist yet; else over the config of a session whose runner has not read it
        yet (the GPU it is given, a study's current settings)."""
        if new:
            self.root.mkdir(parents=True, exist_ok=False)
        tmp = self.root / f".session.json.{os.getpid()}.tmp"
        tmp.write_text(config.model_dump_json(indent=2))
        os.replace(tmp, self.config)

    def read_config(self) -> SessionConfig:
        from pydantic import ValidationError

        from runner.wire.session_config import SessionConfig

        try:
            return SessionConfig.model_validate_json(self.config.read_bytes())
        except FileNotFoundError:
            raise ConfigError(f"{self.config}: missing: not a session folder") from None
        except ValidationError as exc:
            raise ConfigError(describe_validation_error(exc, str(self.config))) from None

    def read_result(self) -> dict | None:
        try:
            return json.loads(self.result.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None


def runs_dir(home: Path | None = None) -> Path:
    return (home or onegc_home()) / "runs"


def data_root(home: Path | None = None) -> Path:
    return (home or onegc_home()) / "data"


def is_session_folder(folder: Path) -> bool:
    """A session's folder under ``runs`` (an earlier attempt's, ``<id>.attempt-<n>``, is its
    record, not a session)."""
    return ".attempt-" not in folder.name and (folder / "session.json").is_file()


MANIFEST = "manifest.json"  # a prepared task's data folder lists its files here, written last


def is_prepared(task_id: str, data_root: Path) -> bool:
    """The task's data is prepared under ``data_root`` (its manifest is written last, atomically)."""
    return (data_root / task_id / MANIFEST).is_file()
