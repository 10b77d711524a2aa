"""Adapter for any command line (``--agent command -- CMD ...``): a plain-text transcript."""

from __future__ import annotations

from runner.agents.base import AgentAdapter, LaunchContext
from runner.config import SessionConfig


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

    def version(self) -> str | None:
        return None
