"""The agent-adapter contract: one small class per agent CLI.

An adapter says how to start its CLI (``argv``, ``env``), how to read one line of its stdout
(``parse`` -> normalised :class:`TranscriptItem` list; a line it cannot read becomes one
``kind="raw"`` item, never an exception) and which version is installed (``version``).
The runner stamps ``session_id``/``seq``/``ts`` and turns items into ``transcript`` events.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from runner.events import TranscriptFields, clip


class TranscriptItem(TranscriptFields):
    """One normalised step of an agent's transcript (DESIGN.md §4 "Transcript events")."""

    def bounded(self) -> dict:
        data = self.model_dump(exclude_none=True)
        data["text"] = clip(self.text)
        return data


def raw_item(line: str) -> TranscriptItem:
    """What a line no adapter understands becomes."""
    return TranscriptItem(role="system", kind="raw", text=line.rstrip("\n"))


@dataclass(frozen=True)
class LaunchContext:
    """What an adapter may use to build its command line and environment."""

    workspace: Path
    session_dir: Path
    agent_home: Path  # a fresh per-session HOME/config folder: the user's own settings stay out
    prompt: str
    model: str | None
    deadline_file: Path
    base_env: dict[str, str] = field(default_factory=dict)
    extra_args: tuple[str, ...] = ()


class AgentAdapter:
    """Base class. Subclasses set ``name`` and override what differs."""

    name: ClassVar[str] = ""
    executable: ClassVar[str | None] = None  # the CLI binary, found on PATH (or the project prefix)
    stdout_is_jsonl: ClassVar[bool] = True
    prompt_on_stdin: ClassVar[bool] = False  # else stdin is /dev/null (an open pipe hangs some CLIs)

    def argv(self, ctx: LaunchContext) -> list[str]:
        raise NotImplementedError

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        """Environment for the agent process, built from ``ctx.base_env``."""
        return dict(ctx.base_env)

    def parse(self, line: str) -> list[TranscriptItem]:
        text = line.rstrip("\n")
        return [TranscriptItem(role="assistant", kind="text", text=text)] if text.strip() else []

    def finish(self) -> list[TranscriptItem]:
        """Items owed at end of stream (e.g. a final usage total); default none."""
        return []

    def version(self) -> str | None:
        exe = self.find_executable()
        if exe is None:
            return None
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else None

    def find_executable(self) -> str | None:
        return shutil.which(self.executable) if self.executable else None
