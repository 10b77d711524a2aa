"""The agent dispatch table: a new agent CLI is one entry here plus its adapter module."""

from __future__ import annotations

import importlib

from runner.agents.base import AgentAdapter, LaunchContext
from runner.agents.item import TranscriptItem, raw_item
from runner.errors import OnegcError

__all__ = ["ADAPTERS", "AgentAdapter", "LaunchContext", "TranscriptItem", "UnknownAgent", "get_adapter", "raw_item"]

# name -> "module:Class"; imported on use so a broken optional adapter cannot break the others.
ADAPTERS: dict[str, str] = {
    "scripted": "runner.agents.scripted:ScriptedAdapter",
    "command": "runner.agents.command:CommandAdapter",
    "claude-code": "runner.agents.claude_code:ClaudeCodeAdapter",
    "codex": "runner.agents.codex:CodexAdapter",
    "opencode": "runner.agents.opencode:OpenCodeAdapter",
}


class UnknownAgent(OnegcError, LookupError):
    pass


def get_adapter(name: str) -> AgentAdapter:
    try:
        target = ADAPTERS[name]
    except KeyError:
        raise UnknownAgent(f"unknown agent '{name}': choose one of {', '.join(ADAPTERS)}") from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()
