"""The agent dispatch table, derived from the agents' entries (runner/wire/agents.py): a new agent
CLI is one entry there plus its adapter module (docs/architecture.md, "How to add an agent adapter")."""

from __future__ import annotations

import importlib

from runner.agents.base import AgentAdapter, LaunchContext
from runner.agents.item import TranscriptItem, raw_item
from runner.errors import OnegcError
from runner.wire.agents import AGENTS

__all__ = ["ADAPTERS", "AgentAdapter", "LaunchContext", "TranscriptItem", "UnknownAgent", "get_adapter", "raw_item"]

# name -> "module:Class"; imported on use so a broken optional adapter cannot break the others.
ADAPTERS: dict[str, str] = {a.name: a.adapter for a in AGENTS}


class UnknownAgent(OnegcError, LookupError):
    pass


def get_adapter(name: str) -> AgentAdapter:
    try:
        target = ADAPTERS[name]
    except KeyError:
        raise UnknownAgent(f"unknown agent '{name}': choose one of {', '.join(ADAPTERS)}") from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()
