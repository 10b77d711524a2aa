"""Adapter for any command line (``--agent command -- CMD ...``): a plain-text transcript."""

from __future__ import annotations

from pathlib import Path

from runner.agents.base import AgentAdapter, LaunchContext
from runner.wire.session_config import SessionConfig


class CommandAdapter(AgentAdapter):
    name = "command"

    def __init__(self) -> None:
        self.command: list[str] = []

    def configure(self, config: SessionConfig) -> None:
        if not config.command:
            raise ValueError("the command agent needs a command line: onegc run TASK --agent command -- CMD ...")
        self.command = list(config.command)

    def argv(self, ctx: LaunchContext) -> list[str]:
        return [*self.command, *ctx.extra_args]

    def read_only_paths(self) -> list[Path]:
        """The program and every file the command line names by absolute path, read-only."""
        from runner.sandbox.bwrap import command_files, runtime_paths

        return runtime_paths(self.command[0] if self.command else None) + command_files(self.command)

    def version(self) -> str | None:
        return None
