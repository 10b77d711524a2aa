"""Adapter for the built-in scripted agent (:mod:`runner.agents.scripted_agent`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runner.agents.base import AgentAdapter, LaunchContext
from runner.agents.item import TranscriptItem, raw_item
from runner.wire.session_config import SessionConfig
from tasks import get_task

_TOOL_KINDS = {"tool_call": "tool_call", "tool_result": "tool_result", "tool_output": "tool_result"}


class ScriptedAdapter(AgentAdapter):
    name = "scripted"

    def __init__(self) -> None:
        self.pace_s = 1.0
        self.edits: list[dict] = []

    def configure(self, config: SessionConfig) -> None:
        self.pace_s = config.pace_s
        self.edits = [e.model_dump() for e in get_task(config.task).scripted_edits]

    def argv(self, ctx: LaunchContext) -> list[str]:
        return [sys.executable, "-m", "runner.agents.scripted_agent", "--pace", str(self.pace_s),
                "--edits", json.dumps(self.edits), *ctx.extra_args]

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = dict(ctx.base_env)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return env

    def read_only_paths(self) -> list[Path]:
        """The agent's own two files, not the project: namespace packages make them importable."""
        root = Path(__file__).resolve().parents[2]
        return [root / "runner" / "agents" / "scripted_agent.py", root / "tasks" / "script_edit.py"]

    def version(self) -> str | None:
        from runner import HARNESS_VERSION

        return f"scripted {HARNESS_VERSION}"

    def parse(self, line: str) -> list[TranscriptItem]:
        try:
            rec = json.loads(line)
            kind = rec["type"]
        except (ValueError, KeyError, TypeError):
            return [raw_item(line)] if line.strip() else []
        if kind in ("text", "thinking"):
            return [TranscriptItem(role="assistant", kind=kind, text=str(rec.get("text", "")))]
        if kind in _TOOL_KINDS:
            is_call = kind == "tool_call"
            return [TranscriptItem(role="assistant" if is_call else "tool", kind=_TOOL_KINDS[kind],
                                   tool=rec.get("tool"), call_id=rec.get("id"), exit_code=rec.get("exit_code"),
                                   text=str(rec.get("input") if is_call else rec.get("text", "")))]
        if kind == "usage":
            return [TranscriptItem(role="system", kind="usage", tokens_in=rec.get("tokens_in"), tokens_out=rec.get("tokens_out"),
                                   cost_usd=0.0)]
        if kind == "result":
            return [TranscriptItem(role="assistant", kind="result", text=str(rec.get("text", "")))]
        return [raw_item(line)]
